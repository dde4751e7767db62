"""End to end: the Multi30k en-fr recipe (examples/multi30k_en_fr/run_all.sh, the en-de recipe's stages with a
parsed target), offline.

Stand-ins for the raw files (the synthetic corpus's English and its second language as "French", gzipped under a
clone's ``data/task1/raw``) with a manifest of their checksums; the tiny spaCy parser of the tests parses both
sides (it stands in for en_core_web_sm and fr_core_news_sm). The run trains the five target-side systems (the
transformer, target factors, interleaved tags, LISA, LISA with factors) one seed each, translates and scores one
split, with the factor accuracy against the target parser.
"""

import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from syntax_nmt.annotate.target_tags import is_tag

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "multi30k_en_fr"
SYSTEMS = ["transformer", "factors", "interleaved", "lisa", "lisa+factors"]

pytestmark = pytest.mark.e2e


def _read(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


def _gz(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    data = path.read_bytes()
    return {"name": path.name, "url": f"https://example.invalid/{path.name}", "group": "x", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_spacy, systems_cache):
    corpus, spacy_model = synthetic_spacy
    root = tmp_path_factory.mktemp("m30k-fr")
    raw = root / "clone" / "data" / "task1" / "raw"
    en = {s: _read(corpus[s]["en"]) for s in corpus}
    fr = {s: _read(corpus[s]["de"]) for s in corpus}
    tests = {"test_2016_flickr": slice(0, 20), "test_2017_flickr": slice(20, 40), "test_2017_mscoco": slice(40, 55)}
    files = {"train": (en["train"], fr["train"]), "val": (en["valid"], fr["valid"]),
             **{name: (en["test"][s], fr["test"][s]) for name, s in tests.items()}}
    entries = [_gz(raw / f"{name}.{lang}.gz", pair[i]) for name, pair in files.items()
               for i, lang in enumerate(("en", "fr"))]
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({"files": entries}))
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), PYTHON=sys.executable,
               WORK=str(root / "run"), MULTI30K_DIR=str(root / "clone"), MANIFEST=str(manifest), BPE_MERGES="200",
               WORKERS="2", SPACY_MODEL=str(spacy_model), TGT_SPACY_MODEL=str(spacy_model), SEEDS="1",
               SPLITS="valid test2017", TINY="1", CPU="1", JOBS="2", THREADS="1", MAX_TOKENS="1024", MAX_UPDATE="3",
               SAVE_INTERVAL="3", WARMUP="2", LR="1e-3", GEN_ARGS="--max-len-a 1.2 --max-len-b 5",
               SACREBLEU_SEED="7", SYSTEMS_CACHE=str(systems_cache))
    t0 = time.time()
    proc = subprocess.run(["bash", str(RECIPE / "run_all.sh")], env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    (root / "run_all.log").write_text(log)
    assert proc.returncode == 0, log[-6000:]
    print(f"\nrun_all.sh {time.time() - t0:.0f}s")
    return root / "run", log


def test_the_target_is_annotated_and_interleaved(run):
    work, _ = run
    ann = work / "annotated" / "bpe200"
    for split in ("train", "valid", "test2017"):
        target = _read(ann / f"{split}.fr")
        assert _read(ann / f"{split}.tgt.fr") == target
        assert [len(t.split()) for t in _read(ann / f"{split}.tgt.pos")] == [len(t.split()) for t in target]
        tagged = _read(work / "annotated" / "bpe200-tagged" / f"{split}.fr")
        assert [" ".join(t for t in line.split() if not is_tag(t)) for line in tagged] == target
        assert all(sum(is_tag(t) for t in line.split()) > 0 for line in tagged if line)
    data = work / "data-bin" / "bpe200"
    assert (data / "dict.tgt.pos.txt").exists() and (data / "train.en-fr.tgt.pos.bin").exists()
    assert any("\u27e8" in line for line in _read(work / "data-bin" / "bpe200-tagged" / "dict.fr.txt"))


def test_every_system_is_trained_scored_and_its_tags_measured(run):
    work, log = run
    ev = work / "eval" / "cpu-bpe200"
    for split in ("valid", "test2017"):
        for system in SYSTEMS:
            result = json.loads((ev / split / f"{system}.seed1.json").read_text())
            assert result["sentences"] == (24 if split == "valid" else 20)
            detok = _read(ev / split / f"{system}.seed1.detok")
            assert not any("\u27e8" in line for line in detok)  # interleaved tags stripped before scoring
            factors = ev / split / f"{system}.seed1.factors.json"
            if system in ("factors", "interleaved", "lisa+factors"):
                acc = json.loads(factors.read_text())["pos"]
                assert 0 <= acc["accuracy"] <= 100 and acc["words"] > 0
            else:
                assert not factors.exists()
        gen = (ev / split / "factors.seed1.gen").read_text(encoding="utf-8")
        assert gen.count("\nF-") + gen.startswith("F-") == result["sentences"]
    table = (ev / "results.md").read_text()
    assert all(f"| {system} " in table for system in SYSTEMS)
    tags = table.split("## Target tags")[1].split("##")[0]
    assert [line.split(" | ")[0][2:] for line in tags.splitlines() if line.startswith("| ") and "---" not in line][1:] \
        == ["factors", "interleaved", "lisa+factors"]
    assert (ev / "translations" / "valid" / "factors.seed1.factors.json").exists()  # kept with the translations
