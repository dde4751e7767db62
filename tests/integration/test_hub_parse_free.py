"""The hub and the task on raw text, parse-free and with a parse, on tiny checkpoints made in this process (issue 60):
the hub's ``source_parse="never"`` (a LISA model translates and parses, a model that reads the parse is refused in
one line), ensembles (what any member reads, in either order of members), ``--source-prepend-bos`` in the source
parse (``G-`` lines and ``hub.parse`` have exactly the source's words; a head on BOS is a root), and the order of
``hub.parse`` and ``hub.translate`` for a list that batching reorders. With the fast twins of the end-to-end tests
of the same behaviour (tests/e2e/test_parse_free.py, tests/e2e/test_raw_inference.py; listed in docs/testing.md):
fairseq-generate with no stream file, G- lines against a naive loop over LISA's scores, the hub against
fairseq-generate, fairseq-interactive across buffers, the hub's arguments.

The fixture: the synthetic corpus annotated from its gold trees (``--backend conllu``, pre-tokenized, with the
recorded Moses settings that turn its raw ``en`` lines into its tokens), binarized (tests/support/tiny_annotated.py,
the builder of tests/e2e/test_parse_free.py's corpus, here smaller), and one update of fairseq-train per model (LISA, LISA with ``--source-prepend-bos``, SG-Net): the weights are nearly the initial ones, which is all
these checks need (the same model gives the same output whichever way its input arrives). Each test loads the hub
or runs fairseq's entry point itself, so that mutation testing maps it to the code it runs.
"""

import contextlib
import io
import logging
import math
import os
import shutil
import warnings
from types import SimpleNamespace

import pytest

from support.console import console_argv
import torch
from fairseq_cli import generate as fairseq_generate_cli
from fairseq_cli import interactive as fairseq_interactive_cli

from conftest import USER_DIR
from support.tiny_annotated import annotated_corpus, trained_model
from syntax_nmt import SyntaxTransformerModel
from syntax_nmt.hub import raw_sentences
from syntax_nmt.models.modules.methods.lisa import LISA_SCORES
from syntax_nmt.syntax.conllu import read_conllu
from syntax_nmt.tasks.syntax_translation import StreamConfigError

N_TEST = 12
#: a smaller corpus than tests/e2e/test_parse_free.py's (tests/support/tiny_annotated.py; with that one, no word of
#: the one-update LISA model with --source-prepend-bos has its argmax on BOS, which a check here needs)
CORPUS = {"train": 150, "valid": 8, "test": N_TEST, "merges": 200}
DECODE = ["--beam", "3", "--batch-size", "5", "--max-len-b", "6", "--num-workers", "0"]
TRAIN = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
         "--source-features=", "--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1",
         "--optimizer", "adam", "--lr", "0.01", "--max-tokens", "2000", "--max-update", "1", "--seed", "1",
         "--no-epoch-checkpoints", "--disable-validation", "--save-interval", "1000", "--num-workers", "0",
         "--log-format", "simple", "--no-progress-bar"]
MODELS = {"lisa": ["--syntax-attention", "lisa"],
          "lisa-bos": ["--syntax-attention", "lisa", "--source-prepend-bos"],
          "sgnet": ["--syntax-attention", "sgnet"]}
SGNET_READS = "--syntax-attention sgnet reads the source parse (streams subword, head)"


_argv = console_argv  # tests/support/console.py


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    corpus = annotated_corpus(tmp_path_factory, **CORPUS)
    for name, extra in MODELS.items():
        trained_model(corpus, f"hub/{name}", *TRAIN, *extra)
    with open(corpus.paths["test"]["en"], encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    with open(corpus.paths["test"]["en.conllu"], encoding="utf-8") as f:
        gold = f.read()
    with open(os.path.join(corpus.text, "test.en"), encoding="utf-8") as f:  # the annotated source: BPE pieces
        pieces = f.read().split("\n")[:-1]
    assert len(lines) == len(pieces) == N_TEST
    return SimpleNamespace(data=corpus.data, plain=corpus.plain, models=os.path.join(corpus.models, "hub"),
                           lines=lines, gold=gold, paths=corpus.paths,
                           words=[(p + " ").replace("@@ ", "").split() for p in pieces])


def ckpt(name):
    return os.path.join(name, "checkpoint_last.pt")


def hub(tiny, *names, **kwargs):
    """The hub of the named checkpoints (several: an ensemble, in that order)."""
    return SyntaxTransformerModel.from_pretrained(tiny.models, ":".join(ckpt(n) for n in names),
                                                  data_name_or_path=tiny.data, max_len_b=6, **kwargs)


def fairseq_generate(data, path, *extra):
    """fairseq-generate (its entry point, in this process) on the test split: its S-, H-, D-, P- and G- lines."""
    out = io.StringIO()
    with _argv("fairseq-generate", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", path,
               *DECODE, "--remove-bpe", *extra), contextlib.redirect_stdout(out):
        fairseq_generate_cli.cli_main()
    return [line for line in out.getvalue().splitlines() if line[:2] in ("S-", "H-", "D-", "P-", "G-")]


def fairseq_interactive(data, path, source, *extra):
    """fairseq-interactive (its entry point, in this process) on a raw source file: its lines but the times."""
    out = io.StringIO()
    with _argv("fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path", path,
               *DECODE, "--remove-bpe", "--input", source, *extra), contextlib.redirect_stdout(out):
        fairseq_interactive_cli.cli_main()
    return [line for line in out.getvalue().splitlines() if line[:2] in ("S-", "H-", "D-", "P-", "G-")]


def by_id(lines, kind):
    """``{id: [fields after the id]}`` of the lines of one kind (``H``, ``G``...), in order."""
    out = {}
    for line in lines:
        if line.startswith(kind + "-"):
            sid, _, rest = line.partition("\t")
            out.setdefault(int(sid[len(kind) + 1:]), []).append(rest)
    return out


def hypotheses(hub_, tokens, beam=3):
    return [[(hub_.string(h["tokens"]), float(h["score"])) for h in hs] for hs in hub_.generate(tokens, beam=beam)]


def naive_parse(model, src_dict, tokens, bos):
    """The parse of one annotated sentence read off LISA's scores one token at a time, as the streams' convention
    says: the argmax from each word's first subword, the word holding that key, 0 when it is the word itself or a
    special token (BOS, EOS). Also whether some word's argmax fell on BOS."""
    full = torch.cat([torch.tensor([src_dict.bos()]), tokens]) if bos else tokens
    with torch.no_grad():
        scores = model.encoder(full[None], torch.tensor([len(full)]))["syntax"].outputs[LISA_SCORES][0]
    symbols = [src_dict[int(k)] for k in full]
    word_of, n, words = [], 0, []
    for i, s in enumerate(symbols):
        special = s in ("<s>", "</s>")
        start = not special and (not words or i == 0 or not symbols[i - 1].endswith("@@") or symbols[i - 1] == "<s>")
        n += int(start)
        word_of.append(None if special else n)
        if start:
            words.append(s.replace("@@", ""))
        elif not special:
            words[-1] += s.replace("@@", "")
    heads, on_bos = [], False
    for i, s in enumerate(symbols):
        if word_of[i] is not None and (i == 0 or word_of[i - 1] != word_of[i]):
            j = int(scores[i].argmax())
            on_bos |= symbols[j] == "<s>"
            heads.append(0 if word_of[j] is None or word_of[j] == word_of[i] else word_of[j])
    return words, heads, on_bos


# -- the hub's source_parse="never" -------------------------------------------------------------------------------
def test_source_parse_never_translates_and_parses_a_lisa_model(tiny):
    """LISA (without --lisa-inject-parse) reads no stream at inference: the hub with source_parse="never" loads it,
    annotates nothing, and translates and parses exactly as with the default ("auto")."""
    never = hub(tiny, "lisa", source_parse="never")
    auto = hub(tiny, "lisa")
    assert (never.task.annotated_streams, never.task.inference_needs) == ([], {})
    assert never.task.source_parse == "never" and auto.task.source_parse == "auto"
    assert never.translate(tiny.lines, beam=3) == auto.translate(tiny.lines, beam=3)
    parses = never.parse(tiny.lines)
    assert [p.words for p in parses] == tiny.words
    assert [p.heads for p in parses] == [p.heads for p in auto.parse(tiny.lines)]
    assert never.task.annotator._backend is None  # no parser was built


@pytest.mark.parametrize("names,reader", [
    (["sgnet"], SGNET_READS),
    (["lisa"], None),  # with --lisa-inject-parse (a model override)
], ids=["sgnet", "lisa-inject-parse"])
def test_source_parse_never_refuses_a_model_that_reads_the_parse_in_one_line(tiny, names, reader):
    kwargs = {} if reader else {"lisa_inject_parse": True}
    reader = reader or "--syntax-attention lisa --lisa-inject-parse reads the source parse (streams subword, head)"
    with pytest.raises(StreamConfigError) as e:
        hub(tiny, *names, source_parse="never", **kwargs)
    assert str(e.value) == (
        f"source_parse='never': the model reads at inference what only the annotation gives: {reader}; leave "
        f"--source-parse at auto (hub: source_parse='auto'): raw text is then annotated with the recorded parser (or "
        f"--input-conllu FILE, hub: translate_conllu), and fairseq-generate reads the data directory's stream files "
        f"(syntax-nmt-binarize)")
    m = hub(tiny, *names, **kwargs)  # auto: it reads the parse
    assert m.task.annotated_streams == ["subword", "head"]


def test_source_parse_always_and_an_unknown_mode(tiny):
    """"always" annotates every stream the model was trained with (LISA's parse too); an unknown mode is refused
    naming the three."""
    m = hub(tiny, "lisa", source_parse="always")
    assert m.task.annotated_streams == ["subword", "head"] and m.task.inference_needs == {}
    with pytest.raises(ValueError, match=r"^source_parse must be one of auto, always, never, got 'sometimes'$"):
        hub(tiny, "lisa", source_parse="sometimes")


# -- ensembles ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("members", [("sgnet", "lisa"), ("lisa", "sgnet")], ids=["sgnet:lisa", "lisa:sgnet"])
def test_an_ensemble_reads_what_any_member_reads(tiny, members):
    """fairseq builds each member of --path a.pt:b.pt on the one task: the task reads and annotates the union of
    their inference needs, whichever member comes last. SG-Net's parse reaches it (translate_conllu: the gold parse
    given), fairseq-generate on data without stream files names SG-Net, and "never" is refused."""
    m = hub(tiny, *members)
    assert m.task.inference_needs == {"--syntax-attention sgnet": ["subword", "head"]}
    assert m.task.annotated_streams == ["subword", "head"] and m.task.streams == ["subword", "head"]
    assert len(m.models) == 2
    tokens = m._annotate(tiny.lines[:4], conllu=_gold_blocks(tiny))
    assert all(set(t.syntax_streams) == {"subword", "head"} for t in tokens)
    assert len(m.translate_conllu(tiny.gold, tiny.lines, beam=3)) == N_TEST
    path = ":".join(os.path.join(tiny.models, ckpt(n)) for n in members)
    with pytest.raises(StreamConfigError, match=rf"^the data directory {tiny.plain} lacks the streams \['subword', "
                                                rf"'head'\]: .*{SGNET_READS.replace('(', '.').replace(')', '.')}"):
        fairseq_generate(tiny.plain, path)
    with pytest.raises(StreamConfigError, match=r"^source_parse='never': .*" + SGNET_READS.replace("(", r"\(")
                       .replace(")", r"\)")):
        hub(tiny, *members, source_parse="never")


def _no_streams_message(data, missing):
    return (f"the data directory {data} lacks the streams {missing}: the model reads at inference what only the "
            f"annotation gives: {SGNET_READS}; give the data directory the model was trained on (syntax-nmt-binarize "
            f"of syntax-nmt-annotate's output): fairseq-generate reads the streams from its files, and raw text "
            f"(fairseq-interactive, the hub) is annotated with them against their dictionaries (dict.subword.txt), "
            f"for which a folder with only its dict.*.txt and annotation.json will do")


def test_interactive_without_stream_dictionaries_says_what_supplies_them(tiny, tmp_path):
    """Issue 56.7: SG-Net on raw text from a data directory without its stream dictionaries (its binarized words
    only, or only the word dictionaries and annotation.json) told the fairseq-interactive user to "translate raw text
    with fairseq-interactive". The line names the dictionary raw text needs and where it is; what it says (the
    dictionaries-only folder with dict.subword.txt added) translates. The console script: that one line, exit 2."""
    from conftest import run_cli

    dicts = tmp_path / "dicts"
    dicts.mkdir()
    for f in ("dict.en.txt", "dict.de.txt", "annotation.json"):
        shutil.copy(os.path.join(tiny.data, f), dicts / f)
    path = os.path.join(tiny.models, ckpt("sgnet"))
    conllu = ["--input-conllu", tiny.paths["test"]["en.conllu"], "--buffer-size", "5"]
    for data, missing in ((tiny.plain, ["subword", "head"]), (str(dicts), ["subword"])):
        with pytest.raises(StreamConfigError) as e:
            fairseq_interactive(data, path, tiny.paths["test"]["en"], *conllu)
        assert str(e.value) == _no_streams_message(data, missing)
    proc = run_cli("fairseq-interactive", dicts, "--user-dir", USER_DIR, "--task", "syntax_translation", "--path",
                   path, "--input", tiny.paths["test"]["en"], *conllu, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == ("fairseq-interactive: error: "
                                                     + _no_streams_message(str(dicts), ["subword"]))
    shutil.copy(os.path.join(tiny.data, "dict.subword.txt"), dicts)
    lines = fairseq_interactive(str(dicts), path, tiny.paths["test"]["en"], *conllu)
    assert sorted(by_id(lines, "H")) == list(range(N_TEST))


def test_an_ensemble_of_parse_free_members_needs_no_parse(tiny):
    m = hub(tiny, "lisa", "lisa")
    assert m.task.inference_needs == {} and m.task.annotated_streams == []
    assert len(m.translate(tiny.lines[:3], beam=3)) == 3


def _gold_blocks(tiny):
    return iter(enumerate(read_conllu(io.StringIO(tiny.gold), "<gold>"), 1))


# -- BOS and the source parse; G- lines against a naive loop ---------------------------------------------------------
@pytest.mark.parametrize("name", ["lisa", "lisa-bos"])
def test_g_lines_and_hub_parse_have_the_source_words_and_the_naive_heads(tiny, name):
    """--print-source-parse heads / conllu and hub.parse: exactly the words of the S- line (with
    --source-prepend-bos too: BOS is no word), and the heads a naive loop reads off LISA's scores sentence by
    sentence, where a head on BOS or EOS is a root (0)."""
    path = os.path.join(tiny.models, ckpt(name))
    heads = fairseq_generate(tiny.data, path, "--print-source-parse", "heads")
    conllu = fairseq_generate(tiny.data, path, "--print-source-parse", "conllu")
    assert [line for line in conllu if not line.startswith("G-")] == [line for line in heads
                                                                     if not line.startswith("G-")]
    sources, g_heads = by_id(heads, "S"), by_id(heads, "G")
    assert sorted(sources) == sorted(g_heads) == list(range(N_TEST))
    text = "\n".join(line.split("\t", 1)[1] for line in conllu if line.startswith("G-")) + "\n"
    blocks = {int(b.comments["sent_id"]): b for b in read_conllu(io.StringIO(text), "<G- lines>")}
    assert sorted(blocks) == list(range(N_TEST))
    m = hub(tiny, name)
    model = m.models[0]
    naive = [naive_parse(model, m.src_dict, t, name == "lisa-bos") for t in m.encode_batch(tiny.lines)]
    assert [w for w, _, _ in naive] == tiny.words
    for sid in range(N_TEST):
        assert sources[sid][0].split() == tiny.words[sid] == blocks[sid].words
        assert [int(h) for h in g_heads[sid][0].split()] == blocks[sid].heads == naive[sid][1]
    assert any(h != 0 for _, hs, _ in naive for h in hs)  # a parse, not only roots
    parses = m.parse(tiny.lines)
    assert [(p.words, p.heads) for p in parses] == [(w, h) for w, h, _ in naive]
    one = m.parse(tiny.lines[3])
    assert (one.words, one.heads) == (parses[3].words, parses[3].heads)
    if name == "lisa-bos":
        assert m.task.cfg.source_prepend_bos
        assert any(on_bos for _, _, on_bos in naive)  # some word's argmax is BOS: read as a root


def test_a_head_on_bos_is_a_root_in_the_hub_and_g_lines(tiny, monkeypatch):
    """With --source-prepend-bos a word whose parent is BOS is a root (0), in hub.parse and in the G- lines: the
    model's parents forced onto each row's BOS (left-padded rows: not at position 0)."""
    m = hub(tiny, "lisa-bos")
    bos = m.src_dict.bos()

    def on_bos(self, net_input):
        tokens = net_input["src_tokens"]
        assert tokens.eq(bos).sum(dim=1).eq(1).all()
        return tokens.eq(bos).long().argmax(dim=1, keepdim=True).expand_as(tokens).clone()

    monkeypatch.setattr(SyntaxTransformerModel, "predict_source_parents", on_bos)
    parses = m.parse(tiny.lines)
    assert [p.words for p in parses] == tiny.words
    assert [p.heads for p in parses] == [[0] * len(w) for w in tiny.words]
    lines = fairseq_generate(tiny.data, os.path.join(tiny.models, ckpt("lisa-bos")), "--print-source-parse", "heads")
    sources, g_heads = by_id(lines, "S"), by_id(lines, "G")
    assert sorted(g_heads) == list(range(N_TEST))
    assert {sid: g[0] for sid, g in g_heads.items()} == {sid: " ".join(["0"] * len(tiny.words[sid]))
                                                         for sid in sources}


# -- input order ----------------------------------------------------------------------------------------------------
def test_parse_and_translate_return_the_input_order(tiny):
    """A list of sentences of different lengths, shortest first, which fairseq batches and sorts longest first
    (several batches): hub.parse and hub.translate answer in input order, as one sentence at a time and as the
    reversed list reversed."""
    m = hub(tiny, "lisa", batch_size=3)
    lengths = [len(t) for t in m.encode_batch(tiny.lines)]
    order = sorted(dict((n, i) for i, n in enumerate(lengths)).values(), key=lambda i: lengths[i])
    assert len(order) >= 5  # distinct lengths
    lines = [tiny.lines[i] for i in order]
    parses = m.parse(lines)
    assert [p.words for p in parses] == [tiny.words[i] for i in order]
    single = [m.parse(line) for line in lines]
    assert [p.heads for p in parses] == [p.heads for p in single]
    assert [p.heads for p in m.parse(lines[::-1])] == [p.heads for p in parses][::-1]
    translations = m.translate(lines, beam=3)
    assert translations == [m.translate(line, beam=3) for line in lines]
    assert m.translate(lines[::-1], beam=3) == translations[::-1]
    assert len(set(translations)) > 1


# -- fast twins of the end-to-end tests ---------------------------------------------------------------------------
def test_generate_reads_no_stream_file(tiny):
    """fairseq-generate of the LISA model on the data directory without stream files, and with --source-parse never
    beside them, prints what it prints reading them, line for line (scores and parses included); --source-parse
    always asks for them (tests/e2e/test_parse_free.py::test_generate_reads_no_stream_file)."""
    path = os.path.join(tiny.models, ckpt("lisa"))
    annotated = fairseq_generate(tiny.data, path, "--print-source-parse", "heads")
    assert len(by_id(annotated, "H")) == N_TEST and len(by_id(annotated, "G")) == N_TEST
    assert fairseq_generate(tiny.plain, path, "--print-source-parse", "heads") == annotated
    assert fairseq_generate(tiny.data, path, "--print-source-parse", "heads", "--source-parse", "never") == annotated
    with pytest.raises(StreamConfigError, match=r"missing streams \['subword', 'head'\]"):
        fairseq_generate(tiny.plain, path, "--source-parse", "always")


def test_the_hub_translates_raw_text_without_a_parser_as_generate_does(tiny):
    """The parse-free hub: its tensors are the binarized split's source tokens and carry no stream (plain token
    tensors give the same hypotheses), no parser is built, and its hypotheses are those of the annotated path (the
    gold parse given, source_parse="always") bit for bit and those of fairseq-generate on the binarized split;
    translate and sample give a str for a str and a list for a list (tests/e2e/test_parse_free.py::
    test_raw_text_is_translated_with_no_parser, test_the_hub_translates_without_streams, tests/e2e/
    test_raw_inference.py::test_hub_equals_generate)."""
    m = hub(tiny, "lisa")
    tokens = m.encode_batch(tiny.lines)
    assert all(t.syntax_streams == {} for t in tokens)
    generated = fairseq_generate(tiny.data, os.path.join(tiny.models, ckpt("lisa")))
    assert [m.src_dict.string(t, "subword_nmt") for t in tokens] == [by_id(generated, "S")[i][0]
                                                                     for i in range(N_TEST)]
    plain = [m.src_dict.encode_line(m.src_dict.string(t), add_if_not_exist=False).long() for t in tokens]
    assert all(not hasattr(t, "syntax_streams") and torch.equal(a, t) for a, t in zip(tokens, plain))
    free = hypotheses(m, tokens)
    assert hypotheses(m, plain) == free
    assert m.task.annotated_streams == [] and m.task.annotator._backend is None
    always = hub(tiny, "lisa", source_parse="always")
    annotated = always._annotate(tiny.lines, conllu=_gold_blocks(tiny))
    assert all(set(t.syntax_streams) == {"subword", "head"} for t in annotated)
    assert hypotheses(always, annotated) == free  # bit for bit: the same floats
    expected = by_id(generated, "H")
    for i, hs in enumerate(free):
        score, text = expected[i][0].split("\t")
        assert (hs[0][0] + " ").replace("@@ ", "").rstrip() == text
        assert abs(hs[0][1] / math.log(2) - float(score)) < 1e-4
    best = [(h[0][0] + " ").replace("@@ ", "").rstrip() for h in free]
    assert m.translate(tiny.lines[:3], beam=3) == best[:3] and m.translate(tiny.lines[1], beam=3) == best[1]
    assert m.sample(tiny.lines[:2], beam=3) == best[:2] and m.sample(tiny.lines[2], beam=3) == best[2]
    assert always.translate_conllu(tiny.gold, tiny.lines, beam=3) == best
    one = m.generate(m.encode(tiny.lines[2]), beam=3)
    assert (m.string(one[0]["tokens"]), float(one[0]["score"])) == free[2][0]


def test_interactive_across_buffers(tiny, tmp_path):
    """fairseq-interactive in buffers of 5 lines: the parse-free LISA model prints the lines (G- lines numbered on
    across the buffers) that it prints given the gold parse (--input-conllu, --source-parse always: the streams put
    back into each of its samples), with the binarized split's S- lines and parses; SG-Net given the gold parse
    prints fairseq-generate's hypotheses (tests/e2e/test_parse_free.py::test_raw_text_is_translated_with_no_parser,
    tests/e2e/test_raw_inference.py::test_interactive_with_input_conllu,
    test_interactive_samples_get_the_streams_of_their_batch)."""
    source, conllu = tiny.paths["test"]["en"], tiny.paths["test"]["en.conllu"]
    lisa = os.path.join(tiny.models, ckpt("lisa"))
    options = ["--buffer-size", "5", "--print-source-parse", "heads"]
    free = fairseq_interactive(tiny.data, lisa, source, *options)
    given = fairseq_interactive(tiny.data, lisa, source, *options, "--source-parse", "always", "--input-conllu",
                                conllu)
    assert len(by_id(free, "H")) == N_TEST and free == given
    generated = fairseq_generate(tiny.data, lisa, "--print-source-parse", "heads")
    assert by_id(free, "S") == by_id(generated, "S") and by_id(free, "G") == by_id(generated, "G")
    sgnet = os.path.join(tiny.models, ckpt("sgnet"))
    got = fairseq_interactive(tiny.data, sgnet, source, "--buffer-size", "5", "--input-conllu", conllu)
    expected = fairseq_generate(tiny.data, sgnet)
    assert by_id(got, "S") == by_id(expected, "S")
    assert {i: [h.split("\t")[1] for h in hs] for i, hs in by_id(got, "H").items()} == {
        i: [h.split("\t")[1] for h in hs] for i, hs in by_id(expected, "H").items()}


@pytest.mark.parametrize("bad, message", [
    (None, "{}() takes sentences as a str or a list of str, got NoneType"),
    ([None], "{}() takes sentences as a str or a list of str, but item 0 is NoneType"),
    (b"A dog .", "{}() takes sentences as a str or a list of str, got bytes: decode it first "
                 "(e.g. data.decode('utf-8'))"),
    (["A dog .", bytearray(b"x")], "{}() takes sentences as a str or a list of str, but item 1 is bytearray: "
                                   "decode it first (e.g. data.decode('utf-8'))"),
    (5, "{}() takes sentences as a str or a list of str, got int"),
    ({"A dog .": 1}, "{}() takes sentences as a str or a list of str, got dict"),
], ids=["None", "[None]", "bytes", "[str, bytearray]", "int", "dict"])
def test_hub_arguments_are_checked_at_the_api_boundary(tiny, bad, message):
    """Bad raw-text arguments of translate, sample, parse, factors and encode_batch are refused before any
    annotation with a message saying what they take (tests/e2e/test_raw_inference.py::
    test_hub_arguments_are_checked_at_the_api_boundary)."""
    m = hub(tiny, "lisa")
    for method in ("translate", "sample", "parse", "factors", "encode_batch"):
        with pytest.raises(TypeError) as e:
            getattr(m, method)(bad)
        assert str(e.value) == message.format(method)
    if not isinstance(bad, list):
        with pytest.raises(TypeError) as e:
            m.encode(bad)
        assert str(e.value) == (message.format("translate").replace("translate() takes sentences as a str or a list "
                                                                    "of str", "encode() takes one raw sentence as a str"))


def test_hub_arguments_accepted(tiny):
    """A tuple, a generator and an empty list are lists of sentences; one str is one sentence."""
    assert raw_sentences("a b", "f") == (["a b"], True)
    assert raw_sentences(("a", "b"), "f") == (["a", "b"], False)
    assert raw_sentences((x for x in ["a"]), "f") == (["a"], False)
    assert raw_sentences([], "f") == ([], False)
    with pytest.raises(TypeError, match=r"^f\(\) takes lines as a str or a list of str, got int$"):
        raw_sentences(3, "f", "lines")
    m = hub(tiny, "lisa")
    assert m.translate([], beam=3) == [] and m.parse([]) == []
    assert m.translate(tuple(tiny.lines[:2]), beam=3) == m.translate(tiny.lines[:2], beam=3)


def test_translate_conllu_numbers_the_lines_of_each_call(tiny):
    """translate_conllu's errors number each call's input lines from 1, every call (tests/e2e/test_raw_inference.py::
    test_translate_conllu_numbers_the_lines_of_each_call)."""
    from syntax_nmt.annotate.textio import InputError

    m = hub(tiny, "sgnet")
    blocks = tiny.gold.split("\n\n")
    assert len(m.translate_conllu("\n\n".join(blocks[:2]) + "\n\n", tiny.lines[:2], beam=2)) == 2
    for _ in range(2):  # the block of line 1 against line 2: the message names line 1 of this call, every time
        with pytest.raises(InputError, match=r"^<conllu> sentence block 1 .*does not match <input>:1 \(--pretokenized\): "
                                             r"first difference at token 1: "):
            m.translate_conllu(blocks[0] + "\n\n", [tiny.lines[1]], beam=2)


def test_settings_absent_or_in_conflict(tiny, tmp_path):
    """A checkpoint without annotation settings translates raw text only with annotation_settings_file (then as
    before); settings of the data directory that differ from the checkpoint's are named (tests/e2e/
    test_raw_inference.py::test_checkpoint_without_settings_fails_only_for_raw_text,
    test_conflicting_or_broken_settings_are_named)."""
    import json

    import syntax_nmt.checkpoint_compat  # noqa: F401  (what a weights-only load of a checkpoint needs)

    state = torch.load(os.path.join(tiny.models, ckpt("lisa")), map_location="cpu", weights_only=True)
    del state["cfg"]["model"].annotation_settings
    torch.save(state, tmp_path / "old.pt")
    data = tmp_path / "data"  # the dictionaries only: the binarized data's settings would stand in for the record
    data.mkdir()
    for f in ("dict.en.txt", "dict.de.txt"):
        shutil.copy(os.path.join(tiny.data, f), data / f)
    old = SyntaxTransformerModel.from_pretrained(str(tmp_path), "old.pt", data_name_or_path=str(data), max_len_b=6,
                                                 source_lang="en", target_lang="de")
    with pytest.raises(ValueError, match=r"records no annotation settings.*annotation_settings_file"):
        old.translate(tiny.lines[0])
    settings = os.path.join(tiny.data, "annotation.json")
    old = SyntaxTransformerModel.from_pretrained(str(tmp_path), "old.pt", data_name_or_path=str(data), max_len_b=6,
                                                 source_lang="en", target_lang="de",
                                                 annotation_settings_file=settings)
    assert old.translate(tiny.lines[:4], beam=3) == hub(tiny, "lisa").translate(tiny.lines[:4], beam=3)
    with open(settings, encoding="utf-8") as f:
        values = json.load(f)
    with open(data / "annotation.json", "w", encoding="utf-8") as f:
        json.dump(dict(values, case="rich"), f)
    with pytest.raises(ValueError, match=r"^annotation setting 'case' differs: 'binary' in the checkpoint, 'rich' in "):
        SyntaxTransformerModel.from_pretrained(tiny.models, ckpt("lisa"), data_name_or_path=str(data), max_len_b=6)


def test_the_defaults_of_sample_and_translate(tiny, caplog, monkeypatch):
    """sample() decodes greedily and translate() with a beam of 5 by default, and neither logs its hypotheses (fairseq's
    verbose) unless asked."""
    m = hub(tiny, "lisa")
    beams = []
    generate = m.generate

    def spy(tokens, beam, *args, **kwargs):
        beams.append(beam)
        return generate(tokens, beam, *args, **kwargs)

    monkeypatch.setattr(m, "generate", spy)
    m.translate(tiny.lines[:2]), m.sample(tiny.lines[:2])
    assert beams == [5, 1]
    with caplog.at_level(logging.INFO, logger="fairseq.hub_utils"):
        greedy, beam5 = m.sample(tiny.lines), m.translate(tiny.lines)
        assert not [r for r in caplog.records if r.name == "fairseq.hub_utils"]
        for method in (m.sample, m.translate):
            caplog.clear()
            method(tiny.lines[0], verbose=True)
            assert [r for r in caplog.records if r.name == "fairseq.hub_utils"], method
    assert greedy == m.translate(tiny.lines, beam=1) != m.translate(tiny.lines, beam=2)
    assert beam5 == m.sample(tiny.lines, beam=5) != m.sample(tiny.lines, beam=4)
    # fairseq's generation options reach the search: at most one token (max_len_b=1) instead of 6
    assert any(len(t.split()) > 1 for t in beam5)
    for method, default in ((m.sample, greedy), (m.translate, beam5)):
        short = method(tiny.lines, max_len_b=1)
        assert all(len(t.split()) <= 1 for t in short) and short != default, method


def test_generate_of_one_annotated_sentence(tiny, monkeypatch):
    """hub.generate of one annotated sentence (a 1-D tensor, as encode gives) keeps its streams (SG-Net reads them)
    and returns that sentence's hypotheses, as in a batch; a beam given by position reaches the search. fairseq's
    pin_memory warning (its batch iterator on a CPU) is silenced, other warnings of the generation are not."""
    m = hub(tiny, "sgnet")
    tokens = m._annotate(tiny.lines[:2], conllu=_gold_blocks(tiny))
    assert set(tokens[0].syntax_streams) == {"subword", "head"}
    inference_step = m.task.inference_step

    def warn_then_step(*args, **kwargs):
        warnings.warn("a warning of the generation", UserWarning)
        return inference_step(*args, **kwargs)

    monkeypatch.setattr(m.task, "inference_step", warn_then_step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one = m.generate(tokens[0], 2)
        batch = m.generate(tokens, 2)
    assert len(one) == 2 and [len(hs) for hs in batch] == [2, 2]
    assert [m.string(h["tokens"]) for h in one] == [m.string(h["tokens"]) for h in batch[0]]
    assert [float(h["score"]) for h in one] == pytest.approx([float(h["score"]) for h in batch[0]], abs=1e-5)
    messages = [str(w.message) for w in caught]
    assert messages.count("a warning of the generation") == 2
    assert not [w for w in messages if "pin_memory" in w], messages
