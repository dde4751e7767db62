"""A resumable working directory of command-line steps: the base of the demo and of the bench.

Every step runs the real command line a user would run, in a subprocess, its output streamed or logged; a
finished step leaves a marker (``.done-NAME``, with what it measured), so a rerun skips it and resumes.
"""

import json
import os
import shlex
import subprocess
from typing import Callable, List, Optional

from syntax_nmt.demo.settings import CPU_MALLOC_ENV


class Workdir:
    """Steps in the folder ``args.out``, numbered in headers out of ``steps``.

    Args:
        args: the parsed command line (``out``, ``verbose``, ``threads``).
    """

    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.steps = 7
        self.step_no = 0

    def path(self, *parts) -> str:
        return os.path.join(self.out, *parts)

    def header(self, title: str) -> None:
        self.step_no += 1
        print(f"\n=== [{self.step_no}/{self.steps}] {title}", flush=True)

    def run(self, cmd: List[str], log: str = None, quiet: bool = False, env: Optional[dict] = None,
            on_line: Optional[Callable[[str], None]] = None) -> float:
        """Run a command, streaming its output (or teeing it into ``log``; ``quiet``: log only; ``on_line``:
        called with every logged line).

        Returns the CPU seconds (user + system) the command used.
        """
        if not quiet:
            print("$ " + " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
        out = open(log, "w", encoding="utf-8") if log else None
        try:
            proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE if log else None,
                                    stderr=subprocess.STDOUT if log else None, text=True, bufsize=1, env=env)
            for line in proc.stdout if log else ():
                out.write(line)
                if on_line:
                    on_line(line)
                if not quiet and (self.args.verbose or any(k in line for k in (
                        "| train_inner |", "| valid |", "done training", "Translated", "Error", "error"))):
                    print("  " + line.rstrip().split(" | INFO | ")[-1][:200], flush=True)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        finally:
            if out:
                out.close()
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd, output=f"see {log}" if log else None)
        return usage.ru_utime + usage.ru_stime

    def done(self, name: str) -> bool:
        return os.path.exists(self.path(f".done-{name}"))

    def mark(self, name: str, **info) -> None:
        with open(self.path(f".done-{name}"), "w") as f:
            json.dump(info, f)

    def info(self, name: str) -> dict:
        with open(self.path(f".done-{name}")) as f:
            return json.load(f)

    def env(self) -> dict:
        """The environment of the training and translation commands: ``--threads`` torch threads each and the
        CPU allocator settings (:data:`~syntax_nmt.demo.settings.CPU_MALLOC_ENV`), unless already set."""
        env = dict(os.environ)
        threads = str(self.args.threads)
        env.setdefault("OMP_NUM_THREADS", threads)
        env.setdefault("MKL_NUM_THREADS", threads)
        env.update({k: v for k, v in CPU_MALLOC_ENV.items() if k not in env})
        return env
