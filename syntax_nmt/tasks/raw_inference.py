"""Raw-text inference for ``syntax_translation``: annotation settings, on-the-fly streams, batches.

The task's fairseq hooks (``get_interactive_tokens_and_lengths``,
``build_dataset_for_inference``, ``inference_step``) stay thin and call these helpers.

* **Settings.** ``syntax-nmt-binarize`` leaves ``DATA/annotation.json``; when training, the
  task stores it, as a JSON string, in the model arguments (``annotation_settings``), so
  ``fairseq-train`` saves it in every checkpoint. At inference the checkpoint's settings
  are used (``--annotation-settings-file`` replaces them, e.g. for checkpoints trained
  before they were recorded). Settings that disagree between checkpoint, ensemble members
  and the data directory are an error naming the first differing setting.
* **Streams travel with the tokens.** The task annotates raw lines and returns one source
  tensor per line; the tensors carry their streams as an attribute (:data:`STREAMS_ATTR`),
  so every fairseq caller that hands the same tensors to ``build_dataset_for_inference``
  (fairseq-interactive, the hub's ``generate``) gets them without a side table.
* **fairseq-interactive drops ``src_streams``.** Its ``make_batches`` keeps only
  ``src_tokens``/``src_lengths`` of each batch. The task's batch iterator remembers the
  last batch built from an inference dataset; ``inference_step``, called for that very
  batch before the next one is built, puts its streams back (after checking that the
  tokens are the same).
"""

import fileinput
import io
import json
import logging
import os
import sys
from typing import Dict, List, Optional, Tuple

import torch
from fairseq.data import iterators

from syntax_nmt.annotate.backends import PARSER_BACKENDS
from syntax_nmt.annotation_settings import AnnotationSettings
from syntax_nmt.constants import DATA_SETTINGS_FILE

logger = logging.getLogger(__name__)

#: Model argument (saved in checkpoints) holding the annotation settings as a JSON string.
MODEL_ARG = "annotation_settings"
#: Attribute of an annotated source tensor: ``{stream: LongTensor}`` aligned with it.
STREAMS_ATTR = "syntax_streams"
#: Attribute of an annotated source tensor: its target tensor (scoring), or absent.
TARGET_ATTR = "syntax_target"
def path_settings() -> Tuple[str, ...]:
    """Settings that are paths: they may differ between machines (the subword model's hash is compared instead):
    ``subword_model`` and each backend's model setting (spaCy: ``spacy_model``)."""
    return ("subword_model", *dict.fromkeys(b.model_setting for b in PARSER_BACKENDS.values() if b.model_setting))


def lenient_stdin() -> None:
    """Read standard input with ``surrogateescape`` instead of ``strict``.

    Python decodes stdin strictly under most UTF-8 locales (``en_US.UTF-8``; only the C, POSIX and
    C.UTF-8 locales and UTF-8 mode escape), so one invalid byte piped into fairseq-interactive ended
    the session inside fairseq's reader before any line was translated. Escaped, the byte reaches the
    annotator as a lone surrogate, which it replaces by U+FFFD with a warning naming the line
    (:meth:`~syntax_nmt.annotate.online.OnlineAnnotator.annotate`). Nothing has been read from stdin
    when the task is set up, and nothing else in a fairseq command reads it.
    """
    stdin = sys.stdin
    if isinstance(stdin, io.TextIOWrapper) and stdin.errors == "strict":
        stdin.reconfigure(errors="surrogateescape")


class _LenientFileinput:
    """:mod:`fileinput` as ``fairseq_cli.interactive`` sees it once :func:`lenient_stdin` ran: ``--input FILE``
    is decoded with ``surrogateescape``, as standard input is (its reader asks for ``hook_encoded("utf-8")``,
    strict). Every other name is the standard module's."""

    def __getattr__(self, name):
        return getattr(fileinput, name)

    @staticmethod
    def hook_encoded(encoding, errors=None):
        return fileinput.hook_encoded(encoding, errors=errors or "surrogateescape")


def lenient_input_file() -> None:
    """Make fairseq-interactive read ``--input FILE`` as :func:`lenient_stdin` makes it read standard input.

    fairseq's ``buffered_read`` opens the file through :mod:`fileinput` with a strict UTF-8 hook: one invalid
    byte ended the run before any line was translated, where the same bytes piped in were translated with a
    warning. Only the name ``fileinput`` inside ``fairseq_cli.interactive`` (if it is loaded) is replaced.
    """
    module = sys.modules.get("fairseq_cli.interactive")
    if module is not None and getattr(module, "fileinput", None) is fileinput:
        module.fileinput = _LenientFileinput()


def data_settings(data_path: str) -> Optional[AnnotationSettings]:
    """``DATA/annotation.json`` (validated), or None if the data directory has none."""
    path = os.path.join(data_path, DATA_SETTINGS_FILE)
    return AnnotationSettings.read(path) if os.path.exists(path) else None


def recorded_settings(model_args) -> Optional[AnnotationSettings]:
    """The settings recorded in a checkpoint's model arguments, or None (older checkpoints)."""
    text = getattr(model_args, MODEL_ARG, None) if model_args is not None else None
    return AnnotationSettings.from_dict(json.loads(text), "the checkpoint") if text else None


def record_settings(model_args, settings: AnnotationSettings) -> None:
    """Store ``settings`` in the model arguments (a Namespace, or a DictConfig), as a JSON string."""
    text = json.dumps(settings.to_dict(), sort_keys=True)
    try:
        setattr(model_args, MODEL_ARG, text)
    except Exception:  # omegaconf struct mode (dataclass-configured models)
        from omegaconf import open_dict

        with open_dict(model_args):
            setattr(model_args, MODEL_ARG, text)


def check_agree(a: AnnotationSettings, b: AnnotationSettings, what_a: str, what_b: str) -> None:
    """Raise ``ValueError`` naming the first setting on which ``a`` and ``b`` differ.

    Paths (``spacy_model``, ``subword_model``) may differ (another machine); a different
    spaCy path is only logged, and a subword model is compared by its recorded hash.
    """
    da, db = a.to_dict(), b.to_dict()
    for key in a.differences(b):
        if key in path_settings():
            logger.info("annotation setting %s: %r in %s, %r in %s", key, da.get(key), what_a, db.get(key), what_b)
            continue
        raise ValueError(f"annotation setting {key!r} differs: {da.get(key)!r} in {what_a}, {db.get(key)!r} in "
                         f"{what_b}")


def attach(tokens: torch.Tensor, streams: Dict[str, torch.Tensor], target: Optional[torch.Tensor] = None):
    """Attach streams (and a target) to an annotated source tensor; returns it."""
    setattr(tokens, STREAMS_ATTR, streams)
    if target is not None:
        setattr(tokens, TARGET_ATTR, target)
    return tokens


def attached_streams(tokens: torch.Tensor) -> Optional[Dict[str, torch.Tensor]]:
    return getattr(tokens, STREAMS_ATTR, None)


def attached_target(tokens: torch.Tensor) -> Optional[torch.Tensor]:
    return getattr(tokens, TARGET_ATTR, None)


class InferenceBatchIterator:
    """An ``EpochBatchIterator`` whose epoch iterators report each batch to ``on_batch`` as it is handed out."""

    def __init__(self, inner, on_batch):
        self._inner = inner
        self._on_batch = on_batch

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def next_epoch_itr(self, *args, **kwargs):
        itr = self._inner.next_epoch_itr(*args, **kwargs)

        def reported():
            for batch in itr:
                self._on_batch(batch)
                yield batch

        return iterators.CountingIterator(reported(), start=itr.n, total=len(itr))


def restore_streams(net_input: Dict, last_batch: Optional[Dict], needed: List[str]) -> None:
    """Put the streams of ``last_batch`` into ``net_input`` (fairseq-interactive's sample).

    Raises:
        RuntimeError: if the sample is not the batch last handed out (never expected).
    """
    tokens = net_input["src_tokens"]
    last = (last_batch or {}).get("net_input", {})
    ref = last.get("src_tokens")
    if ref is None or ref.shape != tokens.shape or not torch.equal(ref.to(tokens.device), tokens):
        raise RuntimeError(
            f"syntax_translation: a sample without source streams {needed} that is not the batch the task built "
            f"last; translate raw text through the task's hooks (fairseq-interactive, SyntaxHubInterface)"
        )
    net_input["src_streams"] = {name: last["src_streams"][name].to(tokens.device) for name in needed}
