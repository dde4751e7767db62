"""The parser backends' registry: every module of ``annotate/backends`` registers one, and a new
backend (one class) is on the command line, in the settings and in raw-text annotation."""

import os
import pkgutil

import pytest

from support.annotate import read, write
from syntax_nmt.annotate import backends
from syntax_nmt.annotate.backends import PARSER_BACKENDS, ParserBackend, get_backend, register_backend
from syntax_nmt.annotate.cli import build_parser, cli_main, main
from syntax_nmt.annotate.online import OnlineAnnotator
from syntax_nmt.annotate.parsed import check_tree, empty_sentence, resolve_roots
from syntax_nmt.annotate.settings import AnnotationSettings
from syntax_nmt.syntax.conllu import Sentence


def test_every_module_of_the_package_registers_its_backend():
    modules = sorted(m.name for m in pkgutil.iter_modules(backends.__path__) if m.name != "base")
    assert sorted(cls.__module__.rsplit(".", 1)[1] for cls in PARSER_BACKENDS.values()) == modules
    assert list(PARSER_BACKENDS)[:2] == ["spacy", "conllu"]  # the default first: --backend's choices
    action = next(a for a in build_parser()._actions if a.dest == "backend")
    assert (list(action.choices), action.default) == (list(PARSER_BACKENDS), "spacy")
    for name, cls in PARSER_BACKENDS.items():
        assert cls.name == name and get_backend(name) is cls and issubclass(cls, ParserBackend)
    with pytest.raises(ValueError, match="unknown parser backend 'stanza'; this syntax-nmt has: spacy, conllu"):
        get_backend("stanza")
    with pytest.raises(ValueError, match="'spacy' registered twice"):
        register_backend("spacy")(type("Again", (ParserBackend,), {}))


class ChainBackend(ParserBackend):
    """A toy parser: each word depends on the word before it, with the label given by ``--chain-label``."""

    exclusive_options = ("chain_label",)

    @classmethod
    def add_args(cls, group):
        group.add_argument("--chain-label", help="label of every dependency (--backend chain)")

    @classmethod
    def check_args(cls, args):
        super().check_args(args)
        if not args.chain_label:
            raise ValueError("--backend chain needs --chain-label")

    @classmethod
    def recorded_settings(cls, args):
        return {"chain_label": args.chain_label}

    @classmethod
    def from_args(cls, args):
        return cls(args.chain_label, args.multi_root)

    @classmethod
    def for_raw_text(cls, settings, model=None, batch_size=256, gpu_id=-1):
        return cls(settings.extra["chain_label"], settings.multi_root)

    def __init__(self, label, multi_root):
        self.label, self.multi_root = label, multi_root

    def parse(self, items):
        for lineno, text, ctx in items:
            words = text.split(" ") if text else []
            if not words:
                yield lineno, empty_sentence(), ctx
                continue
            sentence = Sentence(words, ["X"] * len(words), [w.lower() for w in words], list(range(len(words))),
                                ["root"] + [self.label] * (len(words) - 1))
            check_tree(sentence)
            yield lineno, resolve_roots(sentence, self.multi_root), ctx


@pytest.fixture
def chain():
    cls = register_backend("chain")(ChainBackend)
    yield cls
    del PARSER_BACKENDS["chain"]


def test_a_new_backend_is_one_class(tmp_path, capsys, chain):
    lines = ["The cat sat .", "", "a dog ran"]
    src = write(tmp_path / "in.en", lines)
    prefix = str(tmp_path / "out/train")
    argv = ["--source", src, "--src-lang", "en", "-o", prefix, "--backend", "chain", "--chain-label", "nx",
            "--subword", "none", "--quiet"]
    assert main(argv) == 0
    assert read(prefix + ".dep") == ["root nx nx nx", "", "root nx nx"]
    assert read(prefix + ".head") == ["0 -1 -1 -1", "", "0 -1 -1"]
    assert read(prefix + ".pos") == ["X X X X", "", "X X X"]
    settings = AnnotationSettings.read(prefix + ".annotation.json")
    assert (settings.backend, settings.extra) == ("chain", {"chain_label": "nx"})
    # raw text at inference: the backend rebuilt from the recorded settings gives the same lines
    annotated = OnlineAnnotator(settings).annotate(lines)
    for name in ("dep", "head", "pos", "case", "subword"):
        assert [a.streams[name] for a in annotated] == read(f"{prefix}.{name}"), name
    assert [a.source for a in annotated] == read(prefix + ".en")
    # its setting is part of the settings: a rerun with another label is refused
    with pytest.raises(ValueError, match="'chain_label' differs: 'nx' in the existing outputs, 'mod' in this run"):
        main([a if a != "nx" else "mod" for a in argv])
    # its option is its own, and its checks are one-line errors
    for bad, message in ((["--source", src, "--chain-label", "nx"], "--chain-label is only used with --backend chain"),
                         (["--source", src, "--backend", "chain"], "--backend chain needs --chain-label"),
                         (["--backend", "chain", "--chain-label", "nx"], "--backend chain needs --source")):
        with pytest.raises(SystemExit) as e:
            cli_main(["--src-lang", "en", "-o", str(tmp_path / "x"), "--subword", "none", *bad])
        assert e.value.code == 2
        assert capsys.readouterr().err.splitlines() == [f"syntax-nmt-annotate: error: {message}"]
    assert not os.path.exists(tmp_path / "x.en")
