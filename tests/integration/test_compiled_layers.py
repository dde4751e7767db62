"""``--syntax-compile`` (syntax_nmt/models/modules/compiled.py): the encoder layers through ``torch.compile``.

The option is off by default and leaves the parameters as they are (checkpoints load either way). Compiled with
inductor on the CPU (a C++ compiler: gcc), every method's encoder (the ``all`` system, every method in one model)
gives the eager accelerator path's outputs, syntax losses and gradients, and batches of new lengths reuse the compiled
code (no recompilation once the variants of the module docstring are compiled). Whether it helps on a GPU, and under
``--fp16``, is not measured yet (docs/benchmarks.md).
"""

import pytest
import torch

from conftest import build_task_and_model
from support.streamdata import binarized_corpus
from syntax_nmt import systems
from syntax_nmt.models.modules import compiled
from syntax_nmt.models.modules.device_paths import forced_accelerator_paths
from syntax_nmt.models.modules.methods import SYNTAX_METHODS
from syntax_nmt.models.modules.syntax_transformer_encoder import SyntaxEncoderLayer

CRITERION = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny corpus whose parses are forests, with multi-piece words and one-word lines."""
    root = tmp_path_factory.mktemp("compiled")
    return binarized_corpus(str(root), {"train": 60, "valid": 8, "test": 4}, seed=12, max_roots=3)[0]


def _build(data, name, *extra):
    system = systems.get(name)
    # no sampled pairs in SEPREM's distance loss: both models see the same loss terms
    deterministic = [a for m in system.methods for loss in SYNTAX_METHODS[m].losses for a in loss.deterministic_args]
    args = [*CRITERION, *system.args(), *systems.fit_encoder_layers(system, 2), "--dropout", "0",
            "--encoder-embed-dim", "16", "--encoder-ffn-embed-dim", "16", "--decoder-embed-dim", "16",
            "--decoder-ffn-embed-dim", "16", *deterministic, *extra]
    torch.manual_seed(3)
    task, model, cfg = build_task_and_model(data, *args)
    return task, model, task.build_criterion(cfg.criterion)


def _encoder_layers(model):
    enc = model.encoder
    return [*enc.layers, *(m for m in enc.modules() if isinstance(m, SyntaxEncoderLayer) and m not in enc.layers)]


def test_compile_is_off_by_default_and_keeps_the_parameters(data):
    _, eager, _ = _build(data, "all")
    _, comp, _ = _build(data, "all", "--syntax-compile")
    assert eager.state_dict().keys() == comp.state_dict().keys()
    comp.load_state_dict(eager.state_dict(), strict=True)
    layers = _encoder_layers(comp)
    assert len(layers) > len(comp.encoder.layers)  # SG-Net's extra layer too
    for layer in layers:  # the syntax layers compile their computation
        assert isinstance(layer, SyntaxEncoderLayer) and layer.compile_options == {"dynamic": True, "mode": None}
    for layer in _encoder_layers(eager):
        assert layer.compile_options is None
    # fairseq's own layers (no method) compile themselves, in place
    _, stock, _ = build_task_and_model(data, "--source-features", "", "--syntax-compile")
    _, stock_eager, _ = build_task_and_model(data, "--source-features", "")
    assert stock.state_dict().keys() == stock_eager.state_dict().keys()
    assert all(not isinstance(layer, SyntaxEncoderLayer) and layer._compiled_call_impl is not None
               for layer in stock.encoder.layers)
    assert all(layer._compiled_call_impl is None for layer in stock_eager.encoder.layers)
    # a checkpoint's arguments from before the option: eager
    from argparse import Namespace

    from syntax_nmt.models.syntax_transformer import syntax_base_architecture

    old = Namespace()
    syntax_base_architecture(old)
    assert old.syntax_compile is False and compiled.compile_options(old) is None
    old.syntax_compile, old.syntax_compile_mode = True, "reduce-overhead"
    assert compiled.compile_options(old) == {"dynamic": True, "mode": "reduce-overhead"}
    old.syntax_compile_mode = "fast"
    with pytest.raises(ValueError, match="--syntax-compile-mode"):
        compiled.compile_options(old)


def _batches(task):
    """Batches of the training split: first three that cover the variants (padded; unpadded, sentences of one
    length; padded, 16 tokens wide), then three of lengths not seen yet (padded, unpadded, padded)."""
    task.load_dataset("train")
    ds = task.dataset("train")
    by_length = {}
    for i in range(len(ds)):
        by_length.setdefault(int(ds.src_sizes[i]), []).append(i)
    lengths = sorted(by_length, reverse=True)
    same = [n for n in lengths if len(by_length[n]) >= 2 and n != 16][:2]  # unpadded batches
    other = [n for n in lengths if n not in same and n != 16][:3]
    assert len(same) == 2 and len(other) == 3 and 16 in by_length, lengths

    def padded(n):  # a sentence of length n and the two shortest ones
        return by_length[n][:1] + [i for m in lengths[-2:] for i in by_length[m][:1]]

    groups = [padded(other[0]), by_length[same[0]][:3], padded(16),
              padded(other[1]), by_length[same[1]][:3], padded(other[2])]
    return [ds.collater([ds[i] for i in g]) for g in groups]


def _step(model, criterion, sample):
    """A training step without dropout: encoder output, syntax loss terms, gradients (float32, CPU)."""
    torch.manual_seed(0)
    model.train()
    criterion.train()
    model.zero_grad(set_to_none=True)
    criterion.zero_grad(set_to_none=True)
    net = sample["net_input"]
    out = model.encoder(net["src_tokens"], net["src_lengths"], src_streams=net["src_streams"])
    x = out["encoder_out"][0]
    probe = torch.randn(x.shape, generator=torch.Generator().manual_seed(7)).to(x.device, x.dtype)
    terms = criterion.syntax_terms((None, {"encoder_out": out}))
    loss = (x * probe).float().sum()
    for weight, nll_sum, count, _ in terms.values():
        loss = loss + weight * nll_sum / count.clamp(min=1)
    loss.backward()
    params = [*model.named_parameters(), *(("criterion." + n, p) for n, p in criterion.named_parameters())]
    return (x.detach(), {k: v[1].detach() for k, v in terms.items()},
            {n: p.grad.detach().clone() for n, p in params if p.grad is not None})


def _graphs():
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


@pytest.mark.slow
def test_compiled_layers_equal_eager_and_do_not_recompile_for_new_lengths(data):
    """Inductor on the CPU, every method's layers (the ``all`` system): outputs, syntax losses and gradients equal
    to the eager accelerator path's (float32: outputs to 1e-5, gradients to 1e-4 of their scale); after batches that
    cover the variants (the first ones), batches of other lengths compile nothing. Minutes (compiling)."""
    import torch._dynamo

    torch._dynamo.reset()
    task, eager, criterion = _build(data, "all")
    _, comp, comp_criterion = _build(data, "all", "--syntax-compile")
    comp.load_state_dict(eager.state_dict())
    comp_criterion.load_state_dict(criterion.state_dict())
    batches = _batches(task)
    lengths = [b["net_input"]["src_tokens"].shape[1] for b in batches]
    pads = [bool(b["net_input"]["src_tokens"].eq(task.source_dictionary.pad()).any()) for b in batches]
    assert len(set(lengths)) == 6 and pads == [True, False, True, True, False, True] and lengths[2] == 16, \
        (lengths, pads)
    warm = 3
    graphs = []
    worst = 0.0
    for k, sample in enumerate(batches):
        with forced_accelerator_paths():
            x_ref, terms_ref, grads_ref = _step(eager, criterion, sample)
        x, terms, grads = _step(comp, comp_criterion, sample)
        graphs.append(_graphs())
        assert x.abs().max() > 0.1
        torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
        assert terms.keys() == terms_ref.keys() and len(terms) >= 3  # LISA's parse loss, SEPREM's DP and HP
        for name in terms:
            torch.testing.assert_close(terms[name], terms_ref[name], atol=1e-4, rtol=1e-5)
        assert grads.keys() == grads_ref.keys()
        for n in grads:  # inductor fuses and reorders the sums: a scalar's gradient (SEPREM's alpha, a sum over
            # every token) differed by 2.2e-5 at scale 1
            scale = max(1.0, grads_ref[n].abs().max().item())
            assert (grads[n] - grads_ref[n]).abs().max().item() <= 1e-4 * scale, n
        worst = max(worst, max((grads[n] - grads_ref[n]).abs().max().item() / max(1.0, grads_ref[n].abs().max().item())
                               for n in grads))
    print(f"lengths {lengths}, padded {pads}, graphs after each batch {graphs}, largest gradient difference "
          f"{worst:.2g} of scale")
    assert graphs[0] > 0
    # no graph compiled after the warm-up batches, whatever their lengths
    assert graphs[warm - 1:] == [graphs[warm - 1]] * (len(graphs) - warm + 1), (lengths, pads, graphs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["fp16", "bf16-autocast"])
def test_compiled_layers_on_cuda_in_low_precision(data, precision):
    """What fairseq's ``--fp16`` does (the model cast to float16) and bf16 autocast, compiled on a GPU: finite
    outputs, syntax losses and gradients, close to the same model eager."""
    task, eager, criterion = _build(data, "all")
    _, comp, comp_criterion = _build(data, "all", "--syntax-compile")
    comp.load_state_dict(eager.state_dict())
    comp_criterion.load_state_dict(criterion.state_dict())
    results = []
    for model, crit in ((eager, criterion), (comp, comp_criterion)):
        model.cuda()
        crit.cuda()
        if precision == "fp16":
            model.half()
            crit.half()
        for sample in _batches(task)[:4]:
            sample = {"net_input": {k: (v.cuda() if torch.is_tensor(v) else {n: t.cuda() for n, t in v.items()})
                                    for k, v in sample["net_input"].items()}}
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16-autocast"):
                x, terms, grads = _step(model, crit, sample)
            results.append((x.float().cpu(), {k: t.float().cpu() for k, t in terms.items()},
                            {n: g.float().cpu() for n, g in grads.items()}))
    half = len(results) // 2
    for (x_ref, terms_ref, grads_ref), (x, terms, grads) in zip(results[:half], results[half:]):
        assert torch.isfinite(x).all() and all(torch.isfinite(t).all() for t in terms.values())
        assert all(torch.isfinite(g).all() for g in grads.values())
        torch.testing.assert_close(x, x_ref, atol=0.05 * x_ref.abs().max().item(), rtol=0.05)
