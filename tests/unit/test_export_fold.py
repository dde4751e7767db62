"""LISA's parse head folded into an ordinary head (syntax_nmt/export/fold.py) against its equation, one score at a
time: Strubell et al. (2018), sec. 2.2, ``s_ij = q_i^T U k_j + u^T k_j`` (Dozat & Manning's biaffine form), ``q`` and
``k`` the head's slices of the layer's query and key projections."""

import pytest
import torch

from syntax_nmt.export.fold import fold_biaffine_head

H, D, C, T = 3, 4, 12, 5


def _naive_biaffine(x, w_q, b_q, w_k, b_k, U, u, head):
    """``s[i][j]`` from the equation, plain Python sums over the head's ``d`` coordinates."""
    lo = head * D
    q = [[sum(w_q[lo + a][c] * x[i][c] for c in range(C)) + b_q[lo + a] for a in range(D)] for i in range(T)]
    k = [[sum(w_k[lo + a][c] * x[j][c] for c in range(C)) + b_k[lo + a] for a in range(D)] for j in range(T)]
    return [[sum(q[i][a] * U[a][b] * k[j][b] for a in range(D) for b in range(D)) + sum(u[b] * k[j][b] for b in range(D))
             for j in range(T)] for i in range(T)]


def _stock_scores(x, w_q, b_q, w_k, b_k, head, scaling):
    """fairseq's ``MultiheadAttention``: ``q = q_proj(x) * scaling``, then ``q k^T`` per head."""
    q = (x @ w_q.t() + b_q) * scaling
    k = x @ w_k.t() + b_k
    lo = head * D
    return q[:, lo:lo + D] @ k[:, lo:lo + D].t()


@pytest.mark.parametrize("head", [0, 1, 2])
def test_the_folded_head_scores_as_the_biaffine_equation(head):
    g = torch.Generator().manual_seed(head)
    x, w_q, w_k = (torch.randn(T, C, generator=g, dtype=torch.float64), torch.randn(H * D, C, generator=g,
                   dtype=torch.float64), torch.randn(H * D, C, generator=g, dtype=torch.float64))
    b_q, b_k = torch.randn(H * D, generator=g, dtype=torch.float64), torch.randn(H * D, generator=g, dtype=torch.float64)
    U, u = torch.randn(D, D, generator=g, dtype=torch.float64), torch.randn(D, generator=g, dtype=torch.float64)
    scaling = D ** -0.5
    w, b = fold_biaffine_head(w_q, b_q, U, u, head, scaling)
    expected = torch.tensor(_naive_biaffine(x.tolist(), w_q.tolist(), b_q.tolist(), w_k.tolist(), b_k.tolist(),
                                            U.tolist(), u.tolist(), head), dtype=torch.float64)
    torch.testing.assert_close(_stock_scores(x, w, b, w_k, b_k, head, scaling), expected, rtol=1e-12, atol=1e-12)
    # the other heads' rows are the layer's own, bit for bit; the inputs are left as they were
    others = [r for r in range(H * D) if not head * D <= r < (head + 1) * D]
    assert torch.equal(w[others], w_q[others]) and torch.equal(b[others], b_q[others])
    assert not torch.equal(w[head * D:(head + 1) * D], w_q[head * D:(head + 1) * D])


def test_it_keeps_the_dtype_and_leaves_its_inputs_alone():
    g = torch.Generator().manual_seed(5)
    w_q, b_q = torch.randn(H * D, C, generator=g), torch.randn(H * D, generator=g)
    U, u = torch.randn(D, D, generator=g), torch.randn(D, generator=g)
    before = [t.clone() for t in (w_q, b_q, U, u)]
    w, b = fold_biaffine_head(w_q, b_q, U, u, 1, 0.5)
    assert w.dtype == b.dtype == torch.float32 and w.shape == w_q.shape and b.shape == b_q.shape
    assert all(torch.equal(t, s) for t, s in zip((w_q, b_q, U, u), before))
    # U = I and u = 0 with the scaling 1: the head as it was
    w, b = fold_biaffine_head(w_q, b_q, torch.eye(D), torch.zeros(D), 2, 1.0)
    assert torch.equal(w, w_q) and torch.equal(b, b_q)
    # as LISA starts (U = I / sqrt(d), u = 0) with fairseq's scaling 1 / sqrt(d): the head as it was, too
    w, b = fold_biaffine_head(w_q, b_q, torch.eye(D) * D ** -0.5, torch.zeros(D), 0, D ** -0.5)
    torch.testing.assert_close(w, w_q, rtol=0, atol=1e-6)


def test_no_query_bias_is_a_zero_bias():
    g = torch.Generator().manual_seed(7)
    w_q, U, u = torch.randn(H * D, C, generator=g), torch.randn(D, D, generator=g), torch.randn(D, generator=g)
    w, b = fold_biaffine_head(w_q, None, U, u, 1, 0.5)
    w0, b0 = fold_biaffine_head(w_q, torch.zeros(H * D), U, u, 1, 0.5)
    assert torch.equal(w, w0) and torch.equal(b, b0)
    torch.testing.assert_close(b[D:2 * D], u / 0.5)
    assert b[:D].eq(0).all() and b[2 * D:].eq(0).all()
    # the zero bias takes the weight's dtype: a float64 projection gets a float64 bias, u / s not rounded to float32
    w, b = fold_biaffine_head(w_q.double(), None, U.double(), u.double(), 1, 0.3)
    assert w.dtype == b.dtype == torch.float64
    assert torch.equal(b[D:2 * D], u.double() / 0.3) and b[:D].eq(0).all() and b[2 * D:].eq(0).all()


@pytest.mark.parametrize("args,message", [
    (dict(head=3), "head 3 of width 4 does not fit"),
    (dict(head=-1), "head -1 of width 4 does not fit"),
    (dict(U=torch.zeros(D, D + 1)), r"U \(4, 5\) and u \(4,\) are not"),
    (dict(u=torch.zeros(D + 1)), r"U \(4, 4\) and u \(5,\) are not"),
    (dict(w_q=torch.zeros(H * D + 1, C)), "does not fit a query projection of shape"),
    (dict(b_q=torch.zeros(H * D + 1)), r"query bias of shape \(13,\)"),
    (dict(scaling=0.0), "^the query scaling is 0$"),
])
def test_bad_shapes_are_refused(args, message):
    kw = dict(w_q=torch.zeros(H * D, C), b_q=torch.zeros(H * D), U=torch.eye(D), u=torch.zeros(D), head=0,
              scaling=0.5)
    kw.update(args)
    with pytest.raises(ValueError, match=message):
        fold_biaffine_head(kw["w_q"], kw["b_q"], kw["U"], kw["u"], kw["head"], kw["scaling"])
