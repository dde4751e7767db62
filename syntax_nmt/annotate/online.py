"""In-memory annotation of raw input lines, exactly as ``syntax-nmt-annotate`` annotated the training data.

Used by the ``syntax_translation`` task to translate raw text (``fairseq-interactive``,
the Python hub, ``syntax-nmt-analyze attention --text``). Given the annotation settings
recorded with the data and the model (``annotation.json``, an
:class:`~syntax_nmt.annotate.settings.AnnotationSettings`), :class:`OnlineAnnotator` runs, on
lines held in memory, the *same* functions as the annotation job:

1. the Moses normalization and tokenization the WMT recipe applied before annotating
   (only when the settings record one, ``"moses"``);
2. :func:`~syntax_nmt.annotate.textio.normalize` (what ``read_lines`` does to every line),
   after :func:`~syntax_nmt.annotate.textio.replace_lone_surrogates` (an invalid byte of the
   input, decoded by fairseq-interactive as a lone surrogate, becomes U+FFFD with a warning
   naming the line, instead of ending the session inside spaCy);
3. the line policies: an empty line stays empty; a line over ``max_words`` words is
   blanked (``on_long``; at inference ``error`` cannot stop a session, so it blanks too,
   with a warning); a line longer than the parser takes (spaCy's ``max_length``) is blanked;
4. the recorded parser backend (:meth:`~syntax_nmt.annotate.backends.base.ParserBackend.for_raw_text`;
   spaCy: one ``nlp.pipe`` call per batch of lines, with the recorded tokenization, multi-root
   policy...), or the parse a user brings as CoNLL-U (:meth:`OnlineAnnotator.annotate_conllu`,
   checked word for word against the line like ``--backend conllu``), or no parser at all for a model
   that reads no stream at inference (:meth:`OnlineAnnotator.segment`: the words are the tokens of a
   pre-tokenized line, else what the recorded parser's tokenizer alone makes of it);
5. :func:`~syntax_nmt.annotate.pipeline.make_record` and
   :func:`~syntax_nmt.annotate.pipeline.render` (escaping, subword segmentation with the
   recorded model, :func:`~syntax_nmt.annotate.align.align_streams`);
6. ``max_subwords``: a line with more subwords than that is blanked.

Each input line gives one :class:`Annotated` line: the subword source line and one
line per stream, as they would appear in ``P.en``, ``P.pos``... No fairseq import.
"""

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from syntax_nmt.constants import DATA_SETTINGS_FILE
from syntax_nmt.data.streams import STREAMS
from syntax_nmt.syntax.conllu import Sentence, open_conllu, read_conllu

from .backends import get_backend
from .parsed import check_tree, empty_sentence, resolve_roots
from .pipeline import make_record, output_names, render
from .settings import AnnotationSettings, MosesSettings, settings_from_args
from .subwords import ESCAPE_VERSION, file_sha256, load_segmenter
from .textio import InputError, normalize, replace_lone_surrogates

logger = logging.getLogger("syntax_nmt.annotate.online")


def ensure_data_settings(data_dir: str, annotate_argv: Sequence[str]) -> str:
    """Write ``DATA/annotation.json`` from a ``syntax-nmt-annotate`` argument list, unless
    ``syntax-nmt-binarize`` already copied one there (used by the demo, bench and tests)."""
    from .cli import build_parser, check_args

    path = os.path.join(data_dir, DATA_SETTINGS_FILE)
    if not os.path.exists(path):
        args = build_parser().parse_args([str(a) for a in annotate_argv])
        check_args(args)
        settings_from_args(args).write(path)
    return path


@dataclass
class Annotated:
    """One annotated input line, as ``syntax-nmt-annotate`` would have written it.

    Attributes:
        source: the subword source line (``P.en``).
        streams: ``{stream: line}`` for every stream of :data:`~syntax_nmt.data.streams.STREAMS`,
            each line with as many fields as ``source``.
        target: the subword target line, when a target was given (for scoring).
        note: why the line was blanked (empty ``source``), or None.
    """

    source: str
    streams: Dict[str, str]
    target: Optional[str] = None
    note: Optional[str] = None


def moses_preprocess(settings_moses: MosesSettings):
    """The sacremoses normalization + tokenization recorded in the settings, as a function of a line.

    Mirrors ``examples/wmt14_en_de/prepare.py``: ``MosesPunctNormalizer`` (control characters
    removed, as ``remove-non-printing-char.perl``) then ``MosesTokenizer.tokenize`` with the
    recorded ``aggressive_dash_splits`` and ``escape``.
    """
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    lang = settings_moses.lang
    norm = MosesPunctNormalizer(lang=lang, post_remove_control_chars=True) if settings_moses.normalize else None
    tok = MosesTokenizer(lang=lang)
    dash, escape = bool(settings_moses.aggressive_dash_splits), bool(settings_moses.escape)

    def apply(line: str) -> str:
        if norm is not None:
            line = norm.normalize(line)
        return tok.tokenize(line, aggressive_dash_splits=dash, return_str=True, escape=escape)

    return apply


class OnlineAnnotator:
    """Annotate raw lines in memory with recorded annotation settings.

    Args:
        settings: the annotation settings (:meth:`AnnotationSettings.read`, or a checkpoint's).
        parser_model: another name or path of the recorded parser's model (spaCy: of the same pipeline; default:
            the recorded one); with the settings of a backend that does not parse text (CoNLL-U), the backend that
            parses raw text in its place (spaCy) parses with this model.
        subword_model: another path of the same subword model (its SHA-256 must match the recorded one).
        batch_size: ``nlp.pipe`` batch size.
        gpu_id: GPU for spaCy (``-1``: CPU).
        spacy_model: the older name of ``parser_model``.

    Raises:
        ValueError: settings this version cannot apply, a subword model that is missing or differs
            from the recorded one (naming the setting and the option that overrides it).
    """

    def __init__(self, settings: AnnotationSettings, parser_model: Optional[str] = None,
                 subword_model: Optional[str] = None, batch_size: int = 256, gpu_id: int = -1,
                 spacy_model: Optional[str] = None):
        if parser_model and spacy_model and parser_model != spacy_model:
            raise ValueError(f"--annotate-parser-model {parser_model!r} and its older name --annotate-spacy-model "
                             f"{spacy_model!r} differ: give one")
        if settings.escape != ESCAPE_VERSION:
            raise ValueError(f"annotation setting escape={settings.escape!r}: this syntax-nmt escapes words with "
                             f"rules {ESCAPE_VERSION!r}; annotate and train again, or use the syntax-nmt version that "
                             f"annotated the data")
        self.settings = settings
        self.parser_model = parser_model or spacy_model
        self.batch_size = batch_size
        self.gpu_id = gpu_id
        self.segmenter = self._segmenter(settings, subword_model)
        self._moses = moses_preprocess(settings.moses) if settings.moses else None
        self._backend = None
        self._tokenizer = None
        self.lines_seen = 0

    @staticmethod
    def _segmenter(settings: AnnotationSettings, override: Optional[str]):
        scheme = settings.subword
        if scheme == "none":
            return load_segmenter("none")
        path = override or settings.subword_model
        hint = "pass the path of the same model with --annotate-subword-model (hub: annotate_subword_model=...)"
        if not path or not os.path.isfile(path):
            raise ValueError(f"annotation setting subword_model: {path!r} does not exist; {hint}")
        expected = settings.subword_model_sha256
        if expected and file_sha256(path) != expected:
            raise ValueError(f"annotation setting subword_model_sha256: {path} is not the subword model the data "
                             f"was annotated with (sha256 {file_sha256(path)[:12]}..., recorded {expected[:12]}...); "
                             f"{hint}")
        return load_segmenter(scheme, path)

    def _backend_class(self):
        backend = get_backend(self.settings.backend)
        if not backend.parses_text and self.parser_model and backend.raw_text_backend:
            backend = get_backend(backend.raw_text_backend)  # the data's parse came from elsewhere (CoNLL-U)
        return backend

    @property
    def backend(self):
        """The recorded parser (built on first use; a spaCy pipeline is loaded once per process)."""
        if self._backend is None:
            self._backend = self._backend_class().for_raw_text(self.settings, self.parser_model, self.batch_size,
                                                               self.gpu_id)
        return self._backend

    def words(self, texts: Sequence[str]) -> List[List[str]]:
        """The words of prepared lines (:meth:`prepare`) as the annotation split them, without parsing: the tokens of
        a pre-tokenized line; else the recorded parser's tokenizer alone
        (:meth:`~syntax_nmt.annotate.backends.base.ParserBackend.tokenizer_for_raw_text`, built on first use).

        Raises:
            ValueError: the line's words were the parser's and its backend cannot tokenize without parsing.
        """
        if self.settings.pretokenized:
            return [text.split(" ") if text else [] for text in texts]
        if self._tokenizer is None:
            self._tokenizer = self._backend_class().tokenizer_for_raw_text(self.settings, self.parser_model,
                                                                           self.batch_size)
        return self._tokenizer(texts)

    # -- line policies --------------------------------------------------------------------------------
    def prepare(self, line: str, moses: bool = True) -> Tuple[str, Optional[str]]:
        """A raw line as the annotation job reads it, and why it must be blanked (or None)."""
        if line.startswith("\ufeff"):  # a byte-order mark (read_lines drops it on the first line of a file)
            line = line[1:]
        if moses and self._moses is not None:
            line = self._moses(line)
        text = normalize(line)
        s = self.settings
        nwords = text.count(" ") + 1 if text else 0
        if s.max_words and nwords > s.max_words:
            return "", (f"{nwords} words, more than max_words={s.max_words} of the annotation "
                        f"(on_long={s.on_long}): translated as an empty line")
        return text, None

    def _valid(self, line: str, i: int) -> str:
        """``line`` (the ``i``-th of the current call) with its lone surrogates replaced, with a warning."""
        text, n = replace_lone_surrogates(line)
        if n:
            logger.warning("input line %d: %d undecodable character%s (invalid bytes, read as lone surrogates) "
                           "replaced by U+FFFD", self.lines_seen + i + 1, n, "" if n == 1 else "s")
        return text

    def _blank_long(self, out: Dict[str, List[str]], i: int, names: Sequence[str]) -> Optional[str]:
        limit = self.settings.max_subwords
        n = len(out[self.settings.src_lang][i].split())
        if limit and n > limit:
            for name in names:
                out[name][i] = ""
            return (f"{n} subwords, more than max_subwords={limit} of the annotation "
                    f"(on_long={self.settings.on_long}): translated as an empty line")
        return None

    def _finish(self, sentences: Iterable[Tuple[int, Sentence, object]], notes: Dict[int, str],
                targets: Optional[Sequence[str]], streams: bool = True) -> List[Annotated]:
        """Render parsed sentences with the pipeline's own functions (``streams=False``: sentences of words alone,
        whose :class:`Annotated` lines get no streams)."""
        src = self.settings.src_lang
        tgt_lang = "tgt" if targets is not None else None
        names = output_names(src, tgt_lang)
        records = []
        for k, sentence, blank in sentences:
            tgt = None if targets is None else ("" if blank else normalize(targets[k]))
            records.append(make_record(k + 1, sentence, tgt, blank))
        # the subword limit is applied below, with a note for the user, instead of by render (which
        # would blank silently, or stop on on_long=error: a session never stops)
        out, _ = render(records, self.segmenter, dataclasses.replace(self.settings, max_subwords=0), tgt_lang)
        result = []
        for i in range(len(records)):
            note = notes.get(i) or self._blank_long(out, i, names)
            if note:
                logger.warning("input line %d: %s", self.lines_seen + i + 1, note)
            result.append(Annotated(out[src][i], {name: out[name][i] for name in STREAMS} if streams else {},
                                    out[tgt_lang][i] if tgt_lang else None, note))
        self.lines_seen += len(records)
        return result

    # -- entry points ---------------------------------------------------------------------------------
    def annotate(self, lines: Sequence[str], targets: Optional[Sequence[str]] = None) -> List[Annotated]:
        """Parse, segment and align raw lines (one ``nlp.pipe`` call for up to 20,000 of them).

        Args:
            lines: raw source lines (no newline).
            targets: optional target lines, tokenized as the training target was (for scoring).

        Returns:
            One :class:`Annotated` per line, in order.
        """
        if targets is not None and len(targets) != len(lines):
            raise ValueError(f"{len(lines)} source lines but {len(targets)} target lines")
        texts, notes = [], {}
        for i, line in enumerate(lines):
            text, note = self.prepare(self._valid(line, i))
            max_chars = self.backend.max_chars
            if note is None and max_chars and len(text) > max_chars:
                text, note = "", (f"{len(text)} characters, more than {self.backend.max_chars_name} {max_chars}: "
                                  f"translated as an empty line")
            texts.append(text)
            if note:
                notes[i] = note
        parsed = self.backend.parse((i, text, i in notes) for i, text in enumerate(texts)) if texts else []
        return self._finish(parsed, notes, targets)

    def segment(self, lines: Sequence[str], targets: Optional[Sequence[str]] = None) -> List[Annotated]:
        """What :meth:`annotate` gives as source (and target) lines, without a parser: for a model that reads no
        stream at inference. The recorded Moses processing, normalization and line policies, the words
        (:meth:`words`), escaping and subword segmentation are the same, so the source line is the same; the
        :class:`Annotated` lines have no streams. A line longer than the recorded backend's limit (spaCy's default
        ``max_length``) is blanked as :meth:`annotate` blanks it.

        Args:
            lines: raw source lines (no newline).
            targets: optional target lines, tokenized as the training target was (for scoring).
        """
        if targets is not None and len(targets) != len(lines):
            raise ValueError(f"{len(lines)} source lines but {len(targets)} target lines")
        backend = self._backend_class()
        texts, notes = [], {}
        for i, line in enumerate(lines):
            text, note = self.prepare(self._valid(line, i))
            if note is None and backend.max_chars and len(text) > backend.max_chars:
                text, note = "", (f"{len(text)} characters, more than {backend.max_chars_name} {backend.max_chars}: "
                                  f"translated as an empty line")
            texts.append(text)
            if note:
                notes[i] = note
        sentences = ((i, words_sentence(words), i in notes) for i, words in enumerate(self.words(texts)))
        return self._finish(sentences, notes, targets, streams=False)

    def annotate_conllu(self, blocks: Iterator[Tuple[int, Sentence]], lines: Optional[Sequence[str]],
                        needed: Sequence[str] = STREAMS, source_name: str = "<conllu>") -> List[Annotated]:
        """Annotate with a parse the user brings, as ``syntax-nmt-annotate --backend conllu`` does.

        Args:
            blocks: ``(block_no, sentence)`` pairs, consumed one per non-empty line (shared
                across calls, so a CoNLL-U file can follow a stream of input lines).
            lines: the raw lines the blocks parse; each block's words are checked against its line
                (``pretokenized``: the tokens; raw: the characters). ``None``: the lines are the
                blocks' words (one line per block).
            needed: the streams the model reads; a CoNLL-U column they come from that is empty
                (``_``) is an error naming it.
            source_name: name of the CoNLL-U input in messages.

        Raises:
            InputError: blocks run out, or do not spell their line, or a needed column is empty.
        """
        from .backends.conllu_backend import ConlluBackend

        checker = ConlluBackend(source_name, "<input>", pretokenized=self.settings.pretokenized,
                                multi_root=self.settings.multi_root)
        notes, sentences = {}, []
        words_given = lines is None
        if words_given:
            lines = []
            for no, sentence in blocks:
                lines.append(" ".join(sentence.words))
                sentences.append((no, sentence))
            blocks = iter(sentences)
            sentences = []
        for i, line in enumerate(lines):
            text, note = self.prepare(self._valid(line, i), moses=not words_given)
            if not text:
                if note:  # over max_words: its block is consumed but not used
                    notes[i] = note
                    next(blocks, None)
                sentences.append((i, empty_sentence(), bool(note)))
                continue
            nxt = next(blocks, None)
            if nxt is None:
                raise InputError(f"{source_name} has no sentence block for input line {self.lines_seen + i + 1} "
                                 f"(one block per non-empty line)")
            no, sentence = nxt
            checker.check_block(no, sentence, self.lines_seen + i + 1, text)
            self._check_columns(sentence, needed, f"{source_name} sentence block {no}")
            try:
                check_tree(sentence)
            except ValueError as e:
                raise InputError(f"{source_name} sentence block {no}: {e}") from None
            sentences.append((i, resolve_roots(sentence, self.settings.multi_root), False))
        return self._finish(sentences, notes, None)

    def _check_columns(self, sentence: Sentence, needed: Sequence[str], where: str) -> None:
        columns = {"pos": ("UPOS", 4, sentence.upos) if self.settings.pos_tagset == "upos"
                   else ("XPOS", 5, sentence.xpos), "dep": ("DEPREL", 8, sentence.deprels)}
        for stream in needed:
            if stream in columns:
                name, col, values = columns[stream]
                if values and all(v in ("", "_") for v in values):
                    raise InputError(f"{where} has no {name} (column {col}), which the model's {stream!r} stream "
                                     f"needs (pos_tagset={self.settings.pos_tagset})")


def words_sentence(words: Sequence[str]) -> Sentence:
    """A :class:`Sentence` of ``words`` and no parse (every word a root, tags ``_``): what
    :meth:`OnlineAnnotator.segment` renders."""
    n = len(words)
    return Sentence(list(words), ["_"] * n, ["_"] * n, [0] * n, ["_"] * n)


def conllu_blocks(path: str) -> Iterator[Tuple[int, Sentence]]:
    """``(block_no, sentence)`` of a CoNLL-U file, streaming (1-based block numbers)."""
    with open_conllu(path) as f:
        yield from enumerate(read_conllu(f, path), 1)
