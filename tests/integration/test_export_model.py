"""The export's tensors in fairseq's own Transformer (syntax_nmt/export/stock.py): LISA's parse head, at any layer and
head and with a trained-looking ``U`` and ``u``, folded into the query projection gives the plugin's encoder output;
the result loads strictly into the stock model built from the export's plain configuration."""

import argparse

import pytest
import torch

from conftest import build_task_and_model
from syntax_nmt.export.stock import (ExportError, build_stock_model, export_checkpoint, plugin_needs,
                                     stock_model_state)


def _lisa(stream_bin, *extra):
    torch.manual_seed(0)
    task, model, cfg = build_task_and_model(stream_bin, "--source-features=", "--syntax-attention", "lisa", *extra)
    with torch.no_grad():  # a head that has learned something: U and u far from their start
        for layer in model.encoder.layers:
            att = layer.self_attn
            if hasattr(att, "parse_bilinear"):
                att.parse_bilinear.copy_(torch.randn_like(att.parse_bilinear))
                att.parse_key_bias.copy_(torch.randn_like(att.parse_key_bias))
    return task, model.eval(), cfg


def _checkpoint(model, cfg):
    """What fairseq-train saves, reduced to what the export reads."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    return {"args": None, "cfg": {**container, "model": argparse.Namespace(**vars(cfg.model))},
            "model": model.state_dict(), "optimizer_history": [{"num_updates": 3}], "extra_state": {}}


def _batch(task):
    task.load_dataset("valid")
    ds = task.dataset("valid")
    return ds.collater([ds[i] for i in range(8)])["net_input"]


@pytest.mark.parametrize("extra,layer,head", [((), 1, 0), (("--lisa-layer", "0", "--lisa-head", "1"), 0, 1)])
def test_the_folded_stock_encoder_is_lisas(stream_bin, extra, layer, head):
    task, model, cfg = _lisa(stream_bin, *extra)
    exported = export_checkpoint(_checkpoint(model, cfg), "en", "de")
    assert exported.folded == (layer, head) and exported.arch == "transformer"
    assert exported.dropped == [f"encoder.layers.{layer}.self_attn.parse_bilinear",
                                f"encoder.layers.{layer}.self_attn.parse_key_bias"]
    stock = build_stock_model(exported.state)
    assert type(stock).__module__ == "fairseq.models.transformer.transformer_legacy"
    net = _batch(task)
    assert net["src_tokens"][:, 0].eq(task.source_dictionary.pad()).any()
    with torch.no_grad():
        a = model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])["encoder_out"][0]
        b = stock.encoder(net["src_tokens"], net["src_lengths"])["encoder_out"][0]
        real = ~net["src_tokens"].eq(task.source_dictionary.pad()).t()
        assert (a - b).abs()[real].max().item() < 1e-5
        # the whole model: the decoder's output distribution too
        out_a = model(**{k: v for k, v in net.items()})[0]
        out_b = stock(net["src_tokens"], net["src_lengths"], net["prev_output_tokens"])[0]
    torch.testing.assert_close(out_a, out_b, rtol=1e-4, atol=1e-5)
    # without the fold (the layer's own query projection) the stock encoder is another one
    state = dict(exported.state["model"])
    for name in ("q_proj.weight", "q_proj.bias"):
        state[f"encoder.layers.{layer}.self_attn.{name}"] = model.state_dict()[f"encoder.layers.{layer}.self_attn.{name}"]
    stock.load_state_dict(state)
    with torch.no_grad():
        c = stock.encoder(net["src_tokens"], net["src_lengths"])["encoder_out"][0]
    assert (a - c).abs()[real].max().item() > 1e-2


def test_the_target_factors_outputs_are_dropped_and_nothing_else(stream_bin):
    _, model, cfg = _lisa(stream_bin)
    state = dict(model.state_dict())
    state["decoder.factor_out.pos.weight"] = torch.zeros(5, 64)
    state["decoder.factor_out.pos.bias"] = torch.zeros(5)
    out, folded, dropped = stock_model_state(state, cfg.model)
    assert dropped == ["decoder.factor_out.pos.weight", "decoder.factor_out.pos.bias",
                       "encoder.layers.1.self_attn.parse_bilinear", "encoder.layers.1.self_attn.parse_key_bias"]
    assert sorted(out) == sorted(k for k in state if k not in dropped)
    assert all(torch.equal(out[k], state[k]) for k in out if "q_proj" not in k)
    assert folded == (1, 0)


def test_a_stock_transformer_is_left_as_it_is(stream_bin):
    torch.manual_seed(0)
    _, model, cfg = build_task_and_model(stream_bin, arch="transformer_tiny", task="translation")
    exported = export_checkpoint(_checkpoint(model, cfg), "en", "de")
    assert exported.folded is None and exported.dropped == [] and exported.arch == "transformer_tiny"
    assert all(torch.equal(exported.state["model"][k], v) for k, v in model.state_dict().items())
    build_stock_model(exported.state)


def test_the_plugins_transformer_without_methods_is_exportable_and_its_keys_are_stock(stream_bin):
    """A syntax_transformer with no feature and no method saves the stock keys (tested elsewhere too): its export
    loads strictly into fairseq's model, arch transformer."""
    torch.manual_seed(0)
    _, model, cfg = build_task_and_model(stream_bin, "--source-features=")
    assert plugin_needs(cfg.model) == []
    exported = export_checkpoint(_checkpoint(model, cfg), "en", "de")
    assert exported.arch == "transformer" and exported.dropped == []
    build_stock_model(exported.state)


def test_other_tasks_and_models_are_not_read(stream_bin):
    _, model, cfg = build_task_and_model(stream_bin, arch="transformer_tiny", task="translation")
    ckpt = _checkpoint(model, cfg)
    ckpt["cfg"]["task"]["_name"] = "language_modeling"
    with pytest.raises(ExportError, match="trained with task 'language_modeling': syntax-nmt-export reads"):
        export_checkpoint(ckpt)
    ckpt = _checkpoint(model, cfg)
    ckpt["cfg"]["model"].arch = "lstm"
    with pytest.raises(ExportError, match=r"is a 'lstm' model \(lstm\): syntax-nmt-export reads the models"):
        export_checkpoint(ckpt)
