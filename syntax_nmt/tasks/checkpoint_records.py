"""What ``syntax_translation`` records in a model's arguments (so in its checkpoints) about the data it was trained
on, and applies or checks when a checkpoint is loaded: the signatures of its word dictionaries, ``--source-prepend-bos``
and ``--truncate-source`` (the format of the signatures: :mod:`syntax_nmt.data.signatures`; the stream dictionaries
are checked where the task settles the streams, :mod:`~syntax_nmt.tasks.source_streams`; the annotation settings in
:mod:`~syntax_nmt.tasks.raw_inference`; the target factors in :mod:`syntax_nmt.tasks.target_factors`).

Each function takes the task and the model's arguments ``cfg`` (an ``argparse.Namespace`` or a ``DictConfig``):
training (``from_checkpoint`` false) writes the record, loading reads it.
"""

import logging
import os
from typing import Optional

from fairseq import utils

from syntax_nmt.data.signatures import dictionary_signature, parse_signatures
from syntax_nmt.data.streams import StreamConfigError
from syntax_nmt.utils import cfg_value, set_cfg_value

logger = logging.getLogger(__name__)


def record_word_dictionaries(task, cfg, from_checkpoint: bool) -> None:
    """Record the signatures (size, hash) of the source and target dictionaries when training, and check them when
    a checkpoint is loaded: a dictionary of the same size in another order (another data directory) loads without a
    shape error and translates garbage. Checkpoints that recorded none are not checked.

    Raises:
        StreamConfigError: naming the dictionary that differs.
    """
    current = {"source": task.src_dict, "target": task.tgt_dict}
    signature = ",".join(dictionary_signature(name, d) for name, d in current.items() if d is not None)
    recorded = cfg_value(cfg, "word_dict_signature")
    if not from_checkpoint:
        set_cfg_value(cfg, "word_dict_signature", signature)
        return
    old, new = parse_signatures(recorded), parse_signatures(signature)
    langs = {"source": task.cfg.source_lang, "target": task.cfg.target_lang}
    for name in current:
        if name in old and name in new and old[name] != new[name]:
            path = os.path.join(utils.split_paths(task.cfg.data)[0], f"dict.{langs[name]}.txt")
            raise StreamConfigError(
                f"the {name} dictionary {path} differs from the one the checkpoint was trained with "
                f"({old[name][0]} types, hash {old[name][1]} vs {new[name][0]} types, hash {new[name][1]}): "
                f"use the training data's dictionaries (binarize with --srcdict/--tgtdict of them)")


def record_source_prepend_bos(task, cfg, from_checkpoint: bool) -> None:
    """Record ``--source-prepend-bos`` and, when a checkpoint is loaded, apply the recorded value to the task.

    Raises:
        StreamConfigError: if BOS is asked for but the checkpoint was trained without it.
    """
    recorded = cfg_value(cfg, "source_prepend_bos")
    if from_checkpoint and recorded is not None and bool(recorded) != bool(task.cfg.source_prepend_bos):
        if not recorded:
            raise StreamConfigError("--source-prepend-bos is given, but the checkpoint was trained without it "
                                    "(its sources had no BOS): generate without --source-prepend-bos")
        logger.info("the checkpoint was trained with --source-prepend-bos: prepending BOS to the sources")
        task.cfg.source_prepend_bos = True
    else:
        set_cfg_value(cfg, "source_prepend_bos", bool(task.cfg.source_prepend_bos))


def apply_source_truncation(task, cfg, model, from_checkpoint: bool) -> Optional[int]:
    """Record ``--truncate-source`` (fairseq's arguments already carry it) and, when a checkpoint is loaded, truncate
    sources exactly as in training: a recorded ``--truncate-source`` is applied to the task, and with truncation
    (recorded or asked for) sources are cut to the model's source positions (the ``--max-source-positions`` it was
    trained with) rather than this command line's default of 1024.

    Returns:
        The model's source positions when a checkpoint is loaded (None when training).
    """
    if not from_checkpoint:
        set_cfg_value(cfg, "truncate_source", bool(task.cfg.truncate_source))
        return None
    if cfg_value(cfg, "truncate_source") and not task.cfg.truncate_source:
        logger.info("the checkpoint was trained with --truncate-source: sources longer than its %s source "
                    "positions are truncated as in training", cfg_value(cfg, "max_source_positions"))
        task.cfg.truncate_source = True
    model_positions = utils.resolve_max_positions(
        model.max_positions(), (task.cfg.max_source_positions, task.cfg.max_target_positions))[0]
    if task.cfg.truncate_source and model_positions < task.cfg.max_source_positions:
        task.cfg.max_source_positions = model_positions
    return model_positions
