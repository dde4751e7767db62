"""``make bench``'s training words/s (syntax_nmt/bench/model.py): complete epochs, never one epoch's line."""

import pytest

from syntax_nmt.bench.model import train_wps


def _epoch(n, wps, updates, total):
    return (f"2026-11-26 10:00:0{n} | INFO | train | epoch {n:03d} | loss 9.5 | nll_loss 9.1 | ppl 552 | wps {wps} | "
            f"ups 12.3 | wpb 4096 | bsz 130 | num_updates {total} | lr 0.0005 | gnorm 1.2 | loss_scale 64 | "
            f"train_wall 3 | gb_free 70.1 | wall {n * 3}\n")


def _inner(n, wps):
    return f"2026-11-26 10:00:00 | INFO | train_inner | epoch {n:03d}:     10 / 37 loss=9 | wps {wps} | ups 12\n"


def test_an_fp16_log_whose_last_epoch_holds_one_update():
    """What the H200 run showed: with --fp16, overflow-skipped updates leave the last epoch one update, whose line
    reads a tenth of the real speed; the bench read that line (0.11x) while the complete epochs ran at 0.95x."""
    log = (_inner(1, 50000) + _epoch(1, 50000.5, 37, 37) + _epoch(2, 52000, 37, 74) + _epoch(3, 51000, 37, 111)
           + _epoch(4, 5400.2, 1, 112))
    assert train_wps(log) == 51000


def test_one_epoch_is_the_whole_run_and_two_keep_the_first():
    assert train_wps(_epoch(1, 1234.5, 40, 40)) == 1234.5
    assert train_wps(_epoch(1, 1000, 37, 37) + _epoch(2, 10, 3, 40)) == 1000
    assert train_wps(_epoch(1, 1000, 37, 37) + _epoch(2, 3000, 37, 74) + _epoch(3, 7, 1, 75)) == 2000


def test_a_log_without_epoch_lines_is_an_error():
    with pytest.raises(ValueError, match="no epoch summary"):
        train_wps(_inner(1, 50000))
