"""``python -m syntax_nmt.bench`` (``make bench``): ``--compile`` trains the syntax systems with ``--syntax-compile``
(the stock transformer stays eager), ``--no-memory`` skips the memory process, rows record their device, and
``bench.json`` is written after every system (a run cut short keeps what it measured)."""

import json
import math

import pytest

from syntax_nmt.bench import model as bm


def _args(tmp_path, *argv):
    return bm.get_parser().parse_args(["--out", str(tmp_path / "bench"), *argv])


def test_compile_adds_syntax_compile_to_the_syntax_systems_only(tmp_path):
    bench = bm.Bench(_args(tmp_path, "--compile", "--compile-mode", "reduce-overhead"))
    assert "--syntax-compile" not in bench.system_command("transformer")[2]
    for name in ("lisa", "all", "syntax-infused"):
        extra = bench.system_command(name)[2]
        assert extra[-3:] == ["--syntax-compile", "--syntax-compile-mode", "reduce-overhead"], name
    eager = bm.Bench(_args(tmp_path))
    assert "--syntax-compile" not in eager.system_command("lisa")[2]


def test_fairseq_train_accepts_the_compiled_command_line(tmp_path):
    """The options the bench gives fairseq-train for a compiled syntax system parse (no training here)."""
    from fairseq import options

    from syntax_nmt import register_with_fairseq
    from syntax_nmt.utils import user_dir

    register_with_fairseq()
    bench = bm.Bench(_args(tmp_path, "--compile"))
    task, arch, extra = bench.system_command("syntax_bert")
    argv = [str(tmp_path), "--user-dir", user_dir(), "--task", task, "--arch", arch, *bm.OPTIM_ARGS,
            *map(str, extra), *map(str, bench.model_args()), "--fp16"]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    assert args.syntax_compile is True and args.syntax_compile_mode == "default"


def _fake_commands(monkeypatch, calls):
    def run_measured(cmd, log):
        calls.append([str(c) for c in cmd])
        with open(log, "w") as f:
            f.write("| INFO | train | epoch 001 | loss 9 | wps 1000.5 | ups 1 | num_updates 4\n"
                    "Translated 10 sentences (40 tokens) in 1.0s (12.50 sentences/s, 50 tokens/s)\n")
        return {"seconds": 1.0, "max_rss_mib": 100.0}

    def run(cmd, **kw):
        calls.append([str(c) for c in cmd])
        raise AssertionError("--no-memory runs no memory process")

    monkeypatch.setattr(bm, "_run_measured", run_measured)
    monkeypatch.setattr(bm.subprocess, "run", run)
    monkeypatch.setattr(bm, "count_params", lambda path: 1000)


def test_no_memory_runs_no_memory_process_and_rows_record_the_device(tmp_path, monkeypatch):
    calls = []
    _fake_commands(monkeypatch, calls)
    bench = bm.Bench(_args(tmp_path, "--no-memory", "--compile", "--max-update", "4"))
    row = bench.measure("lisa")
    assert not any("syntax_nmt.bench.memory" in c for cmd in calls for c in cmd)
    assert "--syntax-compile" in calls[0]  # fairseq-train
    assert math.isnan(row["model_mem_mib"])
    assert row["device"] in ("cpu", "cuda") and row["device_name"] and row["precision"] == "fp32"
    assert row["compiled"] is True and row["compile_mode"] == "default"
    assert "4 updates of 4096 tokens" in row["setup"]
    stock = bench.measure("transformer")
    assert stock["compiled"] is False and "compile_mode" not in stock


def test_bench_json_is_written_after_every_system(tmp_path, monkeypatch):
    done = []

    def measure(self, name):
        if len(done) == 2:
            raise KeyboardInterrupt  # the run is cut during the third system
        done.append(name)
        return {"system": name, "train_wps": 100.0 * len(done), "gen_sps": 10.0, "model_mem_mib": 1.0,
                "peak_rss_mib": 1.0, "params": 1}

    for step in ("corpus", "annotate", "binarize", "header"):
        monkeypatch.setattr(bm.Bench, step, lambda self, *a: None)
    monkeypatch.setattr(bm.Bench, "measure", measure)
    args = _args(tmp_path, "--no-raw-text", "--systems", "transformer,lisa,sla")
    from syntax_nmt.systems import parse_systems

    args.systems = parse_systems(args.systems)
    with pytest.raises(KeyboardInterrupt):
        bm.Bench(args).main()
    rows = json.loads((tmp_path / "bench" / "bench.json").read_text())
    assert [r["system"] for r in rows] == ["transformer", "lisa"]
    assert [r["train_wps_ratio"] for r in rows] == [1.0, 2.0]
