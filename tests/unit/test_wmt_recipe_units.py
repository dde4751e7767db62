"""Unit tests of the WMT14 recipe scripts (examples/wmt14_en_de): download,
prepare, evaluation, train.sh's command line for every system of the table.
The end-to-end run is in test_wmt_recipe.py."""

import hashlib
import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from syntax_nmt import systems as S
from support.files import load_recipe_module

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "wmt14_en_de"


download = load_recipe_module("download")
fake_mirror = load_recipe_module("fake_mirror")

TRAIN = [
    ("The cat sleeps on the mat.", "Die Katze schläft auf der Matte."),
    ("A well-known state-of-the-art system.", "Ein weithin bekanntes System nach dem neuesten Stand der Technik."),
    ("I don't know.", "Ich weiß es nicht."),
    ("", "Leere Quelle."),  # dropped: empty source
    ("one two three four five six seven", "eins"),  # dropped: ratio
    ("He said: \"Yes!\"", "Er sagte: „Ja!“"),
    ("Prices rose by 5 % in 2013.", "Die Preise stiegen 2013 um 5 %."),
    ("The E-mail arrived at 10 o'clock.", "Die E-Mail kam um 10 Uhr an."),
    ("We like green apples.", "Wir mögen grüne Äpfel."),
    ("They went home early.", "Sie gingen früh nach Hause."),
]
DEV = [("Good morning.", "Guten Morgen."), ("See you soon.", "Bis bald.")]
TEST = [("A long-term plan & more.", "Ein langfristiger Plan & mehr."), ("Thank you.", "Danke.")]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    out = tmp_path_factory.mktemp("mirror")
    fake_mirror.build_mirror(str(out), TRAIN, DEV, TEST, test_filtered=TEST[:1])
    return out


def entry_for(path: Path, **hashes):
    return {"name": path.name, "url": "https://unused.invalid/" + path.name, "group": "train",
            "size": None, "sha256": None, "md5": None, **hashes}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- download
def test_manifest_lists_the_official_archives():
    entries = download.load_manifest()
    names = [e["name"] for e in download.select(entries, "full")]
    assert names == ["training-parallel-europarl-v7.tgz", "training-parallel-commoncrawl.tgz",
                     "training-parallel-nc-v9.tgz", "dev.tgz", "test-full.tgz"]
    assert [e["name"] for e in download.select(entries, "filtered")][-1] == "test-filtered.tgz"
    for e in entries:
        assert e["url"].startswith("https://statmt.org/wmt1") and e["url"].endswith("/" + e["name"])
        for algo, length in (("sha256", 64), ("md5", 32)):
            assert e[algo] is None or re.fullmatch(f"[0-9a-f]{{{length}}}", e[algo]), (e["name"], algo)
        assert e["checksum_source"]
    # which archive is verified by what: sha256 for the training data, md5 for the test sets, none for dev
    assert {e["name"]: (e["sha256"] is not None, e["md5"] is not None) for e in entries} == {
        "training-parallel-europarl-v7.tgz": (True, False), "training-parallel-commoncrawl.tgz": (True, False),
        "training-parallel-nc-v9.tgz": (True, False), "dev.tgz": (False, False),
        "test-full.tgz": (False, True), "test-filtered.tgz": (False, True)}
    # the test-set md5s are sacrebleu's own (the files `sacrebleu -t wmt14[/full]` downloads)
    from sacrebleu.dataset import DATASETS

    by_url = {e["url"]: e["md5"] for e in entries}
    for key in ("wmt14", "wmt14/full"):
        assert [by_url[u] for u in DATASETS[key].data] == DATASETS[key].md5


@pytest.mark.parametrize("mirror_form", ["dir", "file_url"])
def test_download_from_mirror_then_skip(mirror, tmp_path, mirror_form, capsys):
    src = mirror / "dev.tgz"
    base = str(mirror) if mirror_form == "dir" else mirror.as_uri()
    entry = entry_for(src, sha256=sha256(src), size=src.stat().st_size)
    res = download.download(entry, str(tmp_path), base, quiet=True)
    assert res["action"] == "downloaded" and res["status"] == "verified (sha256)"
    assert (tmp_path / "dev.tgz").read_bytes() == src.read_bytes()
    assert not (tmp_path / "dev.tgz.part").exists()
    assert (tmp_path / "SHA256SUMS").read_text() == f"{sha256(src)}  dev.tgz\n"
    # second run: nothing fetched (the mirror is not even consulted)
    res = download.download(entry, str(tmp_path), str(tmp_path / "no-such-mirror"), quiet=True)
    assert res["action"] == "skipped" and res["status"] == "verified (sha256)"


def test_missing_checksum_is_reported_not_verified(mirror, tmp_path, capsys):
    manifest = tmp_path / "manifest.json"
    src = mirror / "test-full.tgz"
    manifest.write_text(json.dumps({"files": [
        dict(entry_for(src), group="test-full"),
        dict(entry_for(mirror / "dev.tgz"), group="dev", md5=hashlib.md5((mirror / "dev.tgz").read_bytes()).hexdigest()),
    ]}))
    args = download.get_parser().parse_args(
        ["--dest", str(tmp_path / "d"), "--manifest", str(manifest), "--mirror", str(mirror), "--quiet"])
    download.main(args)
    out = capsys.readouterr().out
    assert "test-full.tgz: NOT VERIFIED (no checksum in manifest)" in out
    assert "dev.tgz: verified (md5)" in out
    sums = (tmp_path / "d" / "SHA256SUMS").read_text().splitlines()
    assert sums == [f"{sha256(mirror / 'dev.tgz')}  dev.tgz", f"{sha256(src)}  test-full.tgz"]


def test_mirror_from_environment(mirror, tmp_path, monkeypatch, capsys):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"files": [dict(entry_for(mirror / "dev.tgz"), group="dev")]}))
    monkeypatch.setenv(download.MIRROR_ENV, mirror.as_uri())
    download.main(download.get_parser().parse_args(
        ["--dest", str(tmp_path / "d"), "--manifest", str(manifest), "--quiet"]))
    assert (tmp_path / "d" / "dev.tgz").exists()


def test_checksum_mismatch_fails_and_keeps_bad_file_aside(mirror, tmp_path):
    entry = entry_for(mirror / "dev.tgz", sha256="0" * 64)
    with pytest.raises(download.DownloadError, match="sha256"):
        download.download(entry, str(tmp_path), str(mirror), quiet=True)
    assert not (tmp_path / "dev.tgz").exists() and (tmp_path / "dev.tgz.corrupt").exists()
    entry = entry_for(mirror / "dev.tgz", size=1)
    with pytest.raises(download.DownloadError, match="size"):
        download.download(entry, str(tmp_path), str(mirror), quiet=True)


def test_local_resume_appends_to_part_file(mirror, tmp_path):
    src = mirror / "training-parallel-europarl-v7.tgz"
    data = src.read_bytes()
    (tmp_path / (src.name + ".part")).write_bytes(data[:100])
    download.fetch(str(src), str(tmp_path / src.name), quiet=True)
    assert (tmp_path / src.name).read_bytes() == data


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves ``files`` and honours ``Range: bytes=N-`` unless ``ranges`` is False;
    records the Range header of each request; can drop the connection mid-body."""

    files: dict = {}
    ranges = True
    requests: list = []
    truncate_first = False

    def log_message(self, *args):
        pass

    def do_GET(self):
        rng = self.headers.get("Range")
        type(self).requests.append(rng)
        data = self.files.get(self.path.lstrip("/"))
        if data is None:
            self.send_error(404)
            return
        start = int(rng.split("=")[1].split("-")[0]) if (rng and self.ranges) else 0
        if start >= len(data) and start:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        body = data[start:]
        if type(self).truncate_first:
            type(self).truncate_first = False
            body = body[: len(body) // 2]  # then close: the client sees a short read
        self.wfile.write(body)


@pytest.fixture
def http_server(mirror):
    handler = type("Handler", (RangeHandler,), {
        "files": {p.name: p.read_bytes() for p in mirror.iterdir()}, "requests": [], "ranges": True})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_http_resume_uses_range(http_server, mirror, tmp_path):
    handler, url = http_server
    name = "training-parallel-commoncrawl.tgz"
    data = (mirror / name).read_bytes()
    (tmp_path / (name + ".part")).write_bytes(data[:50])
    entry = entry_for(mirror / name, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    res = download.download(entry, str(tmp_path), url, quiet=True)
    assert res["status"] == "verified (sha256)"
    assert handler.requests == ["bytes=50-"]
    assert (tmp_path / name).read_bytes() == data


def test_http_server_without_ranges_restarts(http_server, mirror, tmp_path):
    handler, url = http_server
    handler.ranges = False
    name = "dev.tgz"
    data = (mirror / name).read_bytes()
    (tmp_path / (name + ".part")).write_bytes(b"garbage-that-is-not-a-prefix")
    download.fetch(f"{url}/{name}", str(tmp_path / name), quiet=True)
    assert (tmp_path / name).read_bytes() == data


def test_http_interrupted_transfer_resumes_on_retry(http_server, mirror, tmp_path, monkeypatch):
    handler, url = http_server
    handler.truncate_first = True
    monkeypatch.setattr(download.time, "sleep", lambda s: None)
    name = "training-parallel-nc-v9.tgz"
    data = (mirror / name).read_bytes()
    res = download.download(entry_for(mirror / name, size=len(data)), str(tmp_path), url, quiet=True)
    assert (tmp_path / name).read_bytes() == data
    assert res["status"].startswith("NOT VERIFIED")
    assert handler.requests[0] is None and handler.requests[1] == f"bytes={len(data) // 2}-"


def test_http_404_fails_without_retrying(http_server, tmp_path):
    handler, url = http_server
    with pytest.raises(download.DownloadError, match="404"):
        download.download(entry_for(Path("missing.tgz")), str(tmp_path), url, retries=3, quiet=True)
    assert len(handler.requests) == 1


# ------------------------------------------------------------------------------ prepare
prepare = load_recipe_module("prepare")


def test_tokenize_normalizes_and_splits_dashes():
    prepare._init_worker(("en", "de"), escape=False)
    assert prepare.tokenize("A well-known state-of-the-art system.", "en") == \
        "A well @-@ known state @-@ of @-@ the @-@ art system ."
    assert prepare.tokenize("I don't\x07 know.", "en") == "I don 't know ."  # control char removed
    assert prepare.tokenize("Er sagte: „Ja!“", "de") == 'Er sagte : " Ja ! "'  # punctuation normalized
    assert prepare.tokenize("Tom & Jerry", "en") == "Tom & Jerry"
    prepare._init_worker(("en",), escape=True)
    assert prepare.tokenize("Tom & Jerry", "en") == "Tom &amp; Jerry"


@pytest.mark.parametrize("src,tgt,keep", [
    ("a", "b", True),
    ("", "b", False),
    ("a b c", "x y", True),  # ratio 1.5
    ("a b c d", "x y", False),  # ratio 2
    (" ".join(["w"] * 250), " ".join(["w"] * 250), True),
    (" ".join(["w"] * 251), " ".join(["w"] * 250), False),
])
def test_keep_pair_matches_clean_corpus_n(src, tgt, keep):
    assert prepare.keep_pair(src, tgt, 1, 250, 1.5) is keep


def test_subsample_is_deterministic_nested_and_sized():
    n = 10_000
    masks = {p: prepare.subsample_mask(n, p, seed=7) for p in (1, 5, 10, 25, 50, 100)}
    assert {p: int(m.sum()) for p, m in masks.items()} == {1: 100, 5: 500, 10: 1000, 25: 2500, 50: 5000, 100: n}
    assert (prepare.subsample_mask(n, 5, seed=7) == masks[5]).all()
    assert not (prepare.subsample_mask(n, 5, seed=8) == masks[5]).all()
    assert (masks[5] <= masks[10]).all() and (masks[10] <= masks[50]).all()  # nested
    assert prepare.subsample_mask(3, 1, seed=0).sum() == 1
    with pytest.raises(ValueError):
        prepare.subsample_mask(10, 0, seed=0)


def test_read_sgm_matches_sacrebleu(tmp_path):
    path = tmp_path / "x.sgm"
    path.write_bytes(fake_mirror.sgm(["  a  b ", "c & d < e"], "ref", "de"))
    assert prepare.read_sgm(str(path)) == ["a b", "c & d < e"]


def test_tokenize_pairs_parallel_equals_serial(monkeypatch):
    from syntax_nmt.recipes import text

    pairs = [(f"Sentence number {i}, well-formed.", f"Satz Nummer {i} ist gut.") for i in range(50)]
    monkeypatch.setattr(text, "BATCH", 7)
    serial = list(prepare.tokenize_pairs(pairs, workers=1))
    parallel = list(prepare.tokenize_pairs(pairs, workers=2))
    assert serial == parallel and len(serial) == 50
    assert serial[3] == ("Sentence number 3 , well @-@ formed .", "Satz Nummer 3 ist gut .")
    # without -a (the Multi30k convention) hyphenated words stay whole, in every worker
    plain = list(prepare.tokenize_pairs(pairs, workers=2, aggressive_dash_splits=False))
    assert plain[3] == ("Sentence number 3 , well-formed .", "Satz Nummer 3 ist gut .")


def run_prepare(mirror, work, out, *extra):
    args = prepare.get_parser().parse_args([
        "--download-dir", str(mirror), "--work-dir", str(work), "--out-dir", str(out),
        "--bpe-merges", "30", "--workers", "1", *extra])
    return prepare.main(args)


def lines(path):
    return Path(path).read_text(encoding="utf-8").splitlines()


def test_prepare_end_to_end(mirror, tmp_path):
    stats = run_prepare(mirror, tmp_path / "work", tmp_path / "p100")
    out = tmp_path / "p100"
    assert stats["train"]["raw_total"] == len(TRAIN) and stats["train"]["cleaned"] == len(TRAIN) - 2
    assert stats["train"]["raw"] == {"training/europarl-v7.de-en": 5, "commoncrawl.de-en": 3,
                                     "training/news-commentary-v9.de-en": 2}
    assert len(lines(out / "train.en")) == len(lines(out / "train.de")) == len(TRAIN) - 2
    assert lines(out / "train.en")[1] == "A well @-@ known state @-@ of @-@ the @-@ art system ."
    assert lines(out / "valid.de") == ["Guten Morgen .", "Bis bald ."]
    assert lines(out / "test.raw.de") == [p[1] for p in TEST]
    assert lines(out / "test.en")[0] == "A long @-@ term plan & more ."
    codes = lines(out / "bpe.codes")
    assert codes[0].startswith("#version") and 1 < len(codes) <= 31
    # rerun: every stage is cached
    mtime = (out / "bpe.codes").stat().st_mtime_ns
    assert run_prepare(mirror, tmp_path / "work", tmp_path / "p100") == json.loads(
        (out / "prepare.json").read_text())["stats"]
    assert (out / "bpe.codes").stat().st_mtime_ns == mtime

    # a 50% subsample: same tokenization cache, lines are aligned pairs from the full data
    run_prepare(mirror, tmp_path / "work", tmp_path / "p50", "--subsample-percent", "50", "--seed", "3")
    full = list(zip(lines(out / "train.en"), lines(out / "train.de")))
    half = list(zip(lines(tmp_path / "p50" / "train.en"), lines(tmp_path / "p50" / "train.de")))
    assert len(half) == 4 and all(pair in full for pair in half)
    assert half == [p for p in full if p in half]  # corpus order kept
    run_prepare(mirror, tmp_path / "work", tmp_path / "p50b", "--subsample-percent", "50", "--seed", "3")
    assert lines(tmp_path / "p50b" / "train.de") == lines(tmp_path / "p50" / "train.de")


def test_prepare_filtered_test_and_sentencepiece(mirror, tmp_path):
    run_prepare(mirror, tmp_path / "work", tmp_path / "out", "--test-set", "filtered",
                "--subword", "sentencepiece", "--spm-vocab-size", "60")
    assert lines(tmp_path / "out" / "test.raw.de") == [TEST[0][1]]
    assert (tmp_path / "out" / "spm.model").exists()


# ----------------------------------------------------------------------------- evaluate
# syntax_nmt.evaluation's metrics and scoring are tested in test_evaluate.py; here: the recipe's tokenization and
# the metrics' detokenization and compound splitting fit together.
from syntax_nmt.evaluation import metrics, scoring  # noqa: E402  (the recipe's evaluate.py runs their command)


def test_prepare_tokenization_round_trips_through_evaluate():
    refs_raw = ["Die E-Mail kam um 10 Uhr an.", "Wir mögen grüne Äpfel.", "Ein langfristiger Plan & mehr."]
    prepare._init_worker(("de",), escape=False)
    refs_tok = [prepare.tokenize(r, "de") for r in refs_raw]
    assert refs_tok == ["Die E @-@ Mail kam um 10 Uhr an .", "Wir mögen grüne Äpfel .",
                        "Ein langfristiger Plan & mehr ."]
    assert metrics.detokenize(refs_tok) == refs_raw
    assert metrics.compound_split(refs_tok[0]) == "Die E @ ##AT##-##AT## @ Mail kam um 10 Uhr an ."


def multi_bleu_perl(hyps, refs):
    """Moses scripts/generic/multi-bleu.perl (single reference, case-sensitive), transcribed
    statement by statement: the reference for :func:`metrics.tokenized_bleu`."""
    import math
    from collections import Counter

    correct, total = [0] * 5, [0] * 5
    hyp_len = ref_len = 0
    for hyp, ref in zip(hyps, refs):
        words, ref_words = hyp.split(), ref.split()
        ref_ngram = Counter()
        for n in range(1, 5):
            for start in range(len(ref_words) - n + 1):
                ref_ngram[(n, *ref_words[start:start + n])] += 1
        hyp_len += len(words)
        ref_len += len(ref_words)
        for n in range(1, 5):
            t_ngram = Counter((n, *words[start:start + n]) for start in range(len(words) - n + 1))
            for ngram, count in t_ngram.items():
                total[n] += count
                if ngram in ref_ngram:
                    correct[n] += min(count, ref_ngram[ngram])
    prec = [correct[n] / total[n] if total[n] else 0 for n in range(1, 5)]
    bp = math.exp(1 - ref_len / hyp_len) if hyp_len < ref_len else 1.0
    return 100 * bp * math.exp(sum(math.log(p) if p else -9999999999 for p in prec) / 4)


@pytest.mark.parametrize("seed", range(40))
def test_tokenized_bleu_is_multi_bleu_perl(seed):
    import random

    rng = random.Random(seed)
    vocab = "Über für große Straße , . ist wäre Käse Hund @-@ „ “ ein E-Mail 10.000".split()[: rng.randint(3, 16)]
    refs = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 20))) for _ in range(rng.randint(1, 25))]
    hyps = []
    for ref in refs:
        words = [w if rng.random() < rng.random() else rng.choice(vocab) for w in ref.split()]
        hyps.append(" ".join(words[: rng.randint(1, len(words) + 2)] + [rng.choice(vocab)] * rng.randint(0, 2)))
    score = metrics.tokenized_bleu(hyps, refs)[0]
    assert score == pytest.approx(multi_bleu_perl(hyps, refs), rel=1e-12, abs=1e-12)


def test_tokenized_bleu_edge_cases():
    # no 4-gram match: multi-bleu.perl gives 0 (no smoothing), sacrebleu's default 'exp' smoothing would not
    hyps, refs = ["a b c d", "e f"], ["a b c x", "e f"]
    assert metrics.tokenized_bleu(hyps, refs)[0] == multi_bleu_perl(hyps, refs) == pytest.approx(0.0, abs=1e-9)
    assert metrics.BLEU(tokenize="none", force=True).corpus_score(hyps, [refs]).score > 1
    # case-sensitive, tokens as given (no 13a splitting of "Haus.")
    assert metrics.tokenized_bleu(["Das Haus. ist"], ["das Haus . ist"])[0] == multi_bleu_perl(
        ["Das Haus. ist"], ["das Haus . ist"]) == 0.0
    assert metrics.tokenized_bleu(["x y z w v"], ["x y z w v"])[0] == pytest.approx(100.0)


def write(path, lines_):
    Path(path).write_text("".join(x + "\n" for x in lines_), encoding="utf-8")
    return str(path)


def test_summary_reports_both_bleus_with_significance(tmp_path):
    refs_tok = [f"Satz Nummer {i} ist hier zu Ende ." for i in range(30)]
    refs_raw = [f"Satz Nummer {i} ist hier zu Ende." for i in range(30)]
    ref_tok, ref_raw = write(tmp_path / "ref.tok", refs_tok), write(tmp_path / "ref.raw", refs_raw)
    systems = {"baseline": [f"Satz {i} ist dort ." for i in range(30)], "syntax": refs_tok}
    prefixes = {}
    for name, hyps in systems.items():
        gen = tmp_path / f"{name}.gen"
        gen.write_text("".join(f"H-{i}\t-0.1\t{h}\n" for i, h in enumerate(hyps)), encoding="utf-8")
        prefixes[name] = str(tmp_path / name)
        res = scoring.score(str(gen), ref_raw, ref_tok, prefixes[name])
        assert res["tokenized_bleu"] == pytest.approx(multi_bleu_perl(hyps, refs_tok), rel=1e-12)
    text = scoring.summary(ref_raw, [prefixes["syntax"]], baseline=prefixes["baseline"], n_samples=100,
                            ref_tok=ref_tok)
    rows = {line.split()[0]: line.split() for line in text.splitlines()}
    assert rows["system"] == ["system", "sacreBLEU", "p", "tok.BLEU", "p", "split", "BLEU"]
    assert rows["baseline"][2] == rows["baseline"][4] == "baseline"
    syntax = rows["syntax"]
    assert float(syntax[1]) == pytest.approx(100.0) and float(syntax[3]) == pytest.approx(100.0)
    assert syntax[2].endswith("*") and syntax[4].endswith("*")  # p < 0.05 on both metrics
    assert "paired bootstrap" in text and "multi-bleu.perl" in text
    tok_rows = scoring.significance(ref_tok, ("baseline", prefixes["baseline"] + ".tok"),
                                     [("syntax", prefixes["syntax"] + ".tok")], n_samples=100, metric="tokenized")
    assert tok_rows[1]["bleu"] == pytest.approx(100.0)
    assert tok_rows[0]["bleu"] == pytest.approx(multi_bleu_perl(systems["baseline"], refs_tok), rel=1e-12)
    without_tok = scoring.summary(ref_raw, [prefixes["syntax"]], baseline=prefixes["baseline"], n_samples=100)
    assert {line.split()[0]: line.split() for line in without_tok.splitlines()}["syntax"][4] == "-"


# ----------------------------------------------------------------------- train.sh flags
def run_train_sh(tmp_path, config, cache=None, **env):
    """Run train.sh with a stand-in trainer that records its arguments; returns them."""
    fake = tmp_path / "fake-train"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGS_OUT"\n')
    fake.chmod(0o755)
    out = tmp_path / f"{config}.args"
    full_env = dict(os.environ, DATA=str(tmp_path / "bin"), SAVE=str(tmp_path / "ckpt" / config),
                    FAIRSEQ_TRAIN=str(fake), ARGS_OUT=str(out), AVERAGE="0", USER_DIR="/plugin",
                    SYSTEMS_PYTHON=sys.executable, **env)
    full_env.pop("SYSTEMS_CACHE", None)
    if cache is not None:
        full_env["SYSTEMS_CACHE"] = str(cache)
    proc = subprocess.run(["bash", str(RECIPE / "train.sh"), config, "--extra-flag"], env=full_env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out.read_text().splitlines()


def flag(args, name):
    return args[args.index(name) + 1]


def last_flag(args, name):
    """The value fairseq's parser keeps for an option given more than once: the last."""
    return args[len(args) - 1 - args[::-1].index(name) + 1]


def between(args, first, stop):
    """``args`` from the option ``first`` up to (not including) the option ``stop``."""
    start = args.index(first)
    return args[start:args.index(stop, start)]


#: every system of the table (python -m syntax_nmt.systems list --all), in its order
SYSTEMS = list(S.systems())
OLD_NAME = {new: old for old, new in S.ALIASES.items()}
FEATURES = ["--feature-embed-dim", "20", "--feature-merge", "sum", "--feature-combine", "concat"]
TINY_BASELINE = ["--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64", "--decoder-embed-dim",
                 "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4"]


def expected_model_args(system, tiny=False):
    """``--arch`` and the model options train.sh gives ``system`` (examples/wmt14_en_de/configs.sh): the stock
    Transformer and the systems without features share all embeddings; the feature systems' 492-d source words
    cannot, so only the decoder shares, with the paper's 20-d summed features unless the system sets each
    width; more encoder layers than the architecture's where the system needs them."""
    if system.stock:
        return ["--arch", "transformer", "--share-all-embeddings", *TINY_BASELINE] if tiny else \
            ["--arch", "transformer_wmt_en_de", "--share-all-embeddings"]
    args = ["--arch", "syntax_transformer_tiny" if tiny else "syntax_transformer_wmt_en_de"]
    if system.features:
        args.append("--share-decoder-input-output-embed")
        if "--feature-embed-dims" not in system.model_args:
            args += FEATURES
    else:
        args.append("--share-all-embeddings")
    layers = 2 if tiny else 6
    return args + (["--encoder-layers", str(system.min_encoder_layers)] if system.min_encoder_layers > layers else [])


@pytest.mark.parametrize("name", SYSTEMS)
def test_train_sh_flags(tmp_path, systems_cache, name):
    system = S.get(name)
    one = run_train_sh(tmp_path, name, systems_cache)
    assert flag(one, "--warmup-updates") == ("8000" if system.uses("sgnet") else "4000")  # SG-Net: its paper's
    assert flag(one, "--user-dir") == "/plugin" and one[-1] == "--extra-flag"
    assert flag(one, "--lr") == "7e-4" and flag(one, "--lr-scheduler") == "inverse_sqrt"
    assert flag(one, "--adam-betas") == "(0.9, 0.98)" and flag(one, "--label-smoothing") == "0.1"
    assert flag(one, "--max-tokens") == "4096" and flag(one, "--update-freq") == "8"
    assert flag(one, "--distributed-world-size") == "1" and "--fp16" in one
    assert flag(one, "--task") == ("translation" if system.stock else "syntax_translation")
    assert between(one, "--arch", "--optimizer") == expected_model_args(system)
    # the system's own options, as the table gives them, after the training options (they may set the criterion)
    assert between(one, "--criterion", "--max-tokens") == [
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1", *system.args()]
    assert last_flag(one, "--criterion") == ("label_smoothed_cross_entropy_with_syntax"
                                             if system.criterion_args or system.target == "factors"
                                             else "label_smoothed_cross_entropy")
    if system.features:
        assert flag(one, "--source-features") == "pos,case,subword"
    elif system.methods or not system.stock:
        assert flag(one, "--source-features") == ""
    else:
        assert "--source-features" not in one and "--syntax-attention" not in one
    if system.methods:
        assert flag(one, "--syntax-attention") == ",".join(system.methods)
    eight = run_train_sh(tmp_path, name, systems_cache, NGPU="8", LR="5e-4")
    assert flag(eight, "--update-freq") == "1" and flag(eight, "--distributed-world-size") == "8"
    assert flag(eight, "--lr") == "5e-4"
    cpu = run_train_sh(tmp_path, name, systems_cache, CPU="1", TINY="1")
    assert "--cpu" in cpu and "--fp16" not in cpu and "--distributed-world-size" not in cpu
    assert between(cpu, "--arch", "--optimizer") == expected_model_args(system, tiny=True)
    if name in OLD_NAME:  # the recipe's old name is the same system (only the checkpoint directory differs)
        old = run_train_sh(tmp_path, OLD_NAME[name], systems_cache)
        old[old.index("--save-dir") + 1] = flag(one, "--save-dir")
        assert old == one


def test_train_sh_reads_the_table_with_python(tmp_path, systems_cache):
    """Without SYSTEMS_CACHE, train.sh reads the table with SYSTEMS_PYTHON: the same command line as from the
    cache the other tests use (fixture ``systems_cache``)."""
    assert run_train_sh(tmp_path, "all") == run_train_sh(tmp_path, "all", systems_cache)


def test_system_names_read_from_the_cache_equal_the_table(systems_cache):
    """system_names (examples/common/systems.sh) with SYSTEMS_CACHE gives what the table gives: the default
    comparison and old names resolved, with no python of its own (SYSTEMS_PYTHON fails here). Without the cache it
    asks python, as the Multi30k recipe's offline run does (its cache starts empty)."""
    from syntax_nmt import systems

    common = RECIPE.parent / "common" / "systems.sh"
    env = dict(os.environ, SYSTEMS_PYTHON="false", SYSTEMS_CACHE=str(systems_cache))

    def names(arg):
        proc = subprocess.run(["bash", "-c", f'source "{common}"; system_names {arg}'], env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    old = next(iter(systems.ALIASES))
    assert names("default") == systems.default_systems()
    assert names(f"transformer,{old} lisa") == ["transformer", systems.ALIASES[old], "lisa"]


def test_train_sh_rejects_unknown_config(tmp_path):
    proc = subprocess.run(["bash", str(RECIPE / "train.sh"), "nope"], capture_output=True, text=True,
                          env=dict(os.environ, DATA="d", SAVE=str(tmp_path), SYSTEMS_PYTHON=sys.executable))
    assert proc.returncode != 0 and "unknown system 'nope'" in proc.stderr


@pytest.mark.parametrize("value", ["0", "-5", "x", ""])
def test_bpe_merges_must_be_positive(tmp_path, value, capsys):
    """``--bpe-merges 0`` or ``-5`` learned codes without a merge (every word split into characters), silently."""
    import argparse

    from syntax_nmt.recipes.text import learn_subword, positive_int

    with pytest.raises(argparse.ArgumentTypeError, match=f"^must be a positive integer, got {value!r}$"):
        positive_int(value)
    assert positive_int("14000") == 14000
    with pytest.raises(ValueError, match="^BPE needs a positive number of merges, got 0$"):
        learn_subword(str(tmp_path), "bpe", bpe_merges=0)
    with pytest.raises(SystemExit) as e:
        prepare.get_parser().parse_args(["--bpe-merges", value])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        f"error: argument --bpe-merges: must be a positive integer, got {value!r}")
