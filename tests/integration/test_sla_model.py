"""SLA in the model (Li et al. 2021). The gate (eq. 5: ``g_i = sigmoid(W_g h_i + b_g)``) reads what the
README says: the vector the layer's Q, K and V are projected from, i.e. the previous layer's hidden
vector ``h_i`` in a post-norm layer and ``LN(h_i)`` (the layer's self-attention LayerNorm) in a pre-norm
one; computed by hand from the layer input caught by a hook. The WLA window (sec. 4.1) counts what
``--sla-window-unit`` says."""

import pytest
import torch

from conftest import build_task_and_model
from syntax_nmt.models.modules.methods.sla import SyntaxLocalAttention
from syntax_nmt.models.modules.methods.sla_masks import wla_mask


def _layer_norm(v, ln):
    """LayerNorm written out, float64: (v - mean) / sqrt(var + eps) * gamma + beta."""
    v = v.double()
    mean = v.mean(-1, keepdim=True)
    var = ((v - mean) ** 2).mean(-1, keepdim=True)
    return (v - mean) / torch.sqrt(var + ln.eps) * ln.weight.double() + ln.bias.double()


def _gate_by_hand(u, gate):
    """Eq. 5 for every token: ``sigmoid(W_g u_i + b_g)`` of ``u`` (T, B, C) -> (B, T), float64."""
    return torch.sigmoid(u.double() @ gate.weight.double()[0] + gate.bias.double()[0]).t()


@pytest.mark.parametrize("pre_norm", [True, False], ids=["pre-norm", "post-norm"])
def test_gate_reads_the_attention_input(stream_bin, pre_norm):
    torch.manual_seed(0)
    extra = ["--encoder-normalize-before"] if pre_norm else []
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla", "--source-features", "",
                                          "--dropout", 0, *extra)
    model.eval()
    layers = list(model.encoder.layers)
    with torch.no_grad():  # a gate far from constant and non-trivial LayerNorms
        for layer in layers:
            layer.self_attn.gate.weight.normal_(0, 0.5)
            layer.self_attn.gate.bias.normal_(0, 0.5)
            layer.self_attn_layer_norm.weight.normal_(1, 0.3)
            layer.self_attn_layer_norm.bias.normal_(0, 0.3)
    inputs = {}
    for k, layer in enumerate(layers):
        assert isinstance(layer.self_attn, SyntaxLocalAttention) and layer.normalize_before == pre_norm
        layer.self_attn.record = True
        layer.register_forward_pre_hook(lambda mod, args, k=k: inputs.__setitem__(k, args[0].detach()))
    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(8)])["net_input"]
    with torch.no_grad():
        model.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})
    assert sorted(inputs) == list(range(len(layers)))
    for k, layer in enumerate(layers):
        h = inputs[k]  # h_i: the hidden vectors of the previous layer (the embeddings for layer 0)
        u = _layer_norm(h, layer.self_attn_layer_norm) if pre_norm else h
        got = layer.self_attn.recorded["gate"].double()  # B T
        torch.testing.assert_close(got, _gate_by_hand(u, layer.self_attn.gate), atol=1e-6, rtol=1e-6)
        assert got.std() > 0.05
        if pre_norm:  # the other reading (the raw residual stream) gives other gates
            assert (got - _gate_by_hand(h, layer.self_attn.gate)).abs().max() > 0.05


@pytest.mark.parametrize("unit", [None, "word", "token"])
def test_wla_layers_use_the_window_unit(stream_bin, unit):
    """--sla-window K: every layer's local distribution is zero exactly outside wla_mask(K, unit); the
    default counts words (what checkpoints trained before --sla-window-unit do)."""
    extra = [] if unit is None else ["--sla-window-unit", unit]
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sla", "--sla-window", 1,
                                          "--source-prepend-bos", *extra)
    model.eval()
    mods = [m for m in model.encoder.modules() if isinstance(m, SyntaxLocalAttention)]
    assert len(mods) == 2 and all(m.window_unit == (unit or "word") for m in mods)
    for m in mods:
        m.record = True
    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(8)])["net_input"]
    with torch.no_grad():
        model.encoder(**{k: v for k, v in net.items() if k != "prev_output_tokens"})
    ws = (net["src_streams"]["subword"].unsqueeze(-1) == model.encoder.word_start_ids).any(-1)
    special = model.encoder.special_positions(net["src_tokens"])
    expected = wla_mask(ws, special, 1, unit or "word")
    other = wla_mask(ws, special, 1, "token" if unit in (None, "word") else "word")
    assert not torch.equal(expected, other)  # the batch has words of several pieces
    for m in mods:
        assert torch.equal(m.recorded["local"].gt(0).any(1), expected)
