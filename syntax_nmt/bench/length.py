"""``make bench-length``: how each method's encoder scales with sentence length, against the stock encoder.

``make bench`` trains on the synthetic corpus, whose sentences are short (10-15 subwords). Real batches
are longer: WMT14 sentences average about 30 subwords, are cut at 250, and fairseq sorts batches by
length, so many batches are 100-250 wide. This bench measures, in-process, for every ``T`` in
``--lengths`` (default 32 64 128 256 512) with a fixed number of tokens per batch (``B = tokens // T``
sentences of exactly ``T`` tokens, EOS included):

* the time of one **forward + backward** pass of the encoder of each system of the table
  (:mod:`syntax_nmt.systems`: the method with its defaults, e.g. SLA, Syntax-BERT and SEPREM in every
  layer, LISA's head in one, SG-Net's extra layer) and of the stock encoder (fairseq's
  ``TransformerEncoderBase`` code path, the same width and depth), interleaved and repeated
  (``--repeats``; the median is reported). The per-batch syntax context (word tree, masks) is built
  inside the forward pass, once, as in training; a system's auxiliary losses (LISA's parse loss,
  SEPREM's DP and HP) are computed from the encoder output by the criterion of the table's system and
  are part of the backward pass, as in training. The loss is ``sum(encoder_out ** 2) * 1e-3`` plus
  those terms (the decoder is left out: it is the same in every system);
* the **memory kept for the backward pass**: the unique storages autograd saves in the forward pass,
  parameters excluded (as :mod:`syntax_nmt.bench.memory` counts it on the CPU); on a GPU also the
  peak allocation of the step;
* ratios to the stock encoder: time ratio = stock seconds / system seconds (above 1: faster), memory
  ratio = system bytes / stock bytes.

Trees are shaped like real parses (:func:`random_parse`): projective trees built by recursively
splitting each word's span into a head and dependent chunks, with parameters chosen so that their
maximum and mean depth, mean dependency distance, share of adjacent heads and fan-out follow what
en_core_web_sm 3.8.0 gives on long English sentences (the table in the README, made with
``--tree-stats``); each word has ``1 + Geometric`` subwords (``--pieces-per-word``, default 1.25,
WMT-like BPE). Writes ``OUT/bench-length.json`` (the setup, the device and its name, the arguments and the rows) and
``OUT/bench-length.png``.
"""

import argparse
import warnings
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List, Sequence

import numpy as np

from syntax_nmt.constants import DICT_FILE
from syntax_nmt.data.streams import stream_dict_path
from syntax_nmt.io_guard import parse_args, reads, writes
from syntax_nmt.models.modules.compiled import COMPILE_MODES
from syntax_nmt.utils import markdown_table

#: subword tags of the ``subword`` stream (annotate/align.py): single-piece word, begin, middle, end
SUBWORD_TAGS = ("O", "B", "M", "E")


# -- trees shaped like real parses ----------------------------------------------------------------
def random_parse(n: int, rng: np.random.Generator, extra_chunks: float = 1.0, edge_head: float = 0.3) -> np.ndarray:
    """A random projective dependency tree over ``n`` words: ``parents[i]`` (-1 at the root).

    The span of every word is split into its head and, on each side, ``1 + Poisson(extra_chunks)``
    contiguous chunks (at most one per word), each the span of one dependent; a span's head is one of
    its two ends with probability ``edge_head`` (determiner-noun, verb-object), else uniform. The
    defaults fit en_core_web_sm's parses of long English sentences (README, "length-scaling bench").
    """
    parents = np.full(n, -1, dtype=np.int64)
    stack = [(0, n, -1)]
    while stack:
        lo, hi, up = stack.pop()
        if hi - lo == 1:
            head = lo
        elif rng.random() < edge_head:
            head = hi - 1 if rng.random() < 0.5 else lo
        else:
            head = int(rng.integers(lo, hi))
        parents[head] = up
        for a, b in ((lo, head), (head + 1, hi)):
            m = b - a
            if m <= 0:
                continue
            k = min(m, 1 + int(rng.poisson(extra_chunks)))
            cuts = sorted(rng.choice(np.arange(a + 1, b), size=k - 1, replace=False).tolist()) if k > 1 else []
            bounds = [a, *cuts, b]
            stack.extend((x, y, head) for x, y in zip(bounds[:-1], bounds[1:]))
    return parents


def tree_stats(parents: Sequence[int]) -> Dict[str, float]:
    """Maximum and mean depth (root 0), mean dependency distance, share of adjacent heads and mean number of
    children of the words that have any, of one tree given as ``parents`` (-1 at roots)."""
    parents = list(parents)
    n = len(parents)
    depth = []
    for i in range(n):
        d, j = 0, i
        while parents[j] != -1 and d <= n:
            j, d = parents[j], d + 1
        depth.append(d)
    dist = [abs(p - i) for i, p in enumerate(parents) if p != -1]
    kids = np.bincount([p for p in parents if p != -1], minlength=n)
    return {"words": n, "max_depth": max(depth), "mean_depth": sum(depth) / n,
            "dep_distance": sum(dist) / max(len(dist), 1),
            "adjacent": sum(d == 1 for d in dist) / max(len(dist), 1),
            "fan_out": float(kids[kids > 0].mean()) if (kids > 0).any() else 0.0}


def sentence_streams(T: int, rng: np.random.Generator, pieces_per_word: float = 1.25, **tree_kw):
    """One sentence of exactly ``T`` tokens (``T - 1`` subwords and EOS): subword tags and head offsets.

    Returns:
        ``(tags, heads, parents)``: tag strings per token (EOS gets ``"O"``, it is special anyway), relative
        offsets from each subword to the first subword of its head word (0 at the root and EOS: the stream
        contract), and the word-level tree.
    """
    pieces: List[int] = []
    while sum(pieces) < T - 1:
        pieces.append(min(int(rng.geometric(1.0 / pieces_per_word)), T - 1 - sum(pieces)))
    parents = random_parse(len(pieces), rng, **tree_kw)
    first = np.concatenate([[0], np.cumsum(pieces)[:-1]])
    tags: List[str] = []
    heads: List[int] = []
    for w, k in enumerate(pieces):
        tags += ["O"] if k == 1 else ["B"] + ["M"] * (k - 2) + ["E"]
        offset = 0 if parents[w] < 0 else int(first[parents[w]] - first[w])
        heads += [offset - j if offset else 0 for j in range(k)]
    return tags + ["O"], heads + [0], parents


# -- the models -----------------------------------------------------------------------------------
def _write_data_dir(path: str, vocab: int) -> None:
    """Dictionaries only (the raw-text inference layout the task accepts): source, target and subword tags."""
    words = [f"w{i}" for i in range(vocab)]
    for lang in ("en", "de"):
        with open(os.path.join(path, DICT_FILE.format(lang)), "w", encoding="utf-8") as f:
            f.writelines(f"{w} 1\n" for w in words)
    with open(stream_dict_path(path, "subword"), "w", encoding="utf-8") as f:
        f.writelines(f"{t} 1\n" for t in SUBWORD_TAGS)


def _model_args(a) -> List[str]:
    return ["--encoder-layers", a.layers, "--decoder-layers", 1, "--encoder-embed-dim", a.dim,
            "--decoder-embed-dim", a.dim, "--encoder-ffn-embed-dim", 4 * a.dim, "--decoder-ffn-embed-dim", 4 * a.dim,
            "--encoder-attention-heads", a.heads, "--decoder-attention-heads", a.heads, "--dropout", a.dropout,
            "--max-source-positions", max(a.lengths) + 8, "--max-target-positions", max(a.lengths) + 8]


def build(data: str, a, system: str):
    """Task, encoder and criterion of ``system`` (``stock``: the same encoder without features or methods); with
    ``a.compile``, its layers compiled (``--syntax-compile``, the stock encoder's too)."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    from syntax_nmt import register_with_fairseq
    from syntax_nmt.systems import fit_encoder_layers
    from syntax_nmt.systems import get as get_system

    register_with_fairseq()
    extra: List[str] = ["--source-features", ""]
    compiled = ["--syntax-compile", "--syntax-compile-mode", a.compile_mode] if getattr(a, "compile", False) else []
    criterion = ["--criterion", "label_smoothed_cross_entropy_with_syntax"]
    if system != "stock":
        s = get_system(system)
        if s.features:
            raise ValueError(f"{system}: the length bench compares encoders without source features")
        extra = [*s.args(), *fit_encoder_layers(s, a.layers)]
        if "--criterion" in extra:  # the system's criterion options go after the shared ones
            extra, criterion = extra[:extra.index("--criterion")], extra[extra.index("--criterion"):]
    argv = [data, "--user-dir", os.path.dirname(os.path.abspath(__import__("syntax_nmt").__file__)),
            "--task", "syntax_translation", "-s", "en", "-t", "de", "--arch", "syntax_transformer",
            *map(str, _model_args(a)),
            *map(str, extra), *compiled, *map(str, criterion), "--seed", str(a.seed)]
    args = options.parse_args_and_arch(options.get_training_parser(), argv)
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    model = task.build_model(cfg.model)
    return task, model.encoder, task.build_criterion(cfg.criterion)


def make_batch(T: int, B: int, task, rng: np.random.Generator, pieces_per_word: float, device):
    """``B`` sentences of ``T`` tokens: random word ids, subword tags and heads of :func:`sentence_streams`."""
    import torch

    d, tagd = task.source_dictionary, task.stream_dicts["subword"]
    tags, heads = [], []
    for _ in range(B):
        t, h, _ = sentence_streams(T, rng, pieces_per_word)
        tags.append([tagd.index(x) for x in t])
        heads.append(h)
    tokens = torch.as_tensor(rng.integers(d.nspecial, len(d), size=(B, T)), dtype=torch.long)
    tokens[:, -1] = d.eos()
    return {"src_tokens": tokens.to(device), "src_lengths": torch.full((B,), T, dtype=torch.long, device=device),
            "src_streams": {"subword": torch.tensor(tags, device=device), "head": torch.tensor(heads, device=device)}}


def _storage_key(t):
    s = t.untyped_storage()
    return (s.device.type, s.data_ptr()), s.nbytes()


def step(encoder, criterion, batch, dtype) -> Dict[str, float]:
    """One forward + backward of the encoder (and the system's auxiliary losses): seconds, saved MiB."""
    import torch

    device = batch["src_tokens"].device
    params = {_storage_key(p)[0] for p in [*encoder.parameters(), *criterion.parameters()]}
    saved: Dict[tuple, int] = {}

    def pack(t):
        key, nbytes = _storage_key(t)
        if key not in params:
            saved[key] = nbytes
        return t

    encoder.zero_grad(set_to_none=True)
    criterion.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    start = time.perf_counter()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        out = encoder(batch["src_tokens"], batch["src_lengths"], src_streams=batch["src_streams"])
        x = out["encoder_out"][0]
        loss = x.float().pow(2).sum() * 1e-3
        for weight, nll_sum, count, _ in criterion.syntax_terms((None, {"encoder_out": out})).values():
            loss = loss + weight * nll_sum / count.clamp(min=1)
    loss.backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
    row = {"seconds": time.perf_counter() - start, "saved_mib": sum(saved.values()) / 2 ** 20}
    if device.type == "cuda":
        row["cuda_peak_mib"] = (torch.cuda.max_memory_allocated() - base) / 2 ** 20
    return row


def written_bytes(func, args, out) -> int:
    """The bytes an ATen call ``func(*args)`` wrote: every tensor it returned that it wrote in place (annotated as
    written in the operator's schema: ``self`` of ``add_``, an ``out=`` argument) or that is new; a view of an
    input (``view``, ``expand``, ``permute``, ``detach``, ``_unsafe_view``...: the return shares an input's storage)
    writes nothing. An in-place op counts its whole tensor even where it writes part of it (``index_add_``), and a
    kernel's scratch memory (none of its returns) is not counted."""
    import torch
    from torch.utils._pytree import tree_leaves

    inputs = {t.untyped_storage().data_ptr() for t in tree_leaves(args) if isinstance(t, torch.Tensor)}
    returns = func._schema.returns
    outs = out if isinstance(out, (tuple, list)) and len(returns) > 1 else (out,)
    total = 0
    for ret, value in zip(returns, outs):
        written = ret.alias_info is not None and ret.alias_info.is_write
        for t in tree_leaves(value):
            if isinstance(t, torch.Tensor) and (written or t.untyped_storage().data_ptr() not in inputs):
                total += t.numel() * t.element_size()
    return total


def dispatch_profile(encoder, criterion, batch) -> Dict:
    """What one forward + backward of :func:`step` in float32 dispatches, with the accelerator paths of the syntax
    modules forced (:func:`~syntax_nmt.models.modules.device_paths.forced_accelerator_paths`), so measured on a
    CPU: ``ops``, every ATen call torch's dispatcher sees (views and the backward pass included); ``bytes``, the
    bytes those calls write (:func:`written_bytes`); ``by_op``, op name -> ``[calls, bytes]``.

    At Transformer-base width a GPU step is bound by launching kernels and by passes over memory, not by
    arithmetic: its time follows the operations (each a kernel, or a view that costs a launch's host time) and the
    bytes written (each written once and read at least once) far more closely than the CPU's time does."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from syntax_nmt.models.modules.device_paths import forced_accelerator_paths

    class Profile(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.by_op: Dict[str, List[int]] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            entry = self.by_op.setdefault(func.overloadpacket.__name__, [0, 0])
            entry[0] += 1
            entry[1] += written_bytes(func, (args, kwargs), out)
            return out

    with forced_accelerator_paths():
        step(encoder, criterion, batch, torch.float32)  # lazy buffers and caches
        with Profile() as profile:
            step(encoder, criterion, batch, torch.float32)
    by_op = dict(sorted(profile.by_op.items(), key=lambda kv: -kv[1][1]))
    return {"ops": sum(n for n, _ in by_op.values()), "bytes": sum(b for _, b in by_op.values()), "by_op": by_op}


def count_ops(encoder, criterion, batch) -> int:
    """The operations dispatched in one forward + backward of the accelerator paths (:func:`dispatch_profile`)."""
    return dispatch_profile(encoder, criterion, batch)["ops"]


def _batches(a, device):
    """Build the stock encoder and every system's encoder and criterion on ``device`` (training mode), then yield
    ``(T, B, batch, models)`` for every length of ``a.lengths`` (``models``: name -> ``(encoder, criterion)``)."""
    with tempfile.TemporaryDirectory() as data:
        _write_data_dir(data, a.vocab)
        models = {}
        for name in ["stock", *a.systems]:
            task, enc, crit = build(data, a, name)
            models[name] = (enc.to(device).train(), crit.to(device).train())
        rng = np.random.default_rng(a.seed)
        for T in a.lengths:
            B = max(1, a.tokens // T)
            yield T, B, make_batch(T, B, task, rng, a.pieces_per_word, device), models


#: how many of a system's operations, by the bytes they write beyond the stock encoder's, ``--count-bytes`` lists
TOP_OPS = 5


def run_count(a) -> List[Dict]:
    """``--count-ops`` / ``--count-bytes``: :func:`dispatch_profile` of every system and of the stock encoder at every
    length, on the CPU. A row holds the operations and bytes of the system and of the stock encoder, their ratios,
    and ``top_ops``: the system's operations that write the most bytes beyond the stock encoder's same operation,
    ``[name, calls, bytes, stock calls, stock bytes]``."""
    import torch

    torch.manual_seed(a.seed)
    rows: List[Dict] = []
    for T, B, batch, models in _batches(a, torch.device("cpu")):
        profiles = {name: dispatch_profile(enc, crit, batch) for name, (enc, crit) in models.items()}
        stock = profiles["stock"]
        for name in a.systems:
            p = profiles[name]
            extra = sorted(p["by_op"], key=lambda op: -(p["by_op"][op][1] - stock["by_op"].get(op, [0, 0])[1]))
            rows.append({"system": name, "T": T, "batch": B, "ops": p["ops"], "stock_ops": stock["ops"],
                         "ops_ratio": p["ops"] / stock["ops"], "bytes": p["bytes"], "stock_bytes": stock["bytes"],
                         "bytes_ratio": p["bytes"] / stock["bytes"],
                         "top_ops": [[op, *p["by_op"][op], *stock["by_op"].get(op, [0, 0])] for op in extra[:TOP_OPS]]})
        print(f"T={T:>4} B={B:>4}  stock {stock['ops']} ops {stock['bytes'] / 2 ** 30:.2f} GiB  " + "  ".join(
            f"{r['system']} {r['ops_ratio']:.2f}x/{r['bytes_ratio']:.2f}x" for r in rows if r["T"] == T), flush=True)
    return rows


def run(a) -> List[Dict]:
    import torch
    from tqdm import tqdm

    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device("cuda" if torch.cuda.is_available() and not a.cpu else "cpu")
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[a.precision]
    rows: List[Dict] = []
    for T, B, batch, models in _batches(a, device):
        measured: Dict[str, List[Dict[str, float]]] = {n: [] for n in models}
        for name, (enc, crit) in models.items():  # warm-up (allocator, kernels, lazy buffers)
            step(enc, crit, batch, dtype)
        for _ in tqdm(range(a.repeats), desc=f"T={T} B={B}", leave=False, disable=not a.progress):
            for name, (enc, crit) in models.items():  # interleaved: drift hits every system alike
                measured[name].append(step(enc, crit, batch, dtype))
        stock = _summary(measured["stock"])
        for name in a.systems:
            r = _summary(measured[name])
            row = {"system": name, "T": T, "batch": B, **r, "stock_seconds": stock["seconds"],
                   "stock_saved_mib": stock["saved_mib"], "time_ratio": stock["seconds"] / r["seconds"],
                   "memory_ratio": r["saved_mib"] / stock["saved_mib"]}
            if "cuda_peak_mib" in r:
                row["cuda_peak_ratio"] = r["cuda_peak_mib"] / stock["cuda_peak_mib"]
            rows.append(row)
        print(f"T={T:>4} B={B:>4}  stock {stock['seconds'] * 1e3:8.1f} ms {stock['saved_mib']:8.1f} MiB  " + "  ".join(
            f"{r['system']} {r['time_ratio']:.2f}x/{r['memory_ratio']:.2f}x" for r in rows if r["T"] == T),
            flush=True)
    return rows


def _summary(steps: List[Dict[str, float]]) -> Dict[str, float]:
    out = {"seconds": statistics.median(s["seconds"] for s in steps), "saved_mib": max(s["saved_mib"] for s in steps)}
    if "cuda_peak_mib" in steps[0]:
        out["cuda_peak_mib"] = max(s["cuda_peak_mib"] for s in steps)
    return out


# -- targets, table, plot -------------------------------------------------------------------------
def length_targets(kind: str) -> Dict[str, float]:
    """The methods' own targets (their classes' ``length_targets``), method -> value: ``time`` at T = 256 (time
    ratio >= value), ``memory`` at T = 512 (backward memory ratio <= value), ``ops`` at T = 256 (``--count-ops``:
    operations dispatched by the accelerator paths, system / stock <= value). A new method is judged by its own."""
    from syntax_nmt.models.modules.methods import registered_methods

    return {name: cls.length_targets[kind] for name, cls in registered_methods().items() if kind in cls.length_targets}


def ops_verdicts(rows: List[Dict]) -> Dict[str, str]:
    """``system -> "met" | "MISSED ..."`` for the ``ops`` targets, where the counted lengths include 256."""
    at = {r["system"]: r for r in rows if r["T"] == 256}
    target = length_targets("ops")
    return {name: "met" if r["ops_ratio"] <= target[name] else
            f"MISSED: {r['ops_ratio']:.2f}x > {target[name]}x" for name, r in at.items() if name in target}


def ops_table(rows: List[Dict]) -> str:
    lengths = sorted({r["T"] for r in rows})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    at = {(r["system"], r["T"]): r for r in rows}
    lines = ["operations dispatched in one forward + backward, accelerator paths (system / stock; below 1.15 = "
             "the GPU target's proxy):",
             markdown_table(["system", *(f"T={T}" for T in lengths), f"ops at T={lengths[-1]}"],
                            [[s, *(f"{at[s, T]['ops_ratio']:.2f}" for T in lengths), at[s, lengths[-1]]['ops']]
                             for s in systems], align="l" + "r" * (len(lengths) + 1))]
    lines += ["", "stock encoder: " + ", ".join(f"T={T}: {at[systems[0], T]['stock_ops']} ops" for T in lengths)]
    v = ops_verdicts(rows)
    if v:
        lines += ["", "targets (T=256): " + "; ".join(f"{k} {x}" for k, x in v.items())]
    return "\n".join(lines)


def bytes_table(rows: List[Dict]) -> str:
    """``--count-bytes``: the bytes written per system and length (ratio to the stock encoder), and at the longest
    length the operations that write the most beyond the stock encoder's."""
    lengths = sorted({r["T"] for r in rows})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    at = {(r["system"], r["T"]): r for r in rows}
    last = lengths[-1]
    rows_out = []
    for s in systems:
        r = at[s, last]
        top = ", ".join(f"{op} {b / 2 ** 30:.2f} / {sb / 2 ** 30:.2f}" for op, _, b, _, sb in r["top_ops"][:3])
        rows_out.append([s, *(f"{at[s, T]['bytes_ratio']:.2f}" for T in lengths), f"{r['bytes'] / 2 ** 30:.2f}", top])
    lines = ["bytes written by the operations of one forward + backward, accelerator paths (system / stock):",
             markdown_table(["system", *(f"T={T}" for T in lengths), f"GiB at T={last}",
                             f"most bytes beyond the stock encoder's at T={last} (op: system / stock GiB)"],
                            rows_out, align="l" + "r" * (len(lengths) + 1) + "l")]
    lines += ["", "stock encoder: " + ", ".join(
        f"T={T}: {at[systems[0], T]['stock_bytes'] / 2 ** 30:.2f} GiB" for T in lengths)]
    return "\n".join(lines)


def verdicts(rows: List[Dict]) -> Dict[str, str]:
    """``system -> "met" | "MISSED by ..."`` for the targets, where the measured lengths include 256 / 512."""
    out = {}
    time_targets, memory_targets = length_targets("time"), length_targets("memory")
    for name in dict.fromkeys(r["system"] for r in rows):
        at = {r["T"]: r for r in rows if r["system"] == name}
        missed = []
        if name in time_targets and 256 in at and at[256]["time_ratio"] < time_targets[name]:
            missed.append(f"time {at[256]['time_ratio']:.2f}x < {time_targets[name]}x at T=256")
        if name in memory_targets and 512 in at and at[512]["memory_ratio"] > memory_targets[name]:
            missed.append(f"memory {at[512]['memory_ratio']:.2f}x > {memory_targets[name]}x at T=512")
        checked = (name in time_targets and 256 in at) or (name in memory_targets and 512 in at)
        if checked:
            out[name] = "MISSED: " + "; ".join(missed) if missed else "met"
    return out


def table(rows: List[Dict]) -> str:
    lengths = sorted({r["T"] for r in rows})
    systems = list(dict.fromkeys(r["system"] for r in rows))
    at = {(r["system"], r["T"]): r for r in rows}
    def ratios(key: str) -> str:
        return markdown_table(["system", *(f"T={T}" for T in lengths)],
                              [[s, *(f"{at[s, T][key]:.2f}" for T in lengths)] for s in systems],
                              align="l" + "r" * len(lengths))

    lines = ["time ratio (stock encoder seconds / system seconds, forward + backward; above 1 = faster):",
             ratios("time_ratio"), "", "backward memory ratio (saved activations, system / stock):",
             ratios("memory_ratio")]
    stock = {T: next(r for r in rows if r["T"] == T) for T in lengths}
    lines += ["", "stock encoder: " + ", ".join(
        f"T={T} (B={stock[T]['batch']}): {stock[T]['stock_seconds'] * 1e3:.0f} ms, {stock[T]['stock_saved_mib']:.0f} MiB"
        for T in lengths)]
    v = verdicts(rows)
    if v:
        lines += ["", "targets (T=256 time, T=512 memory): " + "; ".join(f"{k} {x}" for k, x in v.items())]
    return "\n".join(lines)


def plot(rows: List[Dict], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in ((axes[0], "time_ratio", "time ratio (stock s / system s)"),
                           (axes[1], "memory_ratio", "backward memory ratio (system / stock)")):
        for name in dict.fromkeys(r["system"] for r in rows):
            pts = [(r["T"], r[key]) for r in rows if r["system"] == name]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            for x, y in pts:
                ax.annotate(f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 4), fontsize=6, ha="center")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sentence length T (tokens)")
        ax.set_ylabel(label)
    axes[1].legend(loc="upper left", fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m syntax_nmt.bench.length", description=__doc__.splitlines()[0],
                                epilog="example:\n  python -m syntax_nmt.bench.length --out bench-out --lengths 64 256",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    writes(p.add_argument("--out", default="bench-out"), "dir",
           paths=lambda d, _: [os.path.join(d, f"bench-length{x}")
                               for x in (".json", ".png", "-ops.json", "-bytes.json")])
    p.add_argument("--lengths", type=int, nargs="+", default=[32, 64, 128, 256, 512], help="sentence lengths T")
    p.add_argument("--tokens", type=int, default=8192, help="tokens per batch (B = tokens // T)")
    p.add_argument("--systems", default="",
                   help="comma-separated systems of the table without source features (default: every method's own "
                   "system, with the table's options)")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--dim", type=int, default=256, help="model dimension (Transformer base: 512); FFN is 4x")
    p.add_argument("--heads", type=int, default=4, help="attention heads (Transformer base: 8)")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--vocab", type=int, default=1000, help="source vocabulary of the random tokens")
    p.add_argument("--pieces-per-word", type=float, default=1.25, help="mean subwords per word (>= 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes per system and length (median)")
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32",
                   help="autocast dtype (fp16: on a GPU)")
    p.add_argument("--threads", type=int, default=0, help="torch threads on the CPU (0: torch's default)")
    p.add_argument("--cpu", action="store_true", help="measure on the CPU even if a GPU is there")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tree-stats", metavar="N", type=int, default=0,
                   help="only print the statistics of N random trees per length bucket (the generator's fit)")
    reads(p.add_argument("--parse-stats", metavar="TEXT", default=None,
                         help="only print the same statistics of the sentences of TEXT parsed by --spacy-model"))
    reads(p.add_argument("--spacy-model", default="en_core_web_sm", help="spaCy pipeline of --parse-stats"), "dir",
          name_or_path=True)
    p.add_argument("--progress", action="store_true", help="a progress bar per length")
    p.add_argument("--count-ops", action="store_true",
                   help="instead of timing: count the operations dispatched in one forward + backward of each "
                   "system's accelerator (GPU) code path, forced on the CPU, against the stock encoder (what a "
                   "GPU's step time follows at Transformer-base width; writes bench-length-ops.json)")
    p.add_argument("--compile", action="store_true",
                   help="time every encoder (the stock one too) with its layers compiled: --syntax-compile, torch.compile "
                   "with dynamic shapes (each system compiles in its warm-up pass at the first length)")
    p.add_argument("--compile-mode", default="default", choices=COMPILE_MODES, help="torch.compile's mode with --compile")
    p.add_argument("--count-bytes", action="store_true",
                   help="instead of timing: count the bytes written by the operations of one forward + backward of "
                   "each system's accelerator path, forced on the CPU, against the stock encoder (the memory traffic a "
                   "GPU's step time also follows; writes bench-length-bytes.json; with --count-ops, both in one pass)")
    return p


#: length buckets (words) of the tree statistics
BUCKETS = ((3, 10), (10, 20), (20, 30), (30, 45), (45, 70), (70, 1000))
STAT_KEYS = ("max_depth", "mean_depth", "dep_distance", "adjacent", "fan_out")


def stats_table(trees: List[Sequence[int]]) -> str:
    """Markdown table of :func:`tree_stats` means per length bucket."""
    stats = [tree_stats(t) for t in trees if len(t) >= BUCKETS[0][0]]
    rows = []
    for lo, hi in BUCKETS:
        s = [x for x in stats if lo <= x["words"] < hi]
        if s:
            rows.append([f"{lo}-{hi - 1}", len(s), *(f"{np.mean([x[k] for x in s]):.2f}" for k in STAT_KEYS)])
    return markdown_table(["words", "sentences", "max depth", "mean depth", "dependency distance", "adjacent heads",
                           "fan-out"], rows, align="lrrrrrr")


def generated_trees(n: int, seed: int) -> List[np.ndarray]:
    """``n`` trees of :func:`random_parse` per bucket, at the bucket's midpoint length."""
    rng = np.random.default_rng(seed)
    return [random_parse((lo + min(hi, 120)) // 2, rng) for lo, hi in BUCKETS for _ in range(n)]


def parsed_trees(path: str, spacy_model: str) -> List[List[int]]:
    """The sentences of a text file (any layout: whitespace is normalised, spaCy splits sentences), parsed by
    ``spacy_model``: word parents (-1 at the root) of every sentence made mostly of letters."""
    import re

    from syntax_nmt.annotate.backends.spacy_backend import load_pipeline

    with open(path, encoding="utf-8") as f:
        text = re.sub(r"\s+", " ", f.read())
    nlp = load_pipeline(spacy_model)
    trees = []
    nlp.max_length = max(nlp.max_length, len(text) + 1)
    for sent in nlp(text).sents:
        words = [t for t in sent if not t.is_space]
        if not words or sum(c.isalpha() for c in sent.text) <= 0.7 * len(sent.text):
            continue
        index = {t.i: k for k, t in enumerate(words)}
        trees.append([-1 if t.head.i == t.i else index.get(t.head.i, -1) for t in words])
    return trees


def memory_floor(a) -> int:
    """A lower bound of the bytes one forward + backward of the stock encoder keeps at the longest length: per
    layer, four activations of every token (input, attention output, FFN input, FFN output) and one attention
    probability per head and pair of positions. Every system needs more."""
    width = 2 if a.precision in ("fp16", "bf16") else 4
    T = max(a.lengths)
    tokens = max(1, a.tokens // T) * T
    return a.layers * width * (4 * tokens * a.dim + a.heads * tokens * T)


def _machine_bytes(device: str) -> int:
    import torch

    if device == "cuda":
        return int(torch.cuda.mem_get_info()[1])
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _allocation_failure(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, MemoryError) or "out of memory" in text or "can't allocate" in text or \
        "cannot allocate" in text


def cli_main(argv=None) -> int:
    from syntax_nmt.cli_errors import fail
    from syntax_nmt.systems import parse_systems
    from syntax_nmt.utils import setup_logging

    prog = "python -m syntax_nmt.bench.length"
    a = parse_args(get_parser(), argv)
    setup_logging(logging.WARNING)  # fairseq's INFO lines (one per model), matplotlib's DEBUG
    warnings.filterwarnings("ignore", module="hydra")
    if a.tree_stats or a.parse_stats:
        try:
            trees = parsed_trees(a.parse_stats, a.spacy_model) if a.parse_stats else generated_trees(a.tree_stats, a.seed)
        except (OSError, ValueError) as e:
            fail(prog, e)
        print(stats_table(trees))
        return 0
    if a.compile and (a.count_ops or a.count_bytes):
        fail(prog, "--compile times compiled layers; --count-ops and --count-bytes count the operations of eager ones")
    try:
        if not a.systems:
            from syntax_nmt.models.modules.methods import registered_methods

            a.systems = ",".join(registered_methods())
        a.systems = parse_systems(a.systems)
    except ValueError as e:
        fail(prog, e)
    from syntax_nmt.systems import get as get_system

    bad = [s for s in a.systems if get_system(s).features or get_system(s).stock]
    if bad:
        fail(prog, f"--systems: {', '.join(bad)} are not encoders with a syntax method and no source features")
    if min(a.lengths) < 2 or a.tokens < max(a.lengths) or a.pieces_per_word < 1 or a.repeats < 1:
        fail(prog, "need lengths >= 2, --tokens >= the longest length, --pieces-per-word >= 1, --repeats >= 1")
    if a.threads < 0:
        fail(prog, f"--threads {a.threads}: give the number of torch threads, or 0 for torch's default")
    if (a.count_ops or a.count_bytes) and a.precision != "fp32":
        fail(prog, f"--count-ops and --count-bytes count the operations of float32 encoders on the CPU, not "
                   f"--precision {a.precision}: leave --precision out")
    if os.path.exists(a.out) and not os.path.isdir(a.out):
        fail(prog, f"--out {a.out} is a file: give a folder (the results are written into it)")
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        fail(prog, f"--out {a.out}: {e.strerror or e}")

    import torch

    device = "cuda" if torch.cuda.is_available() and not a.cpu and not (a.count_ops or a.count_bytes) else "cpu"
    floor, have = memory_floor(a), _machine_bytes(device)
    if floor > have:
        fail(prog, f"--tokens {a.tokens} at --dim {a.dim}, {a.layers} layers, {a.heads} heads and length "
                   f"{max(a.lengths)} need at least {floor / 2 ** 30:.1f} GiB for one step, more than the "
                   f"{have / 2 ** 30:.1f} GiB of this {device}: lower --tokens, --dim or --lengths")
    setup_logging(logging.WARNING)  # again: importing fairseq (with torch) set the root logger up
    warnings.filterwarnings("ignore", module="hydra")

    start = time.time()
    if a.count_ops or a.count_bytes:
        rows = run_count(a)
        setup = (f"{a.layers} layers, width {a.dim}, {a.heads} heads, {a.tokens} tokens per batch, float32, "
                 f"accelerator paths forced on the CPU")
        written = []
        if a.count_ops:
            print(f"\n=== operations dispatched against the stock encoder ({setup})\n{ops_table(rows)}")
            keys = ("system", "T", "batch", "ops", "stock_ops", "ops_ratio")
            with open(os.path.join(a.out, "bench-length-ops.json"), "w") as f:
                json.dump({"setup": setup, "args": dict(vars(a)), "rows": [{k: r[k] for k in keys} for r in rows]},
                          f, indent=2)
            written.append("bench-length-ops.json")
        if a.count_bytes:
            print(f"\n=== bytes written against the stock encoder ({setup})\n{bytes_table(rows)}")
            with open(os.path.join(a.out, "bench-length-bytes.json"), "w") as f:
                json.dump({"setup": setup, "args": dict(vars(a)), "rows": rows}, f, indent=2)
            written.append("bench-length-bytes.json")
        flags = " ".join(f for f, on in (("--count-ops", a.count_ops), ("--count-bytes", a.count_bytes)) if on)
        print(f"bench-length {flags} finished in {time.time() - start:.0f}s; {' and '.join(written)} in {a.out}")
        return 0
    try:
        rows = run(a)
    except (RuntimeError, MemoryError) as e:
        if not _allocation_failure(e):
            raise
        fail(prog, f"the {device} could not allocate a step of --tokens {a.tokens} at --dim {a.dim} "
                   f"({str(e).strip().splitlines()[0][:200]}): lower --tokens, --dim or --lengths")
    setup = (f"{a.layers} layers, width {a.dim}, FFN {4 * a.dim}, {a.heads} heads, {a.tokens} tokens per batch, "
             f"{a.precision} on {device}{'' if device == 'cuda' else f' ({torch.get_num_threads()} threads)'}, "
             f"median of {a.repeats}{f', layers compiled (torch.compile, mode {a.compile_mode})' if a.compile else ''}")
    print(f"\n=== encoder forward + backward against the stock encoder ({setup})\n{table(rows)}")
    from syntax_nmt.recipes.training_record import device_name

    with open(os.path.join(a.out, "bench-length.json"), "w") as f:
        json.dump({"setup": setup, "device": device, "device_name": device_name(device), "torch": torch.__version__,
                   "args": {k: v for k, v in vars(a).items()}, "rows": rows}, f, indent=2)
    plot(rows, os.path.join(a.out, "bench-length.png"), f"syntax-nmt length-scaling bench: {setup}")
    print(f"bench-length finished in {time.time() - start:.0f}s; bench-length.json and bench-length.png in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(cli_main())
