"""The annotation job behind ``syntax-nmt-annotate``: scan, parse, (learn), segment, merge.

Phases, all resumable through :class:`~syntax_nmt.annotate.chunks.ChunkStore`:

1. **Scan** (cheap, before any parsing): count source and target lines (different counts
   are an error naming both files), find empty and over-long lines, validate UTF-8.
2. **Parse** the chunks of this shard (``k % num_shards == shard_id``) that have no parse
   file yet, streaming all of them through one backend call (spaCy: one ``nlp.pipe`` per 20,000 lines, each in
   a memory zone that frees the strings of their new words). With a
   given subword model (or ``--subword none``) each chunk is segmented and written right
   after it is parsed.
3. **Finalize**, done by whichever run finds every chunk of every shard parsed (and takes
   the lock): learn the joint subword model if ``--learn-subword`` (it needs the whole
   parsed corpus), segment the chunks not yet segmented with the current model and
   options, concatenate them into ``P.{src}``, ``P.{tgt}``, ``P.pos`` ... and remove the
   chunk directory unless ``--keep-chunks``.

Line policy: the outputs always have exactly one line per source line.

* Empty source line (after whitespace normalization): ``--on-empty keep`` (default) writes an
  empty line to every source-side output (fairseq binarizes it as a lone ``</s>``) and the
  target line as usual; ``--on-empty error`` stops at the scan, naming file and line.
* An empty input file is an error (nothing to annotate; fairseq cannot binarize it).
* Over-long lines: a line with more than ``--max-words`` whitespace-separated words, or
  more characters than the backend parses (spaCy: 1,000,000, its ``max_length``; see
  :attr:`~syntax_nmt.annotate.backends.base.ParserBackend.max_chars`), is found by the
  scan; a pair whose source or target has more than ``--max-subwords`` subword tokens
  (what fairseq's ``--max-source-positions``/``--max-target-positions`` bound) is found
  when it is segmented. ``--on-long blank`` (default) writes an empty
  line to *every* output, target included, so no pair is half-blanked; ``--on-long error``
  stops (at the scan, or at segmentation for ``--max-subwords``), naming file and line.
  Blanked lines are counted in the summary and in the log.

Outputs and reruns: the settings that shaped the outputs go to ``P.annotation.json``
(:mod:`~syntax_nmt.annotate.settings`) and the identity of the inputs (path, size and
SHA-256 of the source, the target and the backend's input files, such as the CoNLL-U) with
the output names to ``P.annotation.inputs.json``. A rerun into a prefix whose outputs exist does nothing if
both still match (input files by content: size and SHA-256, wherever they are now), and is
refused otherwise (``--overwrite`` redoes the work).
"""

import hashlib
import json
import logging
import os
import shutil
import time
from itertools import repeat
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from syntax_nmt.data.streams import STREAMS
from syntax_nmt.syntax.conllu import Sentence, format_conllu
from syntax_nmt.utils import write_lines

from .align import align_streams
from .backends import get_backend
from .chunks import ChunkStore
from .settings import AnnotationSettings, check_compatible, settings_from_args, settings_path, subword_model_file
from .subwords import Segmenter, escape_word, file_sha256, learn_model, load_segmenter
from .textio import InputError, read_normalized_lines

logger = logging.getLogger("syntax_nmt.annotate")

#: Called with the chunk index after each chunk is parsed and written (tests use it to
#: simulate a kill).
ChunkHook = Callable[[int], None]

_STAT_KEYS = ("sentences", "words", "subwords", "target_subwords", "empty", "blanked")
#: Settings that do not change how a parse is rendered (segmented and aligned): everything
#: else in the settings but what the backend records, plus the output names, is part of the
#: render key.
_NOT_RENDER = ("version", "backend", "spacy_model", "pretokenized", "parser_unescape", "multi_root", "max_words",
               "on_empty", "moses", "subword_model")


# -- names and settings -----------------------------------------------------------------
def output_names(src_lang: str, tgt_lang: Optional[str] = None, write_conllu: bool = False) -> List[str]:
    """Output suffixes: ``[src, tgt?, pos, case, subword, head, dep, src.conllu?]`` (``tgt_lang``: with a
    target; ``write_conllu``: with the word-level parse)."""
    names = [src_lang]
    if tgt_lang:
        names.append(tgt_lang)
    names += list(STREAMS)
    if write_conllu:
        names.append(f"{src_lang}.conllu")
    if len(set(names)) != len(names):
        raise ValueError(f"output suffixes collide: {names} (choose other --src-lang/--tgt-lang)")
    return names


def _file_id(path: Optional[str]) -> Optional[List]:
    """``[absolute path, size, sha256]`` of an input file (an edit that keeps the size changes the hash)."""
    return None if path is None else [os.path.abspath(path), os.path.getsize(path), file_sha256(path)]


def input_ids(args) -> Dict:
    """Identity of the input files: source, target and the backend's own (the CoNLL-U)."""
    files = {"source": args.source, "target": args.target, **get_backend(args.backend).input_files(args)}
    return {role: _file_id(path) for role, path in files.items()}


def inputs_path(prefix: str) -> str:
    """Where the identity of the inputs of ``prefix``'s outputs is recorded."""
    return prefix + ".annotation.inputs.json"


def parse_settings(args, num_lines: int, ids: Optional[Dict] = None) -> Dict:
    """Settings that determine the parse files (a resumed run must use the same ones)."""
    ids = ids if ids is not None else input_ids(args)
    return {
        **ids,
        "num_lines": num_lines,
        "chunk_size": args.chunk_size,
        "backend": args.backend,
        **get_backend(args.backend).recorded_settings(args),
        "pretokenized": args.pretokenized,
        "parser_unescape": args.parser_unescape,
        "multi_root": args.multi_root,
        "max_words": args.max_words,
    }


def render_key(settings: AnnotationSettings, names: List[str]) -> str:
    """Hash of everything the rendered outputs depend on besides the parse: the output names
    and every annotation setting but the parse-only ones (so a setting added later is part of
    it unless excluded on purpose; the backend's own settings are the parser's)."""
    values = {k: v for k, v in sorted(settings.to_dict().items()) if k not in _NOT_RENDER and k not in settings.extra}
    blob = json.dumps([names, values], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- scan -------------------------------------------------------------------------------------
def source_lines(args) -> Iterator[str]:
    """Normalized source lines (from ``--source``, or the backend's input: the CoNLL-U words)."""
    return get_backend(args.backend).source_lines(args)


def _nwords(line: str) -> int:
    return line.count(" ") + 1 if line else 0


def scan(args) -> Tuple[int, List[int], List[int]]:
    """Count lines and check the line policies before any expensive work.

    Returns:
        ``(num_lines, empty_lines, long_lines)`` with 1-based line numbers.

    Raises:
        InputError: an empty input, different source/target line counts, or an empty/long
            line when the policy is ``error``.
    """
    backend = get_backend(args.backend)
    src_name, max_chars = backend.source_name(args), backend.max_chars
    n, empty, long, why = 0, [], [], None
    for n, line in enumerate(source_lines(args), 1):
        if not line:
            empty.append(n)
        elif args.max_words and _nwords(line) > args.max_words:
            long.append(n)
            why = why or f"line has {_nwords(line)} words, more than --max-words {args.max_words}"
        elif max_chars and len(line) > max_chars:
            long.append(n)
            why = why or f"line has {len(line)} characters, more than {backend.max_chars_name} {max_chars}"
    if n == 0:
        raise InputError(f"{src_name} is empty: nothing to annotate")
    if args.target:
        m = sum(1 for _ in read_normalized_lines(args.target))
        if m != n:
            raise InputError(f"line counts differ: {src_name} has {n} lines, {args.target} has {m} lines")
    if empty and args.on_empty == "error":
        raise InputError(f"{src_name}:{empty[0]}: empty line ({len(empty)} in all; --on-empty keep writes "
                         f"empty lines to every output)")
    if long and args.on_long == "error":
        raise InputError(f"{src_name}:{long[0]}: {why} ({len(long)} over-long lines; --on-long blank writes them "
                         f"as empty lines)")
    backend.check_inputs(args)
    return n, empty, long


def _some(lines: List[int], k: int = 5) -> str:
    return ", ".join(map(str, lines[:k])) + (", ..." if len(lines) > k else "")


# -- records and rendering --------------------------------------------------------------------
def make_record(lineno: int, sentence: Sentence, target: Optional[str], blank: bool) -> Dict:
    """The JSON-able parse record of one line (see :class:`ChunkStore`)."""
    rec = {"n": lineno, "w": sentence.words, "u": sentence.upos, "x": sentence.xpos, "h": sentence.heads,
           "d": sentence.deprels}
    nosp = [i for i, sp in enumerate(sentence.space_after) if not sp]
    if nosp:
        rec["ns"] = nosp
    if target is not None:
        rec["t"] = target
    if blank:
        rec["b"] = 1
    return rec


def record_sentence(rec: Dict) -> Sentence:
    """The :class:`Sentence` stored in a parse record."""
    words = rec["w"]
    space = [True] * len(words)
    for i in rec.get("ns", ()):
        space[i] = False
    return Sentence(words, rec["u"], rec["x"], rec["h"], rec["d"], space)


_BLANK = {"w": [], "u": [], "x": [], "h": [], "d": [], "ns": []}


def render(records: List[Dict], segmenter: Segmenter, settings: AnnotationSettings, tgt_lang: Optional[str] = None,
           write_conllu: bool = False, source_name: str = "<source>") -> Tuple[Dict[str, List[str]], Dict]:
    """Segment and align one chunk's records into output lines.

    Args:
        records: parse records (:func:`make_record`), with the target line when ``tgt_lang`` is given.
        segmenter: the subword model of ``settings``.
        settings: the annotation settings (subword scheme, stream options, ``max_subwords``, ``on_long``).
        tgt_lang: the target language, to render the target too.
        write_conllu: also render the word-level parse (``{src}.conllu``).
        source_name: the source in messages.

    Returns:
        ``({name: lines}, stats)`` for the names of :func:`output_names`; every stream line has as
        many fields as the source line.
    """
    out = {name: [] for name in output_names(settings.src_lang, tgt_lang, write_conllu)}
    stats = dict.fromkeys(_STAT_KEYS, 0)
    for row in render_rows(records, segmenter, settings, tgt_lang, write_conllu, source_name, stats):
        for name, line in row.items():
            out[name].append(line)
    return out, stats


def render_rows(records: Iterable[Dict], segmenter: Segmenter, settings: AnnotationSettings,
                tgt_lang: Optional[str] = None, write_conllu: bool = False, source_name: str = "<source>",
                stats: Optional[Dict] = None) -> Iterator[Dict[str, str]]:
    """:func:`render`, one record at a time: yields ``{name: line}`` per record (``{src}.conllu`` only for a line
    with words) and adds to ``stats`` as it goes (memory does not grow with the chunk)."""
    stats = dict.fromkeys(_STAT_KEYS, 0) if stats is None else stats
    scheme = settings.subword
    src, tgt = settings.src_lang, tgt_lang
    conllu = f"{src}.conllu" if write_conllu else None
    limit = settings.max_subwords
    for rec in records:
        sentence = record_sentence(rec)
        pieces = segmenter.segment([escape_word(w, scheme) for w in sentence.words])
        flat = [p for ps in pieces for p in ps]
        tpieces = []
        if tgt:
            tokens = rec["t"].split(" ") if rec.get("t") else []
            tpieces = [p for ps in segmenter.segment([escape_word(w, scheme) for w in tokens]) for p in ps]
        if limit and max(len(flat), len(tpieces)) > limit:
            side, size = ("source", len(flat)) if len(flat) > limit else ("target", len(tpieces))
            if settings.on_long == "error":
                raise InputError(f"{source_name}:{rec['n']}: {side} line has {size} subword tokens, "
                                 f"more than --max-subwords {limit} (--on-long blank writes such lines as empty "
                                 f"lines)")
            sentence, pieces, flat, tpieces, rec = record_sentence({**rec, **_BLANK}), [], [], [], {**rec, "b": 1}
        streams = align_streams(sentence, pieces, settings.pos_tagset, settings.case)
        row = {src: " ".join(flat)}
        for name in STREAMS:
            row[name] = " ".join(streams[name])
        if tgt:
            row[tgt] = " ".join(tpieces)
            stats["target_subwords"] += len(tpieces)
        if conllu and sentence.words:
            sentence.comments = {"sent_id": str(rec["n"]), "text": sentence.text}
            row[conllu] = format_conllu(sentence)[:-1]
        stats["sentences"] += 1
        stats["words"] += len(sentence.words)
        stats["subwords"] += len(flat)
        stats["blanked"] += rec.get("b", 0)
        stats["empty"] += int(not sentence.words and not rec.get("b"))
        yield row


# -- the job --------------------------------------------------------------------------------------

def _learned_by(stamp: str, model: str) -> bool:
    """Whether ``model`` is the subword model an interrupted job recorded learning in ``stamp``."""
    if not (os.path.exists(stamp) and os.path.exists(model)):
        return False
    with open(stamp, encoding="utf-8") as f:
        return json.load(f).get("sha256") == file_sha256(model)

class Job:
    """One invocation of the annotator (one shard, or a merge-only run).

    Args:
        args: the parsed command line (see :mod:`syntax_nmt.annotate.cli`).
        on_chunk_done: optional hook called with each chunk index once it is written.
    """

    def __init__(self, args, on_chunk_done: Optional[ChunkHook] = None):
        self.args = args
        self.on_chunk_done = on_chunk_done
        self.tgt_lang = args.tgt_lang if args.target else None
        self.names = output_names(args.src_lang, self.tgt_lang, args.write_conllu)
        self.backend = get_backend(args.backend)
        self.settings: Optional[AnnotationSettings] = None  # with the subword model's hash, once it is known
        self.segmenter: Optional[Segmenter] = None
        self.key: Optional[str] = None
        self.inputs: Optional[Dict] = None  # input_ids(args), computed once per run

    def _use_model(self, path: Optional[str]) -> None:
        self.segmenter = load_segmenter(self.args.subword, path)
        self.settings = settings_from_args(self.args)
        self.key = render_key(self.settings, self.names)

    def _render_chunk(self, store: ChunkStore, k: int) -> Dict:
        """Segment and align chunk ``k`` from its parse file, one record at a time; returns its statistics."""
        stats = dict.fromkeys(_STAT_KEYS, 0)
        rows = render_rows(store.iter_parse(k), self.segmenter, self.settings, self.tgt_lang, self.args.write_conllu,
                           self.backend.source_name(self.args), stats)
        store.write_output_rows(k, rows, stats, self.key)
        return stats

    # phases -------------------------------------------------------------------------------
    def parse_shard(self, store: ChunkStore, blank: Set[int]) -> Dict:
        """Parse (and, with a known model, render) this shard's unfinished chunks.

        Returns:
            Counts for the sentences parsed by this call.
        """
        a = self.args
        mine = [k for k in range(store.num_chunks) if k % a.num_shards == a.shard_id]
        todo = [k for k in mine if not store.parse_done(k)]
        stale = store.remove_stale_temps()
        if stale:
            logger.info("removed %d temporary files that killed runs left in %s", stale, store.dir)
        totals = dict.fromkeys(_STAT_KEYS, 0)
        if self.segmenter is not None:  # parsed earlier, killed before rendering
            for k in mine:
                if k not in todo and not store.rendered(k, self.key):
                    self._render_chunk(store, k)
        if not todo:
            logger.info("shard %d/%d: all %d chunks already parsed", a.shard_id, a.num_shards, len(mine))
            return totals
        pending = set(todo)
        nlines = sum(len(store.lines(k)) for k in todo)
        logger.info("shard %d/%d: parsing %d of its %d chunks (%d lines)", a.shard_id, a.num_shards, len(todo),
                    len(mine), nlines)
        backend = self.backend.from_args(a)

        def items():
            tgt_lines = read_normalized_lines(a.target) if a.target else repeat(None)
            for lineno, (line, tgt) in enumerate(zip(source_lines(a), tgt_lines), 1):
                if store.chunk_of(lineno) not in pending:
                    continue
                if lineno in blank:  # over --max-words: the whole pair becomes empty
                    yield lineno, "", ("" if tgt is not None else None, True)
                else:
                    yield lineno, line, (tgt, False)

        from tqdm import tqdm

        bar = tqdm(total=nlines, unit="sent", disable=a.quiet, dynamic_ncols=True, desc="parse")
        parsed = backend.parse(items())

        def chunk_records(k: int):
            """Chunk ``k``'s records as they are parsed (written as they come: none is kept)."""
            expected = iter(store.lines(k))
            for lineno, sentence, (tgt, is_blank) in parsed:
                assert lineno == next(expected, None), f"chunk {k} is incomplete"
                totals["sentences"] += 1
                totals["words"] += len(sentence.words)
                bar.update(1)
                yield make_record(lineno, sentence, tgt, is_blank)
                if lineno == store.lines(k)[-1]:
                    return
            raise AssertionError(f"chunk {k} is incomplete: the parser stopped before its line {store.lines(k)[-1]}")

        try:
            for k in sorted(pending):
                n = store.write_parse(k, chunk_records(k))
                assert n == len(store.lines(k)), f"chunk {k} is incomplete ({n} of {len(store.lines(k))} lines)"
                if self.segmenter is not None:
                    totals["subwords"] += self._render_chunk(store, k)["subwords"]
                if self.on_chunk_done is not None:
                    self.on_chunk_done(k)
        finally:
            bar.close()
        return totals

    def finalize(self, store: ChunkStore) -> Optional[Dict]:
        """Learn (if asked), render what is missing, merge.

        Returns:
            Corpus totals, or None if it is not this run's turn (chunks of other shards
            missing, or another run holds the lock).
        """
        a = self.args
        missing = [k for k in range(store.num_chunks) if not store.parse_done(k)]
        if missing:
            shards = sorted({k % a.num_shards for k in missing})
            msg = (f"{len(missing)} of {store.num_chunks} chunks are not parsed yet (chunks {_some(missing)}; "
                   f"shards {_some(shards)} of {a.num_shards})")
            if a.merge_only:
                raise ValueError(msg + "; run those shards first")
            logger.info("%s; the last shard to finish merges (or run with --merge-only later)", msg)
            return None
        if not store.try_lock():
            msg = f"another run ({store.lock_owner}) is finalizing {store.dir}"
            if a.merge_only:
                raise ValueError(f"{msg}; if that run is dead, delete {store.lock_path} and rerun")
            logger.warning("%s; nothing left to do here (if that run is dead, delete %s and rerun with "
                           "--merge-only)", msg, store.lock_path)
            return None
        try:
            if a.learn_subword:
                self._learn(store)
            todo = [k for k in range(store.num_chunks) if not store.rendered(k, self.key)]
            if todo:
                from tqdm import tqdm

                logger.info("segmenting %d chunks", len(todo))
                for k in tqdm(todo, unit="chunk", disable=a.quiet, desc="segment"):
                    self._render_chunk(store, k)
            store.merge()
            settings_from_args(a).write(settings_path(a.output_prefix))
            write_lines(inputs_path(a.output_prefix),
                               [json.dumps({"inputs": self.inputs, "outputs": self.names}, indent=1)])
            totals = dict.fromkeys(_STAT_KEYS, 0)
            for k in range(store.num_chunks):
                info = store.done_info(k)
                for key in _STAT_KEYS:
                    totals[key] += info.get(key, 0)
            logger.info(
                "wrote %s.{%s}: %d lines, %d source words, %d source subword tokens, %d target subword tokens, "
                "%d empty, %d blanked", a.output_prefix, ",".join(self.names), totals["sentences"],
                totals["words"], totals["subwords"], totals["target_subwords"], totals["empty"], totals["blanked"])
        finally:
            store.release_lock()
        if not a.keep_chunks:
            store.remove()
        return totals

    def _learn(self, store: ChunkStore) -> None:
        a = self.args
        path = subword_model_file(a)
        stamp = os.path.join(store.dir, "learned.json")
        if _learned_by(stamp, path):
            logger.info("reusing the %s model learned earlier: %s", a.subword, path)
            self._use_model(path)
            return
        if os.path.exists(path):  # only with --overwrite (run() refuses it otherwise, before parsing)
            logger.warning("overwriting %s with a newly learned model", path)

        def lines():
            for k in range(store.num_chunks):
                for rec in store.iter_parse(k):
                    yield " ".join(escape_word(w, a.subword) for w in rec["w"])
                    if rec.get("t"):
                        yield " ".join(escape_word(w, a.subword) for w in rec["t"].split(" "))

        logger.info("learning a joint %s model (%d) on the parsed source and the target", a.subword, a.learn_subword)
        t0 = time.time()
        path = learn_model(a.subword, lines(), a.learn_subword, a.subword_model_out, spm_model_type=a.spm_model_type,
                           quiet=a.quiet)
        logger.info("learned %s in %.1f s", path, time.time() - t0)
        with open(stamp + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"path": os.path.abspath(path), "sha256": file_sha256(path)}, f)
        os.replace(stamp + ".tmp", stamp)
        self._use_model(path)

    def check_up_to_date(self, finals: List[str]) -> bool:
        """Check that the existing outputs were made from the same input files and settings.

        Returns:
            True if every output exists (nothing to do), False if some are missing (redo them).

        Raises:
            ValueError: naming what differs (or what is missing) and suggesting ``--overwrite``.
        """
        a = self.args
        prefix = a.output_prefix
        refuse = f"{prefix}.* exist but were made %s; pass --overwrite to redo them (or choose another --output-prefix)"
        spath, ipath = settings_path(prefix), inputs_path(prefix)
        if not (os.path.exists(spath) and os.path.exists(ipath)):
            raise ValueError(refuse % f"without a record of their input and settings ({os.path.basename(spath)} or "
                                       f"{os.path.basename(ipath)} is missing: an older or interrupted run)")
        try:
            check_compatible(AnnotationSettings.read(spath), settings_from_args(a), "the existing outputs",
                             "this run")
        except ValueError as e:
            raise ValueError(refuse % f"with other settings ({e})") from None
        with open(ipath, encoding="utf-8") as f:
            old = json.load(f)
        was_inputs = old.get("inputs", {})
        for name in ["source", "target", *sorted((set(was_inputs) | set(self.inputs)) - {"source", "target"})]:
            was, now = was_inputs.get(name), self.inputs.get(name)
            if (was[1:] if was else was) != (now[1:] if now else now):  # by content: [path, size, sha256]
                what = (f"{now[0]} (size {now[1]}, sha256 {now[2][:12]}...)" if now else "none")
                before = (f"{was[0]} (size {was[1]}, sha256 {was[2][:12]}...)" if was else "none")
                raise ValueError(refuse % f"from another {name} file ({before}; this run: {what})")
        if old.get("outputs") != self.names:
            raise ValueError(refuse % f"with other outputs ({','.join(old.get('outputs') or [])}; this run: "
                                       f"{','.join(self.names)})")
        missing = [f for f in finals if not os.path.exists(f)]
        if missing:
            logger.info("%s is missing: redoing %s.{%s} (same input and settings)", missing[0], prefix,
                        ",".join(self.names))
        return not missing

    def run(self) -> int:
        """Run the job; returns the exit status (0)."""
        a = self.args
        t0 = time.time()
        store_dir = a.output_prefix + ".chunks"
        finals = [f"{a.output_prefix}.{n}" for n in self.names]
        records = [settings_path(a.output_prefix), inputs_path(a.output_prefix)]
        self.inputs = input_ids(a)  # a missing or unreadable input fails here, before --overwrite removes anything
        if a.overwrite:
            shutil.rmtree(store_dir, ignore_errors=True)
            for f in finals + records:
                if os.path.exists(f):
                    os.remove(f)
        existing = any(os.path.exists(f) for f in finals + records)
        if not a.overwrite and not os.path.isdir(store_dir) and existing and self.check_up_to_date(finals):
            logger.info("%s.{%s} are up to date (same input and settings); nothing to do (pass --overwrite to redo "
                        "them)", a.output_prefix, ",".join(self.names))
            return 0
        model_out = subword_model_file(a) if a.learn_subword else None
        if model_out and not a.overwrite and os.path.exists(model_out) and \
                not _learned_by(os.path.join(store_dir, "learned.json"), model_out):
            raise ValueError(f"--subword-model-out: {model_out} exists and was not learned by this job: name another "
                             f"file, or pass --overwrite to learn it again")
        if os.path.dirname(a.output_prefix):
            os.makedirs(os.path.dirname(a.output_prefix), exist_ok=True)

        num_lines, empty, long = scan(a)
        logger.info("%s: %d lines%s%s", self.backend.source_name(a), num_lines,
                    f", {len(empty)} empty (lines {_some(empty)})" if empty else "",
                    f", {len(long)} over --max-words {a.max_words}, blanked (lines {_some(long)})" if long else "")
        if not a.learn_subword:
            self._use_model(subword_model_file(a))  # fails early on a bad model

        store = ChunkStore(a.output_prefix, num_lines, a.chunk_size, self.names)
        store.open(parse_settings(a, num_lines, self.inputs), file_keys=tuple(self.inputs))
        parsed = dict.fromkeys(_STAT_KEYS, 0)
        if not a.merge_only:
            parsed = self.parse_shard(store, set(long))
        corpus = self.finalize(store)
        secs = time.time() - t0
        if corpus is not None:
            shown, note = corpus, f" (whole corpus; {parsed['sentences']} sentences parsed by this run)"
        else:
            shown, note = parsed, f" (shard {a.shard_id}/{a.num_shards}, this run)"
        subwords = shown["subwords"] if (corpus is not None or self.segmenter is not None) else "(pending)"
        logger.info(
            "summary: %d sentences, %d source words, %s subword tokens, %.1f s, %.1f sentences/s%s",
            shown["sentences"], shown["words"], subwords, secs, shown["sentences"] / max(secs, 1e-9), note)
        return 0
