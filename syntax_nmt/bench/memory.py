"""Training memory of one model, measured in-process on the bench's data (used by ``make bench``).

``fairseq-train``'s peak resident set size mixes the model with everything else the process
holds (imports, data, the CPU allocator's caches, checkpoint writing), so the benchmark measures
the model's own training memory here, in-process, with fairseq's task, model, criterion and
optimizer built from the same command-line arguments:

* on a GPU: the peak of ``torch.cuda.max_memory_allocated`` over ``--steps`` real training steps
  (forward, backward, optimizer step), i.e. what the allocator handed out;
* on the CPU (torch keeps no allocator statistics there): parameters + gradients + optimizer
  state + the activations autograd keeps for the backward pass (the unique storages saved by
  the forward pass, counted with ``torch.autograd.graph.saved_tensors_hooks``; parameters
  excluded), maximised over the steps.

Prints one JSON object.
"""

import argparse
import json
import sys
from typing import Dict

import torch

MIB = 2 ** 20


def _storage_key(t: torch.Tensor):
    s = t.untyped_storage()
    return (s.device.type, s.data_ptr()), s.nbytes()


def measure(argv, steps: int = 3) -> Dict[str, float]:
    """Measure the training memory of the model that ``fairseq-train argv`` would train."""
    from fairseq import options, tasks, utils
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from syntax_nmt import register_with_fairseq

    register_with_fairseq()

    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, argv)
    cfg = convert_namespace_to_omegaconf(args)
    utils.import_user_module(cfg.common)
    torch.manual_seed(cfg.common.seed)
    task = tasks.setup_task(cfg.task)
    task.load_dataset(cfg.dataset.train_subset)
    model = task.build_model(cfg.model)
    criterion = task.build_criterion(cfg.criterion)
    device = torch.device("cuda") if torch.cuda.is_available() and not cfg.common.cpu else torch.device("cpu")
    dtype = torch.float16 if cfg.common.fp16 else torch.bfloat16 if cfg.common.bf16 else torch.float32
    model.to(device=device, dtype=dtype)
    criterion.to(device=device, dtype=dtype)  # as fairseq's Trainer casts both (e.g. SEPREM's DP classifier)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad] + list(criterion.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-4)
    param_keys = {_storage_key(p)[0] for p in params}
    itr = task.get_batch_iterator(
        dataset=task.dataset(cfg.dataset.train_subset), max_tokens=cfg.dataset.max_tokens,
        max_sentences=cfg.dataset.batch_size, max_positions=utils.resolve_max_positions(
            task.max_positions(), model.max_positions()),
        ignore_invalid_inputs=True, required_batch_size_multiple=cfg.dataset.required_batch_size_multiple,
        seed=cfg.common.seed, num_workers=0,
    ).next_epoch_itr(shuffle=False)
    activations = 0
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    for step, sample in zip(range(steps), itr):
        sample = utils.move_to_cuda(sample) if device.type == "cuda" else sample
        saved: Dict[tuple, int] = {}

        def pack(t):
            key, nbytes = _storage_key(t)
            if key not in param_keys:
                saved[key] = nbytes
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss, _, _ = criterion(model, sample)
        activations = max(activations, sum(saved.values()))
        optimizer.zero_grad(set_to_none=False)
        loss.backward()
        optimizer.step()
        del loss
    n_bytes = sum(p.numel() * p.element_size() for p in params)
    out = {
        "device": device.type,
        "params_mib": n_bytes / MIB,
        "activations_mib": activations / MIB,
        # parameters + gradients + Adam's two moments + saved activations
        "model_train_mib": (4 * n_bytes + activations) / MIB,
    }
    if device.type == "cuda":
        torch.cuda.synchronize()
        out["cuda_peak_mib"] = torch.cuda.max_memory_allocated() / MIB
    return out


def cli_main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.bench.memory", description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=3)
    a, rest = p.parse_known_args(argv)
    print(json.dumps(measure(rest, a.steps)))


if __name__ == "__main__":
    sys.exit(cli_main())
