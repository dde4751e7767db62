"""The contract of a syntax method, checked for every method of the registry and for all of them together.

The cases are read when the tests are collected: each method of
:data:`~syntax_nmt.models.modules.methods.SYNTAX_METHODS` (a method added to the plugin is checked from then on,
with no edit here) and ``all``, the features and every method in distinct layers. Each is the system of that
name in :mod:`syntax_nmt.systems` (its options and auxiliary loss weights), trained with
``label_smoothed_cross_entropy_with_syntax``. For each:

1. with the method's identity setting (``identity_args`` and ``set_identity`` of its class) the model computes
   what fairseq's stock ``transformer`` computes with the same weights, and with its own options it does not;
2. fp16 and bf16 forward passes and losses are finite, on a batch with pads, BOS, EOS and one-word lines (rows
   that may have no allowed key);
3. one backward pass of the training loss gives every parameter the method adds, in the model and in the
   criterion, a non-zero gradient;
4. a batch gives every sentence the encoder output, translation loss and syntax loss terms it gets alone;
5. left padding gives what right padding gives;
6. ``--checkpoint-activations`` gives the gradients of the same step without recomputation;
9. in eval mode the encoder runs on the streams the method declares for inference alone
   (``inference_streams``: the parse, or nothing for LISA) and gives what it gives with every stream;
7. fairseq-train and fairseq-generate (their console scripts' entry points, run in this process as fairseq's
   own tests/test_binaries.py does) train a few updates with finite losses and translate every test line;
8. (slow) two data-parallel fairseq-train processes equal one with ``--update-freq 2``.

The data is a tiny stream corpus whose parses are forests (several roots on a line), with words of several
pieces and one-word lines.
"""

import json
import math
import os
import re
import socket
import subprocess
from types import SimpleNamespace

import pytest
import torch
from fairseq.modules import MultiheadAttention

from conftest import BIN, USER_DIR, build_task_and_model
from support.console import console_argv
from support.streamdata import binarized_corpus
from syntax_nmt import systems
from syntax_nmt.models.modules.methods import SYNTAX_METHODS

#: every registered method, then all together
SYSTEMS = [*SYNTAX_METHODS, "all"]
#: the encoder layers of syntax_transformer_tiny (and of fairseq's transformer_tiny)
LAYERS = 2
CRITERION = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1"]
NO_FEATURES = ["--source-features", ""]  # the features are no method (``all`` has them)
DROPOUT = ["--dropout", "0.3", "--attention-dropout", "0.2", "--activation-dropout", "0.1"]
CKPT = "--checkpoint-activations"


# -- data and models ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def contract(tmp_path_factory):
    """The corpus binarized (train 64, valid 24, test 15 lines: generation's last batch is not full): ``.data``
    its directory, ``.corpus`` the text."""
    root = tmp_path_factory.mktemp("contract")
    data, corpus = binarized_corpus(str(root), {"train": 64, "valid": 24, "test": 15}, seed=5, max_roots=3)
    return SimpleNamespace(data=data, corpus=corpus)


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f]


def system_args(name, *extra):
    """The fairseq options of system ``name`` on syntax_transformer_tiny, then ``extra``."""
    system = systems.get(name)
    return [*CRITERION, *system.args(), *systems.fit_encoder_layers(system, LAYERS), *map(str, extra)]


def build(data, name, *extra):
    """``(task, model, criterion)`` of system ``name`` (with ``extra`` options)."""
    task, model, cfg = build_task_and_model(data, *system_args(name, *extra))
    return task, model, task.build_criterion(cfg.criterion)


def stock_transformer(data, name):
    """fairseq's own transformer_tiny (task translation) as deep as system ``name``'s encoder."""
    _, model, _ = build_task_and_model(data, *systems.fit_encoder_layers(systems.get(name), LAYERS),
                                       arch="transformer_tiny", task="translation")
    return model


def identity_args(name):
    """The identity options of every method of system ``name`` (skips a method that has none and says why)."""
    out = []
    for method in systems.get(name).methods:
        cls = SYNTAX_METHODS[method]
        if cls.identity_args is None:
            if not cls.no_identity:
                pytest.fail(f"{method} declares neither identity_args nor no_identity (why it has none)")
            pytest.skip(f"{method} has no identity setting: {cls.no_identity}")
        out += list(cls.identity_args)
    return out


def load(task, split="valid", ids=None):
    """One batch of the split (all of it by default)."""
    task.load_dataset(split)
    ds = task.dataset(split)
    return ds.collater([ds[i] for i in (range(len(ds)) if ids is None else ids)])


def encode(model, net):
    return model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])["encoder_out"][0]


def close(actual, expected, msg="", atol=1e-5, rtol=1e-5):
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, msg=lambda m: f"{msg}: {m}")


# -- 1. identity --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SYSTEMS)
def test_identity_setting_is_the_stock_transformer(contract, name):
    """Exactly fairseq's numbers up to float32 rounding: the attention-replacing methods run their own kernels."""
    torch.manual_seed(0)
    task, model, _ = build(contract.data, name, *identity_args(name), *NO_FEATURES)
    for method in systems.get(name).methods:
        SYNTAX_METHODS[method].set_identity(model)
    stock = stock_transformer(contract.data, name)
    loaded = stock.load_state_dict(model.state_dict(), strict=False)
    assert not loaded.missing_keys and loaded.unexpected_keys  # the stock weights, and the method's besides
    model.eval(), stock.eval()
    net = load(task)["net_input"]
    with torch.no_grad():
        ref = stock.encoder(net["src_tokens"], net["src_lengths"])["encoder_out"][0]
        ref_logits = stock(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])[0]
        close(encode(model, net), ref, "encoder output")
        close(model(**net)[0], ref_logits, "decoder output")

    # the method is in the model: with the system's own options and moved parameters, the stock weights differ
    _, other, _ = build(contract.data, name, *NO_FEATURES)
    loaded = other.load_state_dict(stock.state_dict(), strict=False)
    assert not loaded.unexpected_keys
    with torch.no_grad():
        for n, p in other.named_parameters():
            if n in loaded.missing_keys:
                p.add_(torch.randn_like(p), alpha=0.1)
    other.eval()
    with torch.no_grad():
        assert (encode(other, net) - ref).abs().max() > 1e-3


# -- 2. low precision ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", SYSTEMS)
def test_low_precision_is_finite(contract, name, dtype):
    task, model, crit = build(contract.data, name, "--source-prepend-bos")
    sample = load(task)
    net = sample["net_input"]
    d = task.source_dictionary
    words = [sum(tag in ("B", "O") for tag in tags) for tags in _lines(contract.corpus["valid"] + ".subword")]
    assert 1 in words and min(net["src_lengths"].tolist()) == 3  # a one-word line of one piece: BOS word EOS
    assert net["src_tokens"].eq(d.pad()).any() and net["src_tokens"][:, -1].eq(d.eos()).all()
    assert net["src_tokens"].eq(d.bos()).sum() == len(words)
    model.eval(), crit.eval()
    model.to(dtype), crit.to(dtype)
    with torch.no_grad():
        logits, extra = model(**net)
        loss, _, log = crit(model, sample)
    assert logits.dtype == dtype and torch.isfinite(logits.float()).all()
    assert torch.isfinite(extra["encoder_out"]["encoder_out"][0].float()).all()
    assert torch.isfinite(loss.float())
    for key, value in log.items():
        if key.endswith("_loss"):
            assert torch.isfinite(torch.as_tensor(value).float()), key


# -- 3. gradients -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SYSTEMS)
def test_gradients_reach_every_parameter_the_method_adds(contract, name):
    torch.manual_seed(0)
    task, model, crit = build(contract.data, name)
    stock = {n for n, _ in stock_transformer(contract.data, name).named_parameters()}
    new = {f"model.{n}": p for n, p in model.named_parameters() if n not in stock}
    new.update({f"criterion.{n}": p for n, p in crit.named_parameters()})
    assert new
    model.train(), crit.train()
    loss, _, _ = crit(model, load(task))
    loss.backward()
    assert [n for n, p in new.items() if p.grad is None or not p.grad.abs().sum() > 0] == []


# -- 4, 5. a sentence's results do not depend on its batch or its padding ------------------------------------------
def per_sentence(model, crit, sample):
    """``(sentences, terms)``: sentence id -> (encoder output at its tokens ``(L, C)``, translation loss), and
    syntax loss name -> (nll sum, count, correct) over the batch."""
    net = sample["net_input"]
    with torch.no_grad():
        out = model(**net)
        token_loss, _ = crit.compute_loss(model, out, sample, reduce=False)
        terms = {k: tuple(v[1:]) for k, v in crit.syntax_terms(out).items()}
    enc = out[1]["encoder_out"]["encoder_out"][0].transpose(0, 1)  # B T C
    real = net["src_tokens"].ne(crit.padding_idx)
    loss = token_loss.view(sample["target"].shape).sum(-1)
    return {sid: (enc[b][real[b]], loss[b]) for b, sid in enumerate(sample["id"].tolist())}, terms


def assert_same(a, b, what):
    sentences_a, terms_a = a
    sentences_b, terms_b = b
    assert sentences_a.keys() == sentences_b.keys()
    for sid in sentences_a:
        close(sentences_a[sid][0], sentences_b[sid][0], f"{what}: encoder output of sentence {sid}")
        close(sentences_a[sid][1], sentences_b[sid][1], f"{what}: loss of sentence {sid}")
    assert terms_a.keys() == terms_b.keys()
    for k in terms_a:
        (nll_a, count_a, correct_a), (nll_b, count_b, correct_b) = terms_a[k], terms_b[k]
        assert (int(count_a), int(correct_a)) == (int(count_b), int(correct_b)), (what, k)
        close(nll_a, nll_b, f"{what}: {k} loss", atol=1e-4)


def _sum_terms(parts):
    out = {}
    for part in parts:
        for k, v in part.items():
            out[k] = tuple(a + b for a, b in zip(out[k], v)) if k in out else v
    return out


@pytest.mark.parametrize("name", SYSTEMS)
def test_a_batch_equals_its_sentences_one_by_one(contract, name):
    task, model, crit = build(contract.data, name)
    model.eval(), crit.eval()  # validation scores every DP pair: the terms add up over sentences
    batch = per_sentence(model, crit, load(task))
    heads = _lines(contract.corpus["valid"] + ".head")
    tags = _lines(contract.corpus["valid"] + ".subword")
    roots = [sum(h == "0" and t in ("B", "O") for h, t in zip(hs, ts)) for hs, ts in zip(heads, tags)]
    assert max(roots) > 1 and any("M" in t or "E" in t for t in tags)  # forests, words of several pieces
    singles = [per_sentence(model, crit, load(task, ids=[i])) for i in range(len(heads))]
    one_by_one = ({sid: v for s in singles for sid, v in s[0].items()}, _sum_terms(s[1] for s in singles))
    assert_same(batch, one_by_one, "batch vs one by one")


@pytest.mark.parametrize("name", SYSTEMS)
def test_left_padding_equals_right_padding(contract, name):
    task, model, crit = build(contract.data, name)
    right, _, _ = build(contract.data, name, "--left-pad-source")  # fairseq: the bare flag turns left padding off
    model.eval(), crit.eval()
    left_sample, right_sample = load(task), load(right)
    pad = task.source_dictionary.pad()
    assert left_sample["net_input"]["src_tokens"][:, 0].eq(pad).any()
    assert right_sample["net_input"]["src_tokens"][:, -1].eq(pad).any()
    assert_same(per_sentence(model, crit, left_sample), per_sentence(model, crit, right_sample), "left vs right")
    with torch.no_grad():
        close(crit(model, left_sample)[0], crit(model, right_sample)[0], "loss", atol=1e-3, rtol=1e-4)


# -- 6. recomputed activations --------------------------------------------------------------------------------------
def _checkpoint_cases():
    """Every system with fairseq's flag; all together with SG-Net's own flag."""
    for name in SYSTEMS:
        yield name, CKPT
    if "sgnet" in SYNTAX_METHODS:
        yield "all", "--sgnet-checkpoint-activations"


def _count_calls(model):
    """name -> number of calls, for every self-attention of the encoder (fairseq's and the methods')
    and every module applied to a layer input (SEPREM): each runs again when its layer is recomputed."""
    calls = {}
    for name, module in model.encoder.named_modules():
        if isinstance(module, MultiheadAttention) or ".syntax_inputs." in name:
            calls[name] = 0
            module.register_forward_hook(lambda m, a, out, name=name: calls.__setitem__(name, calls[name] + 1))
    return calls


def _train_step(data, name, flags):
    """One forward/backward of the system's loss with dropout on: (gradients by name, calls by module, what the
    methods handed to the criterion)."""
    torch.manual_seed(3)
    task, model, crit = build(data, name, *DROPOUT, *flags)
    model.train(), crit.train()
    calls = _count_calls(model)
    seen = {}
    model.register_forward_hook(lambda m, a, out: seen.update(out=out))
    sample = load(task, ids=range(6))
    torch.manual_seed(4)  # dropout masks and the DP loss's pair sampling
    loss, _, _ = crit(model, sample)
    ctx = seen["out"][1].get("encoder_out", {}).get("syntax")
    outputs = dict(ctx.outputs) if ctx is not None else {}
    loss.backward()
    if ctx is not None:  # a recomputation must not replace what the criterion read (e.g. LISA's parse scores)
        assert all(ctx.outputs[k] is v for k, v in outputs.items()) and ctx.outputs.keys() == outputs.keys()
    grads = {f"model.{n}": p.grad for n, p in model.named_parameters() if p.grad is not None}
    grads.update({f"criterion.{n}": p.grad for n, p in crit.named_parameters() if p.grad is not None})
    return grads, calls, outputs


@pytest.mark.parametrize("name,flag", list(_checkpoint_cases()))
def test_recomputed_layers_give_identical_gradients(contract, name, flag):
    """Equal up to float32 rounding: the encoder's gradients differ in the last bits (~1e-7 relative) even for
    fairseq's stock encoder under its own ``checkpoint_wrapper``, the decoder's are bit-identical; a wrong context
    or dropout mask changes them by orders of magnitude more."""
    plain, plain_calls, plain_outputs = _train_step(contract.data, name, [])
    ckpt, ckpt_calls, ckpt_outputs = _train_step(contract.data, name, [flag])

    assert set(plain) == set(ckpt)
    assert len(plain) > 50  # every parameter of the model, not a handful
    for n in plain:
        scale = max(1.0, plain[n].abs().max().item())
        torch.testing.assert_close(ckpt[n], plain[n], rtol=1e-5, atol=1e-6 * scale, msg=lambda m, n=n: f"{n}: {m}")
    zero = [n for n in plain if n.startswith("model.encoder.") and not plain[n].abs().sum() > 0]
    assert not zero  # every encoder parameter, the methods' own included, takes part
    assert ckpt_outputs.keys() == plain_outputs.keys()
    for k in plain_outputs:
        torch.testing.assert_close(ckpt_outputs[k], plain_outputs[k], rtol=0, atol=0)

    # the recomputation happened: each layer module ran once in the forward, once more in the backward
    assert set(plain_calls) == set(ckpt_calls) and all(c == 1 for c in plain_calls.values())
    for module, count in ckpt_calls.items():
        recomputed = flag == CKPT or module.startswith("syntax_modules.sgnet.")
        assert count == (2 if recomputed else 1), module


# -- 9. what the model reads at inference -------------------------------------------------------------------------
#: what each built-in method's forward pass reads at inference (LISA attends with the parse its head predicts)
INFERENCE = {"sgnet": ["subword", "head"], "sla": ["subword", "head"], "syntax_bert": ["subword", "head"],
             "seprem": ["subword", "head"], "lisa": []}


@pytest.mark.parametrize("name,extra", [(n, ()) for n in SYSTEMS] + [("lisa", ("--lisa-inject-parse",))],
                         ids=[*SYSTEMS, "lisa-inject-parse"])
def test_inference_reads_what_the_method_declares(contract, name, extra):
    """In eval mode the encoder, given only the streams its parts declare for inference, gives exactly what it gives
    with every stream (a method that declares nothing reads nothing); without one of them it ends with an error
    naming the part that reads it; in training it needs every stream."""
    from syntax_nmt.models.modules.inference_needs import inference_needs, inference_streams

    torch.manual_seed(0)
    task, model, _ = build(contract.data, name, *extra)
    enc = model.encoder
    for m in enc.methods:
        assert set(m.inference_streams) <= set(m.streams), m.name  # read at inference, so given in training
        if m.name in INFERENCE:
            assert list(m.inference_streams) == (["subword", "head"] if extra else INFERENCE[m.name]), m.name
    declared = inference_streams(inference_needs(enc.feature_names, enc.methods))
    assert enc.inference_streams == declared
    net = load(task)["net_input"]
    given = {k: v for k, v in net["src_streams"].items() if k in declared}
    model.eval()
    with torch.no_grad():
        ref = encode(model, net)
        close(encode(model, {**net, "src_streams": given}), ref, "the declared streams alone", atol=0, rtol=0)
        for stream in declared:
            reader = next(r for r, streams in enc.inference_needs.items() if stream in streams)
            with pytest.raises(ValueError, match=rf"lacks the source streams \['{stream}'\], which this model reads "
                                                 rf"at inference: .*{re.escape(reader)} reads"):
                encode(model, {**net, "src_streams": {k: v for k, v in given.items() if k != stream}})
    if set(given) != set(net["src_streams"]):
        model.train()
        with pytest.raises(ValueError, match="needs the source streams"):
            encode(model, {**net, "src_streams": given})


# -- 7. the command lines ------------------------------------------------------------------------------------------
def _meters(state, group):
    """name -> (average, count) of the meters of one metrics group saved in a checkpoint."""
    out = {}
    for _, key, kind, s in state["extra_state"]["metrics"][group]:
        if kind == "AverageMeter":
            avg = float(s["sum"]) / s["count"] if s["count"] else (None if s["val"] is None else float(s["val"]))
            out[key] = avg
    return out


TRAIN = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny",
         "--optimizer", "adam", "--lr", "0.005", "--batch-size", "16", "--max-update", "3", "--seed", "1",
         "--num-workers", "0", "--no-epoch-checkpoints", "--no-save-optimizer-state", "--no-progress-bar"]


@pytest.mark.e2e
@pytest.mark.parametrize("name", SYSTEMS)
def test_fairseq_train_and_generate(contract, name, tmp_path):
    from fairseq import checkpoint_utils
    from fairseq_cli import generate, train

    save = tmp_path / "ckpt"
    with console_argv("fairseq-train", contract.data, *TRAIN, *system_args(name), "--save-dir", save):
        train.cli_main()
    state = checkpoint_utils.load_checkpoint_to_cpu(str(save / "checkpoint_last.pt"))
    meters = _meters(state, "train")
    assert meters["num_updates"] == 3
    _, _, crit = build(contract.data, name)
    losses = ["loss", "nll_loss", *(f"{k}_loss" for k, loss in crit.losses.items() if loss.requested)]
    for key in losses:  # the translation loss and each auxiliary loss the system trains with
        assert key in meters and math.isfinite(meters[key]) and meters[key] > 0, (key, meters)
    assert math.isfinite(state["extra_state"]["val_loss"])

    results = tmp_path / "gen"
    with console_argv("fairseq-generate", contract.data, "--user-dir", USER_DIR, "--task", "syntax_translation",
               "--path", save / "checkpoint_last.pt", "--beam", "2", "--batch-size", "8", "--max-len-b", "10",
               "--num-workers", "0", "--results-path", results):
        generate.cli_main()
    with open(results / "generate-test.txt", encoding="utf-8") as f:
        ids = sorted(int(m.group(1)) for m in re.finditer(r"^H-(\d+)\t", f.read(), re.M))
    assert ids == list(range(len(_lines(contract.corpus["test"] + ".en"))))


# -- 8. distributed data parallel (slow) ---------------------------------------------------------------------------
DDP = ["--user-dir", USER_DIR, "--task", "syntax_translation", "--arch", "syntax_transformer_tiny", "--cpu",
       "--optimizer", "adam", "--lr", "1e-3", "--max-sentences", "8", "--max-update", "4", "--dropout", "0",
       "--attention-dropout", "0", "--seed", "1", "--no-save", "--log-format", "json", "--log-interval", "1",
       "--disable-validation", "--num-workers", "0"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _updates(log: str):
    """(num_updates, loss, nll_loss, wpb, bsz) of every train_inner record."""
    rows = []
    for line in log.splitlines():
        if "| train_inner |" in line:
            rec = json.loads(line.split("| train_inner | ", 1)[1])
            rows.append((int(rec["num_updates"]), float(rec["loss"]), float(rec["nll_loss"]), rec["wpb"], rec["bsz"]))
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("name", SYSTEMS)
def test_two_cpu_processes_equal_one_with_update_freq_2(contract, name):
    """Two ``fairseq-train`` processes on CPU (gloo) reach the losses of one process with ``--update-freq 2`` on
    the same batches: fairseq shards the epoch's batches over the ranks (rank r takes batches r, r + 2, ...), so
    update k sees batches 2k and 2k + 1 either way, and the all-reduced gradient (model and criterion) equals the
    accumulated one.

    What fairseq 0.12 accepts on CPU (found by trying it): the init method must be given (``env://`` with
    ``MASTER_ADDR``, ``MASTER_PORT``, ``--distributed-rank``, ``--distributed-no-spawn``): its own detection of
    torchrun's variables computes ``rank % torch.cuda.device_count()`` and fails without a GPU, and its spawning
    starts one process per GPU; ``--ddp-backend legacy_ddp``: the default ``pytorch_ddp`` passes
    ``device_ids=[device_id]``, which torch refuses for a CPU module; ``--distributed-backend gloo``.
    About 1.5 minutes per system on 2 shared CPU cores (three fairseq-train start-ups)."""
    exe = os.path.join(BIN, "fairseq-train")
    # the second half of an update draws from the generator where the first half left it in one process, from a
    # freshly seeded one on rank 1: no dropout, and no auxiliary loss samples
    fixed = [a for m in systems.get(name).methods for loss in SYNTAX_METHODS[m].losses for a in loss.deterministic_args]
    args = [contract.data, *DDP, *system_args(name, *fixed)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.environ.get("PYTHONPATH"), os.path.dirname(
        USER_DIR)] if p))
    one = subprocess.run([exe, *args, "--update-freq", "2"], capture_output=True, text=True, timeout=600, env=env)
    assert one.returncode == 0, one.stderr[-3000:]

    port = str(_free_port())
    procs = []
    for rank in range(2):
        env_r = dict(env, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2", RANK=str(rank))
        procs.append(subprocess.Popen(
            [exe, *args, "--distributed-world-size", "2", "--distributed-rank", str(rank),
             "--distributed-init-method", "env://", "--distributed-no-spawn", "--distributed-backend", "gloo",
             "--ddp-backend", "legacy_ddp", "--device-id", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_r))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        outs.append(out)
        assert p.returncode == 0, out[-3000:]
    assert "distributed init (rank 1)" in outs[1]

    single, ddp = _updates(one.stderr + one.stdout), _updates(outs[0])
    assert [u[0] for u in single] == [1, 2, 3, 4] and [u[0] for u in ddp] == [1, 2, 3, 4]
    for a, b in zip(single, ddp):
        assert a[3:] == b[3:], (a, b)  # the same batches: words and sentences per update
        assert a[1] == pytest.approx(b[1], abs=2e-3) and a[2] == pytest.approx(b[2], abs=2e-3), (a, b)
    # the losses move, so equal losses after updates 1-3 mean equal parameter updates
    assert single[-1][1] < single[0][1] - 0.5
