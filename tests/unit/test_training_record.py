"""The recipes' training records (syntax_nmt/recipes/training_record.py) and the budget curve's points."""

import json

import pytest

from syntax_nmt.recipes import training_record as tr
from syntax_nmt.recipes.budget_curve import Point

RESUMED_LOG = ("2026-11-27 | INFO | fairseq.checkpoint_utils | Loaded checkpoint /x/checkpoint_last.pt "
               "(epoch 3 @ 1200 updates)\n"
               "2026-11-27 | INFO | train_inner | epoch 003:  100 / 400 loss=4.1, num_updates=1300\n"
               "2026-11-27 | INFO | train | epoch 003 | loss 4.0 | num_updates 1600 | lr 0.001\n")


def test_updates_of_a_resumed_and_a_fresh_log():
    assert tr.updates_of(RESUMED_LOG) == {"start_update": 1200, "end_update": 1600, "updates_run": 400}
    assert tr.updates_of("epoch 001 | loss 9 | num_updates 64 |\n") == {"start_update": 0, "end_update": 64,
                                                                        "updates_run": 64}
    assert tr.updates_of("") == {"start_update": 0, "end_update": 0, "updates_run": 0}


def _part(save, wall, cpu, status, log, **settings):
    part = {"wall_seconds": wall, "cpu_seconds": cpu, "status": status, **tr.updates_of(log),
            "environment": {"device": "cpu (x, avx2)", "threads": 1, "torch": "2.13.0"}, "settings": settings}
    with open(save / "parts.jsonl", "a") as f:
        f.write(json.dumps(part) + "\n")


def test_done_sums_every_part_and_names_the_resumptions(tmp_path):
    _part(tmp_path, 100.0, 90.0, 137, "num_updates 1250\n", MAX_UPDATE="1600")
    _part(tmp_path, 30.0, 25.0, 0, RESUMED_LOG, MAX_UPDATE="1600")
    rec = tr.finish(str(tmp_path))
    assert rec["wall_seconds"] == 130.0 and rec["cpu_seconds"] == 115.0 and rec["parts"] == 2
    assert rec["resumed_from"] == [1200] and rec["updates"] == 1600 and rec["unrecorded_before_updates"] == []
    assert rec["updates_run"] == 1250 + 400  # every part's: the first ran to 1250, the resumed one 1200 -> 1600
    assert json.loads((tmp_path / ".done").read_text()) == rec
    assert tr.describe(rec)["resumed"] == "from update 1200"


def test_an_attempt_that_left_no_record_is_said(tmp_path):
    """A first attempt killed with the recipe itself wrote no part: the resumed part starts at 1200 and the time
    before it is missing, which the record says instead of passing the part's time for the whole training's."""
    _part(tmp_path, 30.0, 25.0, 0, RESUMED_LOG)
    rec = tr.finish(str(tmp_path))
    assert rec["unrecorded_before_updates"] == [1200]
    assert "not recorded" in tr.describe(rec)["resumed"]


def test_no_done_after_a_failed_last_attempt(tmp_path):
    _part(tmp_path, 30.0, 25.0, 1, "")
    with pytest.raises(ValueError, match="did not succeed"):
        tr.finish(str(tmp_path))
    assert not (tmp_path / ".done").exists()


def test_changed_settings_name_each_change_and_ignore_old_records():
    rec = {"settings": {"MAX_UPDATE": "1600", "LR": "0.005"}}
    assert tr.changed_settings(rec, {"MAX_UPDATE": "6400", "LR": "0.005", "NEW": "1"}) == ["MAX_UPDATE: 1600 -> 6400"]
    assert tr.changed_settings({"wall_seconds": 1.0}, {"MAX_UPDATE": "6400"}) == []


def test_differences_name_the_field_and_the_runs():
    a = {"environment": {"device": "cpu (x, avx2)", "threads": 1, "torch": "2.13.0"}, "resumed_from": []}
    b = {"environment": {"device": "cpu (x, avx2)", "threads": 2, "torch": "2.13.0"}, "resumed_from": [400]}
    old = {"wall_seconds": 3.0}
    diffs = tr.differences({"t1": a, "t2": b, "old": old})
    assert "threads: 1 (t1); 2 (t2); not recorded (old)" in diffs
    assert "resumed: no (t1); from update 400 (t2); not recorded (old)" in diffs
    assert not any(d.startswith("torch:") and "(t1, t2)" not in d for d in diffs)
    assert tr.differences({"t1": a, "t1 again": dict(a)}) == []
    assert tr.common({"t1": a, "t2": b})["torch"] == "2.13.0" and "threads" not in tr.common({"t1": a, "t2": b})


def test_the_settings_check_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / ".done").write_text(json.dumps({"settings": {"MAX_UPDATE": "1600"}}))
    assert tr.main(["check", str(tmp_path), "--setting=MAX_UPDATE=1600"]) == 0
    with pytest.raises(SystemExit) as e:
        tr.main(["check", str(tmp_path), "--setting=MAX_UPDATE=6400"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "MAX_UPDATE: 1600 -> 6400" in err


def test_the_parser_of_a_data_directory_names_the_model_and_its_version(tmp_path):
    model = tmp_path / "my-parser"
    model.mkdir()
    (model / "meta.json").write_text(json.dumps({"lang": "en", "name": "core_web_sm", "version": "3.8.0"}))
    (tmp_path / "annotation.json").write_text(json.dumps({"backend": "spacy", "spacy_model": str(model)}))
    assert tr.parser_of(str(tmp_path)) == "spacy en_core_web_sm 3.8.0"
    (tmp_path / "annotation.json").write_text(json.dumps({"backend": "conllu", "spacy_model": None}))
    assert tr.parser_of(str(tmp_path)) == "conllu"
    assert tr.parser_of(str(tmp_path / "nowhere")) is None


@pytest.mark.parametrize("text,error", [
    ("1x:1600:2048:transformer:lisa", "LABEL:UPDATES:TOKENS"),
    ("1x:many:2048:transformer:lisa:1", "must be integers"),
    ("1x:1600:2048:transformer:lisa:1 1", "distinct"),
    ("1x:1600:2048:transformer:lisa:", "distinct"),
])
def test_budget_points_refuse_what_they_cannot_read(text, error):
    with pytest.raises(ValueError, match=error):
        Point.parse(text)


def test_a_budget_point():
    p = Point.parse("4x:6400:2048:transformer-6400:lisa-6400:1,2")
    assert (p.updates, p.tokens, p.baseline, p.system, p.seeds) == (6400, 2048, "transformer-6400", "lisa-6400", (1, 2))
    assert p.million_tokens == pytest.approx(13.1072)


def test_an_environment_that_changed_between_the_parts_reaches_the_tables(tmp_path):
    """Issue 56.5: a training resumed on other threads showed only the last part's threads (``environment_changed``
    was recorded and read nowhere): the records' lines of the tables say the value changed."""
    from syntax_nmt.recipes import report

    _part(tmp_path, 100.0, 90.0, 137, "num_updates 1250\n")
    part = {"wall_seconds": 30.0, "cpu_seconds": 25.0, "status": 0, **tr.updates_of(RESUMED_LOG),
            "environment": {"device": "cpu (x, avx2)", "threads": 2, "torch": "2.13.0"}, "settings": {}}
    with open(tmp_path / "parts.jsonl", "a") as f:
        f.write(json.dumps(part) + "\n")
    rec = tr.finish(str(tmp_path))
    assert rec["environment_changed"] == ["threads"]
    described = tr.describe(rec)
    assert described["threads"] == "2 in its last part (changed when it was resumed)"
    assert described["device"] == "cpu (x, avx2)"
    ckpt = tmp_path / "ckpt"
    for seed, record in ((1, rec), (2, dict(rec, environment_changed=[]))):
        (ckpt / "lisa" / f"seed{seed}").mkdir(parents=True)
        (ckpt / "lisa" / f"seed{seed}" / ".done").write_text(json.dumps(record))
    lines = report.run_records_lines(str(ckpt), ["lisa"], [1, 2])
    assert "- threads: 2 in its last part (changed when it was resumed) (lisa seed 1); 2 (lisa seed 2)" in lines


#: the line fairseq-train (0.12) logs at its start: its arguments as a dict (cut to the precision flags)
FAIRSEQ_ARGS = ("2026-11-27 01:45:21 | INFO | fairseq_cli.train | {'_name': None, 'common': {'_name': None, "
                "'cpu': False, 'tpu': False, 'bf16': %s, 'memory_efficient_bf16': %s, 'fp16': %s, "
                "'memory_efficient_fp16': %s, 'fp16_no_flatten_grads': False, 'fp16_init_scale': 128, 'amp': %s, "
                "'amp_batch_retries': 2}}\n")


@pytest.mark.parametrize("flags,precision", [
    ((False, False, False, False, False), "fp32"),
    ((True, False, False, False, False), "bf16"),
    ((False, True, False, False, False), "bf16"),
    ((False, False, True, False, False), "fp16"),
    ((False, False, False, True, False), "fp16"),
    ((False, False, False, False, True), "amp"),
])
def test_the_precision_is_read_from_the_arguments_fairseq_logs(flags, precision):
    assert tr.precision_of("warning: x\n" + FAIRSEQ_ARGS % flags + "num_updates 3\n") == precision


def test_the_precision_of_an_older_fairseqs_namespace_and_of_a_log_without_arguments():
    assert tr.precision_of("Namespace(arch='transformer', fp16=True, fp16_init_scale=128, cpu=False)\n") == "fp16"
    assert tr.precision_of("Namespace(arch='transformer', memory_efficient_fp16=True, fp16=False)\n") == "fp16"
    assert tr.precision_of("Namespace(arch='transformer', fp16=False, bf16=False, amp=False)\n") == "fp32"
    assert tr.precision_of("epoch 001 | loss 9 | num_updates 64 |\n") is None
    assert tr.precision_of("") is None


def _cpuinfo():
    """The first ``model name`` and ``flags`` of /proc/cpuinfo, read here on their own."""
    model = flags = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model is None:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and flags is None:
                flags = line.split(":", 1)[1].split()
    return model, flags


def test_a_part_records_cpu_isa_precision_threads_and_the_updates_it_ran(tmp_path):
    """Issue 54: each part names the CPU model, its widest vector instructions, torch's CPU code path, the threads
    (torch's in the recording process unless given), the precision from the training's arguments and the updates
    it ran; .done sums the updates over the parts."""
    import torch

    if not __import__("os").path.exists("/proc/cpuinfo"):
        pytest.skip("no /proc/cpuinfo")
    model, flags = _cpuinfo()
    log = FAIRSEQ_ARGS % (False, False, True, False, False) + RESUMED_LOG
    part = tr.add_part(str(tmp_path), 30.0, 25.0, 0, log, None, "cpu", settings={"MAX_UPDATE": "1600"})
    env = part["environment"]
    assert env["cpu"] == (model or "unknown model")
    widest = next((f for f in ("amx_tile", "avx512f", "avx2", "asimd") if f in (flags or [])), None)
    assert env["isa"] == widest
    assert env["device"] == f"cpu ({env['cpu']}{', ' + widest if widest else ''})"
    assert env["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["threads"] == torch.get_num_threads() and env["precision"] == "fp16"
    assert (part["start_update"], part["end_update"], part["updates_run"]) == (1200, 1600, 400)
    assert tr.add_part(str(tmp_path), 1.0, 1.0, 0, RESUMED_LOG, 7, "cpu")["environment"]["threads"] == 7
    assert tr.read_parts(str(tmp_path))[0] == json.loads(json.dumps(part))
    assert tr.finish(str(tmp_path))["updates_run"] == 800


def test_records_older_than_a_field_stay_readable(tmp_path):
    """A part written before updates_run existed counts its end less its start; a record without the new fields
    says ``not recorded`` for them, and a field that no record holds is named neither as shared nor as a
    difference."""
    old = {"wall_seconds": 5.0, "cpu_seconds": 4.0, "status": 0, "start_update": 400, "end_update": 1000,
           "environment": {"device": "cpu", "threads": 1, "torch": "2.13.0"}, "settings": {}}
    (tmp_path / "parts.jsonl").write_text(json.dumps(old) + "\n")
    rec = tr.finish(str(tmp_path))
    assert rec["updates_run"] == 600 and rec["updates"] == 1000
    d = tr.describe(rec)
    assert (d["cpu"], d["isa"], d["precision"], d["threads"], d["device"]) == (
        "not recorded", "not recorded", "not recorded", "1", "cpu")
    new = {"environment": {"device": "cpu (x, avx2)", "cpu": "x", "isa": "avx2", "threads": 1, "torch": "2.13.0",
                           "precision": "fp32"}, "resumed_from": []}
    assert tr.common({"a": rec, "b": rec}) == {
        "device": "cpu", "threads": "1", "torch": "2.13.0",
        "resumed": "from update 400 (time of an attempt before update(s) 400 not recorded)"}
    diffs = tr.differences({"old": rec, "new": new})
    assert "precision: not recorded (old); fp32 (new)" in diffs and "cpu: not recorded (old); x (new)" in diffs
    assert not any(d.startswith("torch_cpu_capability") for d in diffs)
    assert tr.common({}) == {} and tr.differences({}) == []


def test_the_recorded_threads_are_torchs_in_the_environment_the_recorder_was_started_with(tmp_path):
    """Issue 61: without --threads, ``part`` records torch.get_num_threads() of its own process, which the recipe
    starts in the training's environment: OMP_NUM_THREADS=N there is torch's count for N in the record (N, or the
    cores where N is more), whatever the recipe's JOBS."""
    import os
    import subprocess
    import sys

    (tmp_path / "times.txt").write_text("0m0.000s 0m0.000s\n0m1.500s 0m0.500s\n")
    (tmp_path / "log.txt").write_text("num_updates 5\n")
    seen = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads, JOBS="3")
        proc = subprocess.run([sys.executable, "-m", "syntax_nmt.recipes.training_record", "part", str(tmp_path),
                               "--wall", "3", "--times", str(tmp_path / "times.txt"), "--status", "0", "--log",
                               str(tmp_path / "log.txt"), "--device", "cpu"], env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
    two = int(subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"], env=env,
                             capture_output=True, text=True, check=True).stdout)  # 2, or 1 on a 1-core machine
    parts = tr.read_parts(str(tmp_path))
    assert [p["environment"]["threads"] for p in parts] == [1, two]
    assert parts[0]["cpu_seconds"] == 2.0 and parts[0]["updates_run"] == 5


def test_the_part_command_in_process_reads_bash_times_and_the_log(tmp_path, monkeypatch):
    """``part`` reads the children's CPU time from bash's ``times`` (its second line: user and system, minutes and
    seconds), the attempt's log (updates, precision) and its options; ``done`` sums the parts."""
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    (tmp_path / "times.txt").write_text("0m0.010s 0m0.020s\n1m2.500s 0m0.250s\n")
    (tmp_path / "log.txt").write_text(FAIRSEQ_ARGS % (True, False, False, False, False) + "num_updates 9\n")
    common = ["--times", str(tmp_path / "times.txt"), "--status", "0", "--log", str(tmp_path / "log.txt"),
              "--device", "cpu", "--setting", "MAX_UPDATE=9"]
    assert tr.main(["part", str(tmp_path), "--wall", "70.5", *common]) == 0
    assert tr.main(["part", str(tmp_path), "--wall", "1", "--threads", "3", *common]) == 0
    assert tr.cpu_seconds(str(tmp_path / "times.txt")) == 62.75
    first, second = tr.read_parts(str(tmp_path))
    assert (first["wall_seconds"], first["cpu_seconds"], first["status"], first["updates_run"]) == (70.5, 62.75, 0, 9)
    assert first["environment"]["threads"] == torch.get_num_threads() and second["environment"]["threads"] == 3
    assert first["environment"]["precision"] == "bf16" and first["settings"] == {"MAX_UPDATE": "9"}
    assert tr.main(["done", str(tmp_path)]) == 0
    assert json.loads((tmp_path / ".done").read_text())["cpu_seconds"] == 125.5
    with pytest.raises(SystemExit) as e:
        tr.main(["part", str(tmp_path), "--wall", "1", *common[:-2], "--setting", "novalue"])
    assert e.value.code == 2 and len(tr.read_parts(str(tmp_path))) == 2


def test_settings_and_model_versions_of_every_form(tmp_path):
    """NAME=VALUE splits at the first '=' (a value may hold more), a missing '=' or NAME is refused naming the item;
    a pipeline's version from its meta.json (without a language: its name alone) or its installed distribution
    (its package name with '-' for '_'), else 'version unknown'."""
    from importlib import metadata

    assert tr.parse_settings(["A=b=c", "E=", "A2=x"]) == {"A": "b=c", "E": "", "A2": "x"}
    for bad in ("=x", "novalue"):
        with pytest.raises(ValueError, match=f"--setting takes NAME=VALUE, got '{bad}'"):
            tr.parse_settings([bad])
    model = tmp_path / "_parser_"
    model.mkdir()
    (model / "meta.json").write_text(json.dumps({"name": "core_x_", "version": "1.0"}))
    assert tr.model_version(str(model)) == "core_x_ 1.0"
    (model / "meta.json").write_text(json.dumps({"lang": "_en", "version": "2.0"}))
    assert tr.model_version(str(model)) == "en_ 2.0"
    assert tr.model_version("typing_extensions") == f"typing_extensions {metadata.version('typing-extensions')}"
    assert tr.model_version("no_such_pipeline_x") == "no_such_pipeline_x (version unknown)"


def test_the_commands_help_says_what_each_option_is(capsys):
    """The help of every subcommand and option (python -m syntax_nmt.recipes.training_record -h)."""
    import re

    def help_of(*argv):
        with pytest.raises(SystemExit) as e:
            tr.main([*argv, "-h"])
        assert e.value.code == 0
        return re.sub(r"\s+", " ", capsys.readouterr().out)

    top = help_of()
    assert top.startswith("usage: python -m syntax_nmt.recipes.training_record [-h] {part,done,check} ...")
    assert "What a recipe's training leaves beside its checkpoints, so that a table can say what it was built " \
           "from." in top
    for text in ("record one attempt (appended to SAVE/parts.jsonl)", "write SAVE/.done from the parts",
                 "exit 2, naming the change, if SAVE/.done was made with other settings"):
        assert text in top
    part = help_of("part")
    for text in ("--times TIMES bash `times` output of the attempt", "--log LOG the attempt's fairseq-train output",
                 "--threads THREADS the training's torch threads (default: torch.get_num_threads() in this process: "
                 "run it in the training's environment)", "--device {cpu,cuda}",
                 "--data DATA the data directory (its annotation.json names the parser)", "--setting NAME=VALUE",
                 "--wall WALL", "--status STATUS"):
        assert text in part
    assert "--setting NAME=VALUE" in help_of("check") and "save" in help_of("done")
    with pytest.raises(SystemExit) as e:
        tr.main([])
    assert e.value.code == 2 and "the following arguments are required: command" in capsys.readouterr().err


def test_the_precision_line_is_the_arguments_not_any_line_naming_fp16():
    log = "warning: fp16 is not used on a CPU\n" + FAIRSEQ_ARGS % (True, False, False, False, False)
    assert tr.precision_of(log) == "bf16"


def test_one_record_shares_everything_it_holds():
    rec = {"environment": {"device": "cpu (x, avx2)", "threads": 1}, "resumed_from": []}
    assert tr.common({"only": rec}) == {"device": "cpu (x, avx2)", "threads": "1", "resumed": "no"}


@pytest.mark.parametrize("option", ["--wall", "--times", "--status", "--log", "--device"])
def test_each_required_option_of_part_is_required(option, tmp_path, capsys):
    given = {"--wall": "1", "--times": "t", "--status": "0", "--log": "l", "--device": "cpu"}
    argv = ["part", str(tmp_path)] + [x for k, v in given.items() if k != option for x in (k, v)]
    with pytest.raises(SystemExit) as e:
        tr.main(argv)
    assert e.value.code == 2 and f"the following arguments are required: {option}" in capsys.readouterr().err
    assert not (tmp_path / "parts.jsonl").exists()


def test_the_help_lists_each_subcommand_with_its_own_line(capsys):
    import re

    with pytest.raises(SystemExit):
        tr.main(["-h"])
    top = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert ("{part,done,check} part record one attempt (appended to SAVE/parts.jsonl) done write SAVE/.done from "
            "the parts check exit 2, naming the change, if SAVE/.done was made with other settings options:") in top
    assert "Each attempt" not in top  # the description is the docstring's first paragraph only
    with pytest.raises(SystemExit):
        tr.main(["part", "-h"])
    part = re.sub(r"\s+", " ", capsys.readouterr().out)
    assert "--times TIMES bash `times` output of the attempt --status STATUS --log LOG the attempt's " \
           "fairseq-train output --threads THREADS" in part


def test_a_pipeline_whose_language_starts_like_the_separator(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "meta.json").write_text(json.dumps({"lang": "Xx", "name": "core", "version": "3"}))
    assert tr.model_version(str(model)) == "Xx_core 3"


def test_a_part_names_the_parser_of_its_data_in_one_json_line_with_sorted_keys(tmp_path):
    """The part records the parser of the data directory it trained on (None without one), and parts.jsonl holds
    each part as one JSON line with its keys sorted at every level."""
    data, save = tmp_path / "data", tmp_path / "save"
    data.mkdir(), save.mkdir()
    (data / "annotation.json").write_text(json.dumps({"backend": "conllu", "spacy_model": None}))
    part = tr.add_part(str(save), 2.0, 1.5, 0, RESUMED_LOG, 3, "cpu", data=str(data))
    assert part["environment"]["parser"] == "conllu"
    assert tr.add_part(str(save), 2.0, 1.5, 0, RESUMED_LOG, 3, "cpu")["environment"]["parser"] is None
    lines = (save / "parts.jsonl").read_text().split("\n")
    assert len(lines) == 3 and lines[2] == ""
    assert lines[0] == json.dumps(part, sort_keys=True) and lines[0] != json.dumps(part)
    assert list(json.loads(lines[0])) == sorted(part) and list(json.loads(lines[0])["environment"]) == sorted(
        part["environment"])


def test_done_counts_each_gap_each_resumption_and_the_updates_each_part_ran(tmp_path):
    """Three parts, each starting after updates no part recorded (the first at update 1): every gap is named,
    including the last part's, every start above 0 is a resumption, a part's own updates_run counts over its end less
    its start (an older part without it: end less start), and .done keeps the last part's settings."""
    parts = [{"start_update": 1, "end_update": 100, "updates_run": 99, "settings": {"MAX_UPDATE": "100"}},
             {"start_update": 150, "end_update": 200, "updates_run": 30, "settings": {"MAX_UPDATE": "200"}},
             {"start_update": 250, "end_update": 300, "settings": {"MAX_UPDATE": "300"}}]
    with open(tmp_path / "parts.jsonl", "w") as f:
        for p in parts:
            f.write(json.dumps({"wall_seconds": 1.0, "cpu_seconds": 1.0, "status": 0, "environment": {}, **p}) + "\n")
    record = tr.finish(str(tmp_path))
    assert record["unrecorded_before_updates"] == [1, 150, 250]
    assert record["resumed_from"] == [1, 150, 250]
    assert record["updates_run"] == 99 + 30 + 50 and record["updates"] == 300 and record["parts"] == 3
    assert record["settings"] == {"MAX_UPDATE": "300"}
    assert json.loads((tmp_path / ".done").read_text()) == record
