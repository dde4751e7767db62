"""The stacked accelerator attention (``mixed_attention.stacked_additive`` / ``stacked_attention``, the GPU path of
SLA and Syntax-BERT) against a per-sub-network reference computed straightforwardly: every sub-network's queries
against its own mask, query by key (not transposed), in both layouts (mask by mask; query by query,
``interleaved``), with masks that differ between the sub-networks and are not symmetric (issue 48)."""

import pytest
import torch

from syntax_nmt.models.modules.methods.mixed_attention import stacked_additive, stacked_attention

B, H, T, HD, M = 2, 2, 5, 3, 3


def _masks():
    """(B, M, T, T) bool, query x key: a causal mask, a random one, and one with an empty row (a query with no
    allowed key: a uniform distribution, never NaN), different in each sentence."""
    g = torch.Generator().manual_seed(0)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    allowed = torch.stack([causal.expand(B, T, T), torch.rand(B, T, T, generator=g) < 0.5,
                           torch.rand(B, T, T, generator=g) < 0.6], dim=1).clone()
    allowed[:, 1].diagonal(dim1=-2, dim2=-1).fill_(True)
    allowed[0, 2, 3] = False  # sentence 0, sub-network 2, query 3: nothing allowed
    allowed[1, 0] = allowed[1, 0].flip(-1)  # sentence 1: the causal mask mirrored
    return allowed


def _reference(q, k, v, allowed):
    """(B, H, M, T, hd): for each sub-network j, softmax(Q K^T + its own additive mask) V, one at a time."""
    fill = torch.finfo(q.dtype).min / 2
    outs = []
    for j in range(allowed.shape[1]):
        additive = torch.zeros(B, 1, T, T, dtype=q.dtype).masked_fill(~allowed[:, j].unsqueeze(1), fill)
        outs.append(torch.softmax(q @ k.transpose(-1, -2) + additive, dim=-1) @ v)
    return torch.stack(outs, dim=2)


def _qkv():
    g = torch.Generator().manual_seed(1)
    return [torch.randn(B, H, T, HD, generator=g, dtype=torch.float64).requires_grad_() for _ in range(3)]


def test_the_stacked_masks_are_each_sub_networks_own_rows():
    allowed = _masks()
    for interleaved in (False, True):
        mask = stacked_additive(allowed, torch.float32, interleaved)
        assert mask.shape == (B, 1, M * T, T) and mask.stride(2) == 16  # rows stored 16 wide
        for j in range(M):
            for t in range(T):
                row = mask[:, 0, t * M + j if interleaved else j * T + t]
                assert torch.equal(row == 0, allowed[:, j, t]), (interleaved, j, t)
                assert torch.equal(row[~allowed[:, j, t]], torch.full_like(row[~allowed[:, j, t]],
                                                                           torch.finfo(torch.float32).min / 2))


@pytest.mark.parametrize("interleaved", [False, True], ids=["mask-by-mask", "interleaved"])
def test_stacked_attention_is_each_sub_network_against_its_own_mask(interleaved):
    allowed = _masks()
    q, k, v = _qkv()
    out = stacked_attention(q, k, v, stacked_additive(allowed, q.dtype, interleaved), interleaved)
    ref = _reference(q, k, v, allowed)
    if interleaved:
        assert out.shape == (B, T, M, H, HD) and out.is_contiguous()
        out = out.permute(0, 3, 2, 1, 4)  # B H M T hd
    assert out.shape == ref.shape == (B, H, M, T, HD)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(ref[0, :, 2, 3], v[0].mean(1))  # the empty row: uniform over the keys
    # the gradients of the queries, keys and values (the latter summed over the sub-networks inside the call) are
    # the reference's. Not through the empty row: there torch's kernel and the explicit softmax give other
    # gradients of the same uniform output; the methods give such a row no weight (Syntax-BERT's invalid
    # sub-networks), so none reaches it
    w = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2), dtype=ref.dtype)
    w[0, :, 2, 3] = 0
    got = torch.autograd.grad((out * w).sum(), (q, k, v))
    expected = torch.autograd.grad((ref * w).sum(), (q, k, v))
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_the_masks_are_made_on_the_device_of_their_inputs():
    """Device-agnostic: the stacked mask and the key-padding masks are made where their inputs live, never on the
    default device (seen on PyTorch's ``meta`` device, which stands in for an accelerator on a CPU-only machine:
    a tensor made on the CPU and filled with a ``meta`` mask is an error)."""
    from syntax_nmt.models.modules.methods.mixed_attention import key_padding_additive, key_padding_allowed

    allowed = torch.ones(2, 3, 5, 5, dtype=torch.bool, device="meta")
    assert stacked_additive(allowed, torch.bfloat16).device.type == "meta"
    assert stacked_additive(allowed, torch.float32, interleaved=True).shape == (2, 1, 15, 5)
    pad = torch.zeros(2, 5, dtype=torch.bool, device="meta")
    assert key_padding_additive(pad, 2, 5, pad.device, torch.float16).device.type == "meta"
    assert key_padding_additive(None, 2, 5, pad.device).device.type == "meta"
    assert key_padding_allowed(None, 2, 5, pad.device).device.type == "meta"
