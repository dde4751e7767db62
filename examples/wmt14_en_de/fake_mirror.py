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

Two sizes:

* :func:`build_mirror`: tiny archives of the pairs it is given (the tests);
* :func:`build_scale_mirror` (``python fake_mirror.py --out DIR [--fraction F]``): WMT14's scale and shape,
  streamed to disk (nothing held in memory but one line): the three training corpora with their real line counts
  (:data:`WMT14_LINES`, 4,520,620 pairs in all), newstest2013 (3000) and newstest2014 (3003), English lines of
  about 23 words with a long tail (:data:`LENGTH_MU`, :data:`LENGTH_SIGMA`), made of the embedded synthetic
  grammar's clauses joined into one line, a share of their proper names replaced by rare names drawn from a
  Zipf-like law over :data:`RARE_NAMES` names (so the vocabulary keeps growing with the corpus, as real text's
  does). Corpus ``c``'s lines come from its own random stream, so the mirror of ``--fraction F`` holds the first
  ``round(F * lines)`` lines of each corpus of the full one: a growing prefix of the same data.
"""

import argparse
import hashlib
import io
import json
import math
import os
import tarfile
import time
from typing import Iterator, List, Optional, Sequence, Tuple

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
        sha256, md5 = hashlib.sha256(), hashlib.md5()
        with open(path, "rb") as f:  # in blocks: a stand-in at WMT14's scale is hundreds of MB
            for block in iter(lambda: f.read(1 << 20), b""):
                sha256.update(block)
                md5.update(block)
        for key, value in (("size", os.path.getsize(path)), ("sha256", sha256.hexdigest()),
                           ("md5", md5.hexdigest())):
            if entry.get(key) is not None:
                entry[key] = value
        entry["checksum_source"] = "fake_mirror.py (hash of the stand-in archive)"
    manifest["description"] = "Stand-in archives written by fake_mirror.py, NOT the WMT14 data."
    out = os.path.join(out_dir, "manifest.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
    return out


# ------------------------------------------------------------------ WMT14's scale and shape
#: Lines of each training corpus of WMT14 EN-DE (the archives' ``.en``/``.de`` files): Europarl v7 1,920,209,
#: Common Crawl 2,399,123, News Commentary v9 201,288 (4,520,620; the Hugging Face ``wmt14`` de-en card counts
#: 4,508,785 training pairs, its own filtering of the same corpora); newstest2013 3000, newstest2014 3003 lines.
WMT14_LINES = {
    "training/europarl-v7.de-en": 1_920_209,
    "commoncrawl.de-en": 2_399_123,
    "training/news-commentary-v9.de-en": 201_288,
}
DEV_LINES, TEST_LINES = 3000, 3003
#: English words a line: log-normal target lengths (each line is the grammar's clauses joined while they fit the
#: target, at least one). ``LENGTH_MU`` is set so that the lines come out at 23 words on average (the issue's
#: figure for WMT14's English side; the Hugging Face card's 1,358,410,408 bytes over 4,508,785 pairs, both sides,
#: agree: about 150 bytes a side). ``LENGTH_SIGMA`` is our assumption (no WMT14 text here to fit it to): it gives
#: about 1 % of the lines over 80 words, and lines over 250 words, which prepare.py's cleaning drops, as the real
#: corpora have. ``tests/unit/test_wmt_recipe_units.py`` checks the mean and the tail on a sample.
LENGTH_MU, LENGTH_SIGMA = 3.09, 0.62
#: Proper names replaced by a rare one (with probability ``RARE_SHARE``), drawn as ``exp(U * ln RARE_NAMES)``
#: (frequency about 1 / rank, as words in text): the vocabulary grows with the corpus, which spaCy's string store
#: and BPE see.
RARE_NAMES, RARE_SHARE = 2_000_000, 0.7
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "den", "bar", "tel", "gor", "fin", "sa", "mu",
              "rel", "dan", "pi", "wen", "zo")


def rare_name(rank: int) -> str:
    """A pronounceable capitalized name, one per rank (the rank's digits in base 20 as syllables)."""
    out = []
    while True:
        rank, digit = divmod(rank, len(_SYLLABLES))
        out.append(_SYLLABLES[digit])
        if not rank:
            break
    return "".join(out).capitalize()


class ScaleLines:
    """Stream of ``(english, german)`` raw line pairs of WMT14's length distribution (see the module docstring).

    Args:
        stream: the name of the random stream (a corpus), with ``seed``.
        seed: the seed.
    """

    def __init__(self, stream: str, seed: int = 1):
        from syntax_nmt.synthetic.generate import split_rng
        from syntax_nmt.synthetic.lexicon import load_lexicon
        from syntax_nmt.synthetic.sampler import Sampler

        self.rng = split_rng(seed, f"wmt14-scale:{stream}")
        self.lex = load_lexicon()
        self.sampler = Sampler(self.rng, self.lex)
        self.names = set(self.lex.names)
        self._next: Optional[Tuple[List[str], List[bool], List[str]]] = None

    def _clause(self) -> Tuple[List[str], List[bool], List[str]]:
        from syntax_nmt.synthetic.grammar import realize

        if self._next is not None:
            clause, self._next = self._next, None
            return clause
        sent, de = realize(self.sampler.sentence(), self.lex)
        words, space = list(sent.words), list(sent.space_after)
        for name in {w for w in words if w in self.names}:
            if self.rng.random() < RARE_SHARE:
                new = rare_name(int(math.exp(self.rng.random() * math.log(RARE_NAMES))))
                words = [new if w == name else w for w in words]
                de = [new if w == name else new + "s" if w == name + "s" else w for w in de]
        return words, space, de

    def __iter__(self) -> Iterator[Tuple[str, str]]:
        from syntax_nmt.synthetic.grammar import detokenize_de

        while True:
            target = math.exp(self.rng.gauss(LENGTH_MU, LENGTH_SIGMA))
            words, space, de = self._clause()
            while True:
                more = self._clause()
                if len(words) + len(more[0]) > target:
                    self._next = more
                    break
                space[-1] = True
                words, space, de = words + more[0], space + more[1], de + more[2]
            en = "".join(w + (" " if sp else "") for w, sp in zip(words, space)).rstrip()
            yield en, detokenize_de(de)


def _scaled(lines: int, fraction: float) -> int:
    return max(1, int(round(lines * fraction)))


def build_scale_mirror(out_dir: str, fraction: float = 1.0, seed: int = 1, compresslevel: int = 1,
                       log=print) -> List[str]:
    """Write the six archives at WMT14's scale (times ``fraction``) into ``out_dir``, streaming.

    Each corpus is written line by line to two plain files in ``out_dir`` (then added to its ``.tgz`` and
    removed), so memory stays flat whatever the size. Dev and test are newstest-sized at every fraction.
    Resumable: a training archive already there (renamed into place once whole) is kept; ``out_dir/scale.json``
    records ``fraction`` and ``seed``, and other ones are refused.

    Returns:
        The archive paths.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    os.makedirs(out_dir, exist_ok=True)
    record = os.path.join(out_dir, "scale.json")
    settings = {"fraction": fraction, "seed": seed}
    if os.path.exists(record):
        with open(record) as f:
            if json.load(f) != settings:
                raise ValueError(f"{out_dir} holds a stand-in of other settings ({record}): choose another directory")
    else:
        with open(record, "w") as f:
            json.dump(settings, f)
    paths = []
    for (archive, prefix, _), (prefix2, lines) in zip(TRAIN_SPLIT, WMT14_LINES.items()):
        assert prefix == prefix2
        n = _scaled(lines, fraction)
        t0 = time.time()
        paths.append(os.path.join(out_dir, archive))
        if os.path.exists(paths[-1]):  # written whole by an earlier run (an archive is renamed into place when done)
            log(f"{archive}: already written")
            continue
        _write_corpus(paths[-1], [(f"{prefix}.en", f"{prefix}.de")], ScaleLines(prefix, seed), n, compresslevel)
        log(f"{archive}: {n} pairs in {time.time() - t0:.0f} s")
    dev = list(_take(ScaleLines("newstest2013", seed), DEV_LINES))
    test = list(_take(ScaleLines("newstest2014", seed), TEST_LINES))
    paths.append(os.path.join(out_dir, "dev.tgz"))
    write_tgz(paths[-1], [("dev/newstest2013.en", _text([p[0] for p in dev])),
                          ("dev/newstest2013.de", _text([p[1] for p in dev]))])
    for archive, folder in (("test-full.tgz", "test-full"), ("test-filtered.tgz", "test")):
        pairs = test if folder == "test-full" else test[:2737]
        paths.append(os.path.join(out_dir, archive))
        write_tgz(paths[-1], [
            (f"{folder}/newstest2014-deen-src.en.sgm", sgm([p[0] for p in pairs], "src", "en")),
            (f"{folder}/newstest2014-deen-ref.de.sgm", sgm([p[1] for p in pairs], "ref", "de")),
            (f"{folder}/newstest2014-deen-src.de.sgm", sgm([p[1] for p in pairs], "src", "de")),
            (f"{folder}/newstest2014-deen-ref.en.sgm", sgm([p[0] for p in pairs], "ref", "en")),
        ])
    write_manifest(out_dir, paths)
    return paths


def _take(pairs, n: int):
    for i, pair in enumerate(pairs):
        if i == n:
            return
        yield pair


def _write_corpus(path: str, members: List[Tuple[str, str]], pairs: ScaleLines, n: int, compresslevel: int) -> None:
    (en_member, de_member), = members
    tmp = [f"{path}.{side}.tmp" for side in ("en", "de")]
    with open(tmp[0], "w", encoding="utf-8", newline="\n") as fen, \
            open(tmp[1], "w", encoding="utf-8", newline="\n") as fde:
        for en, de in _take(pairs, n):
            fen.write(en + "\n")
            fde.write(de + "\n")
    with tarfile.open(path + ".part", "w:gz", compresslevel=compresslevel) as tar:
        for member, file in ((en_member, tmp[0]), (de_member, tmp[1])):
            info = tarfile.TarInfo(member)
            info.size, info.mode = os.path.getsize(file), 0o644
            with open(file, "rb") as f:
                tar.addfile(info, f)
    os.replace(path + ".part", path)
    for file in tmp:
        os.remove(file)


def cli_main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Stand-in WMT14 archives at WMT14's scale and shape (generated).",
                                     epilog="example:\n  python examples/wmt14_en_de/fake_mirror.py --out "
                                     "/data/wmt14-standin/mirror --fraction 0.01",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="directory for the archives and manifest.json")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="share of WMT14's training lines per corpus (1: 4,520,620 pairs); a smaller mirror holds "
                        "the first lines of each corpus of a larger one")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compresslevel", type=int, default=1, help="gzip level of the archives (1: fastest)")
    args = parser.parse_args(argv)
    build_scale_mirror(args.out, args.fraction, args.seed, args.compresslevel)


if __name__ == "__main__":
    cli_main()
