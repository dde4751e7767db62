"""syntax-nmt-annotate with a real trained spaCy pipeline on a generated corpus.

The tiny pipeline (``syntax-nmt-train-spacy``) is trained on the synthetic corpus and kept
in pytest's cache directory: ``train_spacy_pipeline`` skips retraining when the (seeded,
byte-identical) corpus and settings are unchanged, so only the first run pays ~15 s.
"""

import pytest

pytest.importorskip("spacy")
generate = pytest.importorskip("syntax_nmt.synthetic.generate")

from syntax_nmt.annotate.cli import main  # noqa: E402
from syntax_nmt.annotate.spacy_train import train_spacy_pipeline  # noqa: E402

from test_annotate import STREAMS, check_aligned, read  # noqa: E402


@pytest.fixture(scope="module")
def synth(request, tmp_path_factory):
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    root = cache.mkdir("syntax_nmt_annotate_tiny_spacy") if cache else tmp_path_factory.mktemp("tiny_spacy")
    paths = generate.generate_corpus(str(root / "corpus"), {"train": 300, "valid": 50}, seed=11)
    model = train_spacy_pipeline(paths["train"]["en.conllu"], paths["valid"]["en.conllu"], root / "spacy-en",
                                 max_steps=60, seed=0)
    return paths, str(model)


@pytest.mark.parametrize("scheme,size", [("bpe", 300), ("spm", 200)])
def test_generated_corpus_streams_are_exact(tmp_path, synth, scheme, size):
    paths, model = synth
    train = paths["train"]
    prefix = tmp_path / "ann/train"
    main(["--source", train["en"], "--target", train["tok.de"], "--src-lang", "en", "--tgt-lang", "de",
          "-o", str(prefix), "--spacy-model", model, "--subword", scheme, "--learn-subword", str(size),
          "--subword-model-out", str(tmp_path / f"joint.{scheme}"), "--chunk-size", "128", "--n-process", "1",
          "--multi-root", "forest", "--write-conllu", "--quiet"])
    lines = check_aligned(prefix, scheme=scheme)  # field counts, heads inside the sentence, B/M/E/O vs markers
    assert len(lines) == 300 and all(lines)
    assert len(read(f"{prefix}.de")) == 300
    for name in STREAMS:
        assert len(read(f"{prefix}.{name}")) == 300
    roots = [sum(h == "0" and t in "BO" for h, t in zip(hl.split(), tl.split()))
             for hl, tl in zip(read(f"{prefix}.head"), read(f"{prefix}.subword"))]
    assert min(roots) >= 1  # every line has a root word


def test_pretokenized_keeps_the_gold_tokens(tmp_path, synth):
    paths, model = synth
    train = paths["train"]
    prefix = tmp_path / "tok/train"
    main(["--source", train["tok.en"], "--src-lang", "en", "-o", str(prefix), "--spacy-model", model,
          "--pretokenized", "--subword", "none", "--multi-root", "attach", "--quiet"])
    assert read(f"{prefix}.en") == read(train["tok.en"])
    check_aligned(prefix, scheme="none")
    roots = [hl.split().count("0") for hl in read(f"{prefix}.head")]
    assert roots == [1] * 300  # --multi-root attach: one tree per line
