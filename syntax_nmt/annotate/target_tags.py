"""``syntax-nmt-target-tags``: interleaved target tags, the data-only way to predict target syntax (Nadejde et al.,
2017, "Predicting Target Language CCG Supertags Improves Neural Machine Translation": the tag before each word;
Aharoni & Goldberg, 2017, linearised trees in the target).

``interleave`` writes the target with each word's tag as a token before the word's first subword
(``⟨DET⟩ la ⟨NOUN⟩ fem@@ me``), from the target's streams written by ``syntax-nmt-annotate -o PREFIX.tgt`` (the
tags and the subword positions, B/M/E/O); the stock translation model then learns to write both. ``strip``
removes the tags from generated text (fairseq-generate's H-/D- lines, or plain lines) before scoring, as
``syntax-nmt-evaluate score --strip-target-tags`` does. A tag is ``⟨TAG⟩`` (U+27E8, U+27E9): a target word of that
form is refused (checked on the whole word, its pieces joined, so that ``⟨a@@ b⟩`` is refused too), so stripping
removes tags only. The output is never one of the inputs (under any spelling or link), and a failed ``interleave``
leaves nothing behind.
"""

import argparse
import logging
import os
import re
import sys
import tempfile
from typing import List, Optional, Sequence, TextIO

from syntax_nmt.annotate.subwords import BPE_SEPARATOR, SPM_SPACE
from syntax_nmt.annotate.textio import InputError
from syntax_nmt.data.streams import TAG_STREAMS, target_stream
from syntax_nmt.io_guard import parse_args, reads, writes
from syntax_nmt.utils import decoded_lines, read_lines

logger = logging.getLogger("syntax_nmt.target_tags")

OPEN, CLOSE = "\u27e8", "\u27e9"
#: a tag token, or a tag glued to a word by BPE removal (``fem@@ ⟨NOUN⟩ me`` -> ``fem⟨NOUN⟩ me``)
_TAG = re.compile(f"{OPEN}[^{CLOSE}\\s]*{CLOSE}")
#: fairseq-generate line types whose third field is text
_TEXT_LINES = ("H-", "D-")


def tag_token(tag: str) -> str:
    return f"{OPEN}{tag}{CLOSE}"


def is_tag(token: str) -> bool:
    return _TAG.fullmatch(token) is not None


def _joined(pieces: Sequence[str]) -> str:
    """The word the subword ``pieces`` make once BPE (``@@``) or sentencepiece (``▁``) markers are removed."""
    return "".join(p[: -len(BPE_SEPARATOR)] if p.endswith(BPE_SEPARATOR) else p.lstrip(SPM_SPACE) for p in pieces)


def _check_word(pieces: Sequence[str]) -> None:
    """Refuse a word (its subword pieces) that has, or once joined has, the form of a tag."""
    for piece in pieces:
        if _TAG.search(piece):
            raise ValueError(f"the target token {piece!r} has the form of a tag ({OPEN}...{CLOSE})")
    word = _joined(pieces)
    if _TAG.search(word):
        raise ValueError(f"the target word {word!r} (pieces {' '.join(pieces)!r}) has the form of a tag "
                         f"({OPEN}...{CLOSE})")


def interleave(tokens: Sequence[str], tags: Sequence[str], positions: Sequence[str]) -> List[str]:
    """The target ``tokens`` (subwords) with each word's tag before its first piece.

    Args:
        tokens: the target line's subword tokens.
        tags: the tag of each token (its word's, from a target stream).
        positions: each token's subword position tag (``B``/``M``/``E``/``O``; a word starts at ``B`` or ``O``).

    Raises:
        ValueError: the three differ in length, or a word (a piece, or its pieces joined) already has the form
            of a tag.
    """
    if not len(tokens) == len(tags) == len(positions):
        raise ValueError(f"{len(tokens)} tokens, {len(tags)} tags, {len(positions)} subword positions")
    out, word = [], []
    for token, tag, position in zip(tokens, tags, positions):
        if position in ("B", "O"):
            if word:
                _check_word(word)
            word = []
            out.append(tag_token(tag))
        word.append(token)
        out.append(token)
    if word:
        _check_word(word)
    return out


def find_tag(text: str) -> Optional[str]:
    """The first tag in ``text`` (a token, or one glued to a word), or None."""
    m = _TAG.search(text)
    return m.group() if m else None


def separate_tags(text: str) -> str:
    """``text`` with every tag a token of its own: a tag glued to a word by subword removal (``la⟨NOUN⟩ femme``
    after ``--remove-bpe sentencepiece``, where the tag is a piece without ``▁``; ``fem⟨NOUN⟩ me`` after BPE
    removal) is split from it, as :func:`strip` removes it."""
    return " ".join(_TAG.sub(lambda m: f" {m.group()} ", text).split())


def strip(text: str) -> str:
    """``text`` without its tags (also ones glued to a word), spaces collapsed."""
    return " ".join(_TAG.sub(" ", text).split())


def strip_generate_line(line: str) -> str:
    """A line of fairseq-generate's output with the tags removed from its text (H-/D- lines), or a plain line's."""
    if line.startswith(_TEXT_LINES) and line.count("\t") >= 2:
        head, score, text = line.split("\t", 2)
        return f"{head}\t{score}\t{strip(text)}"
    if line[:2] in ("S-", "T-", "P-", "F-", "W-", "A-", "I-") or line.startswith("Generate "):
        return line
    return strip(line)


def interleave_files(prefix: str, tgt_lang: str, tag: str, out: TextIO) -> int:
    """Write ``prefix.{tgt_lang}`` interleaved with the target stream ``tag`` (``prefix.tgt.{tag}``, positions from
    ``prefix.tgt.subword``) to ``out``; the annotation's own target text ``prefix.tgt.{tgt_lang}`` must be the
    target line for line. Returns the line count.

    Raises:
        InputError: naming the file and line of a mismatch.
    """
    text = f"{prefix}.{tgt_lang}"
    files = {"annotated": f"{prefix}.{target_stream(tgt_lang)}", "tags": f"{prefix}.{target_stream(tag)}",
             "positions": f"{prefix}.{target_stream('subword')}"}
    streams = {k: read_lines(p) for k, p in files.items()}
    n = 0
    for n, line in enumerate(read_lines(text), 1):
        rows = {}
        for k, it in streams.items():
            row = next(it, None)
            if row is None:
                raise InputError(f"{files[k]} has {n - 1} lines, {text} has more")
            rows[k] = row.split()
        tokens = line.split()
        if rows["annotated"] != tokens:
            raise InputError(f"{files['annotated']}:{n}: the target annotation's subwords differ from {text}:{n}")
        try:
            out.write(" ".join(interleave(tokens, rows["tags"], rows["positions"])) + "\n")
        except ValueError as e:
            raise InputError(f"{text}:{n}: {e}") from None
    for k, it in streams.items():
        if next(it, None) is not None:
            raise InputError(f"{files[k]} has more lines than {text} ({n})")
    return n


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="syntax-nmt-target-tags", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog="""examples:
  syntax-nmt-annotate --source prep/train.fr --src-lang fr --pretokenized --spacy-model fr_core_news_sm \\
      --subword bpe --subword-model prep/bpe.codes -o ann/train.tgt    # the target's streams
  syntax-nmt-target-tags interleave --prefix ann/train --tgt-lang fr --tag pos -o tagged/train.fr
  fairseq-generate ... --remove-bpe | syntax-nmt-target-tags strip > gen.txt""")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("interleave", help="write the target with each word's tag before it")
    reads(i.add_argument("--prefix", required=True, help="annotation prefix P: reads P.TGT, P.tgt.TGT, P.tgt.TAG, "
                         "P.tgt.subword"), "prefix",
          paths=lambda prefix, a: interleave_inputs(prefix, a.tgt_lang, a.tag))
    i.add_argument("--tgt-lang", required=True, help="target language (suffix of P.TGT)")
    i.add_argument("--tag", default="pos", choices=[s for s in TAG_STREAMS if s != "subword"],
                   help="the target stream whose values are interleaved")
    writes(i.add_argument("--output", "-o", required=True, help="the interleaved target (a file)"))
    s = sub.add_parser("strip", help="remove the tags from fairseq-generate output or plain text")
    reads(s.add_argument("input", nargs="?", default="-", help="file (default: standard input)"),
          paths=lambda path, _: [] if path == "-" else [path])
    return p


def interleave_inputs(prefix: str, tgt_lang: str, tag: str) -> List[str]:
    """The files ``interleave`` reads: ``P.TGT``, ``P.tgt.TGT``, ``P.tgt.TAG``, ``P.tgt.subword``."""
    return [f"{prefix}.{tgt_lang}"] + [f"{prefix}.{target_stream(x)}" for x in (tgt_lang, tag, "subword")]


def _missing_dirs(path: str) -> List[str]:
    """The directories above ``path`` that do not exist yet, the topmost first."""
    missing, d = [], os.path.dirname(os.path.abspath(path))
    while d and not os.path.isdir(d):
        missing.insert(0, d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return missing


def main(args) -> None:
    if args.command == "interleave":
        created = _missing_dirs(args.output)
        above = os.path.dirname(created[0] if created else os.path.abspath(args.output))
        blocking = next((d for d in [*created, above] if os.path.lexists(d) and not os.path.isdir(d)), None)
        if blocking is not None:  # os.makedirs said "File exists", naming neither the option nor the file
            raise InputError(f"--output {args.output}: {blocking} is a file, not a folder")
        if created:
            os.makedirs(created[-1])
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.output)),
                                   prefix=os.path.basename(args.output) + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                n = interleave_files(args.prefix, args.tgt_lang, args.tag, out)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, args.output)
        except BaseException:  # nothing is left behind: neither the temporary file nor the folders made for it
            os.unlink(tmp)
            for folder in reversed(created):  # deepest first; only empty folders are removed, never what is in them
                try:
                    os.rmdir(folder)
                except OSError:  # something else was written there meanwhile: kept, and the folders above it
                    break
            raise
        logger.info("%d lines with %s tags -> %s", n, args.tag, args.output)
        return
    if args.input == "-":
        for _, line in decoded_lines(sys.stdin.buffer, "<stdin>"):
            sys.stdout.write(strip_generate_line(line) + "\n")
        return
    for line in read_lines(args.input):
        sys.stdout.write(strip_generate_line(line) + "\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def cli_main(argv: Optional[List[str]] = None) -> None:
    from syntax_nmt.cli_errors import run
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.INFO)
    run("syntax-nmt-target-tags", main, parse_args(get_parser(), argv))


if __name__ == "__main__":
    cli_main()
