#!/usr/bin/env python
"""Measure the WMT14 recipe's data stages (run_all.sh) on a stand-in mirror: time, memory and disk per stage.

Each stage runs as ``nice -n NICE bash run_all.sh`` with ``STAGES=stage``; a sampler reads ``/proc`` every
``--interval`` seconds for every process under it (peak resident memory and CPU time of each, and for the annotation
shards their resident memory when 10 %, 50 % and 100 % of their chunks are parsed) and the disk used under
``--work``. The stage's CPU time is the sum over every process it waited for (``RUSAGE_CHILDREN``). After the
annotation, spaCy's ``nlp.pipe`` alone parses the first ``--pipe-lines`` lines of shard 0 (Docs built from the words
as the backend builds them) in a process of its own: words per CPU-second of each annotation process against it.

Kill and resume: ``--kill-shard-times K`` kills the annotation process of shard 0 (SIGKILL, by its process id) K times,
each at a random moment once it has parsed a random number of its chunks; ``--kill-binarize-times K`` kills
``syntax-nmt-binarize`` K times after a random number of CPU-seconds; each killed attempt is rerun (the same
command) until the stage ends, and every attempt is measured.
``--compare-with OTHER_WORK`` then checks the annotated streams and the binarized files against an uninterrupted run:
line counts and SHA-256 of every file.

Training reads it: ``--train-configs "transformer syntax-infused sgnet"`` starts ``train.sh`` (Transformer base, CPU,
``--max-update --train-updates``, one batch of ``MAX_TOKENS`` per update, no checkpoint) on the data-bin, one system
after the other, and records the seconds from the start to the first update (fairseq's ``train_inner`` line of
update 1, ``--log-interval 1``), the CPU time and the peak resident memory of ``fairseq-train``.

Writes ``WORK/measure/NAME.json`` and prints a summary. Example (1 % of WMT14)::

    python examples/wmt14_en_de/fake_mirror.py --out /data/standin/mirror-p1 --fraction 0.01
    python examples/wmt14_en_de/measure_scale.py --work /data/standin/p1 --mirror /data/standin/mirror-p1 \\
        --spacy-model en_core_web_sm --chunk-size 2000
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
STREAM_SUFFIXES = ("en", "de", "pos", "case", "subword", "head", "dep")


# ------------------------------------------------------------------------------ /proc
def _children() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(name))
    return kids


def descendants(root: int) -> List[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def proc_info(pid: int) -> Optional[Dict]:
    """Resident memory and its peak so far (MB), CPU seconds (user + system) and command line of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * PAGE / 2 ** 20
        with open(f"/proc/{pid}/status") as f:  # the kernel's peak (VmHWM): no spike between two samples is missed
            hwm = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:")), rss)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except (OSError, IndexError, ValueError):
        return None
    return {"rss_mb": rss, "hwm_mb": hwm, "cpu_s": (int(fields[11]) + int(fields[12])) / TICK, "cmd": cmd}


def label(cmd: str) -> str:
    """A short name of a process of the recipe."""
    if "syntax-nmt-annotate" in cmd:
        split = re.search(r"--source \S*/(\w+)\.en", cmd)
        shard = re.search(r"--shard-id (\d+)", cmd)
        return f"annotate {split.group(1) if split else '?'}" + (f" shard {shard.group(1)}" if shard else "")
    for key in ("syntax-nmt-binarize", "prepare.py", "download.py", "fairseq-train"):
        if key in cmd:
            return key
    if "multiprocessing" in cmd:
        return "worker process"
    return cmd.split(" ")[0].rsplit("/", 1)[-1]


def disk_bytes(path: str) -> int:
    total = 0
    for root, dirs, files in os.walk(path):
        if os.path.basename(root) == "measure":
            dirs[:] = []
            continue
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


# --------------------------------------------------------------------------- sampling
class Sampler(threading.Thread):
    """Samples the processes under ``root`` until :meth:`stop`."""

    def __init__(self, root: int, interval: float, work: str, chunks_dir: Optional[str], shards: int,
                 num_chunks: int):
        super().__init__(daemon=True)
        self.root, self.interval, self.work = root, interval, work
        self.chunks_dir, self.shards, self.num_chunks = chunks_dir, shards, num_chunks
        self.procs: Dict[int, Dict] = {}
        self.disk_peak = 0
        self._halt = threading.Event()

    def parsed(self, shard: int) -> float:
        """Share of this shard's chunks that have their parse file."""
        mine = [k for k in range(self.num_chunks) if k % self.shards == shard]
        if not mine or not self.chunks_dir or not os.path.isdir(self.chunks_dir):
            return 0.0
        done = sum(os.path.exists(os.path.join(self.chunks_dir, f"{k:06d}.parse.jsonl")) for k in mine)
        return done / len(mine)

    def run(self) -> None:
        last_disk = 0.0
        while not self._halt.is_set():
            now = time.time()
            for pid in descendants(self.root):
                info = proc_info(pid)
                if info is None:
                    continue
                rec = self.procs.setdefault(pid, {"name": label(info["cmd"]), "cmd": info["cmd"][:300], "start": now,
                                                  "peak_rss_mb": 0.0, "rss_at": {}})
                if rec["cmd"] != info["cmd"][:300]:  # first seen between fork and exec: named by what it runs now
                    rec["name"], rec["cmd"] = label(info["cmd"]), info["cmd"][:300]
                rec["end"], rec["cpu_s"], rec["last_rss_mb"] = now, info["cpu_s"], info["rss_mb"]
                rec["peak_rss_mb"] = max(rec["peak_rss_mb"], info["rss_mb"], info["hwm_mb"])
                shard = re.search(r"--shard-id (\d+)", info["cmd"])
                if shard and "annotate train" in rec["name"]:
                    frac = self.parsed(int(shard.group(1)))
                    start = rec.setdefault("parsed_at_start", frac)
                    for mark in (0.1, 0.5, 1.0):  # crossed by this process (a resumed one starts past some)
                        if start < mark <= frac and str(mark) not in rec["rss_at"]:
                            rec["rss_at"][str(mark)] = round(info["rss_mb"], 1)
            if now - last_disk > 5:
                self.disk_peak, last_disk = max(self.disk_peak, disk_bytes(self.work)), now
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()


def killer(sampler: Sampler, target: str, rng: random.Random, max_cpu: float, log) -> threading.Thread:
    """Kill (SIGKILL) the first process named ``target`` once, at a random moment; returns the thread."""

    def run():
        per_shard = max(1, sampler.num_chunks // sampler.shards)
        start = round(sampler.parsed(0) * per_shard)  # chunks parsed by earlier attempts
        chunks = start + rng.randint(1, max(1, per_shard - start - 1))  # at least one more, at most all but one
        cpu = rng.uniform(2, max_cpu)
        while not sampler._halt.is_set():
            for pid, rec in list(sampler.procs.items()):
                if rec["name"] != target or rec.get("killed"):
                    continue
                if target.startswith("annotate"):
                    due = sampler.parsed(0) * per_shard >= chunks
                else:
                    due = rec.get("cpu_s", 0) >= cpu
                if due:
                    time.sleep(rng.uniform(0, 2))  # mid-chunk
                    try:
                        os.kill(pid, signal.SIGKILL)
                        rec["killed"] = True
                        log(f"killed {target} (pid {pid}) after {rec.get('cpu_s', 0):.1f} CPU-s"
                            + (f", {sampler.parsed(0):.0%} of its chunks parsed" if target.startswith("annotate")
                               else ""))
                    except ProcessLookupError:
                        pass
                    return
            time.sleep(0.3)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# ------------------------------------------------------------------------------ stages
def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))


def run_stage(stage: str, env: Dict[str, str], args, rng: random.Random, kills: int, log,
              earlier: int = 0) -> List[Dict]:
    """Run one stage until it ends (rerun after each kill); one record per attempt (numbered after ``earlier``
    attempts of an interrupted measurement)."""
    attempts = []
    out_dir = os.path.join(args.work, "measure")
    prep = os.path.join(args.work, "prep", "p100")
    while True:
        n = earlier + len(attempts) + 1
        chunks_dir, num_chunks = None, 0
        if stage == "annotate" and os.path.exists(os.path.join(prep, "train.en")):
            chunks_dir = os.path.join(args.work, "annotated", "p100", "train.chunks")
            num_chunks = -(-count_lines(os.path.join(prep, "train.en")) // args.chunk_size)
        disk0 = disk_bytes(args.work)
        usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        with open(os.path.join(out_dir, f"{args.name}.{stage}.{n}.log"), "w") as logf:
            proc = subprocess.Popen(["nice", "-n", str(args.nice), "bash", os.path.join(HERE, "run_all.sh")],
                                    env=dict(env, STAGES=stage), stdout=logf, stderr=subprocess.STDOUT)
            sampler = Sampler(proc.pid, args.interval, args.work, chunks_dir, args.shards, num_chunks)
            sampler.start()
            if kills > 0:
                target = "annotate train shard 0" if stage == "annotate" else "syntax-nmt-binarize"
                killer(sampler, target, rng, args.kill_max_cpu, log)
            rc = proc.wait()
            sampler.stop()
        wall = time.time() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        killed = any(r.get("killed") for r in sampler.procs.values())
        with open(os.path.join(out_dir, f"{args.name}.{stage}.{n}.log")) as f:
            text = f.read()
        rec = {
            "stage": stage, "attempt": n, "rc": rc, "killed": killed, "wall_s": round(wall, 1),
            "cpu_s": round(usage.ru_utime - usage0.ru_utime + usage.ru_stime - usage0.ru_stime, 1),
            "disk_before_mb": round(disk0 / 2 ** 20, 1), "disk_after_mb": round(disk_bytes(args.work) / 2 ** 20, 1),
            "disk_peak_mb": round(max(sampler.disk_peak, disk0, disk_bytes(args.work)) / 2 ** 20, 1),
            "parsing": re.findall(r"shard \d+/\d+: (?:parsing \d+ of its \d+ chunks|all \d+ chunks already parsed)",
                                  text),
            "processes": [
                {k: (round(v, 2) if isinstance(v, float) else v) for k, v in dict(p, pid=pid).items()
                 if k not in ("start", "end")} | {"lifetime_s": round(p["end"] - p["start"], 1)}
                for pid, p in sampler.procs.items() if p["name"] not in ("nice", "bash", "sleep")
            ],
        }
        attempts.append(rec)
        log(f"{stage} attempt {n}: rc {rc}, wall {wall:.0f} s, CPU {rec['cpu_s']:.0f} s"
            + (" (killed)" if killed else "") + (f"; {'; '.join(rec['parsing'])}" if rec["parsing"] else ""))
        if killed:
            kills -= 1
        if rc == 0:
            return attempts
        if not killed or len(attempts) > 10:  # stopped from outside, or failing: the attempts are kept, then it stops
            err = RuntimeError(f"{stage} failed (rc {rc}); see {out_dir}/{args.name}.{stage}.{n}.log")
            err.attempts = attempts
            raise err


PIPE_ALONE = r"""
import json, sys, time
from spacy.tokens import Doc
from syntax_nmt.annotate.backends.spacy_backend import load_pipeline
model, path, chunk, shards, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
lines = []
with open(path, encoding="utf-8") as f:
    for i, line in enumerate(f):
        if (i // chunk) % shards == 0:
            lines.append(line.split())
            if len(lines) == limit:
                break
nlp = load_pipeline(model)
c0, t0 = time.process_time(), time.time()
words = 0
for doc in nlp.pipe((Doc(nlp.vocab, words=w, spaces=[True] * (len(w) - 1) + [False]) for w in lines if w),
                    batch_size=256):
    words += len(doc)
print(json.dumps({"lines": len(lines), "words": words, "cpu_s": time.process_time() - c0, "wall_s": time.time() - t0}))
"""


def measure_training(config: str, args, env: Dict[str, str], log) -> Dict:
    """``train.sh CONFIG`` on the data-bin for ``--train-updates`` updates: seconds to the first update, CPU, peak
    RSS."""
    out_dir = os.path.join(args.work, "measure")
    save = os.path.join(out_dir, f"train-{config}")
    logpath = os.path.join(out_dir, f"{args.name}.train-{config}.log")
    train_env = dict(env, DATA=os.path.join(args.work, "data-bin", "p100"), SAVE=save, CPU="1", FP16="0",
                     MAX_UPDATE=str(args.train_updates), UPDATE_FREQ="1", AVERAGE="0", SAVE_INTERVAL="0",
                     EVAL_BLEU="0")
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    first = None
    with open(logpath, "w") as logf:
        proc = subprocess.Popen(["nice", "-n", str(args.nice), "bash", os.path.join(HERE, "train.sh"), config,
                                 "--log-interval", "1", "--no-save", "--disable-validation", "--num-workers", "0"],
                                env=train_env, stdout=logf, stderr=subprocess.STDOUT)
        sampler = Sampler(proc.pid, args.interval, args.work, None, 1, 0)
        sampler.start()
        while proc.poll() is None:
            if first is None:
                with open(logpath) as f:
                    if re.search(r"num_updates[\"=: ]+1\b", f.read()):
                        first = time.time() - t0
            time.sleep(0.5)
        sampler.stop()
    with open(logpath) as f:
        text = f.read()
    if first is None and re.search(r"num_updates[\"=: ]+1\b", text):
        first = time.time() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    trainer = [p for p in sampler.procs.values() if p["name"] == "fairseq-train"]
    rec = {"config": config, "rc": proc.returncode, "wall_s": round(time.time() - t0, 1),
           "seconds_to_first_update": None if first is None else round(first, 1),
           "cpu_s": round(usage.ru_utime - usage0.ru_utime + usage.ru_stime - usage0.ru_stime, 1),
           "peak_rss_mb": round(max((p["peak_rss_mb"] for p in trainer), default=0), 1),
           "updates": args.train_updates}
    log(f"train {config}: rc {rec['rc']}, first update after {rec['seconds_to_first_update']} s, CPU {rec['cpu_s']} s, "
        f"peak RSS {rec['peak_rss_mb']} MB")
    return rec


def shard_words(path: str, chunk: int, shards: int) -> List[int]:
    words = [0] * shards
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            words[(i // chunk) % shards] += len(line.split())
    return words


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def compare(work: str, other: str) -> Dict:
    """Line counts and SHA-256 of every annotated stream and every binarized file, here and in ``other``."""
    out = {}
    rels = [f"annotated/p100/train.{s}" for s in STREAM_SUFFIXES]
    bindir = os.path.join(other, "data-bin", "p100")
    if os.path.isdir(bindir):
        rels += [f"data-bin/p100/{name}" for name in sorted(os.listdir(bindir)) if name not in ("preprocess.log", ".done")]
    for rel in rels:
        a, b = os.path.join(work, rel), os.path.join(other, rel)
        if not (os.path.exists(a) and os.path.exists(b)):
            out[rel] = {"missing": [p for p in (a, b) if not os.path.exists(p)]}
            continue
        ha, hb = sha256(a), sha256(b)
        rec = {"same": ha == hb, "sha256": ha[:16]}
        if rel.endswith("annotation.json") and ha != hb:  # the subword model's path names each WORK: compared by name
            texts = []
            for path in (a, b):
                with open(path) as f:
                    settings = json.load(f)
                settings["subword_model"] = os.path.basename(settings.get("subword_model") or "")
                texts.append(settings)
            rec = {"same": texts[0] == texts[1], "sha256": ha[:16], "compared": "subword_model by file name"}
        if not rel.endswith((".bin", ".idx")):
            rec["lines"] = [count_lines(a), count_lines(b)]
        out[rel] = rec
    return out


def main(argv=None) -> Dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True, help="WORK of run_all.sh")
    p.add_argument("--mirror", required=True, help="the stand-in archives (fake_mirror.py) with their manifest.json")
    p.add_argument("--stages", default="download prepare annotate binarize")
    p.add_argument("--name", default="run", help="name of this measurement (its files in WORK/measure)")
    p.add_argument("--spacy-model", default="en_core_web_sm")
    p.add_argument("--chunk-size", type=int, default=100000, help="CHUNK_SIZE of run_all.sh")
    p.add_argument("--shards", type=int, default=2, help="ANNOTATE_SHARDS")
    p.add_argument("--workers", type=int, default=1, help="WORKERS (tokenization, BPE learning, binarization)")
    p.add_argument("--bpe-merges", type=int, default=32000)
    p.add_argument("--nice", type=int, default=19)
    p.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    p.add_argument("--pipe-lines", type=int, default=5000, help="lines nlp.pipe alone parses (0: skip)")
    p.add_argument("--kill-shard-times", type=int, default=0)
    p.add_argument("--kill-binarize-times", type=int, default=0)
    p.add_argument("--kill-max-cpu", type=float, default=30.0, help="binarize is killed after 2..this CPU-seconds")
    p.add_argument("--compare-with", help="WORK of an uninterrupted run to compare the outputs with")
    p.add_argument("--train-configs", default="", help="systems to start fairseq-train for on the data-bin, e.g. "
                   "'transformer syntax-infused sgnet' (default: none)")
    p.add_argument("--train-updates", type=int, default=20, help="--max-update of those trainings")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    os.makedirs(os.path.join(args.work, "measure"), exist_ok=True)
    rng = random.Random(args.seed)
    logfile = open(os.path.join(args.work, "measure", f"{args.name}.txt"), "a")

    def log(msg):
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        logfile.write(line + "\n")
        logfile.flush()

    env = dict(os.environ, WORK=args.work, WMT14_MIRROR=args.mirror, MANIFEST=os.path.join(args.mirror, "manifest.json"),
               PERCENT="100", ANNOTATE_SHARDS=str(args.shards), ANNOTATE_PROCS="1", WORKERS=str(args.workers),
               SPACY_MODEL=args.spacy_model, CHUNK_SIZE=str(args.chunk_size), BPE_MERGES=str(args.bpe_merges),
               PYTHON=os.environ.get("PYTHON", sys.executable), OMP_NUM_THREADS="1")
    out = os.path.join(args.work, "measure", f"{args.name}.json")
    result = {"args": vars(args), "load_average_start": os.getloadavg(), "stages": {}}
    if os.path.exists(out):  # a measurement interrupted (or extended) earlier: its attempts are kept, this one's added
        with open(out) as f:
            result = dict(json.load(f), args=vars(args))
        log(f"continuing the measurement in {out}")
    for stage in args.stages.split():
        kills = {"annotate": args.kill_shard_times, "binarize": args.kill_binarize_times}.get(stage, 0)
        earlier = result["stages"].get(stage, [])
        try:
            result["stages"][stage] = earlier + run_stage(stage, env, args, rng, kills, log, len(earlier))
        except RuntimeError as e:
            result["stages"][stage] = earlier + getattr(e, "attempts", [])
            with open(out, "w") as f:
                json.dump(result, f, indent=1)
            raise
        if stage == "annotate" and args.pipe_lines:
            train = os.path.join(args.work, "prep", "p100", "train.en")
            proc = subprocess.run(["nice", "-n", str(args.nice), sys.executable, "-c", PIPE_ALONE, args.spacy_model,
                                   train, str(args.chunk_size), str(args.shards), str(args.pipe_lines)],
                                  capture_output=True, text=True, check=True, env=env)
            alone = json.loads(proc.stdout.strip().splitlines()[-1])
            words = shard_words(train, args.chunk_size, args.shards)
            per = []
            for rec in result["stages"][stage]:
                for proc_rec in rec["processes"]:
                    m = re.match(r"annotate train shard (\d+)", proc_rec["name"])
                    if m and not proc_rec.get("killed") and rec["rc"] == 0 and proc_rec.get("cpu_s"):
                        shard = int(m.group(1))
                        parsed_share = 1 - proc_rec.get("parsed_at_start", 0)
                        w = words[shard] * parsed_share
                        per.append({"shard": shard, "attempt": rec["attempt"], "words": round(w),
                                    "cpu_s": proc_rec["cpu_s"], "lifetime_s": proc_rec["lifetime_s"],
                                    "words_per_cpu_s": round(w / proc_rec["cpu_s"]),
                                    "words_per_s": round(w / proc_rec["lifetime_s"]),
                                    "ratio_to_pipe_alone_cpu": round(w / proc_rec["cpu_s"] /
                                                                     (alone["words"] / alone["cpu_s"]), 3)})
            result["annotate_speed"] = {"pipe_alone": dict(alone, words_per_cpu_s=round(alone["words"] / alone["cpu_s"]),
                                                           words_per_s=round(alone["words"] / alone["wall_s"])),
                                        "shard_words": words, "per_process": per}
            log(f"nlp.pipe alone: {alone['words'] / alone['cpu_s']:.0f} words/CPU-s; annotation processes: "
                + ", ".join(f"shard {x['shard']} {x['words_per_cpu_s']} words/CPU-s ({x['ratio_to_pipe_alone_cpu']})"
                            for x in per))
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    for config in args.train_configs.split():
        result.setdefault("train", []).append(measure_training(config, args, env, log))
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
    if args.compare_with:
        result["compare"] = compare(args.work, args.compare_with)
        same = all(r.get("same") for r in result["compare"].values())
        log(f"outputs against {args.compare_with}: {'all identical' if same else 'DIFFERENT'} "
            f"({len(result['compare'])} files)")
    result["load_average_end"] = os.getloadavg()
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()
