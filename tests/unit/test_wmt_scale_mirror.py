"""The WMT14 stand-in at WMT14's scale and shape (examples/wmt14_en_de/fake_mirror.py, build_scale_mirror), written
here at a tiny fraction: the archives' layout, the line counts, the length distribution's statistics, the prefix
property of a growing fraction, and that neither the corpora nor the manifest are held in memory."""

import hashlib
import importlib.util
import json
import sys
import tarfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from support.files import load_recipe_module as _module

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"


fake_mirror = _module("fake_mirror")
prepare = _module("prepare")

FRACTION = 2e-4  # 384 + 480 + 40 training pairs


def _members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read().decode("utf-8").splitlines() for m in tar if m.isfile()}


@pytest.fixture(scope="module")
def scale_mirror(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale")
    logged = []
    paths = fake_mirror.build_scale_mirror(str(out / "small"), FRACTION, log=logged.append)
    fake_mirror.build_scale_mirror(str(out / "large"), 2 * FRACTION, log=logged.append)
    return out, paths, logged


def test_scale_mirror_has_the_official_layout_and_wmt14_line_counts(scale_mirror):
    out, paths, logged = scale_mirror
    manifest = json.loads((RECIPE / "manifest.json").read_text())
    assert sorted(Path(p).name for p in paths) == sorted(e["name"] for e in manifest["files"])
    assert fake_mirror.WMT14_LINES == {"training/europarl-v7.de-en": 1_920_209, "commoncrawl.de-en": 2_399_123,
                                       "training/news-commentary-v9.de-en": 201_288}
    for archive, prefix in prepare.TRAIN_CORPORA:  # what prepare.py reads, where it reads it
        members = _members(out / "small" / archive)
        assert sorted(members) == [f"{prefix}.de", f"{prefix}.en"]
        n = round(fake_mirror.WMT14_LINES[prefix] * FRACTION)
        assert len(members[f"{prefix}.en"]) == len(members[f"{prefix}.de"]) == n
        assert all(line.strip() for line in members[f"{prefix}.en"] + members[f"{prefix}.de"])
    assert [line.split(":")[0] for line in logged[:3]] == [a for a, _ in prepare.TRAIN_CORPORA]
    dev = _members(out / "small" / "dev.tgz")
    assert [len(dev[f"{prepare.DEV[1]}.{lang}"]) for lang in ("en", "de")] == [3000, 3000]
    for test_set, size in (("full", 3003), ("filtered", 2737)):
        archive, src, ref = prepare.TEST[test_set]
        _members(out / "small" / archive)  # readable
        with tarfile.open(out / "small" / archive) as tar:
            tar.extractall(out / "x", filter="data")
        assert len(prepare.read_sgm(str(out / "x" / src))) == len(prepare.read_sgm(str(out / "x" / ref))) == size


def test_scale_mirror_resumes_and_refuses_other_settings(scale_mirror):
    out, paths, _ = scale_mirror
    before = {p: Path(p).stat().st_mtime_ns for p in paths[:3]}
    logged = []
    assert fake_mirror.build_scale_mirror(str(out / "small"), FRACTION, log=logged.append) == paths
    assert logged == [f"{Path(p).name}: already written" for p in paths[:3]]
    assert {p: Path(p).stat().st_mtime_ns for p in paths[:3]} == before
    with pytest.raises(ValueError, match="holds a stand-in of other settings"):
        fake_mirror.build_scale_mirror(str(out / "small"), FRACTION, seed=2)


def test_scale_mirror_manifest_holds_the_archives_checksums(scale_mirror):
    out, paths, _ = scale_mirror
    manifest = json.loads((out / "small" / "manifest.json").read_text())
    for entry in manifest["files"]:
        data = (out / "small" / entry["name"]).read_bytes()
        if entry.get("sha256"):
            assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["size"] == len(data)
        if entry.get("md5"):
            assert entry["md5"] == hashlib.md5(data).hexdigest()


def test_a_larger_fraction_extends_every_corpus(scale_mirror):
    """The mirror of a fraction holds the first lines of each corpus of a larger one: a growing prefix."""
    out, _, _ = scale_mirror
    for archive, prefix in prepare.TRAIN_CORPORA:
        small, large = _members(out / "small" / archive), _members(out / "large" / archive)
        for lang in ("en", "de"):
            assert len(large[f"{prefix}.{lang}"]) == round(fake_mirror.WMT14_LINES[prefix] * 2 * FRACTION)
            assert large[f"{prefix}.{lang}"][:len(small[f"{prefix}.{lang}"])] == small[f"{prefix}.{lang}"]
    assert _members(out / "small" / "dev.tgz") == _members(out / "large" / "dev.tgz")


def test_scale_lines_have_wmt14s_length_distribution():
    """About 23 Moses tokens (21.8 whitespace words) a line, a long tail past 100 words, 1-3 % of lines under 5 words,
    German lines about as long (prepare.py's ratio 1.5 keeps nearly all), and new names all along."""
    lines = list(fake_mirror._take(fake_mirror.ScaleLines("commoncrawl.de-en"), 6000))
    en = np.array([len(e.split()) for e, _ in lines])
    de = np.array([len(d.split()) for _, d in lines])
    assert 21.0 < en.mean() < 22.6 and 14 < en.std() < 19
    assert 15 <= np.median(en) <= 20
    assert 0.002 < (en > 100).mean() < 0.01 and en.max() > 120
    assert 0.005 < (en < 5).mean() < 0.03
    assert 0.9 < de.mean() / en.mean() < 1.05
    kept = sum(prepare.keep_pair(e, d) for e, d in lines)
    assert kept / len(lines) > 0.97
    names = {w for e, _ in lines[:3000] for w in e.split() if w.istitle()}
    more = {w for e, _ in lines[3000:] for w in e.split() if w.istitle()} - names
    assert len(more) > 300  # the vocabulary keeps growing with the corpus


def test_rare_names_are_one_per_rank():
    assert [fake_mirror.rare_name(r) for r in (0, 1, 19, 20, 21, 400)] == ["Ka", "Lo", "Zo", "Kalo", "Lolo",
                                                                          "Kakalo"]


def test_corpus_is_streamed_not_held(tmp_path):
    """Writing a corpus holds one line at a time: 10,000 lines (about 3 MB of text, 4 MB as Python strings) peak
    under 3 MB, most of it the lexicon's cache of compounds (bounded: the lexicon's heads times modifiers)."""
    lines = fake_mirror.ScaleLines("training/europarl-v7.de-en")
    tracemalloc.start()
    try:
        fake_mirror._write_corpus(str(tmp_path / "c.tgz"), [("a.en", "a.de")], lines, 10000, 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(_members(tmp_path / "c.tgz")["a.en"]) == 10000
    assert peak < 3e6, peak
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.tgz"]  # no temporary file left


def test_manifest_hashes_in_blocks(tmp_path):
    """write_manifest hashes a 20 MB archive without reading it whole (it read it into memory before)."""
    paths = fake_mirror.build_mirror(str(tmp_path), [("a", "b")], [("c", "d")], [("e", "f")])
    big = Path(paths[0])
    big.write_bytes(np.random.default_rng(0).bytes(20 << 20))
    tracemalloc.start()
    try:
        fake_mirror.write_manifest(str(tmp_path), paths)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    entry = next(e for e in json.loads((tmp_path / "manifest.json").read_text())["files"] if e["name"] == big.name)
    assert entry["sha256"] == hashlib.sha256(big.read_bytes()).hexdigest() and entry["size"] == 20 << 20
    assert peak < 5e6, peak
