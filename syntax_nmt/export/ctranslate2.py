"""The exported checkpoint converted by CTranslate2's fairseq converter (the optional extra ``deploy``).

CTranslate2 4.8's ``FairseqConverter`` loads a checkpoint with torch's weights-only loader and reads its model's
arguments as attributes (``checkpoint["args"] or checkpoint["cfg"]["model"]``, then ``args.data = ...``): an
``argparse.Namespace``. The export holds its configuration as plain dicts (what stock fairseq reads with nothing
allow-listed), so a file given to ``ct2-fairseq-converter`` as it is fails there (``'dict' object has no attribute
'data'``). :func:`convert` hands the converter the exported checkpoint with its model arguments as the Namespace it
expects, in memory, in this process, where the plugin allow-lists ``argparse.Namespace`` for the weights-only loader
(:mod:`syntax_nmt.checkpoint_compat`; weights-only loading stays on). The converter builds fairseq's own
``transformer`` from it: the plugin takes no part in the model it converts.
"""

import argparse
import io
from typing import Optional

import torch

from syntax_nmt.export.stock import ExportError

#: what ``pip install`` needs for :func:`convert`
INSTALL_HINT = 'pip install -e ".[deploy]" (or pip install ctranslate2)'
#: the converter's weight types (``--quantization``; None: as trained, float32)
QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16",
                 "float32")


def converter_class():
    """CTranslate2's ``FairseqConverter``.

    Raises:
        ExportError: CTranslate2 is not installed.
    """
    try:
        from ctranslate2.converters import FairseqConverter
    except ImportError:
        raise ExportError(f"--ctranslate2 needs CTranslate2: {INSTALL_HINT}") from None
    return FairseqConverter


def convert(export_path: str, data_dir: str, output_dir: str, quantization: Optional[str] = None,
            force: bool = False) -> str:
    """Convert an exported (stock) checkpoint with CTranslate2's fairseq converter.

    Args:
        export_path: the stock checkpoint written by ``syntax-nmt-export``.
        data_dir: the directory with its dictionaries (``dict.{src}.txt``, ``dict.{tgt}.txt``).
        output_dir: the CTranslate2 model directory to write.
        quantization: CTranslate2's weight type, or None (float32).
        force: replace an existing ``output_dir``.

    Returns:
        ``output_dir``.
    """
    from syntax_nmt import checkpoint_compat  # noqa: F401  (argparse.Namespace for the weights-only loader)

    converter = converter_class()
    state = torch.load(export_path, map_location="cpu", weights_only=True)
    model = (state.get("cfg") or {}).get("model")
    if not isinstance(model, dict):
        raise ExportError(f"{export_path} is not a checkpoint written by syntax-nmt-export (no plain model "
                          f"configuration)")
    state["args"] = argparse.Namespace(**model)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    task = state["cfg"].get("task") or {}
    return converter(buffer, data_dir, source_lang=task.get("source_lang"),
                     target_lang=task.get("target_lang")).convert(output_dir, quantization=quantization, force=force)
