"""``--checkpoint-activations`` (and ``--sgnet-checkpoint-activations``) with every syntax method.

Recomputing encoder layers in the backward pass must reach the batch's syntax context after the
encoder's forward has returned, and must change nothing: every gradient (model and criterion, with
dropout on and each method's auxiliary losses) equals the one of the same step without recomputation,
up to float32 rounding. (The encoder's gradients differ in the last bits, ~1e-7 relative, even for
fairseq's stock encoder under fairseq's own ``checkpoint_wrapper``, while the decoder's are
bit-identical; a wrong context or dropout mask changes them by orders of magnitude more.)

The systems come from the table of :mod:`syntax_nmt.systems`, which is built from the method registry:
each registered method alone (without features) and ``all`` (the features and every method).
"""

import re

import pytest
import torch
from fairseq.modules import MultiheadAttention

from conftest import build_task_and_model, run_cli
from syntax_nmt import systems
from syntax_nmt.models.modules.methods import SYNTAX_METHODS
from test_fairseq_cli import TRAIN

CKPT = "--checkpoint-activations"
SGNET_CKPT = "--sgnet-checkpoint-activations"
DROPOUT = ["--dropout", "0.3", "--attention-dropout", "0.2", "--activation-dropout", "0.1"]
CRITERION = ["--criterion", "label_smoothed_cross_entropy_with_syntax", "--label-smoothing", "0.1"]


def _cases():
    """Each method alone and all together with fairseq's flag; all together with SG-Net's own flag
    (SG-Net alone with it: test_methods_model.py)."""
    for name in [*SYNTAX_METHODS, "all"]:
        yield name, (CKPT,)
    if "sgnet" in SYNTAX_METHODS:
        yield "all", (SGNET_CKPT,)


def _batch(task, n=6):
    task.load_dataset("valid")
    ds = task.dataset("valid")
    return ds.collater([ds[i] for i in range(n)])


def _count_calls(model):
    """name -> number of calls, for every self-attention of the encoder (fairseq's and the methods')
    and every module applied to a layer input (SEPREM): each runs again when its layer is recomputed."""
    calls = {}
    for name, module in model.encoder.named_modules():
        if isinstance(module, MultiheadAttention) or ".syntax_inputs." in name:
            calls[name] = 0
            module.register_forward_hook(lambda m, a, out, name=name: calls.__setitem__(name, calls[name] + 1))
    return calls


def _train_step(stream_bin, system, flags):
    """One forward/backward of the system's loss: (gradients by name, calls by module, recorded outputs)."""
    torch.manual_seed(3)
    task, model, cfg = build_task_and_model(
        stream_bin, *CRITERION, *system.args(), *systems.fit_encoder_layers(system, 2), *DROPOUT, *flags)
    criterion = task.build_criterion(cfg.criterion)
    model.train(), criterion.train()
    calls = _count_calls(model)
    seen = {}
    model.register_forward_hook(lambda m, a, out: seen.update(out=out))
    batch = _batch(task)
    torch.manual_seed(4)  # dropout masks and the DP loss's pair sampling
    loss, _, _ = criterion(model, batch)
    ctx = seen["out"][1].get("encoder_out", {}).get("syntax")
    outputs = dict(ctx.outputs) if ctx is not None else {}
    loss.backward()
    if ctx is not None:  # a recomputation must not replace what the criterion read (e.g. LISA's parse scores)
        assert all(ctx.outputs[k] is v for k, v in outputs.items()) and ctx.outputs.keys() == outputs.keys()
    grads = {f"model.{n}": p.grad for n, p in model.named_parameters() if p.grad is not None}
    grads.update({f"criterion.{n}": p.grad for n, p in criterion.named_parameters() if p.grad is not None})
    return grads, calls, outputs


@pytest.mark.parametrize("name,flags", list(_cases()), ids=lambda v: v if isinstance(v, str) else "+".join(v))
def test_recomputed_layers_give_identical_gradients(stream_bin, name, flags):
    system = systems.get(name)
    plain, plain_calls, plain_outputs = _train_step(stream_bin, system, [])
    ckpt, ckpt_calls, ckpt_outputs = _train_step(stream_bin, system, flags)

    assert set(plain) == set(ckpt)
    assert len(plain) > 50  # every parameter of the model, not a handful
    for n in plain:  # equal up to float32 rounding (see the module docstring)
        scale = max(1.0, plain[n].abs().max().item())
        torch.testing.assert_close(ckpt[n], plain[n], rtol=1e-5, atol=1e-6 * scale, msg=lambda m, n=n: f"{n}: {m}")
    zero = [n for n in plain if n.startswith("model.encoder.") and not plain[n].abs().sum() > 0]
    assert not zero  # every encoder parameter, the methods' own included, takes part
    assert ckpt_outputs.keys() == plain_outputs.keys()
    for k in plain_outputs:
        torch.testing.assert_close(ckpt_outputs[k], plain_outputs[k], rtol=0, atol=0)

    # the recomputation happened: each layer module ran once in the forward, once more in the backward
    assert set(plain_calls) == set(ckpt_calls) and all(c == 1 for c in plain_calls.values())
    for module, count in ckpt_calls.items():
        recomputed = CKPT in flags or module.startswith("syntax_modules.sgnet.")
        assert count == (2 if recomputed else 1), module


@pytest.mark.e2e
def test_fairseq_train_with_checkpoint_activations(stream_bin, tmp_path):
    """The real command line: with SLA (its layers read the context) training with recomputed layers logs
    exactly the losses of the same training without."""
    logs = {}
    for flags in ([], [CKPT]):
        proc = run_cli("fairseq-train", stream_bin, *TRAIN, "--arch", "syntax_transformer_tiny",
                       "--syntax-attention", "sla", "--source-features", "", "--max-update", "4",
                       "--save-dir", tmp_path / f"ckpt{len(flags)}", "--no-save", *flags)
        log = proc.stdout + proc.stderr
        assert "done training" in log and "Traceback" not in log
        logs[bool(flags)] = re.findall(r"\| train_inner \|.*? loss ([\d.]+)", log) + \
            re.findall(r"\| train \|.*? loss ([\d.]+)", log)
    assert logs[False] and logs[True] == logs[False]
