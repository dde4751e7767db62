"""Resumable, checksummed downloads of the files a recipe lists in its manifest (shared by the recipes in
``examples/``).

A manifest is JSON: ``{"files": [{"name", "url", "group", "size", "sha256", "md5"}, ...]}`` (size and the
checksums may be null).

* Files already present are skipped (and verified when a checksum is known).
* Interrupted downloads resume: bytes go to ``NAME.part`` and the next run asks
  the server for the rest with an HTTP ``Range`` header (``file://`` and local
  mirrors resume by seeking).
* Checksums: sha256 and/or md5 from the manifest are verified; a file whose
  manifest entry has neither is reported as ``NOT VERIFIED``. The sha256 of
  every file is recorded in ``DEST/SHA256SUMS`` (``sha256sum -c`` format).
* A *mirror* replaces the official URLs by ``MIRROR/NAME``: an ``http(s)://`` or ``file://`` base URL,
  or a local directory, holding the files under their official names.
"""

import hashlib
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Dict, List, Optional, Sequence

from tqdm import tqdm

CHUNK = 1 << 20


class DownloadError(RuntimeError):
    """A download failed, or a file does not match its checksum."""


def load_manifest(path: str) -> List[Dict]:
    """Read the ``files`` list of a manifest; every entry has name, url, group,
    size, sha256 and md5 (the last three may be null)."""
    with open(path, encoding="utf-8") as f:
        files = json.load(f)["files"]
    for entry in files:
        for key in ("size", "sha256", "md5"):
            entry.setdefault(key, None)
    return files


def source_url(entry: Dict, mirror: Optional[str] = None) -> str:
    """The URL (or local path) to fetch ``entry`` from: the official URL, or
    ``MIRROR/NAME`` when a mirror (base URL or directory) is given."""
    if not mirror:
        return entry["url"]
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + urllib.parse.quote(entry["name"])
    return os.path.join(mirror, entry["name"])


def file_hashes(path: str, algorithms=("sha256", "md5")) -> Dict[str, str]:
    """Hex digests of a file, all algorithms in one pass."""
    hashers = {a: hashlib.new(a) for a in algorithms}
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            for h in hashers.values():
                h.update(block)
    return {a: h.hexdigest() for a, h in hashers.items()}


def verify(path: str, entry: Dict) -> Dict[str, str]:
    """Check size and checksums of ``path`` against ``entry``.

    Returns:
        ``{"status": "verified (sha256)" | "NOT VERIFIED (no checksum in manifest)",
        "sha256": ..., "md5": ...}``.

    Raises:
        DownloadError: on a size or checksum mismatch.
    """
    size = os.path.getsize(path)
    if entry.get("size") is not None and size != entry["size"]:
        raise DownloadError(f"{path}: size {size} != expected {entry['size']}")
    digests = file_hashes(path)
    checked = []
    for algo in ("sha256", "md5"):
        expected = entry.get(algo)
        if expected:
            if digests[algo] != expected.lower():
                raise DownloadError(f"{path}: {algo} {digests[algo]} != expected {expected}")
            checked.append(algo)
    status = f"verified ({'+'.join(checked)})" if checked else "NOT VERIFIED (no checksum in manifest)"
    return dict(digests, status=status)


def _is_local(url: str) -> bool:
    return "://" not in url or url.startswith("file://")


def _local_path(url: str) -> str:
    if url.startswith("file://"):
        return urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    return url


def _copy_stream(src, dst, total: Optional[int], initial: int, desc: str, quiet: bool) -> None:
    with tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc, disable=quiet) as bar:
        for block in iter(lambda: src.read(CHUNK), b""):
            dst.write(block)
            bar.update(len(block))


def _content_range_start(value: Optional[str]) -> Optional[int]:
    """First byte of a ``Content-Range: bytes START-END/TOTAL`` header."""
    try:
        return int(value.split()[1].split("-")[0])
    except (AttributeError, IndexError, ValueError):
        return None


def fetch(url: str, dest: str, timeout: float = 60.0, quiet: bool = False) -> None:
    """Fetch ``url`` into ``dest`` through ``dest.part``, resuming a partial file.

    HTTP(S): sends ``Range: bytes=N-`` when ``dest.part`` has N bytes; a 206
    reply is appended, a 200 reply (server ignores ranges) restarts from zero.
    ``file://`` URLs and local paths resume by seeking. ``dest.part`` is renamed
    to ``dest`` only once the transfer is complete.
    """
    part = dest + ".part"
    offset = os.path.getsize(part) if os.path.exists(part) else 0
    desc = os.path.basename(dest)
    if _is_local(url):
        src_path = _local_path(url)
        total = os.path.getsize(src_path)
        if offset > total:
            offset = 0
        with open(src_path, "rb") as src, open(part, "ab" if offset else "wb") as dst:
            src.seek(offset)
            _copy_stream(src, dst, total, offset, desc, quiet)
    else:
        headers = {"User-Agent": "syntax-nmt-recipe"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        try:
            resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
        except urllib.error.HTTPError as e:
            if e.code != 416:
                raise
            # Range not satisfiable: the .part file already holds the whole file
            # (or more); fall through to the rename, verify() judges the result.
            resp = None
        if resp is not None:
            with resp:
                length = resp.headers.get("Content-Length")
                start = _content_range_start(resp.headers.get("Content-Range"))
                if offset and resp.status == 206 and start == offset:
                    mode, total = "ab", (offset + int(length)) if length else None
                else:  # 200: the server sent the whole file
                    offset, mode, total = 0, "wb", int(length) if length else None
                with open(part, mode) as dst:
                    _copy_stream(resp, dst, total, offset, desc, quiet)
                if total is not None and os.path.getsize(part) < total:
                    raise DownloadError(f"{url}: connection closed at {os.path.getsize(part)}/{total} bytes")
    os.replace(part, dest)


def _record_sha256(dest_dir: str, name: str, sha256: str) -> None:
    """Add or update ``name`` in ``dest_dir/SHA256SUMS`` (``sha256sum -c`` format)."""
    path = os.path.join(dest_dir, "SHA256SUMS")
    sums = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    digest, fname = line.rstrip("\n").split(None, 1)
                    sums[fname.lstrip("*")] = digest
    sums[name] = sha256
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for fname in sorted(sums):
            f.write(f"{sums[fname]}  {fname}\n")
    os.replace(path + ".tmp", path)


def download(entry: Dict, dest_dir: str, mirror: Optional[str] = None, retries: int = 5,
             timeout: float = 60.0, quiet: bool = False) -> Dict[str, str]:
    """Download (or skip) one manifest entry into ``dest_dir`` and verify it.

    Returns:
        ``verify``'s dict plus ``"action"``: ``"skipped"`` or ``"downloaded"``.

    Raises:
        DownloadError: checksum mismatch (the bad file is renamed to
        ``NAME.corrupt``) or a transfer still failing after ``retries`` attempts.
    """
    dest = os.path.join(dest_dir, entry["name"])
    action = "skipped"
    if not os.path.exists(dest):
        action = "downloaded"
        url = source_url(entry, mirror)
        for attempt in range(1, retries + 1):
            try:
                fetch(url, dest, timeout=timeout, quiet=quiet)
                break
            except (OSError, urllib.error.URLError, DownloadError) as e:  # resume on the next attempt
                permanent = (isinstance(e, urllib.error.HTTPError) and 400 <= e.code < 500
                             and e.code not in (408, 429)) or (
                    _is_local(url) and not os.path.exists(_local_path(url)))
                if attempt == retries or permanent:
                    raise DownloadError(f"{entry['name']}: {url}: {e}") from e
                print(f"{entry['name']}: attempt {attempt} failed ({e}); resuming", file=sys.stderr)
                time.sleep(min(2 ** attempt, 30))
    try:
        result = verify(dest, entry)
    except DownloadError:
        shutil.move(dest, dest + ".corrupt")
        raise
    _record_sha256(dest_dir, entry["name"], result["sha256"])
    result["action"] = action
    return result


def download_all(entries: Sequence[Dict], dest: str, mirror: Optional[str] = None, retries: int = 5,
                 timeout: float = 60.0, quiet: bool = False) -> List[Dict[str, str]]:
    """:func:`download` every entry into ``dest``, printing one line per file.

    Raises:
        SystemExit: naming the files that failed (after trying every file).
    """
    os.makedirs(dest, exist_ok=True)
    results, failed = [], []
    for entry in entries:
        try:
            res = download(entry, dest, mirror, retries=retries, timeout=timeout, quiet=quiet)
        except DownloadError as e:
            print(f"FAILED   {entry['name']}: {e}", file=sys.stderr)
            failed.append(entry["name"])
            continue
        print(f"{res['action']:<10} {entry['name']}: {res['status']}  sha256={res['sha256']}")
        results.append(dict(res, name=entry["name"]))
    if failed:
        raise SystemExit(f"download failed for: {', '.join(failed)}")
    return results
