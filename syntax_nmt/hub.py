"""Python hub for syntax models: translate raw text, annotated on the fly like the training data.

Example::

    from syntax_nmt import SyntaxTransformerModel

    m = SyntaxTransformerModel.from_pretrained("checkpoints", checkpoint_file="checkpoint_best.pt",
                                               data_name_or_path="data-bin")
    m.translate("The old teacher saw a small dog .")          # one sentence -> str
    m.translate(["First sentence .", "Second one ."], beam=4)  # batched: one nlp.pipe call
    m.score(["The dog sleeps ."], ["Der Hund schläft ."])      # log-probabilities of given targets
    m.translate_conllu(open("input.conllu").read())            # bring your own parse
    m.parse("The old teacher saw a small dog .")               # LISA: the parse its own head predicts
    m.cuda()                                                   # spaCy stays on the CPU

A model that reads no annotated stream at inference (LISA without ``--lisa-inject-parse``) translates with no parser
loaded: its raw input is only Moses-processed (when the settings record it) and segmented as recorded
(``source_parse="auto"``, the default; ``"always"`` parses it anyway, ``"never"`` refuses a model that needs the
parse).

:class:`SyntaxHubInterface` is fairseq's ``GeneratorHubInterface`` whose ``encode``
annotates (parse, escape, segment, align streams) with the settings recorded in the
checkpoint, through the task's :meth:`~syntax_nmt.tasks.syntax_translation.SyntaxTranslationTask.annotate_lines`;
``generate``, beam options, ``.cuda()``/``.half()`` are fairseq's.
"""

import os
import warnings
from collections.abc import Iterable, Mapping
from typing import List, Optional, Sequence, Tuple, Union

import torch
from fairseq import hub_utils, utils
from fairseq.data.data_utils import post_process

#: Keyword arguments of :func:`from_pretrained` that configure the annotation (not fairseq overrides).
ANNOTATION_KWARGS = {"annotate_parser_model": "parser_model", "annotate_spacy_model": "spacy_model",
                     "annotate_subword_model": "subword_model", "annotation_settings_file": "settings_file"}
#: Keyword argument of :func:`from_pretrained` that says how raw text gets its annotation (the task's
#: ``--source-parse``; applied once the model is loaded, so checkpoints from before the option take it too)
SOURCE_PARSE_KWARG = "source_parse"
#: How the subword scheme of the annotation settings is undone on the output.
POST_PROCESS = {"bpe": "subword_nmt", "spm": "sentencepiece"}


def _bytes_hint(value) -> str:
    return ": decode it first (e.g. data.decode('utf-8'))" if isinstance(value, (bytes, bytearray)) else ""


def raw_sentences(sentences, method: str, what: str = "sentences") -> Tuple[List[str], bool]:
    """``(list of str, whether one str was given)`` of a hub method's raw-text argument.

    Raises:
        TypeError: at the API boundary, naming what is accepted (a str or a list of str), for
            ``None``, bytes, a number... or a list with such an item (named by its index).
    """
    if isinstance(sentences, str):
        return [sentences], True
    if sentences is None or isinstance(sentences, (bytes, bytearray, Mapping)) or not isinstance(sentences, Iterable):
        raise TypeError(f"{method}() takes {what} as a str or a list of str, got {type(sentences).__name__}"
                        f"{_bytes_hint(sentences)}")
    items = list(sentences)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{method}() takes {what} as a str or a list of str, but item {i} is "
                            f"{type(item).__name__}{_bytes_hint(item)}")
    return items, False


class SyntaxHubInterface(hub_utils.GeneratorHubInterface):
    """fairseq's hub interface for ``syntax_translation`` models; raw inputs are annotated on the fly.

    Source sentences are raw text as the training source was before ``syntax-nmt-annotate``
    (or, with ``--pretokenized`` data, tokenized the same way; the WMT recipe's Moses
    tokenization is applied here when the settings record it). fairseq's ``tokenizer``/``bpe``
    options, if given, only post-process the output (the annotation settings decide the input).
    """

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        task.factors.prints_lines = False  # a model with target factors: its hypotheses carry them instead

    def factors(self, sentences: Union[str, List[str]], beam: int = 5, **kwargs):
        """The target factors of the best translation of each raw sentence, name -> one tag per word (a dict for a
        str, a list of them for a list); a model without target factors gives empty dicts."""
        items, single = raw_sentences(sentences, "factors")
        out = [hypos[0].get("factors", {}) for hypos in self.generate(self._annotate(items), beam, **kwargs)]
        return out[0] if single else out

    def _annotate(self, lines: Optional[List[str]], **kwargs) -> List[torch.LongTensor]:
        """The task's ``annotate_lines``; its messages' "input line N" is the N-th sentence of this
        call (fairseq-interactive counts on across its buffers, a hub call starts again)."""
        self.task.annotator.lines_seen = 0
        return self.task.annotate_lines(lines, **kwargs)

    def encode(self, sentence: str) -> torch.LongTensor:
        """Annotate and binarize one raw sentence (the tensor carries its streams)."""
        if not isinstance(sentence, str):
            raise TypeError(f"encode() takes one raw sentence as a str, got {type(sentence).__name__}"
                            f"{_bytes_hint(sentence)}")
        return self._annotate([sentence])[0]

    def encode_batch(self, sentences: Sequence[str]) -> List[torch.LongTensor]:
        """Annotate a batch of raw sentences with one ``nlp.pipe`` call."""
        return self._annotate(raw_sentences(sentences, "encode_batch")[0])

    def translate(self, sentences: Union[str, List[str]], beam: int = 5, verbose: bool = False, **kwargs):
        """Translate raw text: a str for a str, a list for a list (fairseq's, with its arguments checked)."""
        return self._sample("translate", sentences, beam, verbose, **kwargs)

    def sample(self, sentences: Union[str, List[str]], beam: int = 1, verbose: bool = False, **kwargs):
        return self._sample("sample", sentences, beam, verbose, **kwargs)

    def _sample(self, method: str, sentences, beam: int, verbose: bool, **kwargs):
        items, single = raw_sentences(sentences, method)
        batched_hypos = self.generate(self._annotate(items), beam, verbose, **kwargs)
        out = [self.decode(hypos[0]["tokens"]) for hypos in batched_hypos]
        return out[0] if single else out

    def generate(self, tokenized_sentences, *args, **kwargs):
        """fairseq's; one annotated sentence (a 1-D tensor from :meth:`encode`) keeps its streams."""
        with warnings.catch_warnings():
            # fairseq's batch iterator asks for pinned memory, which torch refuses with a warning on a CPU
            warnings.filterwarnings("ignore", message=".*pin_memory.*")
            if torch.is_tensor(tokenized_sentences) and tokenized_sentences.dim() == 1:
                return super().generate([tokenized_sentences], *args, **kwargs)[0]
            return super().generate(tokenized_sentences, *args, **kwargs)

    def translate_conllu(self, conllu: Union[str, Sequence], lines: Optional[Sequence[str]] = None,
                         beam: int = 5, **kwargs) -> List[str]:
        """Translate sentences whose parse the caller brings (any parser, CoNLL-U).

        Args:
            conllu: CoNLL-U text (one block per sentence), or a list of
                :class:`~syntax_nmt.syntax.conllu.Sentence`.
            lines: the raw lines the blocks parse (checked word by word, as ``--backend conllu``
                checks ``--source``; empty lines have no block); default: the blocks' words.
            beam, kwargs: as :meth:`translate`.

        Returns:
            One translation per line (per block without ``lines``).
        """
        import io

        from syntax_nmt.syntax.conllu import read_conllu

        from syntax_nmt.syntax.conllu import Sentence

        if isinstance(conllu, str):
            sentences = list(read_conllu(io.StringIO(conllu), "<conllu>"))
        elif isinstance(conllu, Iterable) and not isinstance(conllu, (bytes, bytearray, Mapping)):
            sentences = list(conllu)
            bad = next((i for i, x in enumerate(sentences) if not isinstance(x, Sentence)), None)
            if bad is not None:
                raise TypeError(f"translate_conllu() takes CoNLL-U text (a str) or a list of Sentence, but item {bad} "
                                f"is {type(sentences[bad]).__name__}")
        else:
            raise TypeError(f"translate_conllu() takes CoNLL-U text (a str) or a list of Sentence, got "
                            f"{type(conllu).__name__}{_bytes_hint(conllu)}")
        if lines is not None:
            lines = raw_sentences(lines, "translate_conllu", "lines")[0]
        tokens = self._annotate(lines, conllu=iter(enumerate(sentences, 1)))
        return [self.decode(hypos[0]["tokens"]) for hypos in self.generate(tokens, beam, **kwargs)]

    def parse(self, sentences: Union[str, List[str]]):
        """The parse of each raw sentence that the model predicts (LISA's parse head; no decoding, one encoder pass
        per batch; see :mod:`syntax_nmt.tasks.source_parse`).

        Returns:
            A :class:`~syntax_nmt.syntax.conllu.Sentence` for a str, a list of them for a list: ``words`` (the
            source subwords joined, as the model saw them), ``heads`` (1-based, 0 at the root), no tags or labels
            (``_``); ``syntax_nmt.syntax.conllu.format_conllu`` writes one as CoNLL-U.

        Raises:
            ValueError: the model predicts no parse (only ``--syntax-attention lisa`` has a parse head).
        """
        items, single = raw_sentences(sentences, "parse")
        tokens = self._annotate(items)
        out = [None] * len(tokens)
        model = self.models[0]
        with torch.no_grad():
            for batch in self._build_batches(tokens, skip_invalid_size_inputs=False):
                batch = utils.apply_to_sample(lambda t: t.to(self.device), batch)
                for i, sentence in zip(batch["id"].tolist(), self.task.source_parses(model, batch["net_input"])):
                    out[i] = sentence
        return out[0] if single else out

    def score(self, sentences: Union[str, List[str]], targets: Union[str, List[str]] = None, **kwargs):
        """Score target sentences given raw source sentences (fairseq's ``score`` scores the
        source as a language model would, which means nothing for translation).

        Args:
            sentences: raw source sentences.
            targets: their targets, tokenized as the training target was (the subword model of
                the annotation segments them).

        Returns:
            fairseq's hypothesis dict per pair: ``tokens``, ``score`` (mean log-probability,
            natural log), ``positional_scores``...
        """
        sentences, single = raw_sentences(sentences, "score")
        targets, _ = raw_sentences([targets] if single and isinstance(targets, str) else targets, "score", "targets")
        if len(targets) != len(sentences):
            raise ValueError("score(sentences, targets) needs one target per source sentence")
        if single:
            return self.score(sentences, targets, **kwargs)[0]
        tokens = self._annotate(sentences, targets=targets)
        return [hypos[0] for hypos in self.generate(tokens, score_reference=True, **kwargs)]

    def remove_bpe(self, sentence: str) -> str:
        """fairseq's ``bpe`` if one was given, else undo the annotation's subword scheme."""
        if self.bpe is not None:
            return self.bpe.decode(sentence)
        scheme = self.task.annotator.settings.subword
        return post_process(sentence, POST_PROCESS[scheme]) if scheme in POST_PROCESS else sentence


def from_pretrained(model_name_or_path: str, checkpoint_file: str = "model.pt", data_name_or_path: str = ".",
                    archive_map=None, **kwargs) -> SyntaxHubInterface:
    """Load a checkpoint (ensemble: ``a.pt:b.pt``) as a :class:`SyntaxHubInterface`.

    Args:
        model_name_or_path: directory (or archive) holding the checkpoint(s).
        checkpoint_file: checkpoint file name(s) in it, ``:``-separated for an ensemble.
        data_name_or_path: the data directory with the dictionaries (``dict.*.txt``); relative
            to the model directory if it starts with ``.``.
        kwargs: fairseq argument overrides (``beam``, ``max_len_b``...), plus
            ``annotate_parser_model`` (older name: ``annotate_spacy_model``), ``annotate_subword_model``,
            ``annotation_settings_file``, ``source_parse`` (the options of the same name of fairseq-interactive).
    """
    options = {ANNOTATION_KWARGS[k]: kwargs.pop(k) for k in list(kwargs) if k in ANNOTATION_KWARGS}
    source_parse = kwargs.pop(SOURCE_PARSE_KWARG, None)
    # the plugin as imported now, wherever the checkpoint was trained from (fairseq refuses two
    # packages named syntax_nmt)
    kwargs.setdefault("user_dir", os.path.dirname(os.path.abspath(__file__)))
    x = hub_utils.from_pretrained(model_name_or_path, checkpoint_file, data_name_or_path, archive_map=archive_map,
                                  **kwargs)
    if options:
        x["task"].set_annotation_options(**options)
    if source_parse is not None:
        x["task"].set_source_parse(source_parse)
    return SyntaxHubInterface(x["args"], x["task"], x["models"])

