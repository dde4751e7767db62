"""spaCy parser backend (``--backend spacy``, the default): one source line -> one word-level :class:`Sentence`.

Raw text is tokenized by the pipeline's own tokenizer; with ``pretokenized=True`` the
line's space-separated tokens are kept as they are: the backend builds
``Doc(nlp.vocab, words=line.split(" "))`` itself and only the pipeline components (tagger,
parser...) run on it. With ``parser_unescape=True`` as well, the Doc is built from the
tokens' plain forms (:func:`syntax_nmt.annotate.unescape.parser_form`: Moses placeholders
such as ``@-@`` and escapes such as ``&apos;`` become ``-`` and ``'``), and the words of
the returned sentence are the input tokens again: only the parser sees the plain forms.
Whitespace tokens (``token.is_space``) are dropped; a word whose head was a dropped token
is re-attached to that token's nearest non-space ancestor (or becomes a root). spaCy's
``ROOT`` label is written as ``root``.

A line that spaCy splits into several sentences has several roots; this is resolved by
the ``--multi-root`` policy of :mod:`syntax_nmt.annotate.parsed`.

Components that the streams do not need (``ner``, ``lemmatizer``, text classifiers,
entity linkers, span categorizers) are excluded at load time for speed. Loaded pipelines
are cached per process (:func:`load_pipeline`); the backend never modifies them.
"""

import functools
import logging
import os
from collections import deque
from contextlib import nullcontext
from itertools import islice
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple

from syntax_nmt.syntax.conllu import Sentence

from ..parsed import check_tree, resolve_roots
from ..textio import InputError
from ..unescape import parser_forms
from .base import ParserBackend, register_backend

logger = logging.getLogger(__name__)

_UNUSED = ("ner", "lemmatizer", "textcat", "textcat_multilabel", "entity_linker", "entity_ruler", "spancat",
           "span_finder", "trainable_lemmatizer")


def _stamp(model: str):
    config = os.path.join(model, "config.cfg")
    return os.stat(config).st_mtime_ns if os.path.exists(config) else None


def load_pipeline(model: str, gpu_id: int = -1):
    """``spacy.load`` without the components the streams do not need, cached per process
    (keyed by name or path, the mtime of a path's ``config.cfg``, and the GPU).

    Raises:
        OSError: with installation hints if the pipeline cannot be found.
    """
    return _load_pipeline(model, gpu_id, _stamp(model))


@functools.lru_cache(maxsize=4)
def _load_pipeline(model: str, gpu_id: int, stamp):
    import spacy

    if gpu_id >= 0:
        spacy.require_gpu(gpu_id)
    try:
        return spacy.load(model, exclude=list(_UNUSED))
    except OSError as e:
        raise OSError(
            f"cannot load spaCy pipeline {model!r} ({e}). Install it with `python -m spacy download "
            f"{model}`, pass the path of a pipeline directory, or train a small one with "
            f"syntax-nmt-train-spacy."
        ) from None


def load_tokenizer(model: str):
    """The pipeline ``model`` with none of its components (every name its ``meta.json`` lists excluded at load
    time): its vocabulary and tokenizer, no tagger or parser weights. Cached per process like :func:`load_pipeline`.

    Raises:
        OSError: as :func:`load_pipeline`.
    """
    return _load_tokenizer(model, _stamp(model))


@functools.lru_cache(maxsize=4)
def _load_tokenizer(model: str, stamp):
    import spacy
    import spacy.util

    try:
        path = model if os.path.isdir(model) else str(spacy.util.get_package_path(model))
        meta = spacy.util.load_meta(os.path.join(path, "meta.json"))
    except (OSError, ValueError, ModuleNotFoundError):
        meta = {}
    components = list(dict.fromkeys([*(meta.get("components") or []), *(meta.get("pipeline") or []), *_UNUSED]))
    if not components:  # no meta to tell them: the whole pipeline (its tokenizer is the same)
        return load_pipeline(model)
    try:
        return spacy.load(model, exclude=components)
    except OSError as e:
        raise OSError(f"cannot load spaCy pipeline {model!r} ({e}). Install it with `python -m spacy download "
                      f"{model}` or pass the path of a pipeline directory.") from None


def doc_to_sentence(doc) -> Sentence:
    """Convert a parsed spaCy ``Doc`` into a :class:`Sentence`, dropping space tokens.

    Reads all attributes with one ``Doc.to_array`` call (no per-token Python objects).
    """
    from spacy.attrs import DEP, HEAD, IS_SPACE, ORTH, POS, SPACY, TAG

    if not len(doc):
        return Sentence([], [], [], [], [])
    strings = doc.vocab.strings
    orth, pos, tag, dep, is_space, spacy_ = zip(*doc.to_array([ORTH, POS, TAG, DEP, IS_SPACE, SPACY]).tolist())
    head = [i + r for i, r in enumerate(doc.to_array(HEAD).astype("int64").tolist())]  # absolute, root = self
    keep = range(len(doc))
    if any(is_space):
        for i in keep:  # re-attach to the nearest non-space ancestor
            while is_space[head[i]] and head[head[i]] != head[i]:
                head[i] = head[head[i]]
        keep = [i for i in keep if not is_space[i]]
    index = {i: k + 1 for k, i in enumerate(keep)}  # spaCy position -> 1-based word id
    deps = [strings[dep[i]] for i in keep]
    return Sentence(
        words=[strings[orth[i]] for i in keep],
        upos=[strings[pos[i]] for i in keep],
        xpos=[strings[tag[i]] for i in keep],
        heads=[0 if head[i] == i or is_space[head[i]] else index[head[i]] for i in keep],
        deprels=["root" if d == "ROOT" else d for d in deps],
        space_after=[bool(spacy_[i]) for i in keep],
    )


def pipeline_dir(model: str) -> Optional[str]:
    """The directory ``spacy.load(model)`` reads: the path itself, or the installed package's folder; None where
    there is none (spaCy would not load it either)."""
    if os.path.isdir(model):
        return os.path.abspath(model)
    try:
        import spacy.util

        return str(spacy.util.get_package_path(model))
    except (ImportError, OSError, ValueError):  # ModuleNotFoundError is an ImportError
        return None


def pipeline_record(model: str) -> Optional[Dict[str, str]]:
    """What produced a parse, as the annotation records it (``spacy_pipeline``): the pipeline's ``name``
    (``LANG_NAME`` of its ``meta.json``) and ``version``, and ``sha256``, a hash of every file of its directory
    (:func:`pipeline_dir`; sorted relative paths, then contents; ``__pycache__`` left out). A pipeline retrained or
    upgraded at the same name or path has another hash. Computed once per process and pipeline while its files
    keep their sizes and times. None where the pipeline cannot be found."""
    path = pipeline_dir(model)
    if path is None:
        return None
    stats = []
    for d, dirs, files in os.walk(path):
        dirs[:] = [x for x in dirs if x != "__pycache__"]  # made by importing an installed pipeline's package
        for f in files:
            full = os.path.join(d, f)
            st = os.stat(full)
            stats.append((os.path.relpath(full, path).replace(os.sep, "/"), st.st_size, st.st_mtime_ns))
    return dict(_pipeline_record(path, tuple(sorted(stats))))


@functools.lru_cache(maxsize=8)
def _pipeline_record(path: str, stats: Tuple) -> Tuple:
    import hashlib
    import json

    digest = hashlib.sha256()
    for rel, _, _ in stats:
        digest.update(rel.encode("utf-8") + b"\0")
        with open(os.path.join(path, rel), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    meta = {}
    if os.path.isfile(os.path.join(path, "meta.json")):
        with open(os.path.join(path, "meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
    name = f"{meta.get('lang', '')}_{meta.get('name', '')}".strip("_") or os.path.basename(path)
    return tuple(sorted({"name": name, "version": str(meta.get("version")), "sha256": digest.hexdigest()}.items()))


def recorded_model(name: Optional[str]) -> Optional[str]:
    """The pipeline as the settings record it: a name as it is, a directory by its absolute path."""
    if name is None:
        return None
    if os.path.isdir(name) or os.sep in name or name.startswith("."):
        return os.path.abspath(name)
    return name


@register_backend("spacy")
class SpacyBackend(ParserBackend):
    """Parse lines with a spaCy pipeline.

    Args:
        model: installed pipeline name (``en_core_web_sm``) or path to a pipeline directory
            (e.g. one written by ``syntax-nmt-train-spacy``), or an ``nlp`` object.
        pretokenized: keep the line's space-separated tokens as words.
        batch_size: ``nlp.pipe`` batch size.
        n_process: ``nlp.pipe`` worker processes (CPU only; forced to 1 on GPU).
        gpu_id: ``-1`` for CPU, else the GPU to run on (``spacy.require_gpu``).
        multi_root: ``forest`` or ``attach`` (see :mod:`~syntax_nmt.annotate.parsed`).
        source_name: file name used in error messages.
        parser_unescape: with ``pretokenized``, show the parser the plain form of each token
            (see :mod:`~syntax_nmt.annotate.unescape`); the sentence keeps the tokens.
        pos_tagset: the tags the ``pos`` stream is made of (``upos`` or ``xpos``): a pipeline
            that gives none of them to the first non-empty line (no tagger, morphologizer or
            tag-to-UPOS mapping) is warned about, as one without a parser is.
    """

    #: spaCy's default ``nlp.max_length``: its tokenizer and parser refuse longer texts (an instance
    #: has its pipeline's).
    max_chars = 1_000_000
    max_chars_name = "spaCy's max_length"
    #: lines parsed in one spaCy memory zone (one ``nlp.pipe`` call) per process (see :meth:`parse`)
    ZONE_LINES = 20_000
    #: its recorded setting (:meth:`recorded_settings`): the pipeline, replaceable at inference
    model_setting = "spacy_model"

    @classmethod
    def add_args(cls, group) -> None:
        from syntax_nmt.io_guard import reads

        reads(group.add_argument("--spacy-model", metavar="NAME_OR_PATH",
                                 help="spaCy pipeline name or directory (default: en_core_web_sm for en, else "
                                 "<lang>_core_news_sm); syntax-nmt-train-spacy trains a small one"), "dir",
              name_or_path=True)

    @classmethod
    def check_args(cls, args) -> None:
        super().check_args(args)
        if not args.spacy_model:
            args.spacy_model = "en_core_web_sm" if args.src_lang == "en" else f"{args.src_lang}_core_news_sm"

    @classmethod
    def recorded_settings(cls, args) -> Dict[str, Any]:
        """The pipeline's name or path (``spacy_model``), and what it is (``spacy_pipeline``: name, version and a
        hash of its files, :func:`pipeline_record`): a pipeline replaced at the same path is another parser."""
        record = pipeline_record(args.spacy_model) if args.spacy_model else None
        return {"spacy_model": recorded_model(args.spacy_model), **({"spacy_pipeline": record} if record else {})}

    @classmethod
    def from_args(cls, args) -> "SpacyBackend":
        return cls(args.spacy_model, pretokenized=args.pretokenized, batch_size=args.batch_size,
                   n_process=args.n_process, gpu_id=args.gpu_id, multi_root=args.multi_root, source_name=args.source,
                   parser_unescape=args.parser_unescape, pos_tagset=args.pos_tagset)

    @classmethod
    def for_raw_text(cls, settings, model=None, batch_size=256, gpu_id=-1) -> "SpacyBackend":
        return cls(model or settings.extra["spacy_model"], pretokenized=settings.pretokenized, batch_size=batch_size,
                   gpu_id=gpu_id, multi_root=settings.multi_root, source_name="<input>",
                   parser_unescape=settings.parser_unescape, pos_tagset=settings.pos_tagset)

    @classmethod
    def tokenizer_for_raw_text(cls, settings, model=None, batch_size=256):
        """spaCy's tokenizer alone, loaded without the pipeline's components (:func:`load_tokenizer`): the words
        :meth:`parse` gives a raw line (whitespace tokens dropped), without tagging or parsing it."""
        nlp = load_tokenizer(model or settings.extra["spacy_model"])

        def tokenize(texts):
            return [[t.text for t in doc if not t.is_space] for doc in nlp.tokenizer.pipe(texts, batch_size=batch_size)]

        return tokenize

    def __init__(self, model, pretokenized=False, batch_size=256, n_process=1, gpu_id=-1,
                 multi_root="forest", source_name="<source>", parser_unescape=False, pos_tagset="upos"):
        if parser_unescape and not pretokenized:
            raise ValueError("parser_unescape needs pretokenized input")
        if gpu_id >= 0 and n_process != 1:
            logger.warning("--n-process %d ignored on GPU (spaCy multiprocessing is CPU only)", n_process)
            n_process = 1
        nlp = load_pipeline(model, gpu_id) if isinstance(model, str) else model
        if "parser" not in nlp.pipe_names:
            logger.warning("spaCy pipeline %s has no parser: every word will be a root", nlp.pipe_names)
        self.nlp = nlp
        self.pretokenized = pretokenized
        self.parser_unescape = parser_unescape
        self.batch_size = batch_size
        self.n_process = n_process
        self.multi_root = multi_root
        self.source_name = source_name
        self.max_chars = nlp.max_length
        self.pos_tagset = pos_tagset
        self._tags_checked = False

    def _check_tags(self, sentence: Sentence) -> None:
        """Warn (once) if the first non-empty sentence has no tag of ``pos_tagset`` at all: the
        pipeline tags nothing, and the ``pos`` stream would be ``_`` everywhere."""
        if self._tags_checked or not sentence.words:
            return
        self._tags_checked = True
        tags = sentence.upos if self.pos_tagset == "upos" else sentence.xpos
        if not any(t and t != "_" for t in tags):
            logger.warning("spaCy pipeline %s assigns no %s tags (%s): every POS tag will be '_'", self.nlp.pipe_names,
                           self.pos_tagset, "no tagger" if self.pos_tagset == "xpos" else
                           "no morphologizer, nor a tagger with an attribute_ruler mapping its tags to UPOS")

    def parse(self, lines: Iterable[Tuple[int, str, object]]) -> Iterator[Tuple[int, Sentence, object]]:
        """Parse ``(lineno, text, context)`` items, in order (one ``nlp.pipe`` call per :attr:`ZONE_LINES` of them,
        each in a spaCy memory zone, so memory does not grow with the number of lines).

        Args:
            lines: normalized lines with their 1-based line number and any context object
                (passed through untouched). Empty text gives an empty sentence.

        Yields:
            ``(lineno, sentence, context)`` for every input item, in input order.
        """
        from spacy.tokens import Doc

        pending = deque()  # (lineno, context, tokens or None) of texts handed to spaCy, in order

        def texts(items):
            for lineno, text, ctx in items:
                if len(text) > self.max_chars:
                    raise InputError(
                        f"{self.source_name}:{lineno}: line has {len(text)} characters, more than spaCy's "
                        f"max_length {self.max_chars}; use --max-words to blank such lines"
                    )
                if self.pretokenized:
                    words = text.split(" ") if text else []
                    forms = parser_forms(words) if self.parser_unescape else words
                    # the words are checked against the parse always, not only when the parser saw other forms: a
                    # pipeline that merges or splits words would misalign every tag after them
                    pending.append((lineno, ctx, words))
                    yield Doc(self.nlp.vocab, words=forms, spaces=[True] * (len(words) - 1) + [False] * bool(words))
                else:
                    pending.append((lineno, ctx, None))
                    yield text

        # One nlp.pipe per block of ZONE_LINES lines (times n_process), inside a spaCy memory zone: the strings and
        # lexemes of the block's new words (every name, number and typo of millions of lines) are freed at its end;
        # without it the string store grows with the corpus (hundreds of bytes per new string, GBs over WMT14).
        # With n_process > 1 each block's pipe starts its workers anew, so theirs are freed too.
        lines = iter(lines)
        block = self.ZONE_LINES * max(1, self.n_process)
        while True:
            items = list(islice(lines, block))
            if not items:
                return
            zone = self.nlp.memory_zone() if hasattr(self.nlp, "memory_zone") else nullcontext()
            with zone:
                yield from self._parse_block(items, texts, pending)

    def _parse_block(self, items, texts, pending):
        # nlp.pipe yields docs in input order (also with n_process > 1); contexts are kept
        # here rather than with as_tuples, which a component returning a new Doc would drop.
        for doc in self.nlp.pipe(texts(items), batch_size=self.batch_size, n_process=self.n_process):
            lineno, ctx, tokens = pending.popleft()
            sentence = doc_to_sentence(doc)
            if tokens is not None:  # pre-tokenized: the words are the input tokens (the parser may see plain forms)
                if len(tokens) != len(sentence.words):
                    raise InputError(f"{self.source_name}:{lineno}: the spaCy pipeline changed the number of "
                                     f"pre-tokenized words ({len(tokens)} -> {len(sentence.words)})")
                sentence.words = list(tokens)
            self._check_tags(sentence)
            try:
                check_tree(sentence)
            except ValueError as e:
                raise InputError(f"{self.source_name}:{lineno}: spaCy produced an invalid tree: {e}") from None
            yield lineno, resolve_roots(sentence, self.multi_root), ctx
