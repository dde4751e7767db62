"""The task's side of target factors (:mod:`syntax_nmt.targets.factors` is the scheme; the decoder that predicts
them is :class:`~syntax_nmt.models.modules.target_factors.FactoredTransformerDecoder`): their dictionaries, the typed
records the model is built from and the checkpoint keeps (:class:`~syntax_nmt.data.signatures.TargetFactor`), the
adoption of a checkpoint's factors, the factors a decoding predicted and the ``F-`` lines.
"""

import os
from typing import Dict, List, Optional, Sequence, TextIO

from syntax_nmt.data.signatures import TargetFactor, read_target_factors
from syntax_nmt.data.streams import StreamConfigError, parse_target_streams, stream_dict_path, target_stream


class TargetFactors:
    """The target factors of a task (``--target-factors``, or those of a loaded checkpoint).

    Args:
        option: ``--target-factors`` (comma-separated target tag streams; empty: none unless a checkpoint has some).
        data_path: the data directory (the factors' dictionaries, ``dict.tgt.NAME.txt``).
        tgt_dict: the target dictionary (its pieces are joined into the words of the ``F-`` lines).
    """

    def __init__(self, option: str, data_path: str, tgt_dict):
        self.data_path, self.tgt_dict = data_path, tgt_dict
        #: the factors, in the order the decoder predicts them
        try:
            self.names: List[str] = parse_target_streams(option) if option else []
        except StreamConfigError as e:  # an unknown name: one line naming the option (fairseq_errors_one_line)
            raise StreamConfigError(f"--target-factors {option}: {e}") from None
        #: whether the task loads the factors' data with each split (the option given: training); a checkpoint's
        #: factors are only predicted
        self.loads_data = bool(self.names)
        #: whether generation prints the F- lines (fairseq-generate, -interactive); the hub reads the hypotheses
        self.prints_lines = True
        self.dicts: Dict[str, object] = {}
        self._load_dicts(self.names)
        self._pieces_scheme: Optional[str] = None

    def _load_dicts(self, names: Sequence[str]) -> None:
        from fairseq.data import Dictionary

        for name in names:
            path = stream_dict_path(self.data_path, target_stream(name))
            if not os.path.exists(path):
                raise StreamConfigError(f"target factor {name!r}: {path} does not exist (binarize with "
                                        f"syntax-nmt-binarize --target-streams {name})")
            self.dicts[name] = Dictionary.load(path)

    def records(self) -> List[TargetFactor]:
        """The typed records of the factors (name, dictionary size and hash), in order."""
        return [TargetFactor.of(n, self.dicts[n]) for n in self.names]

    def to_record(self) -> List[dict]:
        """Training: what the model's arguments record of the factors, under
        :data:`~syntax_nmt.data.signatures.TARGET_FACTORS_ARG`: the typed records (so that the decoder predicts them
        and the checkpoint keeps them)."""
        return [f.to_record() for f in self.records()]

    def adopt(self, recorded) -> None:
        """Loading a checkpoint: take the factors its arguments record (``recorded``, as they hold them), in its order
        (the F- lines follow it), their dictionaries from the data directory checked against the recorded ones (a
        checkpoint trained before the records were typed holds a signature string: read as well).

        Raises:
            StreamConfigError: ``--target-factors`` other than the checkpoint's, a dictionary that differs or is
                missing.
        """
        recorded = read_target_factors(recorded)
        names = [f.name for f in recorded]
        if self.loads_data and sorted(names) != sorted(self.names):
            raise StreamConfigError(f"--target-factors {','.join(self.names)}: the checkpoint was trained with "
                                    f"{','.join(names) or 'none'} (leave the option out when generating)")
        self._load_dicts([n for n in names if n not in self.dicts])
        self.names = names
        current = {f.name: f for f in self.records()}
        for factor in recorded:
            if current[factor.name] != factor:
                raise StreamConfigError(f"the dictionary of target factor {factor.name!r} differs from the one the "
                                        f"checkpoint was trained with ({factor.size} types vs "
                                        f"{current[factor.name].size}): use the training data's "
                                        f"dict.{target_stream(factor.name)}.txt")

    def word_scheme(self, settings) -> str:
        """How the target's subwords join into the words of the F- lines: the annotation ``settings``' scheme (the
        checkpoint's, else the data's ``annotation.json``), else the target dictionary's pieces (``@@`` ends:
        ``bpe``; ``▁`` starts: ``spm``; neither: ``none``, one word per piece).

        Raises:
            StreamConfigError: no settings, and a dictionary with pieces of both kinds.
        """
        if settings is not None:
            return settings.subword
        if self._pieces_scheme is None:
            from syntax_nmt.annotate.subwords import scheme_of_pieces

            try:
                self._pieces_scheme = scheme_of_pieces(self.tgt_dict.symbols[self.tgt_dict.nspecial:])
            except ValueError as e:
                raise StreamConfigError(f"target factors: {e}; the F- lines need the words of each hypothesis: "
                                        f"binarize with syntax-nmt-binarize (its annotation.json records the "
                                        f"subword scheme)") from None
        return self._pieces_scheme

    def predict(self, model, sample, hypos, settings=None) -> List[Dict[str, List[str]]]:
        """The target factors ``model`` predicts for each sentence's best hypothesis (name -> one tag per word: the
        tag predicted at its first subword, words as ``--remove-bpe`` joins them; ``settings``: the annotation
        settings, for :meth:`word_scheme`), as its decoding computed them
        (:meth:`~syntax_nmt.models.modules.target_factors.FactoredTransformerDecoder.predict_factors`)."""
        from fairseq.data import data_utils

        from syntax_nmt.annotate.subwords import word_starts

        best = [h[0]["tokens"] for h in hypos]
        tokens = data_utils.collate_tokens(best, self.tgt_dict.pad(), self.tgt_dict.eos())
        encoder_out = model.encoder.forward_torchscript(sample["net_input"])
        predicted = model.decoder.predict_factors(encoder_out, tokens.to(sample["net_input"]["src_tokens"].device))
        scheme = self.word_scheme(settings)
        out = []
        for i, toks in enumerate(best):
            pieces = [self.tgt_dict[int(k)] for k in toks[:-1]]  # the final EOS has no tag
            starts = word_starts(pieces, scheme)
            out.append({name: [self.dicts[name][int(k)] for k, s in
                               zip(predicted[name][i, :len(pieces)].tolist(), starts) if s]
                        for name in self.names})
        return out

    def attach(self, model, sample, hypos, ids: Sequence[int], settings=None, file: Optional[TextIO] = None) -> None:
        """Leave each best hypothesis's factors in it (``hypos[i][0]["factors"]``, :meth:`predict`) and, when
        :attr:`prints_lines`, print them: ``F-ID<TAB>NAME<TAB>tags`` on ``file`` (default: the standard output; the
        task gives fairseq-generate's own, that of ``--results-path``) for each sentence (``ids``,
        as fairseq numbers it) and factor, one tag per word of the hypothesis (the words of fairseq-generate's
        ``--remove-bpe`` H line): a line type of its own, beside the H-/D- lines (``grep ^H`` and sacreBLEU scoring
        ignore it; ``syntax-nmt-evaluate factors`` scores it against a parser)."""
        for h, factors in zip(hypos, self.predict(model, sample, hypos, settings)):
            h[0]["factors"] = factors
        if self.prints_lines:
            for sid, h in zip(ids, hypos):
                for name, tags in h[0]["factors"].items():
                    print(f"F-{sid}\t{name}\t{' '.join(tags)}", file=file, flush=False)
