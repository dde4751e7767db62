"""Resumable chunk store: ``{output_prefix}.chunks/``.

The corpus is cut into chunks of ``chunk_size`` lines; chunk ``k`` holds lines
``k*L+1 .. (k+1)*L`` (1-based) and belongs to shard ``k % num_shards``. Per chunk the store
keeps

* ``{k:06d}.parse.jsonl``: the word-level parse, one JSON record per line (written once
  parsed; learning a subword model and re-segmenting only need these);
* ``{k:06d}.{name}`` for every output stream, then ``{k:06d}.done.json`` (statistics and
  the *render key*: a hash of the subword model and the stream options).

Both are written a record (a line) at a time as the chunk is parsed or rendered, so memory does not grow with the
chunk size; a killed run's temporary files (``*.tmp-PID``) are removed by the next run.

Every file is written to a temp name and renamed, the ``done.json`` last. A chunk is
parsed when its parse file exists, and rendered when all its output files exist and its
``done.json`` has the current render key, so a killed run resumes without redoing or
corrupting finished chunks, and a changed subword model or stream option re-renders
chunks from their parses instead of mixing outputs. ``manifest.json`` records the parse
settings (input files by size and SHA-256: a moved input is the same input); resuming with
different ones is an error, unless no chunk was parsed yet (a run
that failed before producing anything, e.g. on a misspelled spaCy model, does not block
the corrected one). A run checks, before writing each parse file, that no other run has
replaced the manifest meanwhile.

Finalization lock ``finalize.lock`` (``host pid start-time``): a lock of a dead process on
this host, or an empty or unreadable lock older than :data:`LOCK_GRACE_S` seconds (a crash
between creating and writing it), is stale: it is reported and taken over. A lock of a live
process, or of another host, is reported with its owner and age (``--merge-only`` then
fails, naming the lock file to delete if that run is dead).
"""

import glob
import json
import logging
import os
import shutil
import socket
import time
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

from syntax_nmt.utils import process_alive, write_lines

logger = logging.getLogger("syntax_nmt.annotate")

#: An empty or unreadable finalize.lock older than this (seconds) is stale.
LOCK_GRACE_S = 30.0


def _content(key: str, value, file_keys: Sequence[str]):
    """A manifest value as compared: an input file (``file_keys``: ``[absolute path, size, sha256]``) by its
    size and SHA-256, not its path."""
    if key in file_keys and isinstance(value, list) and len(value) == 3:
        return value[1:]
    return value


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
        self.lock_path = os.path.join(self.dir, "finalize.lock")
        self._manifest_text: Optional[str] = None

    # -- layout -----------------------------------------------------------------
    def path(self, k: int, name: str) -> str:
        return os.path.join(self.dir, f"{k:06d}.{name}")

    def lines(self, k: int) -> range:
        """1-based line numbers of chunk ``k``."""
        return range(k * self.chunk_size + 1, min((k + 1) * self.chunk_size, self.num_lines) + 1)

    def chunk_of(self, lineno: int) -> int:
        return (lineno - 1) // self.chunk_size

    # -- manifest -----------------------------------------------------------------
    def open(self, settings: Dict, file_keys: Sequence[str] = ()) -> None:
        """Create the directory, or check that an existing one was made with ``settings``, where the values of
        ``file_keys`` are input files compared by content.

        Raises:
            ValueError: naming the settings that differ.
        """
        os.makedirs(self.dir, exist_ok=True)
        manifest = os.path.join(self.dir, "manifest.json")
        settings = json.loads(json.dumps(settings))  # normalize tuples etc.
        text = json.dumps(settings, indent=1, sort_keys=True)
        if os.path.exists(manifest):
            with open(manifest, encoding="utf-8") as f:
                try:
                    old = json.load(f)
                except json.JSONDecodeError:
                    old = {"manifest": "unreadable"}
            diff = {k: (old.get(k), settings.get(k)) for k in set(old) | set(settings)
                    if _content(k, old.get(k), file_keys) != _content(k, settings.get(k), file_keys)}
            if not diff and old != settings:  # the same input files at other paths: identity is by content
                logger.info("%s: the input files moved (same size and SHA-256); resuming", self.dir)
                with open(manifest, encoding="utf-8") as f:
                    self._manifest_text = f.read()
                return
            if diff:
                desc = ", ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in sorted(diff.items()))
                if self.any_parsed():
                    raise ValueError(
                        f"{self.dir} holds chunks made with other settings ({desc}); rerun with the original "
                        f"settings to resume, or pass --overwrite to start over"
                    )
                logger.info("%s holds no parsed chunk yet; starting with the new settings (%s)", self.dir, desc)
            else:
                self._manifest_text = text + "\n"
                return
        write_lines(manifest, [text])
        self._manifest_text = text + "\n"

    def any_parsed(self) -> bool:
        """True if at least one chunk has its parse file."""
        return bool(glob.glob(os.path.join(glob.escape(self.dir), "*.parse.jsonl")))

    def _check_manifest(self) -> None:
        if self._manifest_text is None:
            return
        try:
            with open(os.path.join(self.dir, "manifest.json"), encoding="utf-8") as f:
                now = f.read()
        except FileNotFoundError:
            now = None
        if now != self._manifest_text:
            raise ValueError(f"{self.dir}/manifest.json was replaced by another run with other settings while this "
                             f"one was parsing; run all shards with the same settings (or --overwrite)")

    # -- parse files -----------------------------------------------------------------
    def parse_done(self, k: int) -> bool:
        return os.path.exists(self.path(k, "parse.jsonl"))

    def write_parse(self, k: int, records: Iterable[Dict]) -> int:
        """Write chunk ``k``'s parse records as they come (a generator is consumed one record at a time, so memory
        does not grow with ``--chunk-size``), atomically; returns how many."""
        self._check_manifest()
        return write_lines(
            self.path(k, "parse.jsonl"),
            (json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records),
        )

    def iter_parse(self, k: int) -> Iterator[Dict]:
        """Chunk ``k``'s parse records, one at a time."""
        with open(self.path(k, "parse.jsonl"), encoding="utf-8", newline="\n") as f:
            for line in f:
                yield json.loads(line)

    def remove_stale_temps(self) -> int:
        """Remove the temporary files (``*.tmp-PID``) that runs killed while writing left, those of processes on
        this host that are dead (a killed run's half-written chunk of 100,000 parses is some 100 MB); returns how
        many."""
        removed = 0
        for path in glob.glob(os.path.join(glob.escape(self.dir), "*.tmp-*")):
            pid = path.rsplit(".tmp-", 1)[1]
            if pid.isdigit() and not process_alive(int(pid)):
                try:
                    os.remove(path)
                    removed += 1
                except FileNotFoundError:
                    pass
        return removed

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

    def write_output_rows(self, k: int, rows: Iterable[Dict[str, str]], stats: Dict, key: str) -> None:
        """Write the chunk's output files from ``rows`` (one ``{name: line}`` per source line, a name left out when
        it has no line there), one row at a time, then its ``done.json`` with ``stats`` as they are once the rows
        are consumed. Each file is written to a temporary name and renamed, ``done.json`` last."""
        tmps = {name: f"{self.path(k, name)}.tmp-{os.getpid()}" for name in self.names}
        files = {}
        try:
            for name, tmp in tmps.items():
                files[name] = open(tmp, "w", encoding="utf-8", newline="\n")
            for row in rows:
                for name, line in row.items():
                    files[name].write(line + "\n")
            for f in files.values():
                f.close()
            for name, tmp in tmps.items():
                os.replace(tmp, self.path(k, name))
        except BaseException:
            for name, tmp in tmps.items():
                if name in files:
                    files[name].close()
                if os.path.exists(tmp):
                    os.remove(tmp)
            raise
        write_lines(self.path(k, "done.json"), [json.dumps(dict(stats, key=key), sort_keys=True)])

    # -- finalization -----------------------------------------------------------------
    def try_lock(self) -> bool:
        """Take the finalization lock (learn, render, merge); False if another live run holds it
        (``lock_owner`` then says who, and since when).

        A stale lock (see the module docstring) is reported with a warning and taken over.
        """
        lock = self.lock_path
        me = f"{socket.gethostname()} {os.getpid()} {time.time():.0f}"
        for _ in range(3):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileNotFoundError:  # the directory is gone: another run merged already
                self.lock_owner = "a run that already merged"
                return False
            except FileExistsError:
                stale = self._stale_lock(lock)
                if stale is None:
                    return False
                logger.warning("removing the stale lock %s (%s)", lock, stale)
                try:
                    os.remove(lock)
                except FileNotFoundError:
                    pass
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me)
            return True
        return False

    def _stale_lock(self, lock: str) -> Optional[str]:
        """Why an existing lock is stale, or None if its owner may be alive (``lock_owner`` set)."""
        try:
            age = time.time() - os.path.getmtime(lock)
        except FileNotFoundError:
            return "gone"
        try:
            with open(lock, encoding="utf-8") as f:
                fields = f.read().split()
        except FileNotFoundError:
            return "gone"
        except (OSError, UnicodeDecodeError):
            fields = []
        try:
            host, pid = fields[0], int(fields[1])
            if pid <= 0 or len(fields) > 3 or (len(fields) == 3 and not fields[2].isdigit()):
                raise ValueError
        except (IndexError, ValueError):
            if age > LOCK_GRACE_S:
                return f"empty or unreadable, {age:.0f} s old: a run crashed while taking it"
            self.lock_owner = f"a run that is taking the lock right now (empty lock, {age:.0f} s old)"
            return None
        if len(fields) == 3:
            age = time.time() - int(fields[2])
        if host == socket.gethostname() and not process_alive(pid):
            return f"its process {pid} on this host is dead"
        where = "this host" if host == socket.gethostname() else f"host {host}"
        self.lock_owner = f"pid {pid} on {where}, lock taken {_ago(age)} ago"
        return None

    def release_lock(self) -> None:
        try:
            os.remove(self.lock_path)
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


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600} h {seconds % 3600 // 60} min" if seconds >= 3600 else f"{seconds // 60} min {seconds % 60} s"

