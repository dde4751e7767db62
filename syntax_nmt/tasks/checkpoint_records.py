"""What ``syntax_translation`` records in a model's arguments (so in its checkpoints) about the data it was trained
on, and applies or checks when a checkpoint is loaded: the records of its word dictionaries, ``--source-prepend-bos``
and ``--truncate-source`` (the records: :mod:`syntax_nmt.data.signatures`; the stream dictionaries
are checked where the task settles the streams, :mod:`~syntax_nmt.tasks.source_streams`; the annotation settings in
:mod:`~syntax_nmt.tasks.raw_inference`; the target factors in :mod:`syntax_nmt.tasks.target_factors`).

The task reads the model's arguments once (:meth:`ModelRecords.read`), hands each value to the function that decides
on it, and writes what they return once (:meth:`ModelRecords.write`): those functions (:func:`word_dictionaries`,
:func:`source_prepend_bos`, :func:`source_truncation`) receive values and return values; none reads or writes the task
or the arguments. :func:`cfg_value` and :func:`set_cfg_value` read and set one option of a configuration that
fairseq hands as a ``Namespace`` or a ``DictConfig``, of any version.
"""

import logging
from dataclasses import dataclass, fields
from typing import Any, Dict, List, Optional, Tuple

from syntax_nmt.data.signatures import WORD_DICTS_ARG, DictionaryRecord, read_dictionaries, records_by_name
from syntax_nmt.data.streams import StreamConfigError

logger = logging.getLogger(__name__)


@dataclass
class ModelRecords:
    """What the model's arguments record for the task, each field under its own name there (None: not recorded, as in
    a checkpoint trained before the record existed).

    Args:
        word_dict_signature: the source and target dictionaries, as records (plain dicts; a signature string in a
            checkpoint trained before the records were typed: :func:`word_dictionaries`).
        source_prepend_bos: ``--source-prepend-bos`` (:func:`source_prepend_bos`).
        truncate_source: ``--truncate-source`` (:func:`source_truncation`).
        target_factor_dicts: the target factors' typed records
            (:data:`~syntax_nmt.data.signatures.TARGET_FACTORS_ARG`; :meth:`~syntax_nmt.targets.factors.TargetFactors.adopt`).
        annotation_settings: the annotation settings as JSON (:meth:`~.raw_inference.RawTextAnnotation.record_or_check`).
        target_factor_input: the model's ``--target-factor-input``, read and never written (the task checks it
            against its ``--target-factors``).
    """

    word_dict_signature: Any = None
    source_prepend_bos: Optional[bool] = None
    truncate_source: Optional[bool] = None
    target_factor_dicts: Any = None
    annotation_settings: Optional[str] = None
    target_factor_input: Optional[bool] = None

    #: the fields :meth:`write` writes
    WRITTEN = ("word_dict_signature", "source_prepend_bos", "truncate_source", "target_factor_dicts",
               "annotation_settings")

    @classmethod
    def read(cls, cfg) -> "ModelRecords":
        """The records of the model's arguments ``cfg``."""
        return cls(**{f.name: cfg_value(cfg, f.name) for f in fields(cls)})

    def write(self, cfg) -> None:
        """Write the records that are not None into the model's arguments ``cfg``."""
        for name in self.WRITTEN:
            if getattr(self, name) is not None:
                set_cfg_value(cfg, name, getattr(self, name))


def cfg_value(cfg, key: str):
    """``cfg.key`` of an ``argparse.Namespace`` or an omegaconf ``DictConfig`` (fairseq hands both); ``None`` if it
    has no such key (a configuration saved before the option existed)."""
    return cfg.get(key, None) if hasattr(cfg, "get") else getattr(cfg, key, None)


def set_cfg_value(cfg, key: str, value) -> None:
    """Set ``cfg.key`` on an ``argparse.Namespace`` or an omegaconf ``DictConfig`` (struct or not)."""
    from omegaconf import DictConfig, open_dict

    if isinstance(cfg, DictConfig):
        with open_dict(cfg):
            cfg[key] = value
        return
    setattr(cfg, key, value)


def word_dictionaries(dictionaries: Dict[str, Tuple[Any, str]], recorded=None) -> List[DictionaryRecord]:
    """The records (size, hash) of the source and target dictionaries, to record when training, checked against the
    ones a loaded checkpoint recorded: a dictionary of the same size in another order (another data directory) loads
    without a shape error and translates garbage.

    Args:
        dictionaries: ``"source"``/``"target"`` -> (the dictionary or None, its file, named in the message).
        recorded: the checkpoint's records, or its signature string if it was trained before they were typed (read
            here, once: :func:`~syntax_nmt.data.signatures.read_dictionaries`); None: nothing to check, as when
            training or for checkpoints that recorded none.

    Raises:
        StreamConfigError: naming the dictionary that differs.
    """
    current = [DictionaryRecord.of(name, d) for name, (d, _) in dictionaries.items() if d is not None]
    old, new = records_by_name(read_dictionaries(recorded, WORD_DICTS_ARG)), records_by_name(current)
    for name, (_, path) in dictionaries.items():
        if name in old and name in new and old[name] != new[name]:
            raise StreamConfigError(
                f"the {name} dictionary {path} differs from the one the checkpoint was trained with "
                f"({old[name].describe()} vs {new[name].describe()}): "
                f"use the training data's dictionaries (binarize with --srcdict/--tgtdict of them)")
    return current


def source_prepend_bos(asked: bool, recorded: Optional[bool], from_checkpoint: bool) -> bool:
    """``--source-prepend-bos`` as the task applies and records it: as ``asked``, unless a loaded checkpoint recorded
    that it was trained with it (then it applies).

    Raises:
        StreamConfigError: if BOS is asked for but the checkpoint was trained without it.
    """
    if from_checkpoint and recorded is not None and bool(recorded) != bool(asked):
        if not recorded:
            raise StreamConfigError("--source-prepend-bos is given, but the checkpoint was trained without it "
                                    "(its sources had no BOS): generate without --source-prepend-bos")
        logger.info("the checkpoint was trained with --source-prepend-bos: prepending BOS to the sources")
        return True
    return bool(asked)


def source_truncation(asked: bool, recorded: Optional[bool], model_positions: int,
                      max_source_positions: int) -> Tuple[bool, int]:
    """When a checkpoint is loaded, ``(--truncate-source, --max-source-positions)`` that truncate sources exactly as in
    training: a recorded ``--truncate-source`` applies, and with truncation (recorded or ``asked`` for) sources are
    cut to the model's source positions (``model_positions``: the ``--max-source-positions`` it was trained with, as
    far as this command line's ``max_source_positions`` allows) rather than this command line's default of 1024."""
    truncate = bool(asked)
    if recorded and not asked:
        logger.info("the checkpoint was trained with --truncate-source: sources longer than its %s source "
                    "positions are truncated as in training", model_positions)
        truncate = True
    if truncate and model_positions < max_source_positions:
        max_source_positions = model_positions
    return truncate, max_source_positions
