"""SG-Net's layer normalization (Zhang et al. 2020, sec. 3.1 eq. 3-5, sec. 3.2, eq. 9) in both norm orders
of the encoder: by default the SG layer is the paper's post-norm layer, so ``H'`` is layer-normalised
like ``H`` also under ``--encoder-normalize-before``; ``--sgnet-layer-norm encoder`` (what checkpoints
trained before the option load with) reproduces the old layer (to float32 rounding: its attention is now
:class:`SDOIAttention`, the weights and the layer's order are the old ones)."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F

from conftest import USER_DIR, build_task_and_model, run_cli
from syntax_nmt.models.modules.methods.sgnet import SGNetModule
from syntax_nmt.models.modules.methods.sgnet_layer import SGNetLayer

PRE = "--encoder-normalize-before"


def _batch(task, n=8):
    task.load_dataset("valid")
    ds = task.dataset("valid")
    net = ds.collater([ds[i] for i in range(n)])["net_input"]
    return {k: v for k, v in net.items() if k != "prev_output_tokens"}


def _model(stream_bin, *extra, seed=0):
    torch.manual_seed(seed)
    task, model, _ = build_task_and_model(stream_bin, "--syntax-attention", "sgnet", "--source-features", "",
                                          "--dropout", 0, *extra)
    with torch.no_grad():  # every LayerNorm of the SG layer non-trivial, so that exact values tell them apart
        for name, p in model.encoder.syntax_modules["sgnet"].named_parameters():
            if "layer_norm" in name:
                p.normal_(1.0 if name.endswith("weight") else 0.0, 0.3)
    return task, model.eval()


def _run(model, enc_in, monkeypatch):
    """Encoder output and what the SG-Net module received: ``H`` (T B C), the SDOI mask, the specials."""
    seen = {}
    orig = SGNetLayer.forward

    def capture(self, x, allowed, special, **kw):
        seen.update(x=x, allowed=allowed, special=special)
        return orig(self, x, allowed, special, **kw)

    monkeypatch.setattr(SGNetLayer, "forward", capture)
    with torch.no_grad():
        out = model.encoder(**enc_in)["encoder_out"][0]
    monkeypatch.setattr(SGNetLayer, "forward", orig)
    return out, seen


def _layer_norm(v, ln):
    """LayerNorm written out: (v - mean) / sqrt(var + eps) * gamma + beta over the last dimension."""
    mean = v.mean(-1, keepdim=True)
    var = ((v - mean) ** 2).mean(-1, keepdim=True)
    return (v - mean) / torch.sqrt(var + ln.eps) * ln.weight.double() + ln.bias.double()


def paper_sgnet(module, x, allowed, special, alpha=0.5):
    """Sec. 3.2 and eq. 9 one token at a time, in float64: per head ``softmax`` of the scaled scores over
    the SDOI (eq. 6-8), heads concatenated and projected, ``h = LN(H + attention)`` (eq. 3), ``H' = LN(h +
    W2 GELU(W1 h + b1) + b2)`` (eq. 4-5: "a layer normalization to the sum of output and initial
    representation"), ``alpha H + (1 - alpha) H'`` at words and ``H`` at specials (footnote 11)."""
    layer = module.layer
    attn = layer.self_attn
    d = torch.float64
    lin = {n: (getattr(attn, n).weight.double(), getattr(attn, n).bias.double())
           for n in ("q_proj", "k_proj", "v_proj", "out_proj")}
    T, B, C = x.shape
    H = attn.num_heads
    hd = C // H
    out = torch.zeros(T, B, C, dtype=d)
    for b in range(B):
        xb = x[:, b].double()
        q = xb @ lin["q_proj"][0].t() + lin["q_proj"][1]
        k = xb @ lin["k_proj"][0].t() + lin["k_proj"][1]
        v = xb @ lin["v_proj"][0].t() + lin["v_proj"][1]
        for i in range(T):
            keys = [j for j in range(T) if allowed[b, i, j]]
            heads = []
            for h in range(H):
                sl = slice(h * hd, (h + 1) * hd)
                s = [float(q[i, sl] @ k[j, sl]) / math.sqrt(hd) for j in keys]
                e = [math.exp(t - max(s)) for t in s]
                heads.append(sum(ej / sum(e) * v[j, sl] for ej, j in zip(e, keys)))
            a = torch.cat(heads) @ lin["out_proj"][0].t() + lin["out_proj"][1]
            h_mid = _layer_norm(xb[i] + a, layer.self_attn_layer_norm)
            ffn = F.gelu(h_mid @ layer.fc1.weight.double().t() + layer.fc1.bias.double())
            ffn = ffn @ layer.fc2.weight.double().t() + layer.fc2.bias.double()
            h_syntax = _layer_norm(h_mid + ffn, layer.final_layer_norm)
            out[i, b] = xb[i] if special[b, i] else alpha * xb[i] + (1 - alpha) * h_syntax
    return out


def old_sgnet(model):
    """The SG-Net module as the code before ``--sgnet-layer-norm`` built it: fairseq's layer in the
    encoder's norm order with GELU, the trained weights loaded."""
    cfg = copy.deepcopy(model.encoder.cfg)
    cfg.activation_fn = "gelu"
    new = model.encoder.syntax_modules["sgnet"]
    old = SGNetModule(model.encoder.build_plain_encoder_layer(cfg), num_heads=new.num_heads, alpha=0.5,
                      convention=new.convention)
    old.load_state_dict(new.state_dict())
    return old.eval()


@pytest.mark.parametrize("norm_order", [[PRE], []], ids=["pre-norm", "post-norm"])
def test_sg_layer_normalises_its_sum_as_the_paper_says(stream_bin, monkeypatch, norm_order):
    task, model = _model(stream_bin, *norm_order)
    assert model.encoder.layers[0].normalize_before == bool(norm_order)
    assert not model.encoder.syntax_modules["sgnet"].layer.normalize_before  # the paper's layer in both orders
    out, seen = _run(model, _batch(task), monkeypatch)
    exp = paper_sgnet(model.encoder.syntax_modules["sgnet"], seen["x"], seen["allowed"], seen["special"])
    torch.testing.assert_close(out.double(), exp, atol=2e-5, rtol=1e-5)
    assert (exp - seen["x"].double()).abs().max() > 0.1  # the reference is not H itself


def test_old_setting_reproduces_the_old_layer(stream_bin, monkeypatch):
    """Pre-norm with --sgnet-layer-norm encoder is the old layer (H' = h + FFN(LN(h)), no final
    LayerNorm; float32 rounding apart); post-norm encoders get the same layer from both settings, bit for bit;
    the setting matters."""
    task, model = _model(stream_bin, PRE, "--sgnet-layer-norm", "encoder")
    enc_in = _batch(task)
    layer = model.encoder.syntax_modules["sgnet"].layer
    assert layer.normalize_before
    out, seen = _run(model, enc_in, monkeypatch)
    old = old_sgnet(model)
    with torch.no_grad():
        then = SGNetLayer.forward(old, seen["x"], seen["allowed"], seen["special"])
    # the old layer attends through fairseq's own attention, the new one through SDOIAttention: float32 rounding
    torch.testing.assert_close(out, then, atol=2e-5, rtol=1e-5)
    # the new default (the same weights) gives another output under pre-norm ...
    _, paper = _model(stream_bin, PRE)
    paper.load_state_dict(model.state_dict())
    now, _ = _run(paper, enc_in, monkeypatch)
    assert (now - out).abs().max() > 0.1
    # ... and under post-norm the two settings are one layer, the same numbers
    task, post_old = _model(stream_bin, "--sgnet-layer-norm", "encoder")
    _, post_new = _model(stream_bin)
    post_new.load_state_dict(post_old.state_dict())
    a, _ = _run(post_old, enc_in, monkeypatch)
    b, _ = _run(post_new, enc_in, monkeypatch)
    assert torch.equal(a, b)


@pytest.mark.e2e
def test_checkpoints_keep_their_sg_layer(stream_bin, tmp_path, monkeypatch):
    """A new pre-norm training records --sgnet-layer-norm post; a checkpoint saved before the option
    existed (no such key in its args) loads with the encoder's norm order and translates as before."""
    from fairseq import checkpoint_utils

    import syntax_nmt.checkpoint_compat  # noqa: F401

    run_cli("fairseq-train", stream_bin, "--user-dir", USER_DIR, "--task", "syntax_translation",
            "--arch", "syntax_transformer_tiny", "--syntax-attention", "sgnet", "--source-features", "", PRE,
            "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "1500", "--max-update", "1",
            "--no-epoch-checkpoints", "--no-progress-bar", "--disable-validation", "--save-dir", tmp_path / "new")
    path = str(tmp_path / "new" / "checkpoint_last.pt")
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path])
    assert cfg.model.sgnet_layer_norm == "post"
    new = models[0].eval()
    assert not new.encoder.syntax_modules["sgnet"].layer.normalize_before

    old = torch.load(path, map_location="cpu")
    del old["cfg"]["model"].sgnet_layer_norm  # as written before the option existed
    old_path = str(tmp_path / "old.pt")
    torch.save(old, old_path)
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([old_path])
    model = models[0].eval()
    assert cfg.model.sgnet_layer_norm == "encoder"
    assert model.encoder.syntax_modules["sgnet"].layer.normalize_before

    enc_in = _batch(task)
    out, seen = _run(model, enc_in, monkeypatch)
    with torch.no_grad():
        then = SGNetLayer.forward(old_sgnet(model), seen["x"], seen["allowed"], seen["special"])
    # the old layer attends through fairseq's own attention, the new one through SDOIAttention: float32 rounding
    torch.testing.assert_close(out, then, atol=2e-5, rtol=1e-5)
    now, _ = _run(new, enc_in, monkeypatch)
    assert (now - out).abs().max() > 1e-3
