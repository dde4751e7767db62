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
    assert tr.updates_of(RESUMED_LOG) == {"start_update": 1200, "end_update": 1600}
    assert tr.updates_of("epoch 001 | loss 9 | num_updates 64 |\n") == {"start_update": 0, "end_update": 64}
    assert tr.updates_of("") == {"start_update": 0, "end_update": 0}


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
