"""Load trained checkpoints for analysis and read what their syntax modules record.

The coupling with the model is one contract: every encoder module of a syntax method that records
(SG-Net's layer, SLA's attention, a method's own) has ``record: bool`` (default False) and a class
attribute ``record_kind`` naming what it records; when ``record`` is True, its forward stores
``recorded``, a dict of detached tensors, e.g.:

* ``record_kind = "sla"``: ``{"gate": (B, T), "local": (B, H, T, T), "global": (B, H, T, T)}``;
* ``record_kind = "sgnet"``: ``{"attn": (B, H, T, T), "mask": (B, T, T) bool}``;
* ``record_kind = "syntax_bert"``: ``{"topical": (B, M, T), "valid": (B, M, T) bool, "attn": (B, H, T, T)}``;

and a module with a scalar learned mix (SG-Net's aggregation, SEPREM per layer) exposes
``alpha``, a 0-d tensor, and ``alpha_weighs``, a string naming what ``alpha`` weighs (SG-Net:
the ordinary states; SEPREM: the syntax-aware representation). Nothing here knows the model classes.

What ``syntax-nmt-analyze attention`` shows of a recording module comes from its hook
``analysis_maps(recorded) -> dict``: the pieces of the first sentence of the batch (``T`` tokens), as
tensors or numpy arrays, in this schema (:func:`analysis_pieces` checks it)::

    {"title": "SLA",                                    # what the module is (default: its record_kind)
     "maps": {NAME: {"title": str, "values": (T, K)}},  # float, rows the tokens: e.g. attention
                                                        # (mean over heads), each row over the keys
     "vectors": {NAME: {"title": str, "values": (T,)}}, # float, one value per token: e.g. a gate
     "masks": {NAME: {"title": str, "values": (T, K)}}} # bool, e.g. the keys a token may attend

each of ``maps``, ``vectors`` and ``masks`` optional. The ``K`` columns of a map or mask are the
source tokens (``K = T``) unless its piece names them (``"columns": [K labels]``, e.g. sub-networks);
a map may name a mask of the same columns it should stay within (``"within": MASK``: the analysis
reports its weight outside the mask). A module without the hook, with nothing recorded, or whose hook
returns None or no pieces is listed as not shown.
"""

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

from syntax_nmt.analyze.common import AnalyzeError, readable_checkpoint

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


@dataclass
class Loaded:
    """A checkpoint loaded for analysis (model in eval mode, its task with the data)."""

    name: str
    path: str
    model: torch.nn.Module
    task: object
    cfg: object


def load(name: str, path: str, data: str, split: Optional[str] = "test") -> Loaded:
    """Load ``path`` with fairseq's ``load_model_ensemble_and_task`` on data directory ``data``
    (its dictionaries and ``split``; ``split=None``: dictionaries only, for raw text)."""
    import fairseq  # noqa: F401  (so that importing the plugin registers it)
    from fairseq import checkpoint_utils

    from syntax_nmt import register_with_fairseq

    register_with_fairseq()
    overrides = {"data": data}
    state = read_checkpoint(path, overrides)
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides,
                                                                          state=state)
    except (ValueError, FileNotFoundError, KeyError) as e:
        raise AnalyzeError(f"cannot load {path} on {data}: {e}") from None
    if split is not None:
        task.load_dataset(split)
    model = models[0]
    model.eval()
    return Loaded(name, path, model, task, cfg)




def read_checkpoint(path: str, arg_overrides: Optional[Dict] = None) -> Dict:
    """fairseq's ``load_checkpoint_to_cpu``, with an empty, truncated or foreign file reported as
    an :class:`AnalyzeError` naming it (instead of torch's unpickling traceback).

    Raises:
        AnalyzeError: the file is empty, cannot be read as a checkpoint, or holds no model and config.
    """
    from fairseq import checkpoint_utils

    with readable_checkpoint(path):
        state = checkpoint_utils.load_checkpoint_to_cpu(path, arg_overrides)
    if not isinstance(state, dict) or "model" not in state or (state.get("cfg") is None
                                                               and state.get("args") is None):
        raise AnalyzeError(f"{path} is not a fairseq checkpoint (it holds no model weights and configuration)")
    return state


def sample(loaded: Loaded, ids: Sequence[int], split: str = "test") -> Dict:
    """The collated batch of sentences ``ids`` of ``split`` (as the task's data loader builds it)."""
    dataset = loaded.task.dataset(split)
    bad = [i for i in ids if not 0 <= i < len(dataset)]
    if bad:
        raise AnalyzeError(f"sentence ids {bad} are not in the {split} split (0..{len(dataset) - 1})")
    return dataset.collater([dataset[i] for i in ids])


def sample_text(loaded: Loaded, text: str, target: Optional[str] = None, annotation: Optional[Dict] = None) -> Dict:
    """The one-sentence batch of raw ``text``, annotated on the fly exactly as fairseq-interactive
    and the hub annotate it (the annotation settings the checkpoint records; ``annotation``:
    the ``set_annotation_options`` overrides), with ``target`` (tokenized as the training
    target was) as its reference."""
    task = loaded.task
    if not hasattr(task, "annotate_lines"):
        raise AnalyzeError(f"{loaded.name}: raw text needs a syntax_translation model (its task is {type(task).__name__})")
    if annotation and any(annotation.values()):
        task.set_annotation_options(**annotation)
    try:
        if hasattr(task, "set_source_parse"):  # the parser's parse too, to show beside what a model predicts (LISA)
            task.set_source_parse("always")
        tokens = task.annotate_lines([text], targets=[target] if target is not None else None)
    except (ValueError, OSError) as e:
        raise AnalyzeError(f"{loaded.name}: cannot annotate the text: {e}") from None
    if tokens[0].numel() <= 1:
        raise AnalyzeError(f"{loaded.name}: the text has no words")
    dataset = task.build_dataset_for_inference(tokens, [t.numel() for t in tokens])
    return dataset.collater([dataset[0]])


def batches(loaded: Loaded, split: str = "test", max_tokens: int = 4000) -> Iterator[Dict]:
    """Every batch of ``split``, in the task's order (no sentence dropped)."""
    import warnings

    warnings.filterwarnings("ignore", message=".*pin_memory.*")  # fairseq's loader asks for it, also on a CPU
    task = loaded.task
    itr = task.get_batch_iterator(dataset=task.dataset(split), max_tokens=max_tokens, max_sentences=None,
                                  required_batch_size_multiple=1, ignore_invalid_inputs=False)
    return itr.next_epoch_itr(shuffle=False)


def recording_modules(model: torch.nn.Module) -> List[Tuple[str, torch.nn.Module]]:
    """``(name, module)`` of every module with a ``record`` attribute, in model order."""
    return [(n, m) for n, m in model.named_modules() if isinstance(getattr(m, "record", None), bool)]


@contextlib.contextmanager
def recording(model: torch.nn.Module):
    """Switch ``record`` on for every recording module; yields them; switches it off after."""
    mods = recording_modules(model)
    for _, m in mods:
        m.record = True
        m.recorded = None
    try:
        yield mods
    finally:
        for _, m in mods:
            m.record = False


def layer_of(name: str) -> Optional[int]:
    """Encoder layer index in a module name (``encoder.layers.3.self_attn`` -> 3), None outside layers."""
    m = _LAYER.search(name + ".")
    return int(m.group(1)) if m else None


def kind_of(module: torch.nn.Module) -> str:
    """What a recording module records, as it declares it (its ``record_kind``: ``"sgnet"``, ``"sla"``,
    ``"syntax_bert"``, ...; ``"other"`` for a module that declares none)."""
    return getattr(module, "record_kind", "") or "other"


#: the kinds of pieces of a module's ``analysis_maps``, in the order a figure shows them
PIECE_KINDS = ("masks", "maps", "vectors")
#: the keys of an encoder entry of ``syntax-nmt-analyze attention`` besides its pieces' names
ENTRY_KEYS = ("module", "layer", "kind", "title", *PIECE_KINDS)


def _as_array(values, boolean: bool) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu()
        return values.bool().numpy() if boolean else values.float().numpy()
    return np.asarray(values, dtype=bool if boolean else np.float32)


def analysis_pieces(name: str, module: torch.nn.Module, length: int) -> Tuple[Optional[Dict], str]:
    """What a recording module shows after a forward pass on a one-sentence batch of ``length`` tokens:
    its ``analysis_maps(recorded)`` (the schema of the module docstring) checked and as numpy arrays, as
    ``({"title": ..., "masks": {NAME: {"title": ...[, "columns": ...]}}, "maps": ..., "vectors": ...,
    NAME: values, ...}, "")``; or ``(None, why it shows nothing)``.

    Raises:
        AnalyzeError: naming ``name``, where the hook's answer does not follow the schema.
    """
    hook = getattr(module, "analysis_maps", None)
    if hook is None:
        return None, "it has no analysis_maps hook"
    if not module.recorded:
        return None, "it recorded nothing"
    answer = hook(module.recorded)
    if not answer or not any(answer.get(k) for k in PIECE_KINDS):
        return None, "its analysis_maps returned no pieces"

    def bad(what: str):
        return AnalyzeError(f"{name}: analysis_maps {what}")

    unknown = sorted(set(answer) - {"title", *PIECE_KINDS})
    if unknown:
        raise bad(f"returned unknown keys {unknown} (expected title, {', '.join(PIECE_KINDS)})")
    out: Dict = {"title": str(answer.get("title") or kind_of(module))}
    for kind in PIECE_KINDS:
        out[kind] = {}
        allowed = {"title", "values"} | ({"columns"} if kind != "vectors" else set())
        allowed |= {"within"} if kind == "maps" else set()
        for piece, spec in (answer.get(kind) or {}).items():
            if piece in ENTRY_KEYS or piece in out:
                raise bad(f"names a piece {piece!r}, a name taken (by {ENTRY_KEYS} or another piece)")
            if "title" not in spec or "values" not in spec or set(spec) - allowed:
                raise bad(f"{kind} piece {piece!r} has keys {sorted(spec)}: title and values needed, "
                          f"only {sorted(allowed)} allowed")
            values = _as_array(spec["values"], kind == "masks")
            meta = {"title": str(spec["title"])}
            if spec.get("columns") is not None:
                meta["columns"] = [str(c) for c in spec["columns"]]
            if "within" in spec:
                meta["within"] = str(spec["within"])
            want = (length,) if kind == "vectors" else (length, len(meta.get("columns", range(length))))
            if values.shape != want:
                raise bad(f"{kind} piece {piece!r} has shape {tuple(values.shape)}, expected {want}")
            out[kind][piece] = meta
            out[piece] = values
    for piece, meta in out["maps"].items():
        mask = meta.get("within")
        if mask is not None and (mask not in out["masks"] or out[mask].shape != out[piece].shape):
            raise bad(f"map {piece!r} is within {mask!r}, which is no mask of its shape")
    return out, ""


def alphas(model: torch.nn.Module) -> List[Tuple[str, float, bool, str]]:
    """``(module name, alpha, learned, weighs)`` of every module exposing a 0-d tensor ``alpha``
    (SG-Net, SEPREM); ``learned``: the value depends on trained parameters (it requires grad);
    ``weighs``: the module's ``alpha_weighs`` (what alpha weighs), "?" without one."""
    out = []
    for name, m in model.named_modules():
        try:
            a = getattr(m, "alpha", None)
        except Exception:  # a property that cannot be computed on this module
            continue
        if isinstance(a, torch.Tensor) and a.dim() == 0:
            out.append((name, float(a.detach().float()), bool(a.requires_grad), str(getattr(m, "alpha_weighs", "?"))))
    return out


def special_mask(loaded: Loaded, src_tokens: torch.Tensor) -> torch.Tensor:
    """Bool ``(B, T)``: pad, EOS and BOS positions of a source batch."""
    d = loaded.task.source_dictionary
    return src_tokens.eq(d.pad()) | src_tokens.eq(d.eos()) | src_tokens.eq(d.bos())


def encode(loaded: Loaded, net_input: Dict):
    """Run the encoder on a batch (recording modules fill ``recorded``)."""
    kwargs = {"src_lengths": net_input["src_lengths"]}
    if "src_streams" in net_input:
        kwargs["src_streams"] = net_input["src_streams"]
    with torch.no_grad():
        return loaded.model.encoder(net_input["src_tokens"], **kwargs)
