"""branch_softmax_attention (one score matrix for several masked softmaxes, SLA's CPU kernel) against eq. 6 written
out naively, and against one fused attention call per branch."""

import pytest
import torch

from syntax_nmt.models.modules.methods.mixed_attention import branch_softmax_attention

BLOCK = -1e9  # a finite additive mask, as the syntax masks use


def _inputs(dtype=torch.float64, B=3, H=2, T=9, hd=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, T, hd, generator=g, dtype=dtype).requires_grad_() for _ in range(3))
    gate = torch.rand(B, 1, T, 1, generator=g, dtype=dtype).requires_grad_()
    local = torch.rand(B, 1, T, T, generator=g) < 0.3
    local[0, 0, 2] = False  # a row with no allowed key: uniform over every key, as the explicit path gives
    pad = torch.zeros(B, 1, 1, T, dtype=torch.bool)
    pad[1, ..., -3:] = True  # left-over padding of a shorter sentence
    m_loc = torch.zeros(B, 1, T, T, dtype=dtype).masked_fill(~local, BLOCK)
    m_pad = torch.zeros(B, 1, 1, T, dtype=dtype).masked_fill(pad, BLOCK)
    return q, k, v, gate, m_loc, m_pad


def _naive(q, k, v, branches):
    """sum_b w_b softmax(S + M_b), row by row, then times V: the definition, one query at a time."""
    B, H, T, _ = q.shape
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                row = torch.zeros(T, dtype=q.dtype)
                for w, m in branches:
                    s = q[b, h, i] @ k[b, h].T
                    if m is not None:
                        s = s + m.expand(B, H, T, T)[b, h, i]
                    p = torch.exp(s - s.max())
                    row = row + (1.0 if w is None else w.expand(B, 1, T, 1)[b, 0, i, 0]) * p / p.sum()
                out[b, h, i] = row @ v[b, h]
    return out


def _grads(fn, tensors, seed=5):
    for t in tensors:
        t.grad = None
    out = fn()
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    (out * w).sum().backward()
    return [out.detach()] + [t.grad.clone() for t in tensors]


@pytest.mark.parametrize("case", ["sla", "three"])
def test_equals_the_naive_definition_with_gradients(case):
    q, k, v, gate, m_loc, m_pad = _inputs()
    if case == "sla":  # eq. 6: g softmax(S + M_loc) + (1 - g) softmax(S + M_pad)
        def branches():
            return [(gate, m_loc + m_pad), (1 - gate, m_pad)]
    else:  # a weight of None (1) and a branch without a mask
        def branches():
            return [(gate, m_loc), (None, m_loc.transpose(-1, -2)), (1 - gate, None)]
    tensors = [q, k, v, gate]
    got = _grads(lambda: branch_softmax_attention(q, k, v, branches()), tensors)
    want = _grads(lambda: _naive(q, k, v, branches()), tensors)
    for name, a, b in zip(["out", "q", "k", "v", "gate"], got, want):
        assert a.dtype == torch.float64
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10, msg=name)
    assert got[4].abs().max() > 0


def test_equals_one_fused_call_per_branch_in_float32():
    q, k, v, gate, m_loc, m_pad = (t.detach().float().requires_grad_() for t in _inputs(T=40, B=4, H=4, hd=16))
    tensors = [q, k, v, gate]
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def fused():
        return (gate * sdpa(q, k, v, attn_mask=m_loc + m_pad, scale=1.0)
                + (1 - gate) * sdpa(q, k, v, attn_mask=m_pad, scale=1.0))

    got = _grads(lambda: branch_softmax_attention(q, k, v, [(gate, m_loc + m_pad), (1 - gate, m_pad)]), tensors)
    want = _grads(fused, tensors)
    for name, a, b in zip(["out", "q", "k", "v", "gate"], got, want):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5, msg=name)


def test_the_branch_distributions_it_keeps_are_not_changed_by_the_mix():
    """The first branch without a weight: its distribution must not become the mixture (an in-place sum)."""
    q, k, v, gate, m_loc, m_pad = _inputs()
    tensors = [q, k, v, gate]
    branches = [(None, m_loc), (gate, None)]
    got = _grads(lambda: branch_softmax_attention(q, k, v, branches), tensors)
    want = _grads(lambda: _naive(q, k, v, branches), tensors)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_inputs_give_finite_float32(dtype):
    q, k, v, gate, m_loc, m_pad = _inputs(dtype=torch.float32)
    q, k, v = (t.detach().mul(30).to(dtype).requires_grad_() for t in (q, k, v))  # large scores
    fill = torch.finfo(dtype).min / 2
    m_loc = m_loc.clamp(min=fill).to(dtype)
    m_pad = m_pad.clamp(min=fill).to(dtype)
    out = branch_softmax_attention(q, k, v, [(gate, m_loc + m_pad), (1 - gate, m_pad)])
    out.sum().backward()
    assert out.dtype == torch.float32 and torch.isfinite(out).all()
    assert all(t.grad.dtype == dtype and torch.isfinite(t.grad.float()).all() for t in (q, k, v))


def test_under_cpu_autocast_the_products_after_the_scores_stay_float32():
    """bf16 Q, K, V under autocast (as the length bench's --precision bf16 runs): the output equals the same
    computation with autocast off, so autocast did not move the mixture's product to bf16."""
    q, k, v, gate, m_loc, m_pad = _inputs(dtype=torch.float32, T=16)
    q, k, v = (t.detach().to(torch.bfloat16).requires_grad_() for t in (q, k, v))
    gate = gate.detach().requires_grad_()
    branches = [(gate, m_loc + m_pad), (1 - gate, m_pad)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = branch_softmax_attention(q, k, v, branches)
    want = branch_softmax_attention(q, k, v, branches)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=0, rtol=0)
    got.sum().backward()
    assert torch.isfinite(gate.grad).all() and all(torch.isfinite(t.grad.float()).all() for t in (q, k, v))
