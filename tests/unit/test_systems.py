"""The one table of systems (syntax_nmt/systems.py) that the demo, the bench and the recipes read."""

import subprocess
import sys

import pytest

from conftest import build_task_and_model
from syntax_nmt import systems as S
from syntax_nmt.models.modules.methods import base as methods_base
from syntax_nmt.models.modules.methods.lisa import LisaAttention
from syntax_nmt.models.modules.methods.sla import SyntaxLocalAttention
from syntax_nmt.models.modules.methods.syntax_bert import SyntaxBertAttention
from syntax_nmt.targets import base as targets_base

CRIT = ["--criterion", "label_smoothed_cross_entropy_with_syntax"]


def test_the_default_comparison_and_each_systems_options():
    later = [n for n in methods_base.registered_methods() if n not in methods_base.BUILTIN]  # added since (none yet)
    assert S.default_systems() == ["transformer", "syntax-infused", "sgnet", "syntax+sgnet", "sla", "syntax_bert",
                                   "seprem", "lisa", *later, "all"]
    t = S.systems()
    assert t["transformer"].stock and t["transformer"].task == "translation" and t["transformer"].args() == []
    assert t["syntax-infused"].args() == ["--source-features", "pos,case,subword"]
    assert t["sgnet"].args() == ["--source-features", "", "--syntax-attention", "sgnet"]
    assert t["syntax+sgnet"].args() == ["--source-features", "pos,case,subword", "--syntax-attention", "sgnet"]
    assert t["syntax_bert"].args() == ["--source-features", "", "--syntax-attention", "syntax_bert",
                                       "--syntax-bert-max-distance", "3"]
    assert t["seprem"].args() == ["--source-features", "", "--syntax-attention", "seprem", *CRIT,
                                  "--dp-loss-weight", "0.01", "--hp-loss-weight", "0.01"]
    assert t["lisa"].args() == ["--source-features", "", "--syntax-attention", "lisa", *CRIT,
                                "--lisa-loss-weight", "0.1"]
    data_only = [n for n, s in t.items() if s.target and not s.scheme.needs_syntax_model]  # interleaved (and later)
    assert "interleaved" in data_only
    assert all(s.task == "syntax_translation" for n, s in t.items() if n != "transformer" and n not in data_only)
    assert not t["syntax-concat"].default and not t["sgnet-ckpt"].default


def test_the_target_side_systems():
    """Outside the default comparison; target factors need the syntax task, model and criterion; interleaved tags
    are data for the stock model."""
    t = S.systems()
    # the target-side comparison, from the schemes' systems (the EN->FR recipe's default); a scheme added in a file
    # of its own (tests/integration's toys, none with a source method) joins it after the built-in ones alone
    later = [n for n, s in t.items() if s.target and s.target not in targets_base.BUILTIN]
    assert not any(t[n].methods for n in later)
    assert S.target_systems() == ["transformer", "factors", "interleaved", *later, "lisa", "lisa+factors"]
    assert not any(t[n].default for n in ("factors", "interleaved", "lisa+factors"))
    assert t["factors"].args() == ["--source-features", "", "--target-factors", "pos", "--target-factor-input", *CRIT]
    assert t["lisa+factors"].args() == ["--source-features", "", "--syntax-attention", "lisa", "--target-factors", "pos",
                                        "--target-factor-input", *CRIT, "--lisa-loss-weight", "0.1"]
    assert t["interleaved"].stock and t["interleaved"].task == "translation" and t["interleaved"].args() == []
    assert t["interleaved"].target == "tags" and not t["factors"].stock


def test_a_target_scheme_registered_later_joins_the_target_comparison_with_its_streams(monkeypatch, capsys):
    """The target-side comparison and the target streams the recipes binarize come from what a scheme declares
    (issue 57.2): its systems alone after the built-in ones alone, the source methods its other systems add each
    alone after lisa, those others last; ``shell`` gives its streams (SYSTEM_TARGET_STREAMS) and whether its tags
    are measured (SYSTEM_TAGS: it scores a stream)."""

    class Toy(targets_base.TargetScheme):
        """A toy scheme: case factors."""
        name = "toy"
        systems = (("toy-case", (), "case factors"), ("sgnet+toy", ("sgnet",), "SG-Net and case factors"),
                   ("lisa+toy", ("lisa",), "LISA and case factors"))
        needs_syntax_model = True
        train_args = ("--target-factors", "case")
        target_streams = ("case", "dep")
        scored_streams = ("case",)

    later = [n for n, s in S.systems().items() if s.target and s.target not in targets_base.BUILTIN]  # the toys'
    monkeypatch.setitem(targets_base.TARGET_SCHEMES, "toy", Toy)
    assert S.target_systems() == ["transformer", "factors", "interleaved", *later, "toy-case", "lisa", "sgnet",
                                  "lisa+factors", "sgnet+toy", "lisa+toy"]
    assert _cli(capsys, "list", "--target") == (0, "\n".join(S.target_systems()) + "\n", "")
    shell = _cli(capsys, "shell", "sgnet+toy")[1].splitlines()
    assert "SYSTEM_TARGET=toy" in shell and "SYSTEM_TARGET_STREAMS=case,dep" in shell and "SYSTEM_TAGS=1" in shell
    assert "SYSTEM_TARGET_STREAMS=pos" in _cli(capsys, "shell", "lisa+factors")[1].splitlines()
    assert "SYSTEM_TARGET_STREAMS=pos" in _cli(capsys, "shell", "interleaved")[1].splitlines()
    assert "SYSTEM_TARGET_STREAMS=''" in _cli(capsys, "shell", "lisa")[1].splitlines()
    monkeypatch.setattr(Toy, "scored_streams", ())
    assert "SYSTEM_TAGS=0" in _cli(capsys, "shell", "toy-case")[1].splitlines()


def test_all_gives_attention_methods_distinct_layers_and_needs_that_many():
    a = S.get("all")
    assert a.features and a.methods == ("sgnet", "sla", "syntax_bert", "seprem", "lisa")
    args = a.args()
    assert args[args.index("--sla-layers") + 1] == "0"
    assert args[args.index("--syntax-bert-layers") + 1] == "1"
    assert args[args.index("--lisa-layer") + 1] == "-1"
    assert args.count("--criterion") == 1
    assert a.min_encoder_layers == 3
    assert S.fit_encoder_layers(a, 2) == ["--encoder-layers", "3"] and S.fit_encoder_layers(a, 6) == []


def test_all_builds_with_one_method_per_layer(stream_bin):
    a = S.get("all")
    args = a.args()
    i = args.index("--criterion")
    _, model, _ = build_task_and_model(stream_bin, *args[:i], *S.fit_encoder_layers(a, 2))
    kinds = [type(layer.self_attn) for layer in model.encoder.layers]
    assert kinds == [SyntaxLocalAttention, SyntaxBertAttention, LisaAttention]
    assert model.encoder.layers[0].self_attn is not model.encoder.layers[1].self_attn


def test_a_method_registered_later_joins_the_table(monkeypatch):
    class Toy(methods_base.SyntaxMethod):
        """A toy method."""
        layers_option = "--toy-layers"
        replaces_attention = True
        system_args = ("--toy-strength", "2")
        system_losses = ("--toy-loss-weight", "0.5")
        extra_systems = (("toy-fast", ("--toy-fast",), "the toy, faster"),)
        bench_targets = {"toy": {"train_wps": 0.7}, "toy-fast": {"gen_sps": 0.8}}
        bench_max_targets = {"toy": {"model_mem_mib": 1.5}}
        length_targets = {"time": 0.6, "memory": 3.0, "ops": 1.4}

    before = S.get("all")
    monkeypatch.setitem(methods_base.SYNTAX_METHODS, "toy", Toy)
    table = S.systems()
    assert table["toy"].args() == ["--source-features", "", "--syntax-attention", "toy", "--toy-strength", "2",
                                   *CRIT, "--toy-loss-weight", "0.5"]
    assert "toy" in S.default_systems()
    # its extra system, outside the default comparison, and its targets: the benches judge it
    from syntax_nmt.bench import model as bench
    from syntax_nmt.bench import length as bl

    assert table["toy-fast"].args() == ["--source-features", "", "--syntax-attention", "toy", "--toy-fast",
                                        "--toy-strength", "2", *CRIT, "--toy-loss-weight", "0.5"]
    assert "toy-fast" not in S.default_systems() and S.extra_systems() == ["sgnet-ckpt", "toy-fast"]
    low, high = bench.targets()
    assert low["toy"] == {"train_wps": 0.7} and low["toy-fast"] == {"gen_sps": 0.8}
    assert high["toy"] == {"model_mem_mib": 1.5} and low["sgnet"] == {"train_wps": 0.9, "gen_sps": 0.95}
    rows = [{"system": "toy", "T": 256, "time_ratio": 0.5, "memory_ratio": 1.0, "ops_ratio": 1.5},
            {"system": "toy", "T": 512, "time_ratio": 0.9, "memory_ratio": 2.0}]
    assert bl.verdicts(rows) == {"toy": "MISSED: time 0.50x < 0.6x at T=256"}
    assert bl.ops_verdicts(rows) == {"toy": "MISSED: 1.50x > 1.4x"}
    # ``all`` is a fixed list: a new method leaves it (its options, layers and size) as published
    assert table["all"] == before and "toy" not in table["all"].methods
    assert "--toy-layers" not in table["all"].args() and table["all"].min_encoder_layers == 3


def test_names_aliases_and_errors():
    assert S.parse_systems("default") == S.default_systems() == S.parse_systems("")
    assert S.parse_systems("baseline,syntax syntax_sgnet,sgnet,sgnet") == ["transformer", "syntax-infused",
                                                                         "syntax+sgnet", "sgnet"]
    assert S.get("syntax_concat").name == "syntax-concat"
    with pytest.raises(ValueError, match=r"--systems: unknown systems \['bogus'\]; choose from transformer"):
        S.parse_systems("sgnet,bogus")
    with pytest.raises(KeyError, match="unknown system 'nope'"):
        S.get("nope")


def _cli(capsys, *args):
    """The command line's function in this process (its entry point runs once, below, as a subprocess)."""
    code = S._cli(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_shell_interface(capsys):
    assert _cli(capsys, "args", "syntax+sgnet") == (
        0, "--source-features pos,case,subword --syntax-attention sgnet\n", "")
    assert _cli(capsys, "args", "sgnet")[1] == "--source-features '' --syntax-attention sgnet\n"
    assert _cli(capsys, "task", "baseline")[1] == "translation\n"
    assert _cli(capsys, "min-encoder-layers", "all")[1] == "3\n"
    assert _cli(capsys, "list")[1].split() == S.default_systems()
    code, out, err = _cli(capsys, "args", "bogus")
    assert code == 2 and out == "" and err.startswith("python -m syntax_nmt.systems: error: unknown system 'bogus'")
    # the entry point, as the recipes' shell scripts run it: output and exit status
    bad = subprocess.run([sys.executable, "-m", "syntax_nmt.systems", "args", "bogus"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines()[-1].startswith("python -m syntax_nmt.systems: error: unknown system")


def test_demo_commands_come_from_the_table():
    from syntax_nmt.demo.settings import system_command

    assert system_command("transformer") == ("translation", "transformer_tiny", [])
    task, arch, extra = system_command("all")
    assert (task, arch) == ("syntax_translation", "syntax_transformer_tiny")
    assert extra == [*S.get("all").args(), "--encoder-layers", "3"]
    assert system_command("all", layers=6)[2] == S.get("all").args()


def test_the_docs_state_the_seprem_systems_loss_weights():
    """The SEPREM deviation of the methods page (docs/methods.md, moved there from the README) gives the DP and HP
    weights of the table's seprem and all systems (those the demo and the bench train with)."""
    import os
    import re

    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "methods.md"), encoding="utf-8").read()
    m = re.search(r"gives its\s+`seprem` and `all` systems ([0-9.]+) each", page)
    assert m, "docs/methods.md's sentence on the seprem systems' loss weights is gone"
    for name in ("seprem", "all"):
        args = S.get(name).args()
        for option in ("--dp-loss-weight", "--hp-loss-weight"):
            assert args[args.index(option) + 1] == m.group(1), (name, option)
