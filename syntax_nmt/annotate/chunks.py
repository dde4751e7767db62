"""Resumable chunk store: ``{output_prefix}.chunks/``.

The corpus is cut into chunks of ``chunk_size`` lines; chunk ``k`` holds lines
``k*L+1 .. (k+1)*L`` (1-based) and belongs to shard ``k % num_shards``. Per chunk the store
keeps

* ``{k:06d}.parse.jsonl``: the word-level parse, one JSON record per line (written once
  parsed; learning a subword model and re-segmenting only need these);
* ``{k:06d}.{name}`` for every output stream, then ``{k:06d}.done.json`` (statistics and
  the *render key*: a hash of the subword model and the stream options).

Every file is written to a temp name and renamed, the ``done.json`` last. A chunk is
parsed when its parse file exists, and rendered when all its output files exist and its
``done.json`` has the current render key, so a killed run resumes without redoing or
corrupting finished chunks, and a changed subword model or stream option re-renders
chunks from their parses instead of mixing outputs. ``manifest.json`` records the parse
settings; resuming with different ones is an error.
"""

import json
import os
import shutil
import socket
from typing import Dict, List, Optional

from .textio import atomic_write_lines


class ChunkStore:
    """Files of one annotation job under ``{prefix}.chunks``.

    Args:
        prefix: the output prefix ``P``.
        num_lines: number of source lines.
        chunk_size: lines per chunk.
        names: output stream names (file suffixes), e.g. ``["en", "de", "pos", ...]``.
    """

    def __init__(self, prefix: str, num_lines: int, chunk_size: int, names: List[str]):
        if chunk_size < 1:
            raise ValueError(f"--chunk-size must be positive, got {chunk_size}")
        self.prefix = prefix
        self.dir = prefix + ".chunks"
        self.num_lines = num_lines
        self.chunk_size = chunk_size
        self.num_chunks = -(-num_lines // chunk_size)
        self.names = list(names)
        self.lock_owner = "?"  # who holds the finalization lock, when try_lock fails

    # -- layout -----------------------------------------------------------------
    def path(self, k: int, name: str) -> str:
        return os.path.join(self.dir, f"{k:06d}.{name}")

    def lines(self, k: int) -> range:
        """1-based line numbers of chunk ``k``."""
        return range(k * self.chunk_size + 1, min((k + 1) * self.chunk_size, self.num_lines) + 1)

    def chunk_of(self, lineno: int) -> int:
        return (lineno - 1) // self.chunk_size

    # -- manifest -----------------------------------------------------------------
    def open(self, settings: Dict) -> None:
        """Create the directory, or check that an existing one was made with ``settings``.

        Raises:
            ValueError: naming the settings that differ.
        """
        os.makedirs(self.dir, exist_ok=True)
        manifest = os.path.join(self.dir, "manifest.json")
        settings = json.loads(json.dumps(settings))  # normalize tuples etc.
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                old = json.load(f)
            diff = {k: (old.get(k), settings.get(k)) for k in set(old) | set(settings) if old.get(k) != settings.get(k)}
            if diff:
                desc = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in sorted(diff.items()))
                raise ValueError(
                    f"{self.dir} holds chunks made with other settings ({desc}); rerun with the original "
                    f"settings to resume, or pass --overwrite to start over"
                )
            return
        atomic_write_lines(manifest, [json.dumps(settings, indent=1, sort_keys=True)])

    # -- parse files -----------------------------------------------------------------
    def parse_done(self, k: int) -> bool:
        return os.path.exists(self.path(k, "parse.jsonl"))

    def write_parse(self, k: int, records: List[Dict]) -> None:
        atomic_write_lines(
            self.path(k, "parse.jsonl"),
            (json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records),
        )

    def read_parse(self, k: int) -> List[Dict]:
        with open(self.path(k, "parse.jsonl"), encoding="utf-8", newline="\n") as f:
            return [json.loads(line) for line in f]

    # -- rendered outputs ------------------------------------------------------------
    def done_info(self, k: int) -> Optional[Dict]:
        try:
            with open(self.path(k, "done.json"), encoding="utf-8") as f:
                return json.load(f)
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def rendered(self, k: int, key: str) -> bool:
        info = self.done_info(k)
        return (info is not None and info.get("key") == key
                and all(os.path.exists(self.path(k, n)) for n in self.names))

    def write_outputs(self, k: int, outputs: Dict[str, List[str]], stats: Dict, key: str) -> None:
        """Atomically write the chunk's output files, then its ``done.json``."""
        missing = set(self.names) - set(outputs)
        if missing:
            raise ValueError(f"chunk {k}: no output for {sorted(missing)}")
        for name in self.names:
            atomic_write_lines(self.path(k, name), outputs[name])
        atomic_write_lines(self.path(k, "done.json"), [json.dumps(dict(stats, key=key), sort_keys=True)])

    # -- finalization -----------------------------------------------------------------
    def try_lock(self) -> bool:
        """Take the finalization lock (learn, render, merge); False if another live run holds it.

        A lock left by a dead process on this host is taken over.
        """
        lock = os.path.join(self.dir, "finalize.lock")
        me = f"{socket.gethostname()} {os.getpid()}"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileNotFoundError:  # the directory is gone: another run merged already
                self.lock_owner = "a run that already merged"
                return False
            except FileExistsError:
                try:
                    with open(lock, encoding="utf-8") as f:
                        host, pid = f.read().split()
                except (OSError, ValueError):
                    return False
                if host != socket.gethostname() or _alive(int(pid)):
                    self.lock_owner = f"{host} pid {pid}"
                    return False
                os.remove(lock)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me)
            return True
        return False

    def release_lock(self) -> None:
        try:
            os.remove(os.path.join(self.dir, "finalize.lock"))
        except FileNotFoundError:
            pass

    def final_path(self, name: str) -> str:
        return f"{self.prefix}.{name}"

    def merge(self) -> None:
        """Concatenate every chunk's outputs, in order, into ``{prefix}.{name}`` (atomically per file)."""
        for name in self.names:
            final = self.final_path(name)
            tmp = f"{final}.tmp-{os.getpid()}"
            with open(tmp, "wb") as out:
                for k in range(self.num_chunks):
                    with open(self.path(k, name), "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 20)
            os.replace(tmp, final)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
