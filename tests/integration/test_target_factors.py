"""Target factors (issue 36): the target's tag streams binarized beside it, predicted by the decoder beside each
token, trained by the criterion, carried through beam search and printed by fairseq-generate.

The contract of a syntax method, for target factors: with the factors off (no factor input, its embeddings at
0) the translation is fairseq's stock transformer's; a batch gives every sentence what it gets alone (factor
logits and losses); every parameter the factors add gets a gradient; incremental decoding feeds each hypothesis
its own predictions, through the beam's reordering.
"""

import os
import shutil
from types import SimpleNamespace

import pytest
import torch

from conftest import USER_DIR, build_task_and_model, run_cli
from support.streamdata import write_corpus
from syntax_nmt.annotate.subwords import word_starts
from syntax_nmt.data import binarize
from syntax_nmt.data.heads import StreamMismatchError
from syntax_nmt.models.modules.target_factors import FACTOR_LOGITS, FactoredTransformerDecoder

CRITERION = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1"]
FACTORS = ["--target-factors", "pos", "--source-features", ""]


def _binarize(corpus, dest, *extra):
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"],
                       "--validpref", corpus["valid"], "--testpref", corpus["test"], "--destdir", dest,
                       "--joined-dictionary", "--workers", "1", *extra])


@pytest.fixture(scope="module")
def factored(tmp_path_factory):
    root = tmp_path_factory.mktemp("factors")
    corpus = write_corpus(str(root / "text"), sizes={"train": 80, "valid": 16, "test": 12}, seed=7,
                          target_streams=True)
    data = str(root / "data-bin")
    _binarize(corpus, data, "--target-streams", "pos,subword")
    return SimpleNamespace(data=data, corpus=corpus, root=root)


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def build(data, *extra):
    task, model, cfg = build_task_and_model(data, *CRITERION, *FACTORS, *map(str, extra))
    return task, model, task.build_criterion(cfg.criterion)


def load(task, split="valid", ids=None):
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in (range(len(ds)) if ids is None else ids)])


# -- data ----------------------------------------------------------------------------------------------------------
def test_binarized_factors_are_the_target_tags_aligned_with_the_target(factored):
    task, _, _ = build(factored.data)
    sample = load(task)
    d = task.factors.dicts["pos"]
    target, factors = sample["target"], sample["target_factors"]["pos"]
    prev, prev_factors = sample["net_input"]["prev_output_tokens"], sample["net_input"]["prev_output_factors"]["pos"]
    assert factors.shape == target.shape and prev_factors.shape == prev.shape
    pad = task.target_dictionary.pad()
    assert torch.equal(factors.eq(d.pad()), target.eq(pad))  # padded like the target
    assert torch.equal(prev_factors.eq(d.pad()), prev.eq(pad))
    tags = _lines(factored.corpus["valid"] + ".tgt.pos")
    words = _lines(factored.corpus["valid"] + ".de")
    for b, sid in enumerate(sample["id"].tolist()):
        n = len(words[sid])
        assert [d[i] for i in factors[b, :n].tolist()] == tags[sid]
        assert factors[b, n] == d.eos() and prev_factors[b, 0] == d.eos()  # EOS last, and first when shifted
        assert torch.equal(prev_factors[b, 1:n + 1], factors[b, :n])


@pytest.mark.parametrize("left", [False, True])
def test_factors_are_padded_and_shifted_like_the_target(factored, left):
    """Under left padding (``--left-pad-target``) and a fixed length (fairseq's ``pad_to_length``) too: the factors
    and their shifted input have the target's and prev_output_tokens' shapes, pads and EOS positions; an empty list
    of samples collates to fairseq's empty batch."""
    task, _, _ = build(factored.data, *(["--left-pad-target"] if left else []))
    task.load_dataset("valid")
    ds = task.dataset("valid")
    samples = [ds[i] for i in range(6)]
    d, dictionary = task.factors.dicts["pos"], task.target_dictionary
    for pad_to in (None, {"source": 40, "target": 37}):
        b = ds.collater(samples, pad_to_length=pad_to)
        target, prev = b["target"], b["net_input"]["prev_output_tokens"]
        factors, shifted = b["target_factors"]["pos"], b["net_input"]["prev_output_factors"]["pos"]
        if pad_to:
            assert target.size(1) == prev.size(1) == 37
        assert target[:, 0 if left else -1].eq(dictionary.pad()).any()  # padded on the side asked for
        assert factors.shape == target.shape and shifted.shape == prev.shape
        assert torch.equal(factors.eq(d.pad()), target.eq(dictionary.pad()))
        assert torch.equal(shifted.eq(d.pad()), prev.eq(dictionary.pad()))
        assert torch.equal(factors.eq(d.eos()), target.eq(dictionary.eos()))
        assert torch.equal(shifted.eq(d.eos()), prev.eq(dictionary.eos()))
    assert ds.collater([]) == {}


def test_target_annotation_must_be_the_target_line_for_line(factored, tmp_path):
    text = tmp_path / "text"
    shutil.copytree(os.path.dirname(factored.corpus["train"]), text)
    corpus = {k: str(text / os.path.basename(v)) for k, v in factored.corpus.items()}
    with open(corpus["valid"] + ".tgt.de", encoding="utf-8") as f:
        lines = f.readlines()
    lines[3] = "x " + lines[3]  # the target annotation of line 4 has another token
    with open(corpus["valid"] + ".tgt.de", "w", encoding="utf-8") as f:
        f.writelines(lines)
    def run():
        binarize.main(binarize.get_parser().parse_args(
            ["--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"], "--validpref",
             corpus["valid"], "--destdir", str(tmp_path / "bin"), "--target-streams", "pos"]))

    with pytest.raises(StreamMismatchError, match=r"valid\.tgt\.de:4: the target annotation's subwords differ"):
        run()
    shutil.copy(factored.corpus["valid"] + ".tgt.de", corpus["valid"] + ".tgt.de")
    with open(corpus["train"] + ".tgt.pos", encoding="utf-8") as f:
        lines = f.readlines()
    lines[6] = lines[6].rstrip("\n") + " NOUN\n"
    with open(corpus["train"] + ".tgt.pos", "w", encoding="utf-8") as f:
        f.writelines(lines)
    with pytest.raises(StreamMismatchError, match=r"train\.tgt\.pos:7: \d+ fields, but the target line"):
        run()
    assert not (tmp_path / "bin").exists()  # nothing written


# -- the contract --------------------------------------------------------------------------------------------------
def test_factors_off_are_the_stock_transformer(factored):
    """With factor input and its embeddings at 0, the translation is fairseq's transformer's with the same weights;
    the factor embeddings, once non-zero, change it."""
    torch.manual_seed(0)
    task, model, _ = build(factored.data, "--target-factor-input")
    assert isinstance(model.decoder, FactoredTransformerDecoder)
    _, stock, _ = build_task_and_model(factored.data, arch="transformer_tiny", task="translation")
    loaded = stock.load_state_dict(model.state_dict(), strict=False)
    assert not loaded.missing_keys
    assert sorted(loaded.unexpected_keys) == sorted(
        k for k in model.state_dict() if ".factor_" in k)  # the factors' parameters, nothing else
    model.eval(), stock.eval()
    net = load(task)["net_input"]
    with torch.no_grad():
        for p in model.decoder.factor_embed.parameters():
            p.zero_()
        ref = stock(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])[0]
        torch.testing.assert_close(model(**net)[0], ref, atol=1e-5, rtol=1e-5)
        for p in model.decoder.factor_embed.parameters():
            p.normal_()
        assert (model(**net)[0] - ref).abs().max() > 1e-3


@pytest.mark.parametrize("extra", [[], ["--target-factor-input"], ["--syntax-attention", "lisa"]],
                         ids=["factors", "factor-input", "lisa+factors"])
def test_a_batch_equals_its_sentences_one_by_one(factored, extra):
    task, model, crit = build(factored.data, *extra)
    model.eval(), crit.eval()

    def run(sample):
        with torch.no_grad():
            out = model(**sample["net_input"])
            terms = crit.factor_terms(out, sample)
        real = sample["target"].ne(task.target_dictionary.pad())
        logits = out[1][FACTOR_LOGITS]["pos"]
        rows = {sid: logits[b][real[b]] for b, sid in enumerate(sample["id"].tolist())}
        return rows, {k: tuple(float(x) for x in v[1:]) for k, v in terms.items()}

    rows, terms = run(load(task))
    n = len(task.dataset("valid"))
    singles = [run(load(task, ids=[i])) for i in range(n)]
    assert any(v.shape[0] > 2 for v in rows.values())
    for sid in rows:
        torch.testing.assert_close(rows[sid], singles[sid][0][sid], atol=1e-5, rtol=1e-5)
    summed = [sum(s[1]["factor_pos"][k] for s in singles) for k in range(3)]
    assert summed[1:] == list(terms["factor_pos"][1:])  # counts and correct predictions
    assert abs(summed[0] - terms["factor_pos"][0]) < 1e-3
    assert terms["factor_pos"][1] == sum(len(t) + 1 for t in _lines(factored.corpus["valid"] + ".de"))


@pytest.mark.parametrize("extra", [["--target-factor-input"], ["--syntax-attention", "lisa"]],
                         ids=["factor-input", "lisa+factors"])
def test_gradients_reach_every_parameter_the_factors_add(factored, extra):
    torch.manual_seed(0)
    task, model, crit = build(factored.data, "--target-factors", "pos,subword", *extra)
    new = {n: p for n, p in model.named_parameters() if ".factor_" in n}
    assert any("factor_embed" in n for n in new) == ("--target-factor-input" in extra)
    assert {n.split(".")[2] for n in new if "factor_out" in n} == {"pos", "subword"}
    model.train(), crit.train()
    loss, _, log = crit(model, load(task, "train", ids=range(40)))
    loss.backward()
    assert [n for n, p in new.items() if p.grad is None or not p.grad.abs().sum() > 0] == []
    assert log["factor_pos_count"] > 0 and "factor_subword_loss" in log


def test_the_factor_loss_is_its_cross_entropy_times_the_weight(factored):
    task, model, _ = build(factored.data)
    _, _, crit = build(factored.data, "--target-factor-loss-weight", "0.25")
    _, _, off = build(factored.data, "--target-factor-loss-weight", "0")
    model.eval(), crit.eval(), off.eval()
    sample = load(task)
    with torch.no_grad():
        out = model(**sample["net_input"])
        loss, _ = crit.compute_loss(model, out, sample)
        base, _ = off.compute_loss(model, out, sample)
    logp = torch.log_softmax(out[1][FACTOR_LOGITS]["pos"].float(), -1)
    real = sample["target"].ne(task.target_dictionary.pad())
    gold = sample["target_factors"]["pos"]
    nll = sum(-float(logp[b, t, gold[b, t]]) for b in range(gold.size(0)) for t in range(gold.size(1)) if real[b, t])
    # weight * mean * ntokens, and the count is the ntokens: weight * the summed cross-entropy
    assert int(real.sum()) == sample["ntokens"]
    torch.testing.assert_close(float(loss - base), 0.25 * nll, atol=1e-3, rtol=1e-5)


# -- decoding ------------------------------------------------------------------------------------------------------
def test_incremental_factors_are_the_teacher_forced_ones_with_its_own_predictions(factored):
    """predict_factors feeds each step the factor it predicted at the step before: a teacher-forced pass given
    those predictions (shifted) predicts them again."""
    torch.manual_seed(1)
    task, model, _ = build(factored.data, "--target-factor-input")
    model.eval()
    with torch.no_grad():
        for p in [*model.decoder.factor_embed.parameters(), *model.decoder.factor_out.parameters()]:
            p.normal_(0, 2.0)  # the inputs matter, and the predictions vary
    sample = load(task)
    net = sample["net_input"]
    enc = model.encoder.forward_torchscript(net)
    predicted = model.decoder.predict_factors(enc, sample["target"])["pos"]
    eos = task.factors.dicts["pos"].eos()
    shifted = torch.cat([torch.full_like(predicted[:, :1], eos), predicted[:, :-1]], dim=1)
    prev = torch.cat([torch.full_like(sample["target"][:, :1], task.target_dictionary.eos()),
                      sample["target"][:, :-1]], dim=1)
    with torch.no_grad():
        _, extra = model.decoder(prev, encoder_out=enc, prev_output_factors={"pos": shifted})
    real = sample["target"].ne(task.target_dictionary.pad())
    assert len(predicted[real].unique()) > 2
    assert torch.equal(extra[FACTOR_LOGITS]["pos"].argmax(-1)[real], predicted[real])
    assert not model.decoder.embed_tokens._forward_hooks  # the hook lives only during a call
    _, data_fed = model.decoder(prev, encoder_out=enc, prev_output_factors={"pos": sample["target_factors"]["pos"]})
    assert not torch.equal(data_fed[FACTOR_LOGITS]["pos"].argmax(-1)[real], predicted[real])  # not a tautology


def test_beam_search_feeds_every_hypothesis_its_own_factors(factored):
    """In fairseq's beam search, the factors a row embeds at step t are those its parent row (the beam's
    reordering) predicted at step t - 1."""
    from fairseq.sequence_generator import SequenceGenerator

    torch.manual_seed(2)
    task, model, _ = build(factored.data, "--target-factor-input")
    model.eval()
    with torch.no_grad():
        for p in model.decoder.factor_embed.parameters():
            p.normal_(0, 2.0)
    dec = model.decoder
    seen = []  # per step: (inputs, predictions), and the reorderings between steps
    forward, reorder = dec.forward, dec.reorder_incremental_state

    def spy_forward(*a, **kw):
        out = forward(*a, **kw)
        if kw.get("incremental_state") is not None:
            seen.append(("step", out[1][FACTOR_LOGITS]["pos"][:, -1].argmax(-1)))
        return out

    def spy_reorder(state, order):
        seen.append(("order", order.clone()))
        return reorder(state, order)

    inputs_seen = []
    embed = dec._add_factor_embeddings

    def spy_embed(module, args, out):
        if dec._factor_in is not None:
            inputs_seen.append(dec._factor_in["pos"][:, -1].clone())
        return embed(module, args, out)

    dec.forward, dec.reorder_incremental_state, dec._add_factor_embeddings = spy_forward, spy_reorder, spy_embed
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=3, max_len_b=20)
    sample = load(task, ids=range(6))
    with torch.no_grad():
        gen.generate([model], sample)
    steps = [v for k, v in seen if k == "step"]
    assert len(inputs_seen) == len(steps) > 3
    eos = task.factors.dicts["pos"].eos()
    assert inputs_seen[0].eq(eos).all()
    checked = 0
    previous, order = steps[0], None
    k = 1
    for kind, value in seen[1:]:
        if kind == "order":
            order = value
            continue
        expected = previous if order is None else previous.index_select(0, order)
        assert torch.equal(inputs_seen[k], expected), f"step {k}"
        checked += int(order is not None and not torch.equal(order, torch.arange(len(order))))
        previous, order, k = value, None, k + 1
    assert checked > 0  # the beam reordered rows at some step


@pytest.mark.e2e
@pytest.mark.parametrize("extra", [["--target-factor-input"], ["--syntax-attention", "lisa"]],
                         ids=["factor-input", "lisa+factors"])
def test_fairseq_train_and_generate_print_the_factors(factored, tmp_path, extra):
    run_cli("fairseq-train", factored.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--arch", "syntax_transformer_tiny", *CRITERION, *FACTORS, *extra, "--optimizer", "adam", "--lr", "3e-3",
            "--max-tokens", "1500", "--max-update", "6", "--no-epoch-checkpoints", "--no-progress-bar",
            "--save-dir", tmp_path / "ck", "--seed", "1")
    proc = run_cli("fairseq-generate", factored.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                   "--path", tmp_path / "ck" / "checkpoint_last.pt", "--beam", "3", "--batch-size", "5",
                   "--max-len-b", "12")
    lines = proc.stdout.splitlines()
    hyps = {int(l.split("\t")[0][2:]): l.split("\t")[2].split() for l in lines if l.startswith("H-")}
    facts = {int(l.split("\t")[0][2:]): l.split("\t") for l in lines if l.startswith("F-")}
    assert sorted(hyps) == sorted(facts) == list(range(12))  # every test sentence
    d = set(open(os.path.join(factored.data, "dict.tgt.pos.txt"), encoding="utf-8").read().split()[::2])
    for sid, (_, name, tags) in facts.items():
        assert name == "pos" and len(tags.split()) == len(hyps[sid]) and set(tags.split()) <= d
    # giving --target-factors other than the checkpoint's is refused, in one line
    bad = run_cli("fairseq-generate", factored.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                  "--path", tmp_path / "ck" / "checkpoint_last.pt", "--target-factors", "subword", check=False)
    assert bad.returncode == 2 and "the checkpoint was trained with pos" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_factors_need_a_model_that_predicts_them(factored):
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    with pytest.raises(StreamConfigError, match="needs a model that predicts them"):
        build_task_and_model(factored.data, "--target-factors", "pos", arch="transformer_tiny")


def test_inference_step_leaves_the_factors_in_the_hypotheses_and_the_hub_prints_none(factored, capsys):
    from fairseq.sequence_generator import SequenceGenerator

    from syntax_nmt.hub import SyntaxHubInterface

    torch.manual_seed(3)
    task, model, cfg = build_task_and_model(factored.data, *CRITERION, *FACTORS, "--target-factor-input")
    model.eval()
    sample = load(task, ids=range(5))
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=2, max_len_b=8)
    capsys.readouterr()
    with torch.no_grad():
        hypos = task.inference_step(gen, [model], sample)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(line.startswith("F-") for line in lines)
    for sid, h, line in zip(sample["id"].tolist(), hypos, lines):
        tags = h[0]["factors"]["pos"]
        # one per word, as --remove-bpe joins the pieces (the data has no annotation.json: the joined dictionary's
        # "@@" pieces say BPE)
        pieces = [task.target_dictionary[int(k)] for k in h[0]["tokens"][:-1]]
        assert len(tags) == sum(word_starts(pieces, "bpe"))
        assert line == f"F-{sid}\tpos\t{' '.join(tags)}"
    SyntaxHubInterface(cfg, task, [model])  # the hub keeps the factors in the hypotheses, prints nothing
    with torch.no_grad():
        again = task.inference_step(gen, [model], sample)
    assert capsys.readouterr().out == ""
    assert [h[0]["factors"] for h in again] == [h[0]["factors"] for h in hypos]


def test_interactive_numbers_the_factor_lines_as_its_hypotheses(factored, capsys):
    """fairseq-interactive hands inference_step samples without ids, one dataset per buffer of input lines, and
    numbers its output on across the buffers: the F- lines carry the same numbers."""
    from fairseq.sequence_generator import SequenceGenerator

    task, model, _ = build_task_and_model(factored.data, *CRITERION, *FACTORS)
    model.eval()
    assert task.streams == []  # the model reads no source stream: plain tokens are its input
    gen = SequenceGenerator([model], task.target_dictionary, beam_size=2, max_len_b=6)
    buffers = [["haus baum", "katze"], ["hund garten sonne", "mond", "stern wasser"]]
    capsys.readouterr()
    numbers = []
    start = 0
    for lines in buffers:  # as fairseq_cli.interactive: make_batches per buffer, then start_id += len(inputs)
        tokens = [task.src_dict.encode_line(line, add_if_not_exist=False).long() for line in lines]
        itr = task.get_batch_iterator(dataset=task.build_dataset_for_inference(tokens, [len(t) for t in tokens]),
                                      max_sentences=2, max_tokens=None,
                                      max_positions=(1024, 1024)).next_epoch_itr(shuffle=False)
        for batch in itr:
            sample = {"net_input": {"src_tokens": batch["net_input"]["src_tokens"],
                                    "src_lengths": batch["net_input"]["src_lengths"]}}
            with torch.no_grad():
                task.inference_step(gen, [model], sample)
            numbers += [start + i for i in batch["id"].tolist()]
        start += len(lines)
    printed = [int(line.split("\t")[0][2:]) for line in capsys.readouterr().out.splitlines()]
    assert printed == numbers and sorted(printed) == list(range(5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_low_precision_is_finite(factored, dtype):
    task, model, crit = build(factored.data, "--target-factor-input", "--syntax-attention", "lisa")
    sample = load(task)
    model.eval(), crit.eval()
    model.to(dtype), crit.to(dtype)
    with torch.no_grad():
        logits, extra = model(**sample["net_input"])
        loss, _, log = crit(model, sample)
    assert torch.isfinite(extra[FACTOR_LOGITS]["pos"].float()).all() and torch.isfinite(logits.float()).all()
    assert torch.isfinite(loss.float()) and torch.isfinite(torch.as_tensor(log["factor_pos_loss"]).float())


# -- issue 46 ------------------------------------------------------------------------------------------------------
def test_with_sentence_avg_the_factor_loss_is_per_sentence_like_the_translation_loss(factored):
    """With --sentence-avg the translation loss is summed per sentence, and the factor loss was still a mean per
    target token: the same weight meant another balance. Both now scale alike (weight * the summed cross-entropy,
    whatever fairseq then divides by)."""
    task, model, _ = build(factored.data, "--sentence-avg")
    _, _, crit = build(factored.data, "--target-factor-loss-weight", "0.25", "--sentence-avg")
    _, _, off = build(factored.data, "--target-factor-loss-weight", "0", "--sentence-avg")
    model.eval(), crit.eval(), off.eval()
    sample = load(task)
    with torch.no_grad():
        out = model(**sample["net_input"])
        loss, _ = crit.compute_loss(model, out, sample)
        base, _ = off.compute_loss(model, out, sample)
    logp = torch.log_softmax(out[1][FACTOR_LOGITS]["pos"].float(), -1)
    real = sample["target"].ne(task.target_dictionary.pad())
    gold = sample["target_factors"]["pos"]
    nll = sum(-float(logp[b, t, gold[b, t]]) for b in range(gold.size(0)) for t in range(gold.size(1)) if real[b, t])
    assert sample["target"].size(0) != sample["ntokens"]  # sentences and tokens differ: the test tells them apart
    torch.testing.assert_close(float(loss - base), 0.25 * nll, atol=1e-3, rtol=1e-5)


def test_target_factor_input_without_target_factors_is_refused(factored):
    """--target-factor-input without the task's --target-factors trained a plain decoder, silently."""
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    with pytest.raises(StreamConfigError, match=r"^--target-factor-input embeds the previous token's target factors: "
                                                r"give the task's --target-factors too \(or leave it out\)$"):
        build_task_and_model(factored.data, *CRITERION, "--source-features", "", "--target-factor-input")


def test_the_factors_of_a_checkpoint_in_another_order_are_accepted(factored):
    """``--target-factors subword,pos`` for a checkpoint trained with ``pos,subword`` was refused."""
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    task, model, cfg = build_task_and_model(factored.data, *CRITERION, "--target-factors", "pos,subword",
                                            "--source-features", "")
    other, _, _ = build_task_and_model(factored.data, *CRITERION, "--target-factors", "subword,pos",
                                       "--source-features", "")
    loaded = other.build_model(cfg.model, from_checkpoint=True)
    assert other.factors.names == ["pos", "subword"] == loaded.target_factors  # the checkpoint's order
    with pytest.raises(StreamConfigError, match="trained with pos,subword"):
        third, _, _ = build_task_and_model(factored.data, *CRITERION, "--target-factors", "pos",
                                           "--source-features", "")
        third.build_model(cfg.model, from_checkpoint=True)


def test_factor_lines_group_pieces_by_the_dictionarys_subwords_without_annotation_json(factored):
    """Data binarized without annotation.json gave one tag per BPE piece: ``evaluate factors`` then failed with
    "7 pos tags for 5 words". The words are read from the dictionary's pieces (``@@``: BPE)."""
    assert not os.path.exists(os.path.join(factored.data, "annotation.json"))
    task, model, _ = build(factored.data)
    model.eval()
    sample = load(task, ids=[0])
    d = task.target_dictionary
    pieces = [s for s in d.symbols if s.endswith("@@")][:2] + [d.symbols[d.nspecial]]
    assert len(pieces) == 3 and not pieces[-1].endswith("@@")
    tokens = torch.tensor([d.index(p) for p in pieces] + [d.eos()])
    with torch.no_grad():
        factors = task.factors.predict(model, sample, [[{"tokens": tokens}]], task.recorded_settings)
    assert len(factors[0]["pos"]) == 1  # one word: "x@@ y@@ z"


def test_the_factors_travel_as_typed_records_and_an_old_checkpoints_string_still_loads(factored):
    """The model's arguments hold the factors as typed records (name, dictionary size and hash), not a
    ``name:size:hash`` string re-parsed by each reader; a checkpoint trained before holds that string, and loads and
    predicts as before (issue 47.2)."""
    import copy

    from syntax_nmt.data.signatures import TargetFactor, dictionary_signature
    from syntax_nmt.tasks.syntax_translation import StreamConfigError

    torch.manual_seed(5)
    task, model, cfg = build_task_and_model(factored.data, *CRITERION, *FACTORS, "--target-factor-input")
    d = task.factors.dicts["pos"]
    assert cfg.model.target_factor_dicts == [TargetFactor.of("pos", d).to_record()]
    assert cfg.model.target_factor_dicts[0]["size"] == len(d)
    old = copy.copy(cfg.model)
    old.target_factor_dicts = dictionary_signature("pos", d)  # as checkpoints recorded them before
    generating, _, _ = build_task_and_model(factored.data, *CRITERION, "--source-features", "")
    loaded = generating.build_model(old, from_checkpoint=True)
    loaded.load_state_dict(model.state_dict())
    assert generating.factors.names == ["pos"] == loaded.target_factors and not generating.factors.loads_data
    model.eval(), loaded.eval()
    sample = load(task, ids=range(4))
    with torch.no_grad():
        ours, theirs = model(**sample["net_input"]), loaded(**sample["net_input"])
    assert torch.equal(ours[1][FACTOR_LOGITS]["pos"], theirs[1][FACTOR_LOGITS]["pos"])
    other = copy.copy(cfg.model)
    other.target_factor_dicts = f"pos:{len(d)}:0123456789"  # another dictionary of the same size
    again, _, _ = build_task_and_model(factored.data, *CRITERION, "--source-features", "")
    with pytest.raises(StreamConfigError, match="the dictionary of target factor 'pos' differs"):
        again.build_model(other, from_checkpoint=True)


# -- issue 48: the decoder on its own (a tiny one, no data) ----------------------------------------------------------
def _tiny_args(layers=1):
    from argparse import Namespace

    from fairseq.models.transformer import base_architecture

    args = Namespace(decoder_embed_dim=8, decoder_ffn_embed_dim=16, decoder_layers=layers, decoder_attention_heads=2,
                     encoder_embed_dim=8, max_target_positions=64, max_source_positions=64)
    base_architecture(args)
    return args


def _tiny_dict():
    from fairseq.data import Dictionary

    d = Dictionary()
    for w in "a b c d e f g".split():
        d.add_symbol(w)
    return d


def _tiny(factor_sizes=None, layers=1, seed=0, **kw):
    """A FactoredTransformerDecoder of embed dim 8 (2 heads), in eval mode, with its dictionary."""
    from fairseq.models.transformer.transformer_base import Embedding

    torch.manual_seed(seed)
    d = _tiny_dict()
    dec = FactoredTransformerDecoder(_tiny_args(layers), d, Embedding(len(d), 8, d.pad()),
                                     {"pos": 7, "dep": 5} if factor_sizes is None else factor_sizes, **kw)
    return dec.eval(), d


def _tiny_batch(d, seed=1):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(d.nspecial, len(d), (3, 5), generator=g)
    tokens[:, 0] = d.eos()
    tokens[2, 3:] = d.pad()  # a shorter row (left as fairseq's right padding of prev_output_tokens)
    enc = torch.randn(4, 3, 8, generator=g)  # T x B x C
    mask = torch.zeros(3, 4, dtype=torch.bool)
    mask[1, 3] = True
    encoder_out = {"encoder_out": [enc], "encoder_padding_mask": [mask]}
    factors = {"pos": torch.randint(3, 7, (3, 5), generator=g), "dep": torch.randint(3, 5, (3, 5), generator=g)}
    for f in factors.values():
        f[:, 0] = 2
        f[2, 3:] = 1
    return tokens, encoder_out, factors


def test_the_decoder_keeps_its_factor_options_as_checkpoints_rebuild_it():
    """The options a checkpoint's decoder is rebuilt with: factor names in order, one output layer per factor of
    its dictionary's size, factor input off by default (no embeddings), pad 1 and EOS 2, cross-attention unless
    no_encoder_attn; with factor input, one embedding per factor, its pad row 0."""
    dec, d = _tiny()
    assert dec.factor_names == ["pos", "dep"] and dec.factor_input is False and not hasattr(dec, "factor_embed")
    assert (dec.factor_pad, dec.factor_eos) == (1, 2)
    assert {n: (m.in_features, m.out_features) for n, m in dec.factor_out.items()} == {"pos": (8, 7), "dep": (8, 5)}
    assert all(layer.encoder_attn is not None for layer in dec.layers)
    assert sorted(k for k in dec.state_dict() if "factor" in k) == sorted(
        f"factor_out.{n}.{p}" for n in ("pos", "dep") for p in ("weight", "bias"))

    inp, _ = _tiny(factor_input=True)
    assert inp.factor_input is True
    assert {n: (e.num_embeddings, e.embedding_dim, e.padding_idx) for n, e in inp.factor_embed.items()} == {
        "pos": (7, 8, 1), "dep": (5, 8, 1)}
    for e in inp.factor_embed.values():
        assert not e.weight[1].any() and e.weight[torch.arange(e.num_embeddings) != 1].ne(0).all()
    other, _ = _tiny(factor_input=True, factor_pad=0, factor_eos=3)
    assert (other.factor_pad, other.factor_eos) == (0, 3) and other.factor_embed["pos"].padding_idx == 0

    lm, _ = _tiny(no_encoder_attn=True)
    assert all(layer.encoder_attn is None for layer in lm.layers)
    with pytest.raises(ValueError, match=r"^FactoredTransformerDecoder needs at least one factor$"):
        _tiny(factor_sizes={})


@pytest.mark.parametrize("options", [{}, {"features_only": True}, {"full_context_alignment": True},
                                     {"alignment_layer": 0}, {"alignment_heads": 1},
                                     {"alignment_layer": 0, "alignment_heads": 1, "full_context_alignment": True}],
                         ids=["default", "features_only", "full_context", "layer0", "heads1", "all"])
def test_the_decoder_is_fairseqs_for_each_of_its_options(options):
    """Without factor input the translation and attention are fairseq's TransformerDecoder's, with each option of
    fairseq's forward passed on; the factor logits are each factor's output layer over the final state."""
    from fairseq.models.transformer import TransformerDecoder

    dec, d = _tiny(layers=2)
    stock = TransformerDecoder(_tiny_args(2), d, dec.embed_tokens).eval()
    loaded = stock.load_state_dict(dec.state_dict(), strict=False)
    assert not loaded.missing_keys
    tokens, enc, _ = _tiny_batch(d)
    with torch.no_grad():
        x, extra = dec(tokens, encoder_out=enc, **options)
        ref, ref_extra = stock(tokens, encoder_out=enc, **options)
        features, _ = stock.extract_features(tokens, encoder_out=enc,
                                             **{k: v for k, v in options.items() if k != "features_only"})
    assert x.shape == ((3, 5, 8) if options.get("features_only") else (3, 5, len(d)))
    torch.testing.assert_close(x, ref, rtol=0, atol=0)
    torch.testing.assert_close(extra["attn"][0], ref_extra["attn"][0], rtol=0, atol=0)
    assert set(extra[FACTOR_LOGITS]) == {"pos", "dep"}
    for n, k in (("pos", 7), ("dep", 5)):
        logits = extra[FACTOR_LOGITS][n]
        assert logits.shape == (3, 5, k)
        torch.testing.assert_close(logits, features @ dec.factor_out[n].weight.T + dec.factor_out[n].bias)
    # the options are not no-ops here: each changes the attention or the output
    if options and not options.get("features_only"):
        with torch.no_grad():
            _, plain = stock(tokens, encoder_out=enc)
        assert not torch.equal(plain["attn"][0], ref_extra["attn"][0]) or not torch.equal(plain["inner_states"][-1],
                                                                                         ref_extra["inner_states"][-1])


def _layer_input(dec, *args, **kw):
    seen = []
    handle = dec.layers[0].register_forward_pre_hook(lambda m, a: seen.append(a[0].transpose(0, 1).clone()))
    try:
        with torch.no_grad():
            dec(*args, **kw)
    finally:
        handle.remove()
    return seen[0]


def test_factor_input_adds_each_factors_embedding_to_its_tokens_embedding():
    """The first layer reads scale * (token embedding + the sum of the factors' embeddings) + positions."""
    dec, d = _tiny(factor_input=True)
    tokens, enc, factors = _tiny_batch(d)
    with torch.no_grad():
        for e in dec.factor_embed.values():
            e.weight.normal_()
        expected = dec.embed_scale * (dec.embed_tokens(tokens) + dec.factor_embed["pos"](factors["pos"])
                                      + dec.factor_embed["dep"](factors["dep"])) + dec.embed_positions(tokens)
    torch.testing.assert_close(_layer_input(dec, tokens, encoder_out=enc, prev_output_factors=factors), expected)
    plain, _ = _tiny()  # the same seed: the same token embeddings and layers
    with torch.no_grad():
        stock = dec.embed_scale * dec.embed_tokens(tokens) + dec.embed_positions(tokens)
    torch.testing.assert_close(_layer_input(plain, tokens, encoder_out=enc), stock)


def test_factor_input_errors_name_what_is_missing_and_leave_no_pending_factors():
    dec, d = _tiny(factor_input=True)
    tokens, enc, factors = _tiny_batch(d)
    with pytest.raises(ValueError, match=r"^this model embeds the previous target factors \(--target-factor-input\): "
                                         r"the batch needs prev_output_factors \(--task syntax_translation "
                                         r"--target-factors \.\.\.\)$"):
        dec(tokens, encoder_out=enc)
    short = dict(factors, dep=factors["dep"][:, :4])
    with pytest.raises(ValueError, match=r"^target factor 'dep': \(3, 4\) inputs for \(3, 5\) tokens$"):
        dec(tokens, encoder_out=enc, prev_output_factors=short)
    assert dec._factor_in is None and not dec.embed_tokens._forward_hooks


def test_outside_a_call_the_factor_hook_leaves_the_embeddings_alone_and_keeps_their_dtype():
    """No factor inputs are pending between calls (a hook left on a copied embedding would do nothing); during a
    call the factors' embeddings are added in the dtype of the token embeddings' output."""
    dec, d = _tiny(factor_input=True)
    tokens, enc, factors = _tiny_batch(d)
    out = dec.embed_tokens(tokens)
    assert dec._factor_in is None and dec._add_factor_embeddings(dec.embed_tokens, (tokens,), out) is None
    with torch.no_grad():
        dec(tokens, encoder_out=enc, prev_output_factors=factors)
    assert dec._factor_in is None and dec._add_factor_embeddings(dec.embed_tokens, (tokens,), out) is None
    dec._factor_in = factors
    try:
        with torch.no_grad():
            low = dec._add_factor_embeddings(dec.embed_tokens, (tokens,), out.to(torch.bfloat16))
    finally:
        dec._factor_in = None
    assert low.dtype == torch.bfloat16
    expected = out.to(torch.bfloat16) + dec.factor_embed["pos"](factors["pos"]).to(torch.bfloat16)
    torch.testing.assert_close(low, expected + dec.factor_embed["dep"](factors["dep"]).to(torch.bfloat16))


@pytest.mark.parametrize("factor_input", [False, True], ids=["plain", "factor-input"])
def test_incremental_decoding_is_full_decoding_step_by_step(factor_input):
    """Step by step, the logits are those of one pass given the factors the steps predicted (shifted, EOS first);
    only with factor input does the incremental state hold the predictions, the argmax of the step's logits, and
    they follow new_order."""
    dec, d = _tiny(factor_input=factor_input)
    tokens, enc, _ = _tiny_batch(d)
    tokens = tokens[:2, :4]
    enc = {"encoder_out": [enc["encoder_out"][0][:, :2]], "encoder_padding_mask": [enc["encoder_padding_mask"][0][:2]]}
    if factor_input:
        with torch.no_grad():
            for e in dec.factor_embed.values():
                e.weight.normal_(0, 2.0)
    state, steps = {}, []
    with torch.no_grad():
        for t in range(tokens.size(1)):
            x, extra = dec(tokens[:, : t + 1], encoder_out=enc, incremental_state=state)
            steps.append((x[:, -1], {n: v[:, -1] for n, v in extra[FACTOR_LOGITS].items()}))
            kept = [v for k, v in state.items() if k.endswith(".factors")]
            assert len(kept) == int(factor_input)
            if factor_input:
                assert set(kept[0]) == {"pos", "dep"}
                for n in ("pos", "dep"):
                    assert torch.equal(kept[0][n], extra[FACTOR_LOGITS][n][:, -1].argmax(-1))
        predicted = {n: torch.stack([s[1][n].argmax(-1) for s in steps], 1) for n in ("pos", "dep")}
        shifted = {n: torch.cat([torch.full_like(v[:, :1], 2), v[:, :-1]], 1) for n, v in predicted.items()}
        full, extra = dec(tokens, encoder_out=enc, prev_output_factors=shifted if factor_input else None)
    torch.testing.assert_close(torch.stack([s[0] for s in steps], 1), full, atol=1e-5, rtol=1e-5)
    for n in ("pos", "dep"):
        torch.testing.assert_close(torch.stack([s[1][n] for s in steps], 1), extra[FACTOR_LOGITS][n],
                                   atol=1e-5, rtol=1e-5)
    if factor_input:
        order = torch.tensor([1, 1])
        key = next(k for k in state if k.endswith(".factors"))
        before = dict(state[key])
        dec.reorder_incremental_state_scripting(state, order)
        assert all(torch.equal(state[key][n], before[n][order]) for n in ("pos", "dep"))


def test_the_factor_term_of_handmade_logits(factored):
    """The criterion's factor term on logits written by hand: the summed negative log-likelihood and the correct
    predictions of the real target tokens (a pad's correct prediction does not count), the factor weight; no term
    without factor logits (one output, or a second output that is not a dict); logits without the batch's factors
    are refused with the line that says how to train."""
    _, _, crit = build(factored.data)
    pad = crit.padding_idx
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 4.0]]])  # B 1, T 4, 3 classes
    sample = {"target": torch.tensor([[5, 6, 7, pad]]), "target_factors": {"pos": torch.tensor([[0, 1, 0, 2]])}}
    weight, nll, count, correct = crit.factor_terms((None, {FACTOR_LOGITS: {"pos": logits}}), sample)["factor_pos"]
    logp = torch.log_softmax(logits, -1)
    assert weight == 1.0 and int(count) == 3 and int(correct) == 2  # tokens 0, 1 right, 2 wrong, the pad's right
    torch.testing.assert_close(nll, -(logp[0, 0, 0] + logp[0, 1, 1] + logp[0, 2, 0]))
    assert crit.factor_terms((torch.zeros(1),), sample) == {} and crit.factor_terms((None, None), sample) == {}
    with pytest.raises(ValueError) as e:
        crit.factor_terms((None, {FACTOR_LOGITS: {"pos": logits}}), {"target": sample["target"]})
    assert str(e.value) == ("the model predicts target factors but the batch has none: train with the task's "
                            "--target-factors on data binarized with --target-streams")


def test_results_path_gets_the_g_and_f_lines_beside_fairseqs(factored, tmp_path):
    """Issue 56.7: with --results-path fairseq-generate writes its S-, H-... lines to RESULTS/generate-SUBSET.txt; the
    plugin's G- and F- lines went to the standard output. They go to the same file now, each batch's before its
    sentences' S- lines as on the standard output, and nothing of them stays on the standard output; the lines are
    those of the same run without --results-path. fairseq-train and -generate run in this process (one update)."""
    import contextlib
    import io

    from fairseq_cli import generate, train

    from support.console import console_argv
    from syntax_nmt.evaluation.syntax_accuracy import parse_accuracy

    with console_argv("fairseq-train", factored.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                      "--arch", "syntax_transformer_tiny", *CRITERION, *FACTORS, "--syntax-attention", "lisa",
                      "--optimizer", "adam", "--lr", "3e-3", "--max-tokens", "1500", "--max-update", "1",
                      "--no-epoch-checkpoints", "--disable-validation", "--no-progress-bar", "--num-workers", "0",
                      "--save-dir", tmp_path / "ck", "--seed", "1"):
        train.cli_main()
    runs = {}
    for name, extra in (("stdout", []), ("results", ["--results-path", tmp_path / "results"])):
        out = io.StringIO()
        with console_argv("fairseq-generate", factored.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
                          "--path", tmp_path / "ck" / "checkpoint_last.pt", "--beam", "3", "--batch-size", "5",
                          "--max-len-b", "12", "--num-workers", "0", "--remove-bpe", "--print-source-parse", "heads",
                          *extra), \
                contextlib.redirect_stdout(out):
            generate.cli_main()
        runs[name] = out.getvalue().splitlines()
    assert not [line for line in runs["results"] if line[:2] in ("G-", "F-", "S-", "H-")]  # nothing on stdout
    written = (tmp_path / "results" / "generate-test.txt").read_text(encoding="utf-8").splitlines()
    kinds = ("S-", "H-", "G-", "F-")
    assert [line for line in written if line[:2] in kinds] == [line for line in runs["stdout"] if line[:2] in kinds]
    for kind in ("G-", "F-"):
        assert sorted(int(line.split("\t")[0][2:]) for line in written if line.startswith(kind)) == list(range(12))
    first = {}
    for n, line in enumerate(written):
        first.setdefault(line.split("\t")[0], n)
    assert all(first[f"G-{i}"] < first[f"S-{i}"] and first[f"F-{i}"] < first[f"S-{i}"] for i in range(12))
    # syntax-nmt-evaluate parse reads the file alone: the S- words and the G- heads (the reference: each word a root)
    words = {int(line.split("\t")[0][2:]): line.split("\t")[1].split() for line in written if line.startswith("S-")}
    reference = tmp_path / "roots.conllu"
    reference.write_text("".join("".join(f"{i}\t{w}\t_\t_\t_\t_\t0\t_\t_\t_\n" for i, w in enumerate(words[k], 1))
                                 + "\n" for k in sorted(words) if words[k]), encoding="utf-8")
    result = parse_accuracy(str(tmp_path / "results" / "generate-test.txt"), conllu=str(reference))
    known = [w for w in words.values() if "<unk>" not in w]  # a sentence with an unknown piece is left out
    assert (result["words"], result["sentences"], result["skipped"]) == (sum(map(len, known)), len(known),
                                                                        12 - len(known))
