"""SG-Net's extra layer goes through torch's fused attention, with its mask built once per batch.

fairseq's ``TransformerEncoderLayerBase`` calls its ``MultiheadAttention`` with ``need_weights=False``; with
no incremental state that forwards to ``torch.nn.functional.multi_head_attention_forward``, which (without
weights) views the ``(B * H, T, T)`` float mask as ``(B, H, T, T)`` and calls
``scaled_dot_product_attention``. These tests spy on that call in training and evaluation, and check
that the shared mask gives bit-for-bit the results of the mask the layer was given before.
"""

import pytest
import torch
import torch.utils.checkpoint

from conftest import build_task_and_model
from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer


def _model(stream_bin, *extra, seed=0):
    torch.manual_seed(seed)
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--dropout", 0, *extra)
    return task, model


def _batch(task, n=12):
    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(n)])["net_input"]
    return {k: v for k, v in net.items() if k != "prev_output_tokens"}


def _spy_sdpa(monkeypatch, sg):
    """Record torch's fused attention calls made inside the SG layer's self-attention: (q shape, mask, dropout)."""
    calls, inside = [], []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, *a, **kw):
        if inside:
            calls.append((tuple(q.shape), None if attn_mask is None else attn_mask.detach().clone(), dropout_p))
        return sdpa(q, k, v, attn_mask, dropout_p, *a, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    attn = sg.layer.self_attn
    handles = [attn.register_forward_pre_hook(lambda *a: inside.append(1)),
               attn.register_forward_hook(lambda *a: inside.clear())]
    return calls, handles


def _old_layer_forward(self, x, allowed, special, attn_mask=None):
    """``SGNetLayer.forward`` before the shared mask (record left out): a 0/1 float mask expanded per head,
    made into fairseq's -1e8/-1e4 mask inside the layer, at every call."""
    B, T, _ = allowed.shape
    blocked = (~allowed).unsqueeze(1).expand(B, self.num_heads, T, T).reshape(B * self.num_heads, T, T)

    def states(x, blocked):
        h = self.layer(x, encoder_padding_mask=None, attn_mask=blocked.to(x.dtype))
        return h[0] if isinstance(h, tuple) else h

    if self.checkpoint and self.training and torch.is_grad_enabled():
        h = torch.utils.checkpoint.checkpoint(states, x, blocked, use_reentrant=False)
    else:
        h = states(x, blocked)
    out = self.aggregate(x, h)
    keep = (special.transpose(0, 1) & self.keep_specials).unsqueeze(-1)
    return torch.where(keep, x, out)


@pytest.mark.parametrize("train,attention_dropout", [(True, 0.0), (True, 0.1), (False, 0.0)])
def test_sg_layer_reaches_torch_fused_attention(stream_bin, monkeypatch, train, attention_dropout):
    task, model = _model(stream_bin, "--attention-dropout", attention_dropout)
    sg = model.encoder.syntax_modules["sgnet"]
    enc_in = _batch(task)
    B, T = enc_in["src_tokens"].shape
    H = sg.num_heads
    calls, handles = _spy_sdpa(monkeypatch, sg)
    model.train(train)
    out = model.encoder(**enc_in)["encoder_out"][0]
    if train:
        out.float().pow(2).sum().backward()
        assert sg.layer.self_attn.q_proj.weight.grad.abs().max() > 0
    assert len(calls) == 1, "the SG layer's attention did not go through scaled_dot_product_attention"
    shape, mask, dropout_p = calls[0]
    C = sg.layer.embed_dim
    assert shape == (B, H, T, C // H)
    assert dropout_p == (attention_dropout if train else 0.0)
    # the SDOI, per head, as the additive mask fairseq's layer makes (-1e8 at blocked keys, fp32)
    seen = {}
    orig = SGNetLayer.forward

    def capture(self, x, allowed, special, **kw):
        seen["allowed"] = allowed
        return orig(self, x, allowed, special, **kw)

    monkeypatch.setattr(SGNetLayer, "forward", capture)
    with torch.no_grad():
        model.encoder(**enc_in)
    allowed = seen["allowed"]
    assert not allowed.all() and mask.shape == (B, H, T, T)
    exp = torch.zeros(B, 1, T, T).masked_fill(~allowed.unsqueeze(1), -1e8).expand(B, H, T, T)
    assert torch.equal(mask, exp)
    for h in handles:
        h.remove()


def test_the_spy_tells_the_paths_apart(stream_bin, monkeypatch):
    """Negative control: with need_weights=True torch's MHA takes its explicit path and the spy sees no call,
    so the test above goes red if the SG layer ever asks for weights."""
    task, model = _model(stream_bin)
    sg = model.encoder.syntax_modules["sgnet"]
    calls, handles = _spy_sdpa(monkeypatch, sg)
    attn = sg.layer.self_attn
    forward = attn.forward
    monkeypatch.setattr(attn, "forward", lambda *a, **kw: forward(*a, **{**kw, "need_weights": True}))
    model.eval()
    with torch.no_grad():
        model.encoder(**_batch(task))
    assert calls == []
    for h in handles:
        h.remove()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("extra", [[], ["--sgnet-subword", "first"], ["--sgnet-checkpoint-activations"]])
def test_shared_mask_gives_bit_for_bit_the_old_results(stream_bin, monkeypatch, dtype, extra):
    """The mask cached in the batch's context reaches the fused attention with the same values as the 0/1 mask
    the layer was given before (outputs and gradients identical), and the SG layer receives the cached object."""
    task, model = _model(stream_bin, *extra)
    model.to(dtype)
    sg = model.encoder.syntax_modules["sgnet"]
    enc_in = _batch(task)
    results = []
    for old in (False, True):
        calls, handles = _spy_sdpa(monkeypatch, sg)
        given = []
        pre = sg.layer.register_forward_pre_hook(lambda m, a, kw: given.append(kw["attn_mask"]), with_kwargs=True)
        with monkeypatch.context() as m:
            if old:
                m.setattr(SGNetLayer, "forward", _old_layer_forward)
            model.train()
            model.zero_grad(set_to_none=True)
            out = model.encoder(**enc_in)["encoder_out"][0]
            (out.float() * torch.randn(out.shape, generator=torch.Generator().manual_seed(3))).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.encoder.named_parameters() if p.grad is not None}
        results.append((out.detach(), grads, [c[1] for c in calls], given))
        pre.remove()
        for h in handles:
            h.remove()
    (a, ga, ma, given), (b, gb, mb, _) = results
    assert len(ma) == len(mb) >= 1 and all(torch.equal(x, y) for x, y in zip(ma, mb))
    assert torch.equal(a, b)
    assert ga.keys() == gb.keys() and any("sgnet" in n for n in ga)
    assert all(torch.equal(ga[n], gb[n]) for n in ga)
    # the layer got the mask held by the context (the same object in the recomputation of the backward pass)
    assert given and all(g is given[0] for g in given)
    assert given[0].dtype == dtype


def test_mask_is_built_once_per_batch_and_given_to_the_layer(stream_bin, monkeypatch):
    import syntax_nmt.models.modules.methods.sgnet as sgmod

    task, model = _model(stream_bin)
    built = []
    make = sgmod.sdoi_attention_mask
    monkeypatch.setattr(sgmod, "sdoi_attention_mask", lambda *a: built.append(make(*a)) or built[-1])
    sg = model.encoder.syntax_modules["sgnet"]
    given = []
    sg.layer.register_forward_pre_hook(lambda m, a, kw: given.append(kw["attn_mask"]), with_kwargs=True)
    ctx_seen = []
    forward = sgmod.SGNetModule.forward
    monkeypatch.setattr(sgmod.SGNetModule, "forward",
                        lambda self, x, ctx: ctx_seen.append(ctx) or forward(self, x, ctx))
    model.eval()
    enc_in = _batch(task)
    with torch.no_grad():
        out = model.encoder(**enc_in)["encoder_out"][0]
        assert len(built) == 1 and given[-1] is built[0]
        sg(torch.randn_like(out), ctx_seen[0])  # a second call with the batch's context: the same mask
        assert len(built) == 1 and given[-1] is built[0]
        model.encoder(**enc_in)  # a new batch: a new mask
        assert len(built) == 2 and given[-1] is built[1]
