"""SG-Net's extra layer attends through :class:`SDOIAttention`: one call of torch's fused attention per step, with
one additive ``(B, 1, T, T)`` SDOI mask made once per batch and shared by the heads (fairseq's layer, which the SG
layer used before, takes a ``(B * H, T, T)`` float mask and rewrites it at every call). These tests spy on that
call in training and evaluation, and check the results against the old layer: fairseq's own
``TransformerEncoderLayer`` with the same weights, given the ``(B * H, T, T)`` mask.
"""

import pytest
import torch
import torch.utils.checkpoint

from conftest import build_task_and_model
from syntax_nmt.models.modules.methods.sgnet import SDOIAttention, SGNetModule
from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer, sgnet_layer_config


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
            calls.append((tuple(q.shape), attn_mask, dropout_p))
        return sdpa(q, k, v, attn_mask, dropout_p, *a, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    attn = sg.layer.self_attn
    handles = [attn.register_forward_pre_hook(lambda *a: inside.append(1)),
               attn.register_forward_hook(lambda *a: inside.clear())]
    return calls, handles


def _allowed(monkeypatch, model, enc_in):
    """The bool SDOI ``(B, T, T)`` the SG-Net module receives for ``enc_in``."""
    seen = {}
    orig = SGNetLayer.forward

    def capture(self, x, allowed, special, **kw):
        seen["allowed"] = allowed
        return orig(self, x, allowed, special, **kw)

    with monkeypatch.context() as m:
        m.setattr(SGNetLayer, "forward", capture)
        with torch.no_grad():
            model.encoder(**enc_in)
    return seen["allowed"]


def fairseq_sgnet(model):
    """The SG-Net module as the code before :class:`SDOIAttention` built it: fairseq's own encoder layer (the same
    configuration), the trained weights loaded; it takes the per-head ``(B * H, T, T)`` mask."""
    cfg = model.encoder.cfg
    new = model.encoder.syntax_modules["sgnet"]
    old = SGNetModule(model.encoder.build_plain_encoder_layer(sgnet_layer_config(cfg, cfg.sgnet_layer_norm)),
                      num_heads=new.num_heads, alpha=0.5, convention=new.convention, checkpoint=new.checkpoint)
    assert type(old.layer.self_attn).__name__ == "MultiheadAttention"
    old.load_state_dict(new.state_dict())
    return old.to(next(new.parameters()).dtype).train(new.training)


@pytest.mark.parametrize("train,attention_dropout", [(True, 0.0), (True, 0.1), (False, 0.0), (False, 0.1)])
def test_sg_layer_reaches_torch_fused_attention_with_one_mask_for_all_heads(stream_bin, monkeypatch, train,
                                                                            attention_dropout):
    task, model = _model(stream_bin, "--attention-dropout", attention_dropout)
    sg = model.encoder.syntax_modules["sgnet"]
    assert isinstance(sg.layer.self_attn, SDOIAttention)
    enc_in = _batch(task)
    B, T = enc_in["src_tokens"].shape
    H = sg.num_heads
    calls, handles = _spy_sdpa(monkeypatch, sg)
    model.train(train)
    out = model.encoder(**enc_in)["encoder_out"][0]
    if train:
        out.float().pow(2).sum().backward()
        assert sg.layer.self_attn.q_proj.weight.grad.abs().max() > 0
    for h in handles:
        h.remove()
    assert len(calls) == 1, "the SG layer's attention did not go through scaled_dot_product_attention"
    shape, mask, dropout_p = calls[0]
    C = sg.layer.embed_dim
    assert shape == (B, H, T, C // H)
    assert dropout_p == (attention_dropout if train else 0.0)
    allowed = _allowed(monkeypatch, model, enc_in)
    assert not allowed.all() and mask.shape == (B, 1, T, T)  # one mask, broadcast over the heads
    fill = torch.finfo(torch.float32).min / 2
    assert torch.equal(mask, torch.zeros(B, 1, T, T).masked_fill(~allowed.unsqueeze(1), fill))


def test_the_spy_tells_the_paths_apart(stream_bin, monkeypatch):
    """Negative control: with need_weights=True the attention takes its explicit path and the spy sees no call,
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
@pytest.mark.parametrize("extra", [[], ["--sgnet-subword", "first"], ["--sgnet-checkpoint-activations"],
                                   ["--encoder-normalize-before", "--sgnet-layer-norm", "encoder"]])
def test_sdoi_attention_gives_the_fairseq_layers_results(stream_bin, dtype, extra):
    """Outputs and gradients of the SG-Net module equal those of fairseq's own layer with the same weights and
    the per-head mask (float32 tolerance; bf16 finite and close), in training."""
    task, model = _model(stream_bin, *extra)
    model.to(dtype)
    enc_in = _batch(task)
    old = fairseq_sgnet(model.train())
    results, seen = [], []
    model.encoder.syntax_modules["sgnet"].register_forward_hook(lambda m, args, out: seen.append(args[0].detach()))
    for module in (None, old):
        if module is not None:
            model.encoder.syntax_modules["sgnet"] = module
        model.zero_grad(set_to_none=True)
        out = model.encoder(**enc_in)["encoder_out"][0]
        (out.float() * torch.randn(out.shape, generator=torch.Generator().manual_seed(3))).sum().backward()
        grads = {n: p.grad.float().clone() for n, p in model.encoder.named_parameters() if p.grad is not None}
        results.append((out.detach().float(), grads))
    (a, ga), (b, gb) = results
    assert ga.keys() == gb.keys() and any(".layer.self_attn.q_proj" in n for n in ga)
    assert torch.isfinite(a).all() and all(torch.isfinite(g).all() for g in ga.values())
    tol = {"atol": 2e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 0.1, "rtol": 0.05}
    torch.testing.assert_close(a, b, **tol)
    for n in ga:
        if n.endswith("k_proj.bias"):  # its gradient is 0 (a softmax ignores a constant per row): rounding noise
            continue
        scale = gb[n].abs().max().clamp(min=1e-6)
        torch.testing.assert_close(ga[n] / scale, gb[n] / scale, **tol)
    assert (a - seen[0].float()).abs().max() > 1e-3  # the SG layer did something: H_bar is not H


def test_mask_is_built_once_per_batch_and_shared_by_the_steps(stream_bin, monkeypatch):
    task, model = _model(stream_bin, "--sgnet-checkpoint-activations")
    sg = model.encoder.syntax_modules["sgnet"]
    calls, handles = _spy_sdpa(monkeypatch, sg)
    model.train()
    enc_in = _batch(task)
    out = model.encoder(**enc_in)["encoder_out"][0]
    out.float().pow(2).sum().backward()  # recomputes the layer: a second call, the same mask object
    assert len(calls) == 2 and calls[1][1].data_ptr() == calls[0][1].data_ptr()
    model.encoder(**enc_in)  # a new batch: a new mask
    assert len(calls) == 3 and calls[2][1].data_ptr() != calls[0][1].data_ptr()
    assert torch.equal(calls[2][1], calls[0][1])
    for h in handles:
        h.remove()


def test_old_checkpoint_names_load_into_the_new_layer(stream_bin):
    """The SDOI attention keeps fairseq's parameter names: the plain layer's state dict loads strictly."""
    task, model = _model(stream_bin)
    old = fairseq_sgnet(model)
    assert set(old.state_dict()) == set(model.encoder.syntax_modules["sgnet"].state_dict())
    model.encoder.syntax_modules["sgnet"].load_state_dict(old.state_dict(), strict=True)


def test_sdoi_attention_defaults_to_the_shared_convention_and_passes_its_options_on():
    """Built on its own, SG-Net's attention reads the SDOI mask under the ``shared`` convention (the option's
    default) and hands fairseq's attention options (here ``bias``) to ``MultiheadAttention``."""
    plain, no_bias = SDOIAttention(16, 2, 0.0, None), SDOIAttention(16, 2, 0.0, None, bias=False)
    assert plain.convention == "shared" and plain.k_proj.bias is not None and no_bias.k_proj.bias is None
