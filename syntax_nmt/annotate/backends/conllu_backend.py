"""CoNLL-U backend (``--backend conllu``): use the output of any external dependency parser (Stanza, UDPipe...).

The CoNLL-U file must hold one sentence block per non-empty source line, in order (the
parsers below skip empty lines, so an empty source line has no block). Syntactic words
are used (multi-word token ranges are skipped by :func:`syntax_nmt.syntax.conllu.read_conllu`).

Run the external parser **without sentence splitting**, so that each line stays one block:

* Stanza, pre-tokenized input (one sentence per line, tokens separated by spaces)::

      import stanza
      nlp = stanza.Pipeline("en", processors="tokenize,pos,lemma,depparse",
                            tokenize_pretokenized=True)
      from stanza.utils.conll import CoNLL
      doc = nlp([line.split() for line in open("train.en") if line.strip()])
      CoNLL.write_doc2conll(doc, "train.en.conllu")

  (raw text: ``tokenize_no_ssplit=True`` and pass the text with lines separated by blank
  lines, ``"\\n\\n".join(lines)``; then annotate without ``--pretokenized``.)
* UDPipe 1, pre-tokenized: ``udpipe --input=horizontal --tag --parse english.udpipe train.en``;
  raw text: ``udpipe --tokenize --tokenizer=presegmented --tag --parse english.udpipe train.en``.
* UDPipe 2 (REST/CLI): ``input=horizontal`` or ``tokenizer=presegmented``.

When the source text file is given too (``--source``), each block's words are checked
against its line: with ``--pretokenized`` the words must equal the line's tokens; on raw
text, the words concatenated must equal the line without spaces (the parser's tokenization
is kept). A mismatch is an error naming both files, the block and the line. Without
``--source``, the source text is the blocks' words joined by spaces (:func:`conllu_lines`).

Several roots in one block are resolved by the ``--multi-root`` policy of
:mod:`syntax_nmt.annotate.parsed`; cyclic heads are an error.
"""

from typing import Dict, Iterable, Iterator, Optional, Tuple

from syntax_nmt.syntax.conllu import Sentence, open_conllu, read_conllu

from ..parsed import check_tree, empty_sentence, resolve_roots
from ..textio import InputError, read_normalized_lines
from .base import ParserBackend, register_backend


def conllu_lines(path: str) -> Iterator[str]:
    """The source text implied by a CoNLL-U file: one line per block, words joined by spaces."""
    with open_conllu(path) as f:
        for sentence in read_conllu(f, path):
            yield " ".join(sentence.words)


def _words_desc(words, n=12):
    s = " ".join(words[:n])
    return s + (" ..." if len(words) > n else "")


@register_backend("conllu")
class ConlluBackend(ParserBackend):
    """Line-aligned reader of an external parser's CoNLL-U output.

    Args:
        conllu_path: the CoNLL-U file.
        source_path: the source text it was parsed from (optional, enables checks and
            empty lines).
        pretokenized: the parser got pre-tokenized input (exact word check).
        multi_root: ``forest`` or ``attach``.
    """

    parses_text = False  # the parse is used as it is: --parser-unescape does not apply
    raw_text_backend = "spacy"  # raw text at inference: spaCy parses it, with --annotate-parser-model
    exclusive_options = ("conllu",)

    @classmethod
    def add_args(cls, group) -> None:
        from syntax_nmt.io_guard import reads

        reads(group.add_argument("--conllu", metavar="FILE", help="CoNLL-U from an external parser (--backend "
                                 "conllu), one sentence block per non-empty source line (run the parser without "
                                 "sentence splitting)"))

    @classmethod
    def check_args(cls, args) -> None:
        if not args.conllu:  # --source is optional: the words of the blocks are the source
            raise ValueError("--backend conllu needs --conllu FILE")

    @classmethod
    def input_files(cls, args) -> Dict[str, Optional[str]]:
        return {"conllu": args.conllu}

    @classmethod
    def source_lines(cls, args) -> Iterator[str]:
        return read_normalized_lines(args.source) if args.source else conllu_lines(args.conllu)

    @classmethod
    def check_inputs(cls, args) -> None:
        msg = cls(args.conllu, args.source).count_mismatch()
        if msg:
            raise InputError(msg)

    @classmethod
    def from_args(cls, args) -> "ConlluBackend":
        return cls(args.conllu, args.source, pretokenized=args.pretokenized, multi_root=args.multi_root)

    @classmethod
    def for_raw_text(cls, settings, model=None, batch_size=256, gpu_id=-1):
        # an InputError: fairseq-interactive reports it in one line (syntax_nmt.cli_errors.fairseq_errors_one_line)
        raise InputError(
            "annotation setting backend='conllu': the training data was parsed by an external parser, so "
            "raw text needs its parse too: pass --input-conllu FILE to fairseq-interactive (hub: "
            "translate_conllu), or --annotate-parser-model NAME_OR_PATH to parse with spaCy instead"
        )

    def __init__(self, conllu_path: str, source_path: Optional[str] = None, pretokenized: bool = False,
                 multi_root: str = "forest"):
        self.conllu_path = conllu_path
        self.source_path = source_path
        self.pretokenized = pretokenized
        self.multi_root = multi_root

    def _blocks(self) -> Iterator[Tuple[int, Sentence]]:
        with open_conllu(self.conllu_path) as f:
            yield from enumerate(read_conllu(f, self.conllu_path), 1)

    def check_block(self, block_no: int, sentence: Sentence, lineno: int, line: str) -> None:
        """Check that block ``block_no`` parses source line ``lineno`` (its words spell ``line``).

        Raises:
            InputError: naming the block, the line and the first difference.
        """
        words = sentence.words
        where = f"{self.conllu_path} sentence block {block_no}"
        if "sent_id" in sentence.comments:
            where += f" (sent_id {sentence.comments['sent_id']})"
        for w in words:
            if len(w.split()) != 1 or w.split()[0] != w:
                raise InputError(f"{where}: word {w!r} contains whitespace (source {self.source_path}:{lineno})")
        if self.pretokenized:
            tokens = line.split(" ")
            if words != tokens:
                i = next((k for k, (a, b) in enumerate(zip(words, tokens)) if a != b), min(len(words), len(tokens)))
                raise InputError(
                    f"{where} does not match {self.source_path}:{lineno} (--pretokenized): first difference at "
                    f"token {i + 1}: {words[i] if i < len(words) else '<end>'!r} vs "
                    f"{tokens[i] if i < len(tokens) else '<end>'!r}\n  conllu: {_words_desc(words)}\n"
                    f"  source: {_words_desc(tokens)}"
                )
        elif "".join(words) != line.replace(" ", ""):
            raise InputError(
                f"{where} does not match {self.source_path}:{lineno}: the words do not spell the line"
                f" (was the parser run with sentence splitting, or on another file?)\n"
                f"  conllu: {_words_desc(words)}\n  source: {line[:120]}"
            )

    def _aligned(self) -> Iterator[Tuple[int, Sentence]]:
        """``(lineno, sentence)`` for every source line (empty sentence for empty lines)."""
        blocks = self._blocks()
        if self.source_path is None:
            yield from blocks
            return
        for lineno, line in enumerate(read_normalized_lines(self.source_path), 1):
            if not line:
                yield lineno, empty_sentence()
                continue
            nxt = next(blocks, None)
            if nxt is None:
                raise InputError(
                    f"{self.conllu_path} ends before {self.source_path}:{lineno}: it has fewer sentence blocks "
                    f"than the source has non-empty lines (was the parser run with sentence splitting?)"
                )
            block_no, sentence = nxt
            self.check_block(block_no, sentence, lineno, line)
            yield lineno, sentence
        extra = next(blocks, None)
        if extra is not None:
            raise InputError(
                f"{self.conllu_path} has more sentence blocks ({extra[0]} or more) than {self.source_path} has "
                f"non-empty lines (was the parser run with sentence splitting?)"
            )

    def count_mismatch(self) -> Optional[str]:
        """Cheap pre-check: a message if block and non-empty line counts differ, else None."""
        if self.source_path is None:
            return None
        blocks = sum(1 for _ in _block_starts(self.conllu_path))
        lines = sum(1 for line in read_normalized_lines(self.source_path) if line)
        if blocks != lines:
            return (f"{self.conllu_path} has {blocks} sentence blocks but {self.source_path} has {lines} "
                    f"non-empty lines (one block per non-empty line is needed; run the parser without "
                    f"sentence splitting)")
        return None

    def parse(self, lines: Iterable[Tuple[int, str, object]]) -> Iterator[Tuple[int, Sentence, object]]:
        """Sentences for ``(lineno, text, context)`` items with increasing line numbers.

        Blocks of lines that are not asked for are read and skipped. An item with empty
        text for a non-empty source line (a line blanked by ``--max-words``) consumes its
        block and yields an empty sentence.
        """
        aligned = self._aligned()
        for lineno, text, ctx in lines:
            for no, sentence in aligned:
                if no == lineno:
                    break
            else:
                raise InputError(f"{self.conllu_path}: no sentence block for source line {lineno}")
            if not text:
                yield lineno, empty_sentence(), ctx
                continue
            try:
                check_tree(sentence)
            except ValueError as e:
                raise InputError(f"{self.conllu_path}: sentence for source line {lineno}: {e}") from None
            yield lineno, resolve_roots(sentence, self.multi_root), ctx


def _block_starts(path: str) -> Iterator[int]:
    """Line numbers where CoNLL-U sentence blocks with at least one word line start."""
    in_block = has_word = False
    start = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark (read_conllu drops it)
                raw = raw[3:]
            if not raw.decode("utf-8", "replace").strip():
                if in_block and has_word:
                    yield start
                in_block = has_word = False
                continue
            if not in_block:
                in_block, start = True, lineno
            if not raw.startswith(b"#"):
                has_word = True
    if in_block and has_word:
        yield start
