"""A resumable working directory of command-line steps: the base of the demo and of the bench.

Every step runs the real command line a user would run, in a subprocess, its output streamed or logged; a
finished step leaves a marker (``.done-NAME``, with what it measured and the options that shaped its outputs,
written atomically), so a rerun skips it and resumes. A marker that is not valid JSON (cut short by an older
version, a full disk) makes its step run again, with a warning; a rerun with other values of the recorded options
stops before anything runs (:meth:`Workdir.check_recorded_settings`), naming the option and how to go on.
"""

import glob
import os
import shlex
import subprocess
from typing import Callable, Dict, List, Optional

from syntax_nmt.demo.settings import CPU_MALLOC_ENV
from syntax_nmt.utils import atomic_write_json, read_json_marker

#: the options that shape a step's outputs (the step's name without its suffix -> options), recorded in its marker
STEP_OPTIONS = {
    "corpus": ("--train", "--valid", "--test", "--seed"),
    "annotate": ("--bpe", "--gold-parses"),
    "binarize": ("--bpe", "--gold-parses"),
    "train": ("--max-tokens",),
}
#: the attribute of the parsed command line behind each option
_ATTRS = {"--train": "train", "--valid": "valid", "--test": "test", "--seed": "seed", "--bpe": "bpe",
          "--gold-parses": "gold_parses", "--max-tokens": "max_tokens"}
#: options without a value
_FLAGS = {"--gold-parses"}


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

    def _marker(self, name: str) -> Optional[dict]:
        """The marker of step ``name``, None if there is none or it is not valid JSON (said once, as a warning)."""
        warned = self.__dict__.setdefault("_warned", set())

        def warn(message: str) -> None:
            if name not in warned:
                warned.add(name)
                print(f"warning: {message}", flush=True)

        found = read_json_marker(self.path(f".done-{name}"), warn)
        return found if isinstance(found, dict) else None

    def done(self, name: str) -> bool:
        return self._marker(name) is not None

    def step_settings(self, name: str) -> Dict[str, object]:
        """The options of :data:`STEP_OPTIONS` that shape step ``name``'s outputs, with their values now (those
        this command line has)."""
        options = next((v for k, v in STEP_OPTIONS.items() if name == k or name.startswith(k + "-")), ())
        return {o: (bool(getattr(self.args, _ATTRS[o], False)) if o in _FLAGS else getattr(self.args, _ATTRS[o]))
                for o in options if o in _FLAGS or hasattr(self.args, _ATTRS[o])}

    def mark(self, name: str, **info) -> None:
        """Mark step ``name`` done (atomically), with ``info`` and the options that shaped it
        (:meth:`step_settings`)."""
        settings = self.step_settings(name)
        atomic_write_json(self.path(f".done-{name}"), {**info, **({"settings": settings} if settings else {})})

    def info(self, name: str) -> dict:
        return {k: v for k, v in (self._marker(name) or {}).items() if k != "settings"}

    def check_recorded_settings(self) -> None:
        """Stop, before anything runs, when a step done in this folder recorded other values of the options that
        shaped it than this command line's (another ``--train``, ``--bpe``, ``--max-tokens``, or ``--gold-parses``
        given or not): its outputs would be reused under the new labels.

        Raises:
            ValueError: naming the folder, the option, both values, the step, and how to go on.
        """
        for path in sorted(glob.glob(self.path(".done-*"))):
            name = os.path.basename(path)[len(".done-"):]
            recorded = (self._marker(name) or {}).get("settings") or {}
            now = self.step_settings(name)
            for option, old in recorded.items():
                if option not in now or now[option] == old:
                    continue
                if option in _FLAGS:
                    was = f"with {option}, now without" if old else f"without {option}, now with it"
                    again = f"rerun {'with' if old else 'without'} {option}"
                else:
                    was, again = f"with {option} {old}, now {now[option]}", f"rerun with {option} {old}"
                raise ValueError(f"{self.out} was made {was} (step {name}): {again} to go on with it, or give "
                                 f"another --out (or remove {self.out}) for the new settings")

    def env(self) -> dict:
        """The environment of the training and translation commands: ``--threads`` torch threads each and the
        CPU allocator settings (:data:`~syntax_nmt.demo.settings.CPU_MALLOC_ENV`), unless already set."""
        env = dict(os.environ)
        threads = str(self.args.threads)
        env.setdefault("OMP_NUM_THREADS", threads)
        env.setdefault("MKL_NUM_THREADS", threads)
        env.update({k: v for k, v in CPU_MALLOC_ENV.items() if k not in env})
        return env
