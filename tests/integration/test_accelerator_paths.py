"""The accelerator (GPU) code paths of every method, forced on the CPU, against the explicit path.

Off the CPU the methods take paths with few kernels per layer (``syntax_nmt/models/modules/device_paths.py``):
SLA's two branches and Syntax-BERT's sub-networks as one stacked fused-attention call, LISA's heads through one
fused call and its parse head from the projections already made, SEPREM's eq. 1 in four kernels. Forced on the
CPU (:func:`forced_accelerator_paths`), they must give the explicit path's outputs, syntax losses and gradients in
float32, stay finite in fp16 and bf16, and be the path actually taken. On a machine with CUDA, every method's
training step runs without a host-device synchronisation in the plugin's code.
"""

import os
import traceback
import warnings

import pytest
import torch

from conftest import build_task_and_model
from support.streamdata import binarized_corpus
from syntax_nmt import systems
from syntax_nmt.models.modules.device_paths import cpu_paths, forced_accelerator_paths
from syntax_nmt.models.modules.methods import SYNTAX_METHODS
from syntax_nmt.models.modules.methods import mixed_attention

#: every registered method, then all together
SYSTEMS = [*SYNTAX_METHODS, "all"]
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
CRITERION = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny corpus whose parses are forests (several roots a line), with multi-piece words and one-word lines."""
    root = tmp_path_factory.mktemp("accelerator")
    return binarized_corpus(str(root), {"train": 40, "valid": 16, "test": 4}, seed=11, max_roots=3)[0]


def _build(data, name, *extra):
    system = systems.get(name)
    args = [*CRITERION, *system.args(), *systems.fit_encoder_layers(system, 2), "--dropout", "0", *extra]
    torch.manual_seed(3)
    task, model, cfg = build_task_and_model(data, *args)
    return task, model, task.build_criterion(cfg.criterion)


def _batch(task, left_pad=True):
    task.cfg.left_pad_source = left_pad
    task.load_dataset("valid")
    ds = task.dataset("valid")
    return ds.collater([ds[i] for i in range(len(ds))])


def _inputs(sample, device="cpu"):
    net = sample["net_input"]
    return (net["src_tokens"].to(device), net["src_lengths"].to(device),
            {k: v.to(device) for k, v in net["src_streams"].items()})


def _forward_backward(model, criterion, inputs, probe):
    """A training step without dropout: encoder output ``x``, the syntax loss terms, and the backward pass of a
    loss made of both (``(x * probe).sum()`` plus the weighted terms)."""
    torch.manual_seed(0)  # SEPREM's distance loss samples its pairs
    model.train()
    criterion.train()
    model.zero_grad(set_to_none=True)
    criterion.zero_grad(set_to_none=True)
    tokens, lengths, streams = inputs
    out = model.encoder(tokens, lengths, src_streams=streams)
    x = out["encoder_out"][0]
    terms = criterion.syntax_terms((None, {"encoder_out": out}))
    loss = (x * probe.to(x.dtype)).float().sum()
    for weight, nll_sum, count, _ in terms.values():
        loss = loss + weight * nll_sum / count.clamp(min=1)
    loss.backward()
    return x, terms


def _step(model, criterion, sample, device="cpu"):
    """:func:`_forward_backward` on ``device``; output, loss terms and gradients on the CPU, in float32."""
    inputs = _inputs(sample, device)
    probe = torch.randn(inputs[0].shape[1], inputs[0].shape[0], model.encoder.embed_tokens.embedding_dim,
                        generator=torch.Generator().manual_seed(7)).to(device)
    x, terms = _forward_backward(model, criterion, inputs, probe)
    params = [*model.named_parameters(), *(("criterion." + n, p) for n, p in criterion.named_parameters())]
    grads = {n: p.grad.detach().float().cpu() for n, p in params if p.grad is not None}
    return x.detach().float().cpu(), {k: v[1].detach().float().cpu() for k, v in terms.items()}, grads


def _attention_classes():
    todo, out = [mixed_attention.MixedSelfAttention], []
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def _explicit_everywhere(monkeypatch):
    """Every MixedSelfAttention takes the explicit path (``probabilities``); SEPREM's input has one path only."""
    for cls in _attention_classes():
        monkeypatch.setattr(cls, "fused_attention", lambda self, *a: None)


def _spy_sdpa(monkeypatch):
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda q, *a, **kw: calls.append(tuple(q.shape)) or sdpa(q, *a, **kw))
    return calls


@pytest.mark.parametrize("left_pad", [True, False])
@pytest.mark.parametrize("name", SYSTEMS)
def test_accelerator_paths_equal_the_explicit_path(data, name, left_pad, monkeypatch):
    task, model, criterion = _build(data, name)
    sample = _batch(task, left_pad)
    calls = _spy_sdpa(monkeypatch)
    with forced_accelerator_paths():
        assert not cpu_paths(torch.zeros(1))
        x, terms, grads = _step(model, criterion, sample)
    assert cpu_paths(torch.zeros(1))
    attention = [m for m in model.encoder.modules() if isinstance(m, mixed_attention.MixedSelfAttention)]
    # every replaced self-attention went through one fused call (SLA's branches and Syntax-BERT's sub-networks
    # stacked along the queries)
    T = sample["net_input"]["src_tokens"].shape[1]
    stacked = [q[2] // T for q in calls]
    assert len(calls) >= len(attention)
    expected_widths = {"sla": 2, "syntax_bert": 3 * 3 + 1}
    for method, width in expected_widths.items():
        if systems.get(name).uses(method):
            assert width in stacked, (method, stacked)
    with monkeypatch.context() as m:
        _explicit_everywhere(m)
        x_ref, terms_ref, grads_ref = _step(model, criterion, sample)
    assert x.abs().max() > 0.1
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    assert terms.keys() == terms_ref.keys()
    for k in terms:
        torch.testing.assert_close(terms[k], terms_ref[k], atol=1e-4, rtol=1e-5)
    assert grads.keys() == grads_ref.keys()
    for n in grads:
        scale = max(1.0, grads_ref[n].abs().max().item())
        assert (grads[n] - grads_ref[n]).abs().max().item() <= 2e-5 * scale, n


@pytest.mark.parametrize("extra", [("--lisa-inject-parse",), ("--encoder-attention-heads", "4", "--lisa-head", "2")],
                         ids=["injected-parse", "head-2-of-4"])
def test_lisa_fused_path_with_an_injected_parse_or_a_middle_head(data, extra, monkeypatch):
    """LISA's fused path with the given parse's one-hot parents in its head (``--lisa-inject-parse``), and with the
    parse head in the middle of four (the heads after it kept in place), equals the explicit path."""
    task, model, criterion = _build(data, "lisa", *extra)
    sample = _batch(task)
    with forced_accelerator_paths():
        x, terms, grads = _step(model, criterion, sample)
    with monkeypatch.context() as m:
        _explicit_everywhere(m)
        x_ref, terms_ref, grads_ref = _step(model, criterion, sample)
    assert x.abs().max() > 0.1 and terms.keys() == terms_ref.keys() == {"lisa"}
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(terms["lisa"], terms_ref["lisa"], atol=1e-4, rtol=1e-5)
    for n in grads_ref:
        torch.testing.assert_close(grads[n], grads_ref[n], atol=2e-5 * max(1.0, grads_ref[n].abs().max().item()),
                                   rtol=0, msg=n)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("name", SYSTEMS)
def test_accelerator_paths_are_finite_in_low_precision(data, name, dtype):
    """The model cast to fp16/bf16 (as fairseq's --fp16/--bf16 do) on a batch with one-word lines, pads and rows
    with no allowed key: finite outputs, syntax losses and gradients, close to float32."""
    task, model, criterion = _build(data, name)
    sample = _batch(task)
    with forced_accelerator_paths():
        ref, _, _ = _step(model, criterion, sample)
        x, terms, grads = _step(model.to(dtype), criterion.to(dtype), sample)
    assert torch.isfinite(x).all() and all(torch.isfinite(t).all() for t in terms.values())
    assert all(torch.isfinite(g).all() for g in grads.values())
    torch.testing.assert_close(x, ref, atol=0.05 * ref.abs().max().item(), rtol=0.05)


def test_forcing_is_scoped():
    t = torch.zeros(1)
    with forced_accelerator_paths():
        with forced_accelerator_paths(False):
            assert cpu_paths(t)
        assert not cpu_paths(t)
    assert cpu_paths(t)
    assert not cpu_paths(torch.zeros(1, device="meta"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", SYSTEMS)
def test_cuda_step_has_no_sync_in_the_plugin_and_matches_the_cpu(data, name):
    """A training step on CUDA (bf16 autocast and fp32) synchronises with the host nowhere in the plugin's code
    (fairseq's encoder checks ``encoder_padding_mask.any()`` itself), and in fp32 equals the CPU's explicit path."""
    # no sampled pairs in SEPREM's distance loss: the CPU's and the GPU's random streams differ
    deterministic = [a for m in systems.get(name).methods for loss in SYNTAX_METHODS[m].losses
                     for a in loss.deterministic_args]
    task, model, criterion = _build(data, name, *deterministic)
    sample = _batch(task)
    ref, ref_terms, _ = _step(model, criterion, sample)
    model.cuda()
    criterion.cuda()
    inputs = _inputs(sample, "cuda")
    probe = torch.randn(inputs[0].shape[1], inputs[0].shape[0], model.encoder.embed_tokens.embedding_dim, device="cuda")
    _forward_backward(model, criterion, inputs, probe)  # warm-up: lazy initialisation may synchronise once
    torch.cuda.synchronize()
    syncs = []

    def where(message, *args, **kwargs):  # the innermost frame outside torch and warnings: who synchronised
        if "synchroniz" in str(message):
            frames = [f for f in traceback.extract_stack()[:-1]
                      if not f.filename.startswith(TORCH_DIR) and "warnings" not in f.filename]
            syncs.append(f"{frames[-1].filename}:{frames[-1].lineno}")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = where
        torch.cuda.set_sync_debug_mode("warn")
        try:
            _forward_backward(model, criterion, inputs, probe)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                _forward_backward(model, criterion, inputs, probe)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert not [s for s in syncs if "syntax_nmt" in s], syncs
    # what is left may only be fairseq's own encoder (`if has_pads:` after encoder_padding_mask.any())
    assert all("fairseq" in s for s in syncs), syncs
    x, terms, _ = _step(model, criterion, sample, "cuda")
    torch.testing.assert_close(x, ref, atol=2e-4, rtol=2e-4)
    for k in ref_terms:
        torch.testing.assert_close(terms[k], ref_terms[k], atol=2e-3, rtol=2e-4)
