"""The recipes' training steps around fairseq-train (issue 56.4, 56.5): a training that ended is not trained again
by a retry of train.sh (fairseq-train resumed at update 100 of 100 takes update 101), the averaging's errors land in
train.log, and run_all.sh's progress lines read fairseq's in-epoch updates."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "examples" / "multi30k_en_de"


def _train(tmp_path, cache, **env):
    """Run the Multi30k recipe's train.sh with a stand-in trainer that counts its runs (one line each in CALLS) and
    saves no checkpoint."""
    fake = tmp_path / "fake-train"
    fake.write_text('#!/usr/bin/env bash\necho "trained: $*" >> "$CALLS"\necho "epoch 001 | num_updates 100"\n')
    fake.chmod(0o755)
    full = dict(os.environ, DATA=str(tmp_path / "bin"), SAVE=str(tmp_path / "ckpt"), FAIRSEQ_TRAIN=str(fake),
                CALLS=str(tmp_path / "calls"), USER_DIR="/plugin", SYSTEMS_CACHE=str(cache), PYTHON=sys.executable,
                SYSTEMS_PYTHON=sys.executable, CPU="1", TINY="1", MAX_UPDATE="100", SAVE_INTERVAL="40",
                AVERAGE="0", PYTHONPATH=str(ROOT))
    full.update(env)
    return subprocess.run(["bash", str(RECIPE / "train.sh"), "transformer", "--num-workers", "0"], env=full,
                          capture_output=True, text=True)


def _calls(tmp_path):
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_a_training_that_ended_is_not_trained_again(tmp_path, systems_cache):
    """A second run of the same command line (a retry after a failed averaging, or by hand) trained update 101 of
    100 and rewrote checkpoint_last.pt and checkpoint_best.pt: now it says so and does not call fairseq-train.
    Another command line (MAX_UPDATE raised) trains on."""
    first = _train(tmp_path, systems_cache)
    assert first.returncode == 0, first.stderr
    assert len(_calls(tmp_path)) == 1
    again = _train(tmp_path, systems_cache)
    assert again.returncode == 0, again.stderr
    assert len(_calls(tmp_path)) == 1
    note = (f"train.sh: the training in {tmp_path / 'ckpt'} ended at num_updates 100 with this command line "
            f"({tmp_path / 'ckpt' / '.train_ended'}): not trained again")
    assert again.stdout.splitlines() == [note]
    assert (tmp_path / "ckpt" / "train.log").read_text().splitlines()[-1] == note
    # the recipe's training record reads the update from it: the retry trained nothing, from update 0 to 100
    from syntax_nmt.recipes.training_record import updates_of

    assert updates_of(again.stdout) == {"start_update": 0, "end_update": 100, "updates_run": 100}
    longer = _train(tmp_path, systems_cache, MAX_UPDATE="200")
    assert longer.returncode == 0, longer.stderr
    calls = _calls(tmp_path)
    assert len(calls) == 2 and "--max-update 200" in calls[1]


def test_a_failed_training_is_not_marked_ended(tmp_path, systems_cache):
    fake = tmp_path / "failing"
    fake.write_text('#!/usr/bin/env bash\necho "trained" >> "$CALLS"\nexit 3\n')
    fake.chmod(0o755)
    for _ in range(2):
        proc = _train(tmp_path, systems_cache, FAIRSEQ_TRAIN=str(fake))
        assert proc.returncode == 3
    assert len(_calls(tmp_path)) == 2 and not (tmp_path / "ckpt" / ".train_ended").exists()


def test_the_averaging_error_is_in_train_log_and_a_retry_trains_nothing(tmp_path, systems_cache):
    """``AVERAGE=3`` with fewer checkpoints saved: the error (clear) was only in stdout.log, where run_all.sh pointed
    at train.log; the retry trained one update more. Now it is in train.log and the retry only averages again."""
    proc = _train(tmp_path, systems_cache, AVERAGE="3")
    assert proc.returncode == 2
    log = (tmp_path / "ckpt" / "train.log").read_text()
    assert "average_checkpoints.py: error: found 0 update checkpoints" in log and "need 3" in log
    retry = _train(tmp_path, systems_cache, AVERAGE="3")
    assert retry.returncode == 2 and len(_calls(tmp_path)) == 1
    assert (tmp_path / "ckpt" / "train.log").read_text().count("average_checkpoints.py: error: found 0") == 2
    assert not (tmp_path / "ckpt" / "checkpoint_avg.pt").exists()


def _logged_update(log_text, tmp_path):
    """run_all.sh's ``logged_update`` on a log holding ``log_text``."""
    log = tmp_path / "stdout.log"
    log.write_text(log_text)
    script = f"source <(sed -n '/^logged_update() {{/,/^}}/p' {RECIPE / 'run_all.sh'}); logged_update {log}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("text,expected", [
    # fairseq-train --log-format simple: in-epoch lines every --log-interval updates, "key=value, ..."
    ("2026-11-28 | INFO | fairseq.trainer | Loaded checkpoint x/checkpoint_last.pt (epoch 2 @ 227 updates)\n"
     "2026-11-28 | INFO | train_inner | epoch 002:     73 / 227 loss=6.1, nll_loss=4.9, num_updates=300, lr=0.0005\n",
     "300\n"),
    # the end of an epoch: "key value | ..."
    ("epoch 001:    100 / 227 loss=9.1, num_updates=100, lr=0.0001\n"
     "epoch 001 | loss 8.9 | nll_loss 8.5 | num_updates 227 | lr 0.0002\n", "227\n"),
    ("Loaded checkpoint x/checkpoint_last.pt (epoch 2 @ 227 updates)\n", "227\n"),
    ("no update yet\n", ""),
])
def test_progress_reads_fairseqs_in_epoch_updates(tmp_path, text, expected):
    """The progress and ETA lines read only "num_updates N" (the end of an epoch): nothing printed until the first
    epoch ended, and a resumed training showed the update it resumed from."""
    assert _logged_update(text, tmp_path) == expected
