"""Shared fixtures: a tiny stream corpus, its binarized form, and helpers to build models."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import fairseq  # noqa: E402,F401  (import first so the plugin registers itself)

import syntax_nmt  # noqa: E402

from support.streamdata import write_corpus  # noqa: E402

USER_DIR = os.path.dirname(os.path.abspath(syntax_nmt.__file__))
BIN = os.path.dirname(sys.executable)


def run_cli(name, *args, cwd=None, check=True, timeout=600):
    """Run one of the installed command lines (fairseq's or ours) and return the completed process."""
    exe = os.path.join(BIN, name)
    proc = subprocess.run([exe, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{name} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(autouse=True)
def _no_stale_log_handlers():
    """A console script called in-process (``cli_main``) points the root logger at the ``sys.stderr`` of its
    moment (``logging.basicConfig(stream=sys.stderr, force=True)``): under capture, a stream that is closed
    after the test, so the next test in the same process that logs gets ``--- Logging error ---`` on its own
    stderr. Remove the plain stream handlers a test adds (pytest's own are subclasses)."""
    import logging

    root = logging.getLogger()
    before = list(root.handlers)
    yield
    for h in list(root.handlers):
        if type(h) is logging.StreamHandler and h not in before:
            root.removeHandler(h)


#: fairseq-train options of the tiny trainings through the real command line (after the data, before --arch)
TRAIN = [
    "--user-dir", USER_DIR, "--task", "syntax_translation",
    "--optimizer", "adam", "--lr", "0.005", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "10",
    "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
    "--max-tokens", "1500", "--max-update", "8", "--seed", "1", "--no-epoch-checkpoints",
    "--log-format", "simple", "--log-interval", "4", "--no-progress-bar",
]


@pytest.fixture(scope="session")
def synthetic_spacy(tmp_path_factory):
    """A synthetic corpus (train 400, valid 24, test 60 pairs; raw ``en``/``de``, tokenized ``tok.de``, gold
    ``en.conllu``) and a tiny spaCy tagger+parser trained on its gold trees: the recipes' offline stand-ins for
    the real data and en_core_web_sm."""
    from syntax_nmt.annotate.spacy_train import train_spacy_pipeline
    from syntax_nmt.synthetic.generate import generate_corpus

    root = tmp_path_factory.mktemp("synthetic-spacy")
    corpus = generate_corpus(str(root / "synth"), {"train": 400, "valid": 24, "test": 60}, seed=3)
    model = train_spacy_pipeline(corpus["train"]["en.conllu"], corpus["valid"]["en.conllu"], root / "spacy-en",
                                 max_steps=60)
    return corpus, model


@pytest.fixture(scope="session")
def systems_cache(tmp_path_factory):
    """A SYSTEMS_CACHE directory (examples/common/systems.sh) holding what ``python -m syntax_nmt.systems shell
    NAME`` prints for every system of the table and every old name, written in-process: the recipes' scripts then
    read the table from there, not with a python of their own per run (seconds each: it imports fairseq)."""
    import contextlib
    import io

    from syntax_nmt import systems

    cache = tmp_path_factory.mktemp("systems-cache")
    for name in [*systems.systems(), *systems.ALIASES]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert systems._cli(["shell", name]) == 0
        (cache / f"{name}.sh").write_text(out.getvalue(), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert systems._cli(["list"]) == 0
    (cache / "_default.list").write_text(out.getvalue(), encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert systems._cli(["list", "--target"]) == 0
    (cache / "_target.list").write_text(out.getvalue(), encoding="utf-8")
    return cache


@pytest.fixture(scope="module")
def spacy_model(tmp_path_factory):
    """A deterministic rule-based spaCy pipeline on disk (tests/support/annotate.py), for syntax-nmt-annotate."""
    from support.annotate import save_rule_pipeline

    return save_rule_pipeline(tmp_path_factory.mktemp("spacy") / "rule-en")


@pytest.fixture
def codes(tmp_path):
    """BPE codes (``support.annotate.CODES``) in a file."""
    from support.annotate import CODES

    p = tmp_path / "bpe.codes"
    p.write_text(CODES, encoding="utf-8")
    return str(p)


@pytest.fixture(scope="session")
def synth(request, tmp_path_factory):
    """A generated corpus (train 300, valid 50 pairs) and a tiny spaCy tagger+parser trained on its gold trees,
    for syntax-nmt-annotate with a real trained pipeline. Kept in pytest's cache directory when there is one:
    ``train_spacy_pipeline`` skips retraining when the (seeded, byte-identical) corpus and settings are
    unchanged."""
    from syntax_nmt.annotate.spacy_train import train_spacy_pipeline
    from syntax_nmt.synthetic import generate

    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    root = cache.mkdir("syntax_nmt_annotate_tiny_spacy") if cache else tmp_path_factory.mktemp("tiny_spacy")
    paths = generate.generate_corpus(str(root / "corpus"), {"train": 300, "valid": 50}, seed=11)
    model = train_spacy_pipeline(paths["train"]["en.conllu"], paths["valid"]["en.conllu"], root / "spacy-en",
                                 max_steps=60, seed=0)
    return paths, str(model)


@pytest.fixture(scope="session")
def stream_corpus(tmp_path_factory):
    """Text files {train,valid,test}.{en,de,pos,case,subword,head,dep} (train 240, valid 20, test 21 lines)."""
    root = tmp_path_factory.mktemp("streams")
    return write_corpus(str(root / "text"), sizes={"train": 240, "valid": 20, "test": 21}, seed=3)


@pytest.fixture(scope="session")
def stream_bin(stream_corpus, tmp_path_factory):
    """The corpus binarized with syntax-nmt-binarize (joined dictionary)."""
    from syntax_nmt.data import binarize

    dest = str(tmp_path_factory.mktemp("bin") / "data-bin")
    binarize.cli_main([
        "--source-lang", "en", "--target-lang", "de",
        "--trainpref", stream_corpus["train"], "--validpref", stream_corpus["valid"],
        "--testpref", stream_corpus["test"], "--destdir", dest, "--joined-dictionary", "--workers", "1",
    ])
    return dest


def build_task_and_model(data, *extra, arch="syntax_transformer_tiny", task="syntax_translation"):
    """Parse fairseq training arguments, set up the task and build the model (in-process)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [data, "--user-dir", USER_DIR, "--task", task, "--arch", arch, *map(str, extra)]
    )
    cfg = convert_namespace_to_omegaconf(args)
    t = tasks.setup_task(cfg.task)
    model = t.build_model(cfg.model)
    return t, model, cfg


def analyze_in_memory(monkeypatch, task, model, cfg):
    """Make ``syntax-nmt-analyze``'s checkpoint loading (:func:`syntax_nmt.analyze.models.load`) return ``model``
    (in eval mode, with ``task`` and ``cfg``) whatever the checkpoint, e.g. a model of a method defined in a test."""
    from syntax_nmt.analyze import models

    def load(name, path, data, split="test"):
        if split is not None:
            task.load_dataset(split)
        model.eval()
        return models.Loaded(name, path, model, task, cfg)

    monkeypatch.setattr(models, "load", load)


def assert_option_error(data, extra, message, capsys, monkeypatch):
    """Model options ``extra`` are refused with ``message`` while fairseq's parser applies the architecture (before
    the task and model are built) as ``ModelOptionError``, a ``ValueError``; a fairseq console script reports it
    as one line with exit status 2 (tests/e2e/test_methods_cli.py runs fairseq-train for that)."""
    from syntax_nmt.models.syntax_transformer import ModelOptionError

    with pytest.raises(ModelOptionError, match=message) as e:
        build_task_and_model(data, *extra)
    assert "parse_args_and_arch" in [entry.name for entry in e.traceback]  # refused while parsing
