#!/usr/bin/env python
"""Build a tiny stand-in for the WMT14 download mirror (offline tests and demos).

The archives have the names and inner layout of the official statmt.org ones,
so ``download.py --mirror DIR`` followed by ``prepare.py`` runs the real code
path on them:

==================================  ==================================================
archive                             members used by the recipe
==================================  ==================================================
training-parallel-europarl-v7.tgz   training/europarl-v7.de-en.{en,de}
training-parallel-commoncrawl.tgz   commoncrawl.de-en.{en,de}
training-parallel-nc-v9.tgz         training/news-commentary-v9.de-en.{en,de}
dev.tgz                             dev/newstest2013.{en,de}
test-full.tgz                       test-full/newstest2014-deen-{src.en,ref.de}.sgm
test-filtered.tgz                   test/newstest2014-deen-{src.en,ref.de}.sgm
==================================  ==================================================

``DIR/manifest.json`` lists the stand-ins with their own checksums wherever the
official manifest has one: ``download.py --mirror DIR --manifest DIR/manifest.json``.
"""

import hashlib
import io
import json
import os
import tarfile
from typing import List, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
Pair = Tuple[str, str]
TRAIN_SPLIT = (  # (archive, member prefix, share of the training pairs)
    ("training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en", 0.5),
    ("training-parallel-commoncrawl.tgz", "commoncrawl.de-en", 0.3),
    ("training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en", 0.2),
)


def _text(lines: Sequence[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


def sgm(lines: Sequence[str], kind: str, lang: str) -> bytes:
    """A WMT-style fake-SGML file (``kind`` is ``src`` or ``ref``), one ``<seg>`` per line."""
    head = (f'<srcset setid="newstest2014" srclang="any">' if kind == "src"
            else f'<refset setid="newstest2014" srclang="any" trglang="{lang}">')
    body = [head, '<doc sysid="ref" docid="fake-1" genre="news" origlang="en">', "<p>"]
    body += [f'<seg id="{i}">{line}</seg>' for i, line in enumerate(lines, 1)]
    body += ["</p>", "</doc>", "</srcset>" if kind == "src" else "</refset>"]
    return _text(body)


def write_tgz(path: str, members: Sequence[Tuple[str, bytes]]) -> None:
    """A gzipped tar with the given ``(name, content)`` members (directories implied)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def build_mirror(out_dir: str, train: Sequence[Pair], dev: Sequence[Pair], test: Sequence[Pair],
                 test_filtered: Sequence[Pair] = ()) -> List[str]:
    """Write the six archives into ``out_dir``; ``train`` is split over the three corpora.

    Returns:
        The archive paths.
    """
    os.makedirs(out_dir, exist_ok=True)
    paths, start = [], 0
    for i, (archive, prefix, share) in enumerate(TRAIN_SPLIT):
        end = len(train) if i == len(TRAIN_SPLIT) - 1 else start + int(round(share * len(train)))
        part = train[start:end]
        start = end
        paths.append(os.path.join(out_dir, archive))
        write_tgz(paths[-1], [(f"{prefix}.en", _text([p[0] for p in part])),
                              (f"{prefix}.de", _text([p[1] for p in part]))])
    paths.append(os.path.join(out_dir, "dev.tgz"))
    write_tgz(paths[-1], [("dev/newstest2013.en", _text([p[0] for p in dev])),
                          ("dev/newstest2013.de", _text([p[1] for p in dev]))])
    for archive, folder, pairs in (("test-full.tgz", "test-full", test),
                                   ("test-filtered.tgz", "test", test_filtered or test)):
        paths.append(os.path.join(out_dir, archive))
        write_tgz(paths[-1], [
            (f"{folder}/newstest2014-deen-src.en.sgm", sgm([p[0] for p in pairs], "src", "en")),
            (f"{folder}/newstest2014-deen-ref.de.sgm", sgm([p[1] for p in pairs], "ref", "de")),
            (f"{folder}/newstest2014-deen-src.de.sgm", sgm([p[1] for p in pairs], "src", "de")),
            (f"{folder}/newstest2014-deen-ref.en.sgm", sgm([p[0] for p in pairs], "ref", "en")),
        ])
    write_manifest(out_dir, paths)
    return paths


def write_manifest(out_dir: str, paths: Sequence[str]) -> str:
    """``out_dir/manifest.json`` for the fake archives: the official manifest with each
    known checksum (and size) replaced by that of the fake file, and unknown ones left
    unknown, so ``download.py --manifest`` exercises the same verification paths."""
    with open(os.path.join(HERE, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    by_name = {os.path.basename(p): p for p in paths}
    for entry in manifest["files"]:
        path = by_name[entry["name"]]
        data = open(path, "rb").read()
        for key, value in (("size", len(data)), ("sha256", hashlib.sha256(data).hexdigest()),
                           ("md5", hashlib.md5(data).hexdigest())):
            if entry.get(key) is not None:
                entry[key] = value
        entry["checksum_source"] = "fake_mirror.py (hash of the stand-in archive)"
    manifest["description"] = "Stand-in archives written by fake_mirror.py, NOT the WMT14 data."
    out = os.path.join(out_dir, "manifest.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    return out
