"""The method that helps needs no parser to translate (issue 45): a trained tiny LISA model translates with no
stream file and no parser, gives the hypotheses of the annotated path bit for bit, and prints the parse its own
head predicts; a model that reads the parse at inference says so in one line.

The fixture: the synthetic corpus annotated from its gold trees (``--backend conllu``, pre-tokenized, with the
recorded Moses settings that turn its raw ``en`` lines into its tokens), binarized, and a LISA model trained a few
updates in this process (tests/support/tiny_annotated.py: the corpus is tests/e2e/test_export.py's, built once per
process). "The annotated path" is the same model given the parse: fairseq-generate on the
binarized split with its stream files, fairseq-interactive and the hub with the gold CoNLL-U (``--input-conllu``,
``translate_conllu``), so no parser needs training here.
"""

import contextlib
import io
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("syntax_nmt.synthetic.generate")

from conftest import USER_DIR  # noqa: E402
from support.console import console_argv  # noqa: E402
from support.tiny_annotated import COMMON, LISA, annotated_corpus, trained_model  # noqa: E402

pytestmark = pytest.mark.e2e

N_TEST = 30
DECODE = ["--beam", "4", "--batch-size", "8", "--max-len-b", "30", "--num-workers", "0"]


@pytest.fixture(scope="module")
def lisa(tmp_path_factory):
    corpus = annotated_corpus(tmp_path_factory, test=N_TEST)  # shared with tests/e2e/test_export.py
    return SimpleNamespace(data=corpus.data, plain=corpus.plain, paths=corpus.paths,
                           ckpt=trained_model(corpus, "lisa-60", *COMMON, *LISA, "--max-update", "60"))


_GENERATED = {}


def fairseq_generate(data, path, *extra):
    """fairseq-generate (its entry point, in this process) on the test split: its output lines (run once per
    arguments and module)."""
    from fairseq_cli import generate as fairseq_generate_cli

    key = (data, path, extra)
    if key not in _GENERATED:
        _GENERATED[key] = _generate(fairseq_generate_cli, data, path, *extra)
    return list(_GENERATED[key])


def _generate(fairseq_generate_cli, data, path, *extra):
    out = io.StringIO()
    with console_argv("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", path,
               *DECODE, "--remove-bpe", *extra), contextlib.redirect_stdout(out):
        fairseq_generate_cli.cli_main()
    return [line for line in out.getvalue().splitlines() if line[:2] in ("S-", "T-", "H-", "D-", "P-", "G-")]


def fairseq_interactive(data, path, source, *extra):
    """fairseq-interactive (its entry point, in this process) on a raw source file: its output lines but the
    times (W-)."""
    from fairseq_cli import interactive

    out = io.StringIO()
    with console_argv("fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", path,
               *DECODE, "--remove-bpe", "--buffer-size", "8", "--input", source, *extra), \
            contextlib.redirect_stdout(out):
        interactive.cli_main()
    return [line for line in out.getvalue().splitlines() if line[:2] in ("S-", "H-", "D-", "P-", "G-")]


def hub(lisa, **kwargs):
    from syntax_nmt import SyntaxTransformerModel

    return SyntaxTransformerModel.from_pretrained(os.path.dirname(lisa.ckpt), os.path.basename(lisa.ckpt),
                                                  data_name_or_path=lisa.data, max_len_b=30, **kwargs)


def raw_test_lines(lisa):
    with open(lisa.paths["test"]["en"], encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def by_id(lines, kind):
    """``{id: [fields after the id]}`` of the lines of one kind (``H``, ``G``...), in order."""
    out = {}
    for line in lines:
        if line.startswith(kind + "-"):
            sid, _, rest = line.partition("\t")
            out.setdefault(int(sid[len(kind) + 1:]), []).append(rest)
    return out


def test_generate_reads_no_stream_file(lisa):
    """fairseq-generate of the LISA model on a data directory with no stream file, and with --source-parse never
    beside them, prints what it prints reading the streams, line for line (scores, positional scores and its parse
    included); --source-parse always asks for them."""
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    assert not [f for f in os.listdir(lisa.plain) if f.startswith("dict.") and f[5:-4] not in ("en", "de")]
    annotated = fairseq_generate(lisa.data, lisa.ckpt, "--print-source-parse", "heads")
    assert len(by_id(annotated, "H")) == N_TEST and len(by_id(annotated, "G")) == N_TEST
    assert fairseq_generate(lisa.plain, lisa.ckpt, "--print-source-parse", "heads") == annotated
    assert fairseq_generate(lisa.data, lisa.ckpt, "--print-source-parse", "heads", "--source-parse",
                            "never") == annotated
    with pytest.raises(StreamConfigError, match=r"missing streams \['subword', 'head'\]"):
        fairseq_generate(lisa.plain, lisa.ckpt, "--source-parse", "always")


#: run in a fresh process whose ``spacy`` cannot be imported: the hub, then fairseq-interactive, on raw text
NO_PARSER = """
import json, sys
from syntax_nmt import SyntaxTransformerModel
ckpt, data, source, out = sys.argv[1:5]
m = SyntaxTransformerModel.from_pretrained(ckpt.rsplit("/", 1)[0], ckpt.rsplit("/", 1)[1], data_name_or_path=data,
                                           max_len_b=30)
lines = open(source, encoding="utf-8").read().split("\\n")[:-1]
hyps = m.generate(m.encode_batch(lines), beam=4)
parses = m.parse(lines)
json.dump({"hyps": [[(m.string(h["tokens"]), float(h["score"])) for h in hs] for hs in hyps],
           "translations": m.translate(lines[:3], beam=4),
           "parses": [[s.words, s.heads] for s in parses]}, open(out, "w"))
sys.argv = ["fairseq-interactive", data, "--user-dir", sys.argv[5], "--task", "syntax_translation", "--path", ckpt,
            *sys.argv[6:], "--input", source]
from fairseq_cli import interactive
interactive.cli_main()
assert "spacy" not in sys.modules
print("spaCy was never imported")
"""


def test_raw_text_is_translated_with_no_parser(lisa, tmp_path):
    """fairseq-interactive and the hub translate raw text (Moses-processed and segmented as recorded) in a process
    where spaCy cannot even be imported, and give the annotated path's hypotheses and parses bit for bit: the hub
    given the gold parse (translate_conllu's path), fairseq-interactive given it with --input-conllu and
    --source-parse always (the same batches)."""
    from syntax_nmt.syntax.conllu import read_conllu

    poison = tmp_path / "poison" / "spacy"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('spaCy was imported')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(poison.parent), os.path.dirname(USER_DIR)])}
    options = [*DECODE, "--remove-bpe", "--buffer-size", "8", "--print-source-parse", "heads"]
    proc = subprocess.run([sys.executable, "-c", NO_PARSER, lisa.ckpt, lisa.data, lisa.paths["test"]["en"],
                           tmp_path / "hub.json", USER_DIR, *options], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("spaCy was never imported")
    free = [line for line in proc.stdout.splitlines() if line[:2] in ("S-", "H-", "D-", "P-", "G-")]
    annotated = fairseq_interactive(lisa.data, lisa.ckpt, lisa.paths["test"]["en"], "--print-source-parse", "heads",
                                    "--source-parse", "always", "--input-conllu", lisa.paths["test"]["en.conllu"])
    assert len(by_id(free, "H")) == N_TEST and free == annotated
    # the same source subwords as the binarized split (the raw lines Moses-tokenized as the recipe prepares them)
    assert by_id(free, "S") == by_id(fairseq_generate(lisa.data, lisa.ckpt), "S")

    got = json.loads((tmp_path / "hub.json").read_text())
    m = hub(lisa, source_parse="always")  # the parse given to the model, as before it declared its needs
    lines = raw_test_lines(lisa)
    with open(lisa.paths["test"]["en.conllu"], encoding="utf-8") as f:
        gold = f.read()
    tokens = m._annotate(lines, conllu=iter(enumerate(read_conllu(io.StringIO(gold), "<gold>"), 1)))
    assert set(tokens[0].syntax_streams) == {"subword", "head"}  # the annotated path: the parse rides along
    expected = [[[m.string(h["tokens"]), float(h["score"])] for h in hs] for hs in m.generate(tokens, beam=4)]
    assert got["hyps"] == expected  # bit for bit: the same floats
    assert got["translations"] == m.translate_conllu(gold, lines, beam=4)[:3]
    sources, parses = by_id(free, "S"), by_id(free, "G")
    assert got["parses"] == [[sources[i][0].split(), [int(h) for h in parses[i][0].split()]] for i in range(N_TEST)]


def test_the_hub_translates_without_streams(lisa):
    """The hub's parse-free tensors carry no stream (plain token tensors are enough); source_parse='always' gives
    the same hypotheses with the parse attached (here from the gold CoNLL-U: the data's parser is external)."""
    import torch

    m = hub(lisa)
    lines = raw_test_lines(lisa)[:6]
    tokens = m.encode_batch(lines)
    assert all(t.syntax_streams == {} for t in tokens)
    plain = [m.src_dict.encode_line(m.src_dict.string(t), add_if_not_exist=False).long() for t in tokens]
    assert all(torch.equal(a, b) for a, b in zip(plain, tokens))
    free = m.generate(tokens, beam=4)
    assert [[(h["tokens"].tolist(), h["score"]) for h in hs] for hs in m.generate(plain, beam=4)] == \
        [[(h["tokens"].tolist(), h["score"]) for h in hs] for hs in free]
    assert m.task.annotated_streams == [] and m.task.annotator._backend is None  # no parser was built


def test_print_source_parse(lisa, tmp_path):
    """--print-source-parse heads prints one G- line per sentence, one 1-based head per word of its S- line, read
    from LISA's parse head as the streams' convention says (the argmax from each word's first subword; the first
    subword of the head word; a root on itself), which a naive loop over the head's scores gives too; conllu prints
    the same heads as CoNLL-U blocks; hub.parse gives them for raw text."""
    import torch

    from syntax_nmt.models.modules.methods.lisa import LISA_SCORES
    from syntax_nmt.syntax.conllu import read_conllu

    heads = fairseq_generate(lisa.data, lisa.ckpt, "--print-source-parse", "heads")
    conllu = fairseq_generate(lisa.data, lisa.ckpt, "--print-source-parse", "conllu")
    sources, g_heads = by_id(heads, "S"), by_id(heads, "G")
    assert [line for line in conllu if not line.startswith("G-")] == [line for line in heads
                                                                     if not line.startswith("G-")]
    text = "\n".join(line.split("\t", 1)[1] for line in conllu if line.startswith("G-")) + "\n"
    blocks = list(read_conllu(io.StringIO(text), "<G- lines>"))
    assert len(blocks) == N_TEST
    for block in blocks:
        sid = int(block.comments["sent_id"])
        assert block.words == sources[sid][0].split()
        assert block.heads == [int(h) for h in g_heads[sid][0].split()]
    # naively, sentence by sentence, from the parse head's scores
    m = hub(lisa)
    model = m.models[0]
    naive = {}
    lines = raw_test_lines(lisa)
    for sid, tokens in enumerate(m.encode_batch(lines)):
        with torch.no_grad():
            ctx = model.encoder(tokens[None], torch.tensor([len(tokens)]))["syntax"]
        scores = ctx.outputs[LISA_SCORES][0]
        pieces = [m.src_dict[int(k)] for k in tokens[:-1]]  # the final EOS is no word
        word_of, n = [], 0
        for i, p in enumerate(pieces):
            n += int(i == 0 or not pieces[i - 1].endswith("@@"))
            word_of.append(n)
        out = []
        for i, p in enumerate(pieces):
            if i == 0 or not pieces[i - 1].endswith("@@"):
                j = int(scores[i].argmax())
                head = word_of[j] if j < len(pieces) else 0  # the EOS: none
                out.append(0 if head == word_of[i] else head)
        naive[sid] = out
    assert {sid: [int(h) for h in v[0].split()] for sid, v in g_heads.items()} == naive
    assert any(h != 0 for hs in naive.values() for h in hs)  # a parse, not only roots
    parses = m.parse(lines)
    assert [p.heads for p in parses] == [naive[i] for i in range(N_TEST)]
    assert [p.words for p in parses] == [sources[i][0].split() for i in range(N_TEST)]
    one = m.parse(lines[0])
    assert one.words == parses[0].words and one.heads == parses[0].heads


def test_evaluate_parse_scores_the_uas(lisa, tmp_path, capsys, spacy_model):
    """syntax-nmt-evaluate parse: the share of words whose predicted head is the reference's (the gold CoNLL-U of
    the test split here), from either format of G- lines; a spaCy pipeline as the reference parses the same words
    as its CoNLL-U would give them; a reference of other words is a one-line error."""
    from syntax_nmt.annotate.backends.spacy_backend import SpacyBackend
    from syntax_nmt.evaluation.evaluate import cli_main as evaluate_cli
    from syntax_nmt.evaluation.syntax_accuracy import parse_accuracy
    from syntax_nmt.syntax.conllu import read_conllu, write_conllu

    gold = lisa.paths["test"]["en.conllu"]
    with open(gold, encoding="utf-8") as f:
        reference = [s.heads for s in read_conllu(f, gold)]
    results = {}
    for fmt in ("heads", "conllu"):
        log = tmp_path / f"gen-{fmt}.out"
        log.write_text("\n".join(fairseq_generate(lisa.data, lisa.ckpt, "--print-source-parse", fmt)) + "\n")
        evaluate_cli(["parse", "--gen", str(log), "--conllu", gold, "--output", str(tmp_path / f"{fmt}.json")])
        results[fmt] = json.loads((tmp_path / f"{fmt}.json").read_text())
    predicted = by_id(log.read_text().splitlines(), "G")
    heads = {}
    for sid, rows in predicted.items():
        heads[sid] = [int(r.split("\t")[6]) for r in rows if r and not r.startswith("#")]
    correct = sum(a == b for sid in range(N_TEST) for a, b in zip(heads[sid], reference[sid]))
    words = sum(len(r) for r in reference)
    assert results["heads"] == results["conllu"]
    assert (results["heads"]["correct"], results["heads"]["words"], results["heads"]["sentences"]) == (
        correct, words, N_TEST)
    assert results["heads"]["uas"] == pytest.approx(100.0 * correct / words)
    # a parser as the reference: the tests' rule-based spaCy pipeline, the S- words parsed as given
    sources = [by_id(log.read_text().splitlines(), "S")[i][0] for i in range(N_TEST)]
    parsed = SpacyBackend(spacy_model, pretokenized=True, parser_unescape=True).parse(
        (i + 1, w, None) for i, w in enumerate(sources))
    with open(tmp_path / "rule.conllu", "w", encoding="utf-8") as f:
        write_conllu([sentence for _, sentence, _ in parsed], f)
    by_parser = parse_accuracy(str(tmp_path / "gen-heads.out"), parser=spacy_model)
    by_file = parse_accuracy(str(tmp_path / "gen-heads.out"), conllu=str(tmp_path / "rule.conllu"))
    assert {**by_parser, "reference": None} == {**by_file, "reference": None}
    assert by_parser["words"] == words == sum(len(line.split()) for line in sources)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        evaluate_cli(["parse", "--gen", str(log), "--conllu", lisa.paths["valid"]["en.conllu"]])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"syntax-nmt-evaluate: error: {lisa.paths['valid']['en.conllu']} has 20 sentence blocks")


def test_a_model_that_reads_the_parse_says_what_it_needs(lisa, tmp_path):
    """The same weights with --lisa-inject-parse read the parse at inference: fairseq-generate on the data without
    stream files ends with one line naming the method, what it reads and what supplies it; --source-parse never
    and the hub's source_parse='never' are refused the same way; nothing is dropped silently."""
    import torch

    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    import syntax_nmt.checkpoint_compat  # noqa: F401  (what a weights-only load of a checkpoint needs)

    state = torch.load(lisa.ckpt, map_location="cpu", weights_only=True)
    state["cfg"]["model"].lisa_inject_parse = True
    inject = tmp_path / "inject.pt"
    torch.save(state, inject)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "fairseq-generate"), lisa.plain,
                           "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", str(inject), *DECODE],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.dirname(USER_DIR)})
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fairseq-generate: error: the data directory ") and "Traceback" not in proc.stderr
    assert "lacks the streams ['subword', 'head']" in last
    assert "--syntax-attention lisa --lisa-inject-parse reads the source parse (streams subword, head)" in last
    assert "syntax-nmt-binarize" in last
    with pytest.raises(StreamConfigError, match=r"^--source-parse never: the model reads at inference what only "
                                                r"the annotation gives: --syntax-attention lisa --lisa-inject-parse "
                                                r"reads the source parse \(streams subword, head\); leave "
                                                r"--source-parse at auto"):
        fairseq_interactive(lisa.data, str(inject), lisa.paths["test"]["en"], "--source-parse", "never")
    m = hub(SimpleNamespace(**{**vars(lisa), "ckpt": str(inject)}))
    assert m.task.annotated_streams == ["subword", "head"]
    with pytest.raises(StreamConfigError, match=r"^source_parse='never': .*--lisa-inject-parse reads the source parse"):
        m.task.set_source_parse("never")


def test_bench_parse_measures_both_ways_in_one_run(lisa, spacy_model, capsys):
    """python -m syntax_nmt.bench.parse: sentences/s with the parser (here the tests' rule-based spaCy pipeline, in
    place of the external parse the data was annotated with) and without, the parser's share, the same hypotheses,
    and the parse-free subwords of the raw test source against the binarized test split (exit status 1 when they
    differ: here against the valid split)."""
    from syntax_nmt.bench import parse as bench_parse

    argv = ["--path", lisa.ckpt, "--data", lisa.data, "--input", lisa.paths["test"]["en"], "--rounds", "1",
            "--beam", "2", "--batch-size", "8", "--fixed-len", "6", "--annotate-parser-model", spacy_model,
            "--compare-split", "test"]
    result = bench_parse.main(bench_parse.get_parser().parse_args(argv))
    assert result["same_hypotheses"] and result["sentences"] == N_TEST and result["reads_at_inference"] == {}
    assert result["compare_split"] == {"split": "test", "lines": N_TEST, "equal": N_TEST, "same": True}
    assert result["parsed_sps"] > 0 and result["parse_free_sps"] > 0 and result["parser_load_s"] >= 0
    assert result["parser_share"] == pytest.approx(1 - result["parse_free_total_s"] / result["parsed_total_s"])
    out = capsys.readouterr().out
    assert "the parser's share of inference time: " in out and "same hypotheses (tokens and scores): yes" in out
    assert bench_parse.cli_main([*argv[:-1], "valid", "--lines", "12"]) == 1
    assert "= the binarized valid split's source: 0 of 12 lines (the split has 20)" in capsys.readouterr().out
