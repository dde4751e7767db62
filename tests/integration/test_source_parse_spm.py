"""A sentencepiece LISA model's own parse of raw text holding U+FFFD (issue 56, item 5): sentencepiece normalizes
U+FFFD (which the plugin makes of invalid input bytes) to nothing, so the annotation gives a word of U+FFFD alone one
bare ``▁`` piece, which fairseq's ``--remove-bpe sentencepiece`` drops from the S- line. The G- lines, ``hub.parse``
and ``syntax-nmt-evaluate parse`` take the words that --remove-bpe leaves: one head per word of the S- line, no empty
word.

The fixture: the synthetic corpus annotated from its gold trees (``--backend conllu``) with a sentencepiece model
learned on it, binarized, and one update of fairseq-train for LISA (the checks need no trained weights).
"""

import contextlib
import io
from types import SimpleNamespace

import pytest

from support.console import console_argv
from fairseq.data.data_utils import post_process
from fairseq_cli import interactive as fairseq_interactive_cli
from fairseq_cli import train as fairseq_train_cli

from conftest import USER_DIR
from syntax_nmt import SyntaxTransformerModel
from syntax_nmt.annotate.cli import main as annotate
from syntax_nmt.data import binarize
from syntax_nmt.evaluation import evaluate, syntax_accuracy
from syntax_nmt.synthetic.generate import generate_corpus

MOSES = "lang=en,normalize=1,aggressive_dash_splits=0,escape=0"
TRAIN = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
         "--source-features=", "--syntax-attention", "lisa", "--criterion", "label_smoothed_cross_entropy_with_syntax",
         "--label-smoothing", "0.1", "--optimizer", "adam", "--lr", "0.01", "--max-tokens", "2000", "--max-update",
         "1", "--seed", "1", "--no-epoch-checkpoints", "--disable-validation", "--save-interval", "1000",
         "--num-workers", "0", "--log-format", "simple", "--no-progress-bar"]
#: the issue's inputs, as bytes: an invalid byte inside a word (Moses splits the U+FFFD off: a word of its own), as a
#: word, first, last, alone
RAW = [b"the d\xffg sees", b"the dog \xff sees", b"\xff the dog sees", b"the dog sees \xff", b"\xff"]


@pytest.fixture(scope="module")
def spm_lisa(tmp_path_factory):
    root = tmp_path_factory.mktemp("spm-lisa")
    paths = generate_corpus(str(root / "corpus"), {"train": 150, "valid": 8, "test": 4}, seed=5)
    for split in ("train", "valid", "test"):
        sub = (["--learn-subword", "120", "--subword-model-out", str(root / "spm")] if split == "train"
               else ["--subword-model", str(root / "spm.model")])
        annotate(["--backend", "conllu", "--conllu", paths[split]["en.conllu"], "--source", paths[split]["tok.en"],
                  "--pretokenized", "--moses-settings", MOSES, "--target", paths[split]["tok.de"], "--src-lang", "en",
                  "--tgt-lang", "de", "-o", str(root / "text" / split), "--subword", "spm", *sub, "--quiet"])
    data = root / "data-bin"
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--joined-dictionary", "--workers", "1",
                       "--trainpref", str(root / "text/train"), "--validpref", str(root / "text/valid"),
                       "--testpref", str(root / "text/test"), "--destdir", str(data)])
    with open(data / "dict.en.txt", encoding="utf-8") as f:
        assert "\u2581" in [line.split(" ")[0] for line in f]  # the bare piece is a symbol: not <unk>
    with console_argv("fairseq-train", data, *TRAIN, "--save-dir", root / "lisa"):
        fairseq_train_cli.cli_main()
    return SimpleNamespace(root=root, data=str(data), ckpt=str(root / "lisa" / "checkpoint_last.pt"))


def test_hub_parse_gives_one_head_per_word_that_remove_bpe_leaves(spm_lisa):
    m = SyntaxTransformerModel.from_pretrained(str(spm_lisa.root / "lisa"), "checkpoint_last.pt",
                                               data_name_or_path=spm_lisa.data, max_len_b=6)
    lines = [raw.decode("utf-8", errors="replace") for raw in RAW]
    parses = m.parse(lines)
    pieces = [m.task.src_dict.string(t) for t in m.encode_batch(lines)]
    assert pieces[0].split()[:6] == ["\u2581the", "\u2581", "d", "\u2581", "\u2581", "g"]  # the bare piece
    assert [p.words for p in parses] == [post_process(p, "sentencepiece").split() for p in pieces]
    assert [p.words for p in parses] == [["the", "d", "g", "sees"]] + [["the", "dog", "sees"]] * 3 + [[]]
    assert [len(p.heads) for p in parses] == [4, 3, 3, 3, 0]
    assert all(0 <= h <= len(p.words) for p in parses for h in p.heads)


def test_g_lines_of_invalid_bytes_have_the_s_lines_words_and_evaluate_parse_reads_them(spm_lisa, tmp_path, capsys):
    """fairseq-interactive on a file of invalid bytes (U+FFFD in the annotation, with a warning), --remove-bpe
    sentencepiece: each G- line has one head per word of its S- line, and syntax-nmt-evaluate parse scores the log
    against a reference of those words (it refused the whole file, advising --remove-bpe)."""
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(RAW[:4]) + b"\n")
    out = io.StringIO()
    with console_argv("fairseq-interactive", spm_lisa.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                      "--path", spm_lisa.ckpt, "--beam", "2", "--max-len-b", "6", "--remove-bpe", "sentencepiece",
                      "--input", source, "--print-source-parse", "heads"), contextlib.redirect_stdout(out):
        fairseq_interactive_cli.cli_main()
    lines = out.getvalue().splitlines()
    s_lines = {int(line.split("\t")[0][2:]): line.split("\t")[1].split() for line in lines if line.startswith("S-")}
    g_lines = {int(line.split("\t")[0][2:]): line.split("\t")[1].split() for line in lines if line.startswith("G-")}
    assert s_lines == {0: ["the", "d", "g", "sees"], 1: ["the", "dog", "sees"], 2: ["the", "dog", "sees"],
                       3: ["the", "dog", "sees"]}
    assert {k: len(v) for k, v in g_lines.items()} == {k: len(v) for k, v in s_lines.items()}
    log = tmp_path / "gen.out"
    log.write_text(out.getvalue(), encoding="utf-8")
    reference = tmp_path / "ref.conllu"  # every word on the first, the first the root
    reference.write_text("".join(
        "".join(f"{i}\t{w}\t_\t_\t_\t_\t{0 if i == 1 else 1}\t_\t_\t_\n" for i, w in enumerate(s_lines[k], 1)) + "\n"
        for k in sorted(s_lines)), encoding="utf-8")
    expected = sum(int(h) == (0 if i == 0 else 1) for k in s_lines for i, h in enumerate(g_lines[k]))
    result = syntax_accuracy.parse_accuracy(str(log), conllu=str(reference))
    assert (result["words"], result["correct"], result["sentences"]) == (13, expected, 4)
    capsys.readouterr()
    evaluate.cli_main(["parse", "--gen", str(log), "--conllu", str(reference)])
    assert capsys.readouterr().out.startswith(f"UAS {100 * expected / 13:.2f}%")
