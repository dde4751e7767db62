"""The command-line reference, ``docs/cli.md``: every option of the plugin's console scripts (and of the recipes'
report and the demo), with their descriptions and examples, rendered from their argparse parsers, so that the page
and ``--help`` say the same.

    python -m syntax_nmt.cli_docs -o docs/cli.md       # after changing an option (or > docs/cli.md)

``tests/unit/test_cli_docs.py`` fails while the page and the parsers differ. The page is built from the parsers'
actions (option strings, value name, default, choices, help), not from argparse's formatted help, whose layout
changes between Python versions.
"""

import argparse
import importlib
from typing import List, Optional, Sequence, Tuple

#: (the command as typed, "module:function" building its parser); a command that extends a fairseq command line
#: lists its own options only (:data:`EXTENDS`)
COMMANDS: Tuple[Tuple[str, str], ...] = (
    ("syntax-nmt-synth", "syntax_nmt.synthetic.cli:build_parser"),
    ("syntax-nmt-train-spacy", "syntax_nmt.annotate.spacy_train:get_parser"),
    ("syntax-nmt-annotate", "syntax_nmt.annotate.cli:build_parser"),
    ("syntax-nmt-binarize", "syntax_nmt.data.binarize:get_parser"),
    ("syntax-nmt-target-tags", "syntax_nmt.annotate.target_tags:get_parser"),
    ("syntax-nmt-evaluate", "syntax_nmt.evaluation.evaluate:get_parser"),
    ("syntax-nmt-analyze", "syntax_nmt.analyze.cli:get_parser"),
    ("syntax-nmt-export", "syntax_nmt.export.cli:get_parser"),
    ("python -m syntax_nmt.recipes.report", "syntax_nmt.recipes.report:get_parser"),
    ("python -m syntax_nmt.recipes.markers", "syntax_nmt.recipes.markers:get_parser"),
    ("python -m syntax_nmt.recipes.budget_curve", "syntax_nmt.recipes.budget_curve:get_parser"),
    ("python -m syntax_nmt.recipes.training_record", "syntax_nmt.recipes.training_record:get_parser"),
    ("python -m syntax_nmt.data.subsample", "syntax_nmt.data.subsample:get_parser"),
    ("make demo DEMO_ARGS=... (python -m syntax_nmt.demo)", "syntax_nmt.demo.cli:get_parser"),
    ("make bench (python -m syntax_nmt.bench)", "syntax_nmt.bench.model:get_parser"),
    ("make bench-length (python -m syntax_nmt.bench.length)", "syntax_nmt.bench.length:get_parser"),
    ("python -m syntax_nmt.bench.parse", "syntax_nmt.bench.parse:get_parser"),
    ("python -m syntax_nmt.bench.gpu_targets", "syntax_nmt.bench.gpu_targets:get_parser"),
    ("python -m syntax_nmt.cli_docs", "syntax_nmt.cli_docs:get_parser"),
)


#: command -> (the fairseq command it extends, "module:function" building that one's parser): fairseq's options
#: depend on the fairseq version and on what is registered, so the page names them instead of listing them
EXTENDS = {"syntax-nmt-binarize": ("fairseq-preprocess", "fairseq.options:get_preprocessing_parser")}


def build(spec: str) -> argparse.ArgumentParser:
    module, function = spec.split(":")
    return getattr(importlib.import_module(module), function)()


def _cell(text) -> str:
    """``text`` as one markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _value(action: argparse.Action) -> str:
    """What the option takes: its value name (``metavar``, else the destination upper-cased), or its choices."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    return {"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} [...]"}.get(action.nargs, name)


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default in (None, "", argparse.SUPPRESS) or action.default == []:
        return ""
    return f"`{action.default}`" if not isinstance(action.default, (list, tuple)) else \
        "`" + " ".join(map(str, action.default)) + "`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The option's help with argparse's ``%(default)s``-style fields filled in, as ``--help`` shows it."""
    if not action.help:
        return ""
    return action.help % dict(vars(action), prog=parser.prog) if "%" in action.help else action.help


def options_table(parser: argparse.ArgumentParser, without: Sequence[str] = ()) -> List[str]:
    """The markdown rows of ``parser``'s arguments (``-h`` left out, and the options named in ``without``), in the
    order ``--help`` lists them."""
    rows = ["| option | value | default | what it does |", "|---|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if set(action.option_strings) & set(without):
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}` (positional)"
        value = _value(action)
        rows.append(f"| {name} | {_cell(f'`{value}`') if value else ''} | {_cell(_default(action))} | "
                    f"{_cell(_help(parser, action))} |")
    return rows


def _subcommands(parser: argparse.ArgumentParser) -> List[Tuple[str, str, argparse.ArgumentParser]]:
    """``(name, help, parser)`` of each subcommand of ``parser``."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            out += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return out


def render(commands: Sequence[Tuple[str, str]] = COMMANDS) -> str:
    lines = ["# Command-line reference", "",
             "Every option of the plugin's commands, as their `--help` gives it (generated from the parsers by "
             "`python -m syntax_nmt.cli_docs > docs/cli.md`; a test keeps the two the same). fairseq's own commands "
             "take the plugin's options after `--user-dir`: see [the pipeline](pipeline.md). Back to the "
             "[README](../README.md).", ""]
    for command, spec in commands:
        parser = build(spec)
        lines += [f"## `{command}`", ""]
        if parser.description:
            lines += [parser.description.strip(), ""]
        if parser.epilog:
            lines += ["```", parser.epilog.strip("\n"), "```", ""]
        subs, without = _subcommands(parser), []
        if command in EXTENDS:
            base, base_spec = EXTENDS[command]
            without = [s for a in build(base_spec)._actions for s in a.option_strings]
            lines += [f"Every option of `{base}` (`{base} --help`), and these:", ""]
        table = options_table(parser, without)
        if len(table) > 2 or not subs:
            lines += table + [""]
        for name, text, sub in subs:
            lines += [f"### `{command} {name}`", ""]
            if text:
                lines += [text[0].upper() + text[1:] + ("" if text.endswith(".") else "."), ""]
            lines += options_table(sub) + [""]
    return "\n".join(lines)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.cli_docs", description=__doc__.split("\n\n")[0],
                                epilog="example:\n  python -m syntax_nmt.cli_docs -o docs/cli.md",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from syntax_nmt.io_guard import writes

    writes(p.add_argument("--output", "-o", metavar="FILE", help="write the page to FILE (default: the standard "
                          "output)"))
    return p


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Print the page, or write it to ``--output`` (atomically); an option it does not know is an error (``-o`` was
    read by nobody: the page went to the standard output and FILE stayed as it was)."""
    from syntax_nmt.cli_errors import run
    from syntax_nmt.io_guard import parse_args
    from syntax_nmt.utils import atomic_write_text

    args = parse_args(get_parser(), argv)
    text = render()
    if args.output:
        run("python -m syntax_nmt.cli_docs", atomic_write_text, args.output, text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
