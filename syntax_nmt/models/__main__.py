"""``python -m syntax_nmt.models``: the options of ``--arch syntax_transformer*`` with their help.

fairseq 0.12's ``fairseq-train --help`` prints its help before it adds the options of the
chosen architecture, so the model's options are listed here.
"""

import argparse


def main(argv=None):
    from syntax_nmt.io_guard import no_path
    from syntax_nmt.models.syntax_transformer import SyntaxTransformerModel

    parser = argparse.ArgumentParser(
        prog="python -m syntax_nmt.models",
        description="Options of the syntax_transformer model (fairseq's Transformer options first, then the "
        "feature and syntax-method options), as fairseq-train takes them.",
    )
    SyntaxTransformerModel.add_args(parser)
    for action in parser._actions:  # fairseq-train's options, only listed here
        if action.dest.endswith("_path"):
            no_path(action, "fairseq-train's; this command prints the options")
    parser.parse_args(argv if argv is not None else ["--help"])


if __name__ == "__main__":
    main()
