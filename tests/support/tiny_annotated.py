"""The tiny CoNLL-U-annotated corpus of the parse-free, hub and export tests, and the tiny models trained on it.

The synthetic corpus annotated from its gold trees (``syntax-nmt-annotate --backend conllu``, pre-tokenized, with the
recorded Moses settings that turn its raw ``en`` lines into its tokens; BPE learnt on its train split), binarized
(joined dictionary), and beside it the same data without a stream file (the words, their dictionaries and the
annotation settings). Built once per test process (an xdist worker builds its own) in a folder of the session's
tmp directory, keyed on its settings; each model likewise, keyed on the corpus and its training arguments. Callers
read these files and never change them (a test that needs a changed checkpoint writes a copy in its own tmp_path).
"""

import os
import shutil
from types import SimpleNamespace

from support.console import console_argv

import syntax_nmt

MOSES = "lang=en,normalize=1,aggressive_dash_splits=0,escape=0"
USER_DIR = os.path.dirname(os.path.abspath(syntax_nmt.__file__))
#: fairseq-train options (after the data, before --save-dir) of the tiny trainings on the corpus
COMMON = ["--user-dir", USER_DIR, "--optimizer", "adam", "--lr", "0.01", "--lr-scheduler", "inverse_sqrt",
          "--warmup-updates", "20", "--max-tokens", "2000", "--seed", "1", "--no-epoch-checkpoints",
          "--disable-validation", "--save-interval", "1000", "--num-workers", "0", "--log-format", "simple",
          "--no-progress-bar"]
#: a LISA model (with COMMON and the number of updates; tests/e2e/test_export.py's: 200 updates and
#: --lisa-loss-weight 0.1, which its check that the translations differ needs; tests/e2e/test_parse_free.py's: 60)
LISA = ["--task", "syntax_translation", "--arch", "syntax_transformer_tiny", "--source-features=",
        "--syntax-attention", "lisa", "--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing",
        "0.1"]

_BUILT = {}


def annotated_corpus(tmp_path_factory, train=300, valid=20, test=30, seed=5, merges=300):
    """The corpus of ``train``/``valid``/``test`` pairs (``generate_corpus`` with ``seed``, ``merges`` BPE merges):
    ``root``, ``data`` (binarized with the stream files), ``plain`` (without them), ``paths`` (the generated files),
    ``text`` (the annotated text files, ``text/SPLIT.*``), ``codes`` (the BPE codes)."""
    key = ("corpus", train, valid, test, seed, merges)
    if key not in _BUILT:
        from syntax_nmt.annotate.cli import main as annotate
        from syntax_nmt.data import binarize
        from syntax_nmt.synthetic.generate import generate_corpus

        root = tmp_path_factory.mktemp(f"annotated-{train}-{valid}-{test}-s{seed}-m{merges}")
        paths = generate_corpus(str(root / "corpus"), {"train": train, "valid": valid, "test": test}, seed=seed)
        codes = root / "bpe.codes"
        for split in ("train", "valid", "test"):
            sub = (["--learn-subword", str(merges), "--subword-model-out", str(codes)] if split == "train"
                   else ["--subword-model", str(codes)])
            annotate(["--backend", "conllu", "--conllu", paths[split]["en.conllu"], "--source",
                      paths[split]["tok.en"], "--pretokenized", "--moses-settings", MOSES, "--target",
                      paths[split]["tok.de"], "--src-lang", "en", "--tgt-lang", "de", "-o", str(root / "text" / split),
                      "--subword", "bpe", *sub, "--quiet"])
        data = root / "data-bin"
        binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--joined-dictionary", "--workers", "1",
                           "--trainpref", str(root / "text/train"), "--validpref", str(root / "text/valid"),
                           "--testpref", str(root / "text/test"), "--destdir", str(data)])
        plain = root / "plain"  # the same data without a stream file
        plain.mkdir()
        for f in os.listdir(data):
            if f.endswith((".en.bin", ".en.idx", ".de.bin", ".de.idx")) or f in ("dict.en.txt", "dict.de.txt",
                                                                                "annotation.json"):
                shutil.copy(data / f, plain / f)
        _BUILT[key] = SimpleNamespace(root=root, data=str(data), plain=str(plain), paths=paths,
                                      text=str(root / "text"), codes=str(codes), models=str(root / "models"))
    return _BUILT[key]


def trained_model(corpus, name, *args):
    """``corpus.models/NAME/checkpoint_last.pt``: fairseq-train (its entry point, in this process) on ``corpus.data``
    with ``args`` (everything but the data and ``--save-dir``). A name stands for one set of arguments."""
    args = tuple(str(a) for a in args)
    key = ("model", corpus.data, name)
    if key not in _BUILT:
        from fairseq_cli import train

        save = os.path.join(corpus.models, name)
        with console_argv("fairseq-train", corpus.data, *args, "--save-dir", save):
            train.cli_main()
        _BUILT[key] = (args, os.path.join(save, "checkpoint_last.pt"))
    built_with, path = _BUILT[key]
    assert built_with == args, f"model {name!r} of {corpus.data} was trained with other arguments"
    return path
