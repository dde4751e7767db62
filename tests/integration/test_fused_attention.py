"""Fused attention paths (torch's scaled_dot_product_attention) against the explicit (B, H, T, T) ones."""

import pytest
import torch

from conftest import build_task_and_model
from syntax_nmt.models.modules.methods import mixed_attention
from syntax_nmt.models.modules.methods.mixed_attention import MixedSelfAttention
from syntax_nmt.models.modules.methods.sla import SyntaxLocalAttention

SLA_CASES = [["--syntax-attention", "sla"], ["--syntax-attention", "sla", "--sla-window", "2"],
             ["--syntax-attention", "sla", "--sla-threshold", "1", "--sla-layers", "0"]]


def _run(model, task, n=12, train=False):
    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(n)])["net_input"]
    model.train(train)
    model.zero_grad(set_to_none=True)
    out = model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])["encoder_out"][0]
    return out, net


def _explicit(monkeypatch):
    for cls in (MixedSelfAttention, SyntaxLocalAttention):
        monkeypatch.setattr(cls, "fused_branches", lambda self, *a: None)


def _spy_one_score(monkeypatch):
    """The calls of branch_softmax_attention (SLA's one-score CPU kernel), each the batch width."""
    widths = []
    one = mixed_attention.branch_softmax_attention
    monkeypatch.setattr(mixed_attention, "branch_softmax_attention",
                        lambda q, *a: widths.append(q.shape[2]) or one(q, *a))
    return widths


@pytest.mark.parametrize("args", SLA_CASES)
@pytest.mark.parametrize("left_pad", [True, False])
@pytest.mark.parametrize("kernel", ["one-score", "fused"])
def test_sla_fused_equals_explicit_outputs_and_gradients(stream_bin, monkeypatch, args, left_pad, kernel):
    """Both CPU kernels of SLA's fast path (one score matrix for both branches, or one fused attention call per
    branch) against the explicit path through ``probabilities``."""
    torch.manual_seed(1)
    task, model, _ = build_task_and_model(stream_bin, *args, "--dropout", 0)
    task.cfg.left_pad_source = left_pad
    if kernel == "fused":
        monkeypatch.setattr(SyntaxLocalAttention, "one_score_cpu_max_length", 0)
    one_score = _spy_one_score(monkeypatch)
    calls = []
    fused = SyntaxLocalAttention.fused_branches
    monkeypatch.setattr(SyntaxLocalAttention, "fused_branches",
                        lambda self, *a: calls.append(1) or fused(self, *a))
    results = []
    for explicit in (False, True):
        if explicit:
            assert len(calls) == len([m for m in model.encoder.modules() if isinstance(m, SyntaxLocalAttention)])
            _explicit(monkeypatch)
        torch.manual_seed(0)
        out, net = _run(model, task, train=True)
        assert (net["src_tokens"][:, 0 if left_pad else -1] == task.source_dictionary.pad()).any()
        w = torch.randn(out.shape, generator=torch.Generator().manual_seed(5))
        (out.float() * w).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.encoder.named_parameters() if p.grad is not None}
        results.append((out.detach(), grads))
    layers = len([m for m in model.encoder.modules() if isinstance(m, SyntaxLocalAttention)])
    assert len(calls) == layers and len(one_score) == (layers if kernel == "one-score" else 0)
    (a, ga), (b, gb) = results
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert ga.keys() == gb.keys() and any("gate" in n for n in ga)
    for n in ga:
        scale = gb[n].abs().max().item()
        # sums over every token in another order: gradients agree to 1e-4 of their scale (a bias gradient of 1.1,
        # a sum of larger terms, differed by 1.7e-5 with one initialisation); the outputs above to 1e-5
        assert (ga[n] - gb[n]).abs().max().item() <= 1e-4 * max(1.0, scale), (n, (ga[n] - gb[n]).abs().max(), scale)
        assert scale > 0 or "bias" in n


def test_sla_fused_path_is_skipped_when_weights_are_recorded_or_dropout_acts(stream_bin, monkeypatch):
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla", "--attention-dropout", 0.3)
    used = []
    fused = SyntaxLocalAttention.fused_branches
    monkeypatch.setattr(SyntaxLocalAttention, "fused_branches", lambda self, *a: used.append(1) or fused(self, *a))
    _run(model, task, train=True)
    assert not used  # attention dropout acts on the mixed distribution: explicit path
    _run(model, task, train=False)
    assert used
    used.clear()
    layer = model.encoder.layers[0].self_attn
    layer.record = True
    _run(model, task, train=False)
    assert len(used) == len(model.encoder.layers) - 1 and layer.recorded["local"].dim() == 4


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kernel", ["one-score", "fused"])
def test_sla_fused_is_finite_in_low_precision(stream_bin, monkeypatch, dtype, kernel):
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla")
    if kernel == "fused":
        monkeypatch.setattr(SyntaxLocalAttention, "one_score_cpu_max_length", 0)
    one_score = _spy_one_score(monkeypatch)
    model.to(dtype)
    out, _ = _run(model, task)
    assert out.dtype == dtype and torch.isfinite(out.float()).all()
    assert bool(one_score) == (kernel == "one-score")


def test_sla_takes_one_score_matrix_up_to_its_cpu_width(stream_bin, monkeypatch):
    """A CPU batch up to ``one_score_cpu_max_length`` tokens wide takes the one-score kernel, a wider one the fused
    calls; the output is the same."""
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla", "--dropout", 0)
    one_score = _spy_one_score(monkeypatch)
    outs = {}
    for offset in (0, -1):
        T = _run(model, task)[1]["src_tokens"].shape[1]
        monkeypatch.setattr(SyntaxLocalAttention, "one_score_cpu_max_length", T + offset)
        one_score.clear()
        outs[offset] = _run(model, task)[0]
        assert one_score == ([T] * len(model.encoder.layers) if offset == 0 else [])
    torch.testing.assert_close(outs[0], outs[-1], atol=1e-5, rtol=1e-5)
