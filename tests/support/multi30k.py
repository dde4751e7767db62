"""Stand-ins for the raw Multi30k files of the recipes' offline tests: gzipped lines under a clone's layout, each
with the manifest entry (size, sha256, md5) that download.py checks."""

import gzip
import hashlib
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

#: the test files of Multi30k task 1 and the slice of the synthetic corpus's test split each stands in for
TEST_FILES = {"test_2016_flickr": slice(0, 20), "test_2017_flickr": slice(20, 40), "test_2017_mscoco": slice(40, 55)}


def read_lines(path) -> List[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def gz_entry(path: Path, lines: Sequence[str]) -> Dict:
    """Write ``lines`` gzipped to ``path``; its manifest entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    data = path.read_bytes()
    return {"name": path.name, "url": f"https://example.invalid/{path.name}", "group": "x", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}


def standin_files(src: Dict[str, List[str]], tgt: Dict[str, List[str]]) -> Dict[str, Tuple[List[str], List[str]]]:
    """Multi30k file stem -> (source lines, target lines) from synthetic ``train``/``valid``/``test`` splits."""
    return {"train": (src["train"], tgt["train"]), "val": (src["valid"], tgt["valid"]),
            **{name: (src["test"][s], tgt["test"][s]) for name, s in TEST_FILES.items()}}


def write_standins(raw: Path, files: Dict[str, Tuple[List[str], List[str]]], langs=("en", "de")) -> List[Dict]:
    """Write every file of ``files`` (:func:`standin_files`) as ``raw/STEM.LANG.gz``; the manifest entries."""
    return [gz_entry(raw / f"{name}.{lang}.gz", pair[i]) for name, pair in files.items()
            for i, lang in enumerate(langs)]


def recipe_env(root: Path, files: Dict[str, Tuple[List[str], List[str]]], spacy_model: str, systems_cache,
               langs=("en", "de"), **settings) -> Dict[str, str]:
    """Write the stand-ins of ``files`` under ``root/clone`` with their manifest, and the environment of a recipe's
    tiny offline run on them (the work in ``root/run``; ``settings`` added or replaced)."""
    import json
    import os
    import sys

    entries = write_standins(root / "clone" / "data" / "task1" / "raw", files, langs)
    manifest = root / "manifest.json"
    manifest.write_text(json.dumps({"files": entries}))
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), PYTHON=sys.executable,
               WORK=str(root / "run"), MULTI30K_DIR=str(root / "clone"), MANIFEST=str(manifest), BPE_MERGES="200",
               WORKERS="2", SPACY_MODEL=str(spacy_model), TINY="1", CPU="1", JOBS="2", THREADS="1",
               MAX_TOKENS="1024", MAX_UPDATE="3", SAVE_INTERVAL="3", WARMUP="2", LR="1e-3",
               GEN_ARGS="--max-len-a 1.2 --max-len-b 5", SACREBLEU_SEED="7",
               SYSTEMS_CACHE=str(systems_cache))  # the table read once, not per script
    env.update(settings)
    return env


def run_recipe(script: Path, env: Dict[str, str], root: Path) -> str:
    """Run a recipe's ``run_all.sh`` with ``env``; its output (also in ``root/run_all.log``), after checking it ended
    well."""
    import subprocess
    import time

    t0 = time.time()
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    (root / "run_all.log").write_text(log)
    assert proc.returncode == 0, log[-6000:]
    print(f"\nrun_all.sh {time.time() - t0:.0f}s")
    return log
