"""A syntax method is one module: a method defined here, in the test, joins the model's options, the table of
systems, the syntax criterion's losses and ``syntax-nmt-analyze``'s recordings and attention maps, with no other
file changing."""

import argparse
import json
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from fairseq.dataclass import FairseqDataclass
from torch import nn

from conftest import analyze_in_memory, build_task_and_model
from syntax_nmt import systems as S
from syntax_nmt.analyze import attention, cli, common
from syntax_nmt.analyze import models as analyze_models
from syntax_nmt.analyze.common import AnalyzeError
from syntax_nmt.criterions.label_smoothed_cross_entropy_with_syntax import (
    LabelSmoothedCrossEntropyWithSyntaxCriterion as Criterion,
)
from syntax_nmt.models.modules.methods import base


@dataclass
class ToyConfig(FairseqDataclass):
    toy_layers: str = field(default="all", metadata={"help": "encoder layers whose input the toy scales"})
    toy_scale: float = field(default=1.0, metadata={"help": "factor of the toy's layer inputs"})


@dataclass
class ToyLossConfig(FairseqDataclass):
    toy_loss_weight: float = field(default=0.0, metadata={"help": "weight of the toy loss"})


class ToyInput(nn.Module):
    """Scales a layer input by a fixed factor and records the batch's word index and word starts."""

    record_kind = "toy"

    def __init__(self, scale):
        super().__init__()
        self.scale, self.record, self.recorded = scale, False, None

    def forward(self, x, ctx):
        if self.record:
            self.recorded = {"word_index": ctx.tree.word_index.detach(), "word_start": ctx.word_start.detach()}
        return x * self.scale

    def analysis_maps(self, recorded):
        """The first sentence's pieces of the same word (a mask), a distribution over them (a map) and its word
        starts (a vector)."""
        w = recorded["word_index"][0]
        same = w.unsqueeze(0) == w.unsqueeze(1)
        return {"title": "Toy", "masks": {"same_word": {"title": "pieces of the same word", "values": same}},
                "maps": {"spread": {"title": "uniform over the word's pieces", "within": "same_word",
                                    "values": same.float() / same.sum(1, keepdim=True)}},
                "vectors": {"first": {"title": "first piece of a word", "values": recorded["word_start"][0]}}}


class ToyLoss(base.AuxLoss):
    """nll = sum over real tokens of (w . x)^2; every token "correct" when w . x < 1."""

    name = "toy"

    def __init__(self, options, embed_dim):
        super().__init__(options, embed_dim)
        self.loss_weight = float(options.toy_loss_weight)
        if self.loss_weight > 0:
            self.proj = nn.Linear(self.embed_dim, 1, bias=False)

    def parameter_modules(self):
        return {"toy_proj": self.proj} if self.loss_weight > 0 else {}

    def terms(self, ctx, x, training):
        v = self.proj(x).squeeze(-1).float()[~ctx.special]
        return (v ** 2).sum(), torch.tensor(v.numel()), (v < 1).sum()


class Toy(base.SyntaxMethod):
    """A toy method: scales the inputs of its layers, trains ToyLoss."""

    config = ToyConfig
    layers_option = "--toy-layers"
    system_args = ("--toy-scale", "0.5")
    loss_config = ToyLossConfig
    system_losses = ("--toy-loss-weight", "0.25")
    losses = (ToyLoss,)

    def __init__(self, cfg, num_layers):
        super().__init__(cfg, num_layers)
        self.layers = base.parse_layers(cfg.toy_layers, num_layers, "--toy-layers")

    def build_layer_input(self, layer, embed_dim, cfg, state):
        return ToyInput(self.cfg.toy_scale) if layer in self.layers else None


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(Toy, "name", "toy", raising=False)
    monkeypatch.setitem(base.SYNTAX_METHODS, "toy", Toy)
    yield Toy
    monkeypatch.undo()
    Criterion.add_args(argparse.ArgumentParser())  # fairseq's registered criterion config without the toy again


def test_a_method_defined_in_a_test_joins_options_table_criterion_and_analyses(stream_bin, toy, monkeypatch, tmp_path):
    table = S.systems()
    assert table["toy"].note == "A toy method: scales the inputs of its layers, trains ToyLoss"  # its docstring
    from syntax_nmt.models.syntax_transformer import syntax_attention_help

    assert "; toy: A toy method" in syntax_attention_help()  # listed in --syntax-attention's help
    args = table["toy"].args()
    assert args == ["--source-features", "", "--syntax-attention", "toy", "--toy-scale", "0.5",
                    "--criterion", "label_smoothed_cross_entropy_with_syntax", "--toy-loss-weight", "0.25"]
    task, model, cfg = build_task_and_model(stream_bin, *args)
    assert cfg.model.toy_scale == 0.5 and cfg.criterion.toy_loss_weight == 0.25
    inputs = [m for m in model.encoder.modules() if isinstance(m, ToyInput)]
    assert len(inputs) == len(model.encoder.layers) and all(m.scale == 0.5 for m in inputs)

    crit = task.build_criterion(cfg.criterion)
    assert [n for n in crit.losses] == [c.name for c in base.aux_losses()] and "toy" in crit.losses
    assert [n for n, _ in crit.named_parameters()] == ["toy_proj.weight"]
    task.load_dataset("valid")
    ds = task.dataset("valid")
    batch = ds.collater([ds[i] for i in range(6)])
    model.eval()  # no dropout: the model's outputs below are the criterion's
    loss, sample_size, log = crit(model, batch)
    # the toy term: weight * mean * sample_size on top of the translation loss, logged as toy_*
    net_out = model(**batch["net_input"])
    x = net_out[1]["encoder_out"]["encoder_out"][0].transpose(0, 1)
    special = net_out[1]["encoder_out"]["syntax"].special
    v = crit.toy_proj(x).squeeze(-1)[~special]
    assert log["toy_count"].item() == int((~special).sum()) > 0
    torch.testing.assert_close(log["toy_loss"], (v ** 2).sum().detach(), rtol=1e-5, atol=1e-6)
    plain, _, _ = crit.__class__(task, cfg.criterion.sentence_avg, cfg.criterion.label_smoothing)(model, batch)
    torch.testing.assert_close(loss, plain + 0.25 * sample_size * (v ** 2).mean(), rtol=1e-5, atol=1e-5)
    loss.backward()
    assert crit.toy_proj.weight.grad is not None and crit.toy_proj.weight.grad.abs().sum() > 0

    with analyze_models.recording(model) as mods:
        model.encoder(batch["net_input"]["src_tokens"], src_lengths=batch["net_input"]["src_lengths"],
                      src_streams=batch["net_input"]["src_streams"])
        kinds = {analyze_models.kind_of(m) for _, m in mods if m.recorded}
    assert kinds == {"toy"}

    # syntax-nmt-analyze attention shows its maps (JSON, markdown, a figure), with no change to the analysis
    analyze_in_memory(monkeypatch, task, model, cfg)
    (tmp_path / "toy.pt").touch()
    argv = ["attention", "--data", stream_bin, "--split", "valid", "--sentence", "1", "--reference",
            "--system", f"toy={tmp_path / 'toy.pt'}"]
    paths = cli.main(cli.get_parser().parse_args([*argv, "--out", str(tmp_path / "out"), "--layer", "0"]))
    assert cli.get_parser().parse_args([*argv, "--out", "x", "--sla-layer", "1"]).layer == 1  # the option's old name
    assert sorted(os.path.basename(p) for p in paths) == [
        "attention-1-cross.png", "attention-1-toy-toy.png", "attention-1.json", "attention-1.md"]
    result = json.loads((tmp_path / "out" / "attention-1.json").read_text())
    smp = ds.collater([ds[1]])
    ctx = model.encoder(smp["net_input"]["src_tokens"], src_lengths=smp["net_input"]["src_lengths"],
                        src_streams=smp["net_input"]["src_streams"])["syntax"]
    w = ctx.tree.word_index[0].numpy()
    same = w[None, :] == w[:, None]
    assert len(result["source"]) == len(w) and len(set(w.tolist())) < len(w)  # a word of several pieces
    entries = result["systems"][0]["encoder"]
    assert [(e["kind"], e["layer"]) for e in entries] == [("toy", k) for k in range(len(model.encoder.layers))]
    assert result["systems"][0]["not_shown"] == []
    for e in entries:
        assert e["title"] == "Toy" and e["masks"] == {"same_word": {"title": "pieces of the same word"}}
        assert e["maps"] == {"spread": {"title": "uniform over the word's pieces", "within": "same_word"}}
        np.testing.assert_array_equal(np.array(e["same_word"]), same)
        np.testing.assert_allclose(np.array(e["spread"]), same / same.sum(1, keepdims=True), rtol=1e-6)
        np.testing.assert_array_equal(np.array(e["first"]), ctx.word_start[0].float().numpy())
    md = (tmp_path / "out" / "attention-1.md").read_text()
    src = result["source"]
    k = int(np.flatnonzero(same.sum(1) > 1)[0])  # a piece of a word of several pieces
    for e in entries:
        assert f"## toy: Toy, layer {e['layer']} ({e['module']})" in md
    assert "* `same_word`: pieces of the same word" in md and "* `first`: first piece of a word" in md
    assert "| token | same_word | first | spread argmax | spread weight outside same_word |" in md
    pieces = " ".join(src[j] for j in np.flatnonzero(same[k]))
    assert f"| {src[k]} | {pieces} | {float(ctx.word_start[0, k]):.2f} | " in md

    # a module without the hook is listed as not shown, not dropped silently; --layer then has no maps to plot
    monkeypatch.delattr(ToyInput, "analysis_maps")
    result = attention.analyze([("toy", "toy.pt")], stream_bin, 1, "valid", reference=True)
    assert result["systems"][0]["encoder"] == []
    md = attention.markdown(result)
    assert "## toy: encoder modules not shown" in md
    for k, (name, _) in enumerate(analyze_models.recording_modules(model)):
        assert f"* `{name}` (toy, layer {k}): it has no analysis_maps hook" in md
    figs = attention.plots(result)
    assert list(figs) == ["attention-1-cross"]
    common.pyplot().close("all")
    with pytest.raises(AnalyzeError, match=r"no encoder module of these systems shows maps in layer 0 "):
        attention.plots(result, layer=0)


def test_without_the_toy_its_options_are_gone(stream_bin):
    _, _, cfg = build_task_and_model(stream_bin, "--criterion", "label_smoothed_cross_entropy_with_syntax")
    assert "toy_loss_weight" not in cfg.criterion and "dp_loss_weight" in cfg.criterion
    assert "toy" not in S.systems()


def test_the_model_options_are_one_dataclass_composed_of_the_methods(toy, monkeypatch):
    """``model_config()``: the model's options and every registered method's, one dataclass (what ``add_args`` gives
    the parser and the architecture fills in); two methods that declare the same option are refused."""
    from dataclasses import fields

    from syntax_nmt.models import syntax_transformer as st

    names = [f.name for f in fields(st.model_config())]
    assert {"source_features", "syntax_attention", "toy_layers", "toy_scale"} <= set(names)
    for cls in base.registered_methods().values():
        assert {f.name for f in fields(cls.config or ToyConfig)} <= set(names)
    assert len(names) == len(set(names))

    @dataclass
    class Clash(FairseqDataclass):
        toy_scale: float = 2.0

    class Other(base.SyntaxMethod):
        config = Clash

    monkeypatch.setattr(Other, "name", "other", raising=False)
    monkeypatch.setitem(base.SYNTAX_METHODS, "other", Other)
    with pytest.raises(TypeError, match="--toy-scale is declared by both method toy and method other"):
        st.model_config()
    # the criterion's options are composed the same way, fairseq's label smoothing options the base
    from syntax_nmt.criterions import label_smoothed_cross_entropy_with_syntax as crit

    assert "toy_loss_weight" in {f.name for f in fields(crit.syntax_criterion_config())}

    @dataclass
    class Smoothing(FairseqDataclass):
        label_smoothing: float = 0.2

    monkeypatch.setattr(Other, "config", None)
    monkeypatch.setattr(Other, "loss_config", Smoothing, raising=False)
    with pytest.raises(TypeError, match="--label-smoothing is declared by both the base and method other"):
        crit.syntax_criterion_config()


def test_a_model_build_parses_its_methods_once_and_hands_them_to_the_encoder(stream_bin, monkeypatch):
    """``--syntax-attention`` is parsed once, where fairseq's parser applies the architecture and the options are
    checked; fairseq's build_model applies the architecture again, and the model and its encoder take the methods
    built then (issue 47.2: it was parsed 4 times here, 6 before; tests/e2e/test_options_parsed_once.py counts a
    whole fairseq-train run)."""
    from syntax_nmt.models.modules.methods import base as methods_base

    calls, built = [], []
    real_parse, real_init = methods_base.parse_methods, methods_base.SyntaxMethod.__init__
    monkeypatch.setattr(methods_base, "parse_methods", lambda value: calls.append(value) or real_parse(value))

    def init(self, cfg, num_layers):
        built.append(self)
        real_init(self, cfg, num_layers)

    monkeypatch.setattr(methods_base.SyntaxMethod, "__init__", init)
    task, model, cfg = build_task_and_model(stream_bin, "--syntax-attention", "sgnet,lisa")
    assert calls == ["sgnet,lisa"]
    assert model.syntax_methods == model.encoder.methods == built and [m.name for m in built] == ["sgnet", "lisa"]
    # a second model from the same arguments (an ensemble member, a checkpoint loaded again) has methods of its own
    first = list(built)
    other = task.build_model(cfg.model)
    assert calls == ["sgnet,lisa"] * 2 and other.syntax_methods == built[2:]
    assert not set(map(id, other.syntax_methods)) & set(map(id, first))
