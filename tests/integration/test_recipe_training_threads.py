"""Issue 61: a Multi30k training's record holds the torch threads the training process had, for JOBS=1 and JOBS=2:
examples/multi30k_en_de/run_all.sh's train stage, unedited, with a stand-in for fairseq-train (FAIRSEQ_TRAIN) that
writes the threads torch has in it, and the recipe's own THREADS (cores / JOBS) and export line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: fairseq-train's stand-in: what torch has in it, fairseq's arguments line (bf16) and an update
TRAINER = """#!{python}
import os, sys
import torch
save = sys.argv[sys.argv.index("--save-dir") + 1]
with open(os.path.join(save, "trainer_threads.txt"), "w") as f:
    f.write(str(torch.get_num_threads()))
print("x | INFO | fairseq_cli.train | {{'common': {{'bf16': True, 'fp16': False, 'amp': False}}}}")
print("epoch 001 | loss 9 | num_updates 7 |")
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_trainings_record_holds_the_threads_the_training_had(jobs, tmp_path, systems_cache):
    trainer = tmp_path / "fake-fairseq-train"
    trainer.write_text(TRAINER.format(python=sys.executable))
    trainer.chmod(0o755)
    (tmp_path / "run" / "data-bin" / "bpe200").mkdir(parents=True)
    # nproc counts OMP_NUM_THREADS (the suite's 1) as the cores: the recipe runs without it, as a user starts it
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "THREADS")}
    env.update(PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""), PYTHON=sys.executable,
               WORK=str(tmp_path / "run"), STAGES="train", CPU="1", JOBS=str(jobs), SYSTEMS="transformer",
               SEEDS="1", TINY="1", AVERAGE="0", BPE_MERGES="200", FAIRSEQ_TRAIN=str(trainer),
               SYSTEMS_CACHE=str(systems_cache))
    proc = subprocess.run(["bash", str(ROOT / "examples" / "multi30k_en_de" / "run_all.sh")], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    cores = int(subprocess.run(["nproc"], env=env, capture_output=True, text=True, check=True).stdout)
    expected = max(1, cores // jobs)  # the recipe's THREADS
    assert f"{jobs} at a time with {expected} thread(s) each" in proc.stdout
    save = tmp_path / "run" / "checkpoints" / "cpu-bpe200" / "transformer" / "seed1"
    had = int((save / "trainer_threads.txt").read_text())
    done = json.loads((save / ".done").read_text())
    part = json.loads((save / "parts.jsonl").read_text())
    assert done["environment"]["threads"] == part["environment"]["threads"] == had
    assert had == min(expected, len(os.sched_getaffinity(0)))  # torch takes no more threads than cores
    assert done["environment"]["precision"] == "bf16" and done["updates"] == done["updates_run"] == 7
