"""scripts/average_checkpoints.py: which checkpoints "the last N" are (issue 56.4), on checkpoints written here in
fairseq's layout (``model``, ``optimizer_history[-1]["num_updates"]``)."""

import importlib.util
import os
import sys

import pytest
import torch

SCRIPT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "scripts", "average_checkpoints.py")


@pytest.fixture(scope="module")
def avg():
    spec = importlib.util.spec_from_file_location("average_checkpoints_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(path, updates):
    """A checkpoint whose one parameter is its number of updates."""
    torch.save({"model": {"w": torch.full((2,), float(updates)), "step": torch.tensor(updates)},
                "optimizer_history": [{"num_updates": updates}], "extra_state": {"updates": updates}}, path)


def _run(avg, argv, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["average_checkpoints.py", *argv])
    with pytest.raises(SystemExit) as e:
        avg.cli_main()
        raise SystemExit(0)
    return e.value.code, capsys.readouterr().err


def test_a_training_that_ends_between_two_saves_averages_its_final_state(avg, tmp_path, monkeypatch, capsys):
    """``AVERAGE=2 MAX_UPDATE=100 SAVE_INTERVAL=40``: fairseq saves updates 40 and 80, and ends at 100 in
    checkpoint_last.pt alone. The last 2 checkpoints are updates 100 and 80 (it averaged 80 and 40 before)."""
    for u in (40, 80):
        _save(tmp_path / f"checkpoint_1_{u}.pt", u)
    _save(tmp_path / "checkpoint_last.pt", 100)
    _save(tmp_path / "checkpoint_best.pt", 80)
    assert avg.last_n_checkpoints(str(tmp_path), 2, True) == [str(tmp_path / "checkpoint_last.pt"),
                                                              str(tmp_path / "checkpoint_1_80.pt")]
    out = tmp_path / "avg.pt"
    code, err = _run(avg, ["--inputs", str(tmp_path), "--num-update-checkpoints", "2", "--output", str(out)],
                     monkeypatch, capsys)
    assert code == 0 and "checkpoint_last.pt" in err
    state = torch.load(out)
    assert state["model"]["w"].tolist() == [90.0, 90.0] and state["extra_state"] == {"updates": 100}
    # three: the final state and the two saves
    assert avg.last_n_checkpoints(str(tmp_path), 3, True)[1:] == [str(tmp_path / f"checkpoint_1_{u}.pt")
                                                                  for u in (80, 40)]
    with pytest.raises(ValueError, match=r"found 3 update checkpoints .* need 4"):
        avg.last_n_checkpoints(str(tmp_path), 4, True)
    # an upper bound names the numbered checkpoints to use: the final state is not one of them
    assert avg.last_n_checkpoints(str(tmp_path), 2, True, upper_bound=80) == [
        str(tmp_path / "checkpoint_1_80.pt"), str(tmp_path / "checkpoint_1_40.pt")]


def test_a_final_state_that_was_saved_is_not_counted_twice(avg, tmp_path):
    for u in (40, 80):
        _save(tmp_path / f"checkpoint_1_{u}.pt", u)
    _save(tmp_path / "checkpoint_last.pt", 80)
    assert avg.last_n_checkpoints(str(tmp_path), 2, True) == [str(tmp_path / "checkpoint_1_80.pt"),
                                                              str(tmp_path / "checkpoint_1_40.pt")]
    os.remove(tmp_path / "checkpoint_last.pt")  # a directory without it: the numbered ones
    assert avg.last_n_checkpoints(str(tmp_path), 1, True) == [str(tmp_path / "checkpoint_1_80.pt")]


def test_epoch_checkpoints_and_a_last_partial_epoch(avg, tmp_path):
    """``--max-update`` in the middle of epoch 11: the epochs' checkpoints end at 10; the final state counts."""
    for epoch in (9, 10):
        _save(tmp_path / f"checkpoint{epoch}.pt", 100 * epoch)
    _save(tmp_path / "checkpoint_last.pt", 1050)
    _save(tmp_path / "checkpoint_1_500.pt", 500)  # an update checkpoint is not an epoch's
    assert avg.last_n_checkpoints(str(tmp_path), 2, False) == [str(tmp_path / "checkpoint_last.pt"),
                                                               str(tmp_path / "checkpoint10.pt")]


@pytest.mark.parametrize("option", ["--num-update-checkpoints", "--num-epoch-checkpoints"])
@pytest.mark.parametrize("value", ["-1", "0", "x"])
def test_a_number_below_one_is_refused_naming_the_option(avg, tmp_path, monkeypatch, capsys, option, value):
    """``-1`` averaged all but the newest (``paths[:-1]``); ``0`` read the directory as a checkpoint ("Is a
    directory")."""
    for u in (40, 80):
        _save(tmp_path / f"checkpoint_1_{u}.pt", u)
    out = tmp_path / "avg.pt"
    code, err = _run(avg, ["--inputs", str(tmp_path), option, value, "--output", str(out)], monkeypatch, capsys)
    expected = ("average 1 checkpoint or more" if value != "x" else "'x' is not a whole number")
    assert code == 2 and err.splitlines()[-1] == (f"average_checkpoints.py: error: argument {option}: "
                                                  f"{value}: {expected}" if value != "x" else
                                                  f"average_checkpoints.py: error: argument {option}: {expected}")
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["checkpoint_1_40.pt", "checkpoint_1_80.pt"]
    with pytest.raises(ValueError, match="give a number of checkpoints of 1 or more"):
        avg.last_n_checkpoints(str(tmp_path), int(value) if value != "x" else 0, True)


def test_a_directory_without_a_count_is_named(avg, tmp_path, monkeypatch, capsys):
    out = tmp_path / "avg.pt"
    code, err = _run(avg, ["--inputs", str(tmp_path), "--output", str(out)], monkeypatch, capsys)
    assert (code, err) == (2, f"average_checkpoints.py: error: --inputs {tmp_path} is a directory: give "
                              f"--num-epoch-checkpoints or --num-update-checkpoints, or checkpoint files\n")
    code, err = _run(avg, ["--inputs", str(tmp_path / "a.pt"), "--num-update-checkpoints", "1", "--output", str(out)],
                     monkeypatch, capsys)
    assert (code, err) == (2, "average_checkpoints.py: error: --num-*-checkpoints needs exactly one --inputs "
                              "directory\n")
    assert not out.exists()
