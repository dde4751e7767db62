"""The annotation job behind ``syntax-nmt-annotate``: scan, parse, (learn), segment, merge.

Phases, all resumable through :class:`~syntax_nmt.annotate.chunks.ChunkStore`:

1. **Scan** (cheap, before any parsing): count source and target lines (different counts
   are an error naming both files), find empty and over-long lines, validate UTF-8.
2. **Parse** the chunks of this shard (``k % num_shards == shard_id``) that have no parse
   file yet, streaming all of them through one backend call (one ``nlp.pipe``). With a
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
* Line with more than ``--max-words`` whitespace-separated words: ``--on-long blank``
  (default) writes an empty line to *every* output, target included, so no pair is
  half-blanked; ``--on-long error`` stops at the scan. Blanked lines are counted in the
  summary and in the log.
"""

import hashlib
import json
import logging
import os
import shutil
import time
from itertools import repeat
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from syntax_nmt.syntax.conllu import Sentence, format_conllu

from .chunks import ChunkStore
from .settings import settings_from_args, settings_path, write_settings
from .streams import STREAMS, align_streams
from .subwords import Segmenter, escape_word, file_sha256, learn_model, load_segmenter, spm_model_path
from .textio import InputError, read_lines

logger = logging.getLogger("syntax_nmt.annotate")

#: Called with the chunk index after each chunk is parsed and written (tests use it to
#: simulate a kill).
ChunkHook = Callable[[int], None]

_STAT_KEYS = ("sentences", "words", "subwords", "target_subwords", "empty", "blanked")


# -- names and settings -----------------------------------------------------------------
def output_names(args) -> List[str]:
    """Output suffixes: ``[src, tgt?, pos, case, subword, head, dep, src.conllu?]``."""
    names = [args.src_lang]
    if args.target:
        names.append(args.tgt_lang)
    names += list(STREAMS)
    if args.write_conllu:
        names.append(f"{args.src_lang}.conllu")
    if len(set(names)) != len(names):
        raise ValueError(f"output suffixes collide: {names} (choose other --src-lang/--tgt-lang)")
    return names


def _file_id(path: Optional[str]) -> Optional[List]:
    return None if path is None else [os.path.abspath(path), os.path.getsize(path)]


def parse_settings(args, num_lines: int) -> Dict:
    """Settings that determine the parse files (a resumed run must use the same ones)."""
    return {
        "source": _file_id(args.source),
        "target": _file_id(args.target),
        "conllu": _file_id(args.conllu),
        "num_lines": num_lines,
        "chunk_size": args.chunk_size,
        "backend": args.backend,
        "spacy_model": args.spacy_model if args.backend == "spacy" else None,
        "pretokenized": args.pretokenized,
        "parser_unescape": args.parser_unescape,
        "multi_root": args.multi_root,
        "max_words": args.max_words,
    }


def model_file(args) -> Optional[str]:
    """The subword model file used for segmentation (given, or to be learned)."""
    if args.subword == "none":
        return None
    if args.learn_subword:
        return spm_model_path(args.subword_model_out) if args.subword == "spm" else args.subword_model_out
    return args.subword_model


def render_key(args, names: List[str], model_sha: Optional[str]) -> str:
    """Hash of everything the rendered outputs depend on besides the parse."""
    blob = json.dumps([args.subword, model_sha, args.pos_tagset, args.case, names])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- scan -------------------------------------------------------------------------------------
def source_lines(args) -> Iterator[str]:
    """Normalized source lines (from ``--source``, or the CoNLL-U words)."""
    if args.source:
        return read_lines(args.source)
    from .conllu_backend import conllu_lines

    return conllu_lines(args.conllu)


def _nwords(line: str) -> int:
    return line.count(" ") + 1 if line else 0


def scan(args) -> Tuple[int, List[int], List[int]]:
    """Count lines and check the line policies before any expensive work.

    Returns:
        ``(num_lines, empty_lines, long_lines)`` with 1-based line numbers.

    Raises:
        InputError: different source/target line counts, or an empty/long line when the
            policy is ``error``.
    """
    src_name = args.source or args.conllu
    n, empty, long = 0, [], []
    for n, line in enumerate(source_lines(args), 1):
        if not line:
            empty.append(n)
        elif args.max_words and _nwords(line) > args.max_words:
            long.append(n)
    if args.target:
        m = sum(1 for _ in read_lines(args.target))
        if m != n:
            raise InputError(f"line counts differ: {src_name} has {n} lines, {args.target} has {m} lines")
    if empty and args.on_empty == "error":
        raise InputError(f"{src_name}:{empty[0]}: empty line ({len(empty)} in all; --on-empty keep writes "
                         f"empty lines to every output)")
    if long and args.on_long == "error":
        raise InputError(f"{src_name}:{long[0]}: line has more than --max-words {args.max_words} words "
                         f"({len(long)} such lines; --on-long blank writes them as empty lines)")
    if args.backend == "conllu":
        from .conllu_backend import ConlluBackend

        msg = ConlluBackend(args.conllu, args.source).count_mismatch()
        if msg:
            raise InputError(msg)
    return n, empty, long


def _some(lines: List[int], k: int = 5) -> str:
    return ", ".join(map(str, lines[:k])) + (", ..." if len(lines) > k else "")


# -- backend ------------------------------------------------------------------------------------
def build_backend(args):
    """The parser backend chosen by ``--backend``."""
    if args.backend == "spacy":
        from .spacy_backend import SpacyBackend

        return SpacyBackend(args.spacy_model, pretokenized=args.pretokenized, batch_size=args.batch_size,
                            n_process=args.n_process, gpu_id=args.gpu_id, multi_root=args.multi_root,
                            source_name=args.source, parser_unescape=args.parser_unescape)
    from .conllu_backend import ConlluBackend

    return ConlluBackend(args.conllu, args.source, pretokenized=args.pretokenized, multi_root=args.multi_root)


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


def render(records: List[Dict], segmenter: Segmenter, args, names: List[str]) -> Tuple[Dict[str, List[str]], Dict]:
    """Segment and align one chunk's records into output lines.

    Returns:
        ``({name: lines}, stats)``; every stream line has as many fields as the source line.
    """
    scheme = args.subword
    src, tgt = args.src_lang, (args.tgt_lang if args.target else None)
    out = {name: [] for name in names}
    conllu = f"{src}.conllu" if args.write_conllu else None
    stats = dict.fromkeys(_STAT_KEYS, 0)
    for rec in records:
        sentence = record_sentence(rec)
        pieces = segmenter.segment([escape_word(w, scheme) for w in sentence.words])
        streams = align_streams(sentence, pieces, args.pos_tagset, args.case)
        flat = [p for ps in pieces for p in ps]
        out[src].append(" ".join(flat))
        for name in STREAMS:
            out[name].append(" ".join(streams[name]))
        if tgt:
            tokens = rec["t"].split(" ") if rec.get("t") else []
            tpieces = [p for ps in segmenter.segment([escape_word(w, scheme) for w in tokens]) for p in ps]
            out[tgt].append(" ".join(tpieces))
            stats["target_subwords"] += len(tpieces)
        if conllu and sentence.words:
            sentence.comments = {"sent_id": str(rec["n"]), "text": sentence.text}
            out[conllu].append(format_conllu(sentence)[:-1])
        stats["sentences"] += 1
        stats["words"] += len(sentence.words)
        stats["subwords"] += len(flat)
        stats["blanked"] += rec.get("b", 0)
        stats["empty"] += int(not sentence.words and not rec.get("b"))
    return out, stats


# -- the job --------------------------------------------------------------------------------------
class Job:
    """One invocation of the annotator (one shard, or a merge-only run).

    Args:
        args: the parsed command line (see :mod:`syntax_nmt.annotate.cli`).
        on_chunk_done: optional hook called with each chunk index once it is written.
    """

    def __init__(self, args, on_chunk_done: Optional[ChunkHook] = None):
        self.args = args
        self.on_chunk_done = on_chunk_done
        self.names = output_names(args)
        self.segmenter: Optional[Segmenter] = None
        self.key: Optional[str] = None

    def _use_model(self, path: Optional[str]) -> None:
        self.segmenter = load_segmenter(self.args.subword, path)
        self.key = render_key(self.args, self.names, file_sha256(path) if path else None)

    def _render_chunk(self, store: ChunkStore, k: int, records: Optional[List[Dict]] = None) -> Dict:
        if records is None:
            records = store.read_parse(k)
        outputs, stats = render(records, self.segmenter, self.args, self.names)
        store.write_outputs(k, outputs, stats, self.key)
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
        backend = build_backend(a)

        def items():
            tgt_lines = read_lines(a.target) if a.target else repeat(None)
            for lineno, (line, tgt) in enumerate(zip(source_lines(a), tgt_lines), 1):
                if store.chunk_of(lineno) not in pending:
                    continue
                if lineno in blank:  # over --max-words: the whole pair becomes empty
                    yield lineno, "", ("" if tgt is not None else None, True)
                else:
                    yield lineno, line, (tgt, False)

        from tqdm import tqdm

        bar = tqdm(total=nlines, unit="sent", disable=a.quiet, dynamic_ncols=True, desc="parse")
        records: List[Dict] = []
        try:
            for lineno, sentence, (tgt, is_blank) in backend.parse(items()):
                records.append(make_record(lineno, sentence, tgt, is_blank))
                totals["sentences"] += 1
                totals["words"] += len(sentence.words)
                bar.update(1)
                k = store.chunk_of(lineno)
                if lineno == store.lines(k)[-1]:
                    assert [r["n"] for r in records] == list(store.lines(k)), f"chunk {k} is incomplete"
                    store.write_parse(k, records)
                    if self.segmenter is not None:
                        totals["subwords"] += self._render_chunk(store, k, records)["subwords"]
                    records = []
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
            logger.info("another run (%s) is finalizing %s; nothing left to do here", store.lock_owner, store.dir)
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
            write_settings(settings_path(a.output_prefix), settings_from_args(a))
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
        path = model_file(a)
        stamp = os.path.join(store.dir, "learned.json")
        if os.path.exists(stamp) and os.path.exists(path):
            with open(stamp, encoding="utf-8") as f:
                if json.load(f).get("sha256") == file_sha256(path):
                    logger.info("reusing the %s model learned earlier: %s", a.subword, path)
                    self._use_model(path)
                    return
        if os.path.exists(path):
            logger.warning("overwriting %s with a newly learned model", path)

        def lines():
            for k in range(store.num_chunks):
                for rec in store.read_parse(k):
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

    def run(self) -> int:
        """Run the job; returns the exit status (0)."""
        a = self.args
        t0 = time.time()
        store_dir = a.output_prefix + ".chunks"
        finals = [f"{a.output_prefix}.{n}" for n in self.names]
        if a.overwrite:
            shutil.rmtree(store_dir, ignore_errors=True)
            for f in finals:
                if os.path.exists(f):
                    os.remove(f)
        elif not os.path.isdir(store_dir) and all(os.path.exists(f) for f in finals):
            logger.info("%s.{%s} already exist; nothing to do (pass --overwrite to redo them)", a.output_prefix,
                        ",".join(self.names))
            return 0
        if os.path.dirname(a.output_prefix):
            os.makedirs(os.path.dirname(a.output_prefix), exist_ok=True)

        num_lines, empty, long = scan(a)
        logger.info("%s: %d lines%s%s", a.source or a.conllu, num_lines,
                    f", {len(empty)} empty (lines {_some(empty)})" if empty else "",
                    f", {len(long)} over --max-words {a.max_words}, blanked (lines {_some(long)})" if long else "")
        if not a.learn_subword:
            self._use_model(model_file(a))  # fails early on a bad model

        store = ChunkStore(a.output_prefix, num_lines, a.chunk_size, self.names)
        store.open(parse_settings(a, num_lines))
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
