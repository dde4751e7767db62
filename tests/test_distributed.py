"""Issue 10.13: syntax_translation with streams trains under fairseq's distributed data parallel.

Two ``fairseq-train`` processes on CPU (gloo) reach the same losses as one process with
``--update-freq 2`` on the same batches: fairseq shards the epoch's batches over the ranks
(rank r takes batches r, r + 2, ...), so update k sees batches 2k and 2k + 1 either way, and
the all-reduced gradient equals the accumulated one.

What fairseq 0.12 accepts on CPU (found by trying it):

* the init method must be given (``--distributed-init-method env://`` with ``MASTER_ADDR``,
  ``MASTER_PORT``, ``--distributed-rank``, ``--distributed-no-spawn``): fairseq's own
  detection of torchrun's variables computes ``rank % torch.cuda.device_count()`` and fails
  with ``ZeroDivisionError`` without a GPU, and its spawning starts one process per GPU;
* ``--ddp-backend legacy_ddp``: the default ``pytorch_ddp`` passes ``device_ids=[device_id]``,
  which torch's DistributedDataParallel refuses for a CPU module;
* ``--distributed-backend gloo`` (nccl needs GPUs).

About 1.5 minutes on 2 shared CPU cores (three fairseq-train start-ups): marked slow.
"""

import json
import os
import socket
import subprocess

import pytest

from conftest import BIN, USER_DIR

pytestmark = pytest.mark.slow

COMMON = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
          "--syntax-attention", "sgnet", "--source-features", "pos,case,subword,dep", "--cpu", "--optimizer", "adam",
          "--lr", "1e-3", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
          "--max-sentences", "8", "--max-update", "4", "--dropout", "0", "--attention-dropout", "0", "--seed", "1",
          "--no-save", "--log-format", "json", "--log-interval", "1", "--disable-validation", "--num-workers", "0"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _updates(log: str):
    """(num_updates, loss, nll_loss, wpb, bsz) of every train_inner record."""
    rows = []
    for line in log.splitlines():
        if "| train_inner |" in line:
            rec = json.loads(line.split("| train_inner | ", 1)[1])
            rows.append((int(rec["num_updates"]), float(rec["loss"]), float(rec["nll_loss"]), rec["wpb"], rec["bsz"]))
    return rows


def test_two_cpu_processes_equal_one_with_update_freq_2(stream_bin, tmp_path):
    exe = os.path.join(BIN, "fairseq-train")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.environ.get("PYTHONPATH"), os.path.dirname(
        USER_DIR)] if p))
    one = subprocess.run([exe, stream_bin, *COMMON, "--update-freq", "2"], capture_output=True, text=True,
                         timeout=600, env=env)
    assert one.returncode == 0, one.stderr[-3000:]

    port = str(_free_port())
    procs = []
    for rank in range(2):
        env_r = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2", RANK=str(rank))
        procs.append(subprocess.Popen(
            [exe, stream_bin, *COMMON, "--distributed-world-size", "2", "--distributed-rank", str(rank),
             "--distributed-init-method", "env://", "--distributed-no-spawn", "--distributed-backend", "gloo",
             "--ddp-backend", "legacy_ddp", "--device-id", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_r))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        outs.append(out)
        assert p.returncode == 0, out[-3000:]
    assert "distributed init (rank 1)" in outs[1]

    single, ddp = _updates(one.stderr + one.stdout), _updates(outs[0])
    assert [u[0] for u in single] == [1, 2, 3, 4] and [u[0] for u in ddp] == [1, 2, 3, 4]
    for a, b in zip(single, ddp):
        assert a[3:] == b[3:], (a, b)  # the same batches: words and sentences per update
        assert a[1] == pytest.approx(b[1], abs=2e-3) and a[2] == pytest.approx(b[2], abs=2e-3), (a, b)
    # the losses move, so equal losses after updates 1-3 mean equal parameter updates
    assert single[-1][1] < single[0][1] - 0.5
