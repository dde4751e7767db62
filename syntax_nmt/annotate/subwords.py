"""Subword segmentation of parsed words (subword-nmt BPE, sentencepiece, or none).

Segmentation is done word by word: :meth:`Segmenter.segment` maps a list of words to
one list of pieces per word, so the alignment of pieces to parser words is exact by
construction (no re-tokenization, no guessing from markers).

* ``bpe``: :class:`subword_nmt.apply_bpe.BPE`; non-final pieces carry the ``@@``
  separator (undo with ``sed -r 's/(@@ )|(@@ ?$)//g'``).
* ``spm``: :class:`sentencepiece.SentencePieceProcessor`; the words of a sentence are
  encoded in one batched call, each word getting its own ``▁``-prefixed pieces (the same
  pieces as sentence-level encoding, since sentencepiece never merges across whitespace).
* ``none``: every word is one piece.

Escaping (:func:`escape_word`), applied to source words after parsing (the parser sees the
original text) and to target tokens, before learning and segmenting, so that a word can
never be confused with the subword markers of the chosen scheme:

* ``bpe``: every ``@@`` inside a word becomes ``＠＠`` (two U+FF20 FULLWIDTH COMMERCIAL AT),
  so ``@@`` in the output always is the BPE separator. Single ``@`` are untouched.
* ``spm``: every ``▁`` (U+2581, sentencepiece's word-boundary mark) becomes ``_``.
* ``none``: no subword marker to escape.
* every scheme: fairseq's special symbols ``<s>``, ``</s>``, ``<pad>`` and ``<unk>`` inside a
  word get ``‹ ›`` (U+2039, U+203A, which NFKC leaves alone) for their angle brackets
  (``</s>`` -> ``‹/s›``), so a word or piece of the text never becomes fairseq's BOS, EOS,
  padding or unknown symbol (a literal ``</s>`` would be binarized as the EOS id).
* ``|`` and all other characters pass through unchanged (the streams are separate files,
  so ``|`` has no factor-separator meaning here).

These rules are version :data:`ESCAPE_VERSION` of the annotation settings.

Words never contain whitespace (input whitespace is collapsed before parsing). As a last
guard, :meth:`Segmenter.segment` raises if a model ever yields an empty piece or one with
whitespace, since that would shift features against tokens.

Learning (:func:`learn_model`) uses the escaped source words *after parsing* plus the
escaped target tokens, as one joint model: ``bpe`` learns ``N`` merge operations
(:func:`subword_nmt.learn_bpe.learn_bpe` on a joint word-count dictionary); ``spm`` trains
a model with vocabulary size ``N`` (:meth:`sentencepiece.SentencePieceTrainer.train`).
"""

import contextlib
import hashlib
import io
import os
from collections import Counter
from typing import Iterable, List, Sequence

SCHEMES = ("bpe", "spm", "none")
BPE_SEPARATOR = "@@"
SPM_SPACE = "\u2581"
_BPE_ESCAPE = "\uff20\uff20"


#: Version tag of the escaping rules (recorded in the annotation settings); bump on any change.
ESCAPE_VERSION = "v1"
#: fairseq's special symbols, escaped inside words.
FAIRSEQ_SPECIALS = ("<s>", "</s>", "<pad>", "<unk>")


def escape_word(word: str, scheme: str) -> str:
    """Escape a word so it cannot contain the subword markers of ``scheme`` nor fairseq's special symbols."""
    if "<" in word:
        for sym in FAIRSEQ_SPECIALS:
            if sym in word:
                word = word.replace(sym, "\u2039" + sym[1:-1] + "\u203a")
    if scheme == "bpe":
        return word.replace(BPE_SEPARATOR, _BPE_ESCAPE) if BPE_SEPARATOR in word else word
    if scheme == "spm":
        return word.replace(SPM_SPACE, "_") if SPM_SPACE in word else word
    return word


def piece_text(piece: str, scheme: str) -> str:
    """What a subword piece adds to its word once ``--remove-bpe`` has joined the pieces: the piece without its
    marker (``bpe``: a final :data:`BPE_SEPARATOR`; ``spm``: every :data:`SPM_SPACE`)."""
    if scheme == "bpe":
        return piece[:-len(BPE_SEPARATOR)] if piece.endswith(BPE_SEPARATOR) else piece
    if scheme == "spm":
        return piece.replace(SPM_SPACE, "")
    return piece


def word_starts(pieces: Sequence[str], scheme: str) -> List[bool]:
    """Whether each subword piece of a segmented line starts a word (how ``--remove-bpe`` joins them): ``bpe``,
    unless the piece before ends with :data:`BPE_SEPARATOR`; ``spm``, when it starts with :data:`SPM_SPACE` (or is
    the first); ``none``: every piece is a word.

    A word whose pieces hold no text (:func:`piece_text`) is no word: ``--remove-bpe`` leaves nothing of it, so its
    pieces join the word before (none of them starts a word). sentencepiece gives such a word: a bare ``▁`` with no
    piece after it on its word, which the annotation makes of a word that sentencepiece normalizes to nothing
    (U+FFFD, which the plugin makes of invalid bytes, or U+200B alone: :class:`SpmSegmenter`; issue 56)."""
    if scheme == "bpe":
        starts = [i == 0 or not pieces[i - 1].endswith(BPE_SEPARATOR) for i in range(len(pieces))]
    elif scheme == "spm":
        starts = [i == 0 or p.startswith(SPM_SPACE) for i, p in enumerate(pieces)]
    else:
        return [True] * len(pieces)
    out = list(starts)
    for i, start in enumerate(starts):
        if start:
            end = next((j for j in range(i + 1, len(pieces)) if starts[j]), len(pieces))
            out[i] = any(piece_text(p, scheme) for p in pieces[i:end])
    return out


def scheme_of_pieces(pieces: Sequence[str]) -> str:
    """The subword scheme of a vocabulary of pieces (a dictionary's symbols): ``bpe`` if some end with
    :data:`BPE_SEPARATOR`, ``spm`` if some start with :data:`SPM_SPACE`, ``none`` if neither.

    Raises:
        ValueError: pieces of both kinds (the scheme cannot be told).
    """
    bpe = next((p for p in pieces if p.endswith(BPE_SEPARATOR) and len(p) > len(BPE_SEPARATOR)), None)
    spm = next((p for p in pieces if p.startswith(SPM_SPACE)), None)
    if bpe is not None and spm is not None:
        raise ValueError(f"the dictionary holds BPE pieces ({bpe!r}) and sentencepiece pieces ({spm!r}): its subword "
                         f"scheme cannot be told")
    return "bpe" if bpe is not None else "spm" if spm is not None else "none"


def file_sha256(path: str) -> str:
    """Hex SHA-256 of a file (identifies the subword model a chunk was segmented with)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Segmenter:
    """Base class: segments a sentence's words into per-word piece lists."""

    scheme = "none"

    def _segment(self, words: Sequence[str]) -> List[List[str]]:
        return [[w] for w in words]

    def segment(self, words: Sequence[str]) -> List[List[str]]:
        """Segment escaped words.

        Args:
            words: ``n`` escaped words without whitespace.

        Returns:
            ``n`` non-empty lists of whitespace-free pieces.

        Raises:
            ValueError: if the model produced an empty piece, a piece with whitespace, or
                no piece for a word (would misalign features and tokens).
        """
        pieces = self._segment(words)
        if len(pieces) != len(words):
            raise ValueError(f"subword model returned {len(pieces)} segmentations for {len(words)} words")
        flat = [x for p in pieces for x in p]
        if not all(pieces) or " ".join(flat).split() != flat:  # a piece with whitespace, even at an end
            for word, p in zip(words, pieces):
                if not p or any(len(x.split()) != 1 or x.split()[0] != x for x in p):
                    raise ValueError(f"subword model segmented word {word!r} into {p!r}")
        return pieces


class BpeSegmenter(Segmenter):
    """subword-nmt BPE from a codes file."""

    scheme = "bpe"

    #: Words whose segmentation is memoized (cleared when full; bounds memory at WMT scale).
    cache_size = 1_000_000

    def __init__(self, codes_path: str):
        from subword_nmt.apply_bpe import BPE

        with open(codes_path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            hint = "; a sentencepiece model? use --subword spm" if data[:1] == b"\n" else ""
            raise ValueError(f"{codes_path} is not a subword-nmt BPE codes file (not UTF-8 text at byte "
                             f"{e.start}{hint})") from None
        if not text.strip():  # subword-nmt would take it as a model without merges: every word in characters
            raise ValueError(f"{codes_path} is an empty BPE codes file (codes learned without any merge still have "
                             f"their '#version:' line): learn the codes again")
        lines = text.rstrip("\n").split("\n")
        offset = 2 if lines[0].startswith("#version:") else 1
        numbered = [(n, line) for n, line in enumerate(lines[offset - 1:], offset) if line.strip("\r ")]
        if not numbered:  # subword-nmt would split every word into characters
            raise ValueError(f"{codes_path} holds no merge operation (only its '#version:' line), so every word "
                             f"would be split into characters: learn the codes again with merges > 0 on more text")
        for n, line in numbered:
            if len(line.strip("\r\n ").split(" ")) != 2:
                raise ValueError(f"{codes_path}:{n}: not a subword-nmt BPE codes file (a line must hold two "
                                 f"symbols separated by a space, got {line[:60]!r})")
        # subword-nmt exits the process on a blank line between merges: it gets the header and the merges only
        merges = lines[:offset - 1] + [line for _, line in numbered]
        self.bpe = BPE(io.StringIO("\n".join(merges)), merges=len(numbered), separator=BPE_SEPARATOR)
        self._cache = {}

    def _segment(self, words):
        cache = self._cache
        out = []
        for w in words:
            p = cache.get(w)
            if p is None:
                if len(cache) >= self.cache_size:
                    cache.clear()
                p = cache[w] = self.bpe.segment_tokens([w])
            out.append(p)
        return out


class SpmSegmenter(Segmenter):
    """sentencepiece model (``.model`` file).

    Every word gets exactly one word start: a piece list that begins with ``▁`` and has no
    other ``▁``-initial piece. sentencepiece's normalizer (NFKC by default) can turn one
    parser word into several spm words, e.g. U+200B ZERO WIDTH SPACE becomes a space, and
    ``´ ¨ ‾`` become a space plus a combining mark (``don´t`` -> ``don ́t``); such a word is
    encoded again from its normalized form with those spaces removed (``▁dońt``), so the
    ``▁`` markers and the B/M/E/O stream always agree. A word that normalizes to nothing
    (only U+200B) is one ``▁`` piece, so that it still has a position.
    """

    scheme = "spm"

    def __init__(self, model_path: str):
        import sentencepiece as spm

        try:
            self.sp = spm.SentencePieceProcessor(model_file=model_path)
        except (RuntimeError, OSError) as e:
            raise ValueError(f"{model_path} is not a sentencepiece model ({str(e).strip()}; BPE codes? use "
                             f"--subword bpe)") from None
        with open(model_path, "rb") as f:
            fields = _protobuf_fields(f.read())
        missing = [name for number, name in ((2, "trainer_spec"), (3, "normalizer_spec")) if number not in fields]
        if missing:  # a file cut between two pieces still parses: its first pieces, no normalizer
            raise ValueError(f"{model_path} is a truncated sentencepiece model ({self.sp.get_piece_size()} pieces, "
                             f"no {' nor '.join(missing)}): copy or train it again")

    def _one_word(self, word: str) -> List[str]:
        joined = self.sp.normalize(word).replace(SPM_SPACE, "").replace(" ", "")
        pieces = self.sp.encode(joined, out_type=str) if joined else []
        if not _one_start(pieces):  # cannot happen with NFKC (idempotent); merge as a last resort
            rest = [x.lstrip(SPM_SPACE) for x in pieces[1:]]
            pieces = [SPM_SPACE + pieces[0].lstrip(SPM_SPACE)] if pieces else []
            pieces += [x for x in rest if x]
        return pieces or [SPM_SPACE]

    def _segment(self, words):
        if not words:
            return []
        pieces = self.sp.encode(list(words), out_type=str)
        return [p if _one_start(p) else self._one_word(w) for w, p in zip(words, pieces)]


def _protobuf_fields(data: bytes) -> set:
    """The field numbers at the top level of a serialized protobuf message (a sentencepiece
    ``ModelProto``: 1 pieces, 2 trainer_spec, 3 normalizer_spec...); stops at the first
    malformed field."""
    fields, i = set(), 0

    def varint():
        nonlocal i
        value = shift = 0
        while i < len(data):
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value
        return None

    while i < len(data):
        key = varint()
        if key is None:
            break
        wire = key & 7
        if wire == 0:
            if varint() is None:
                break
        elif wire == 2:
            n = varint()
            if n is None or i + n > len(data):
                break
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            break
        if i > len(data):
            break
        fields.add(key >> 3)
    return fields


def _one_start(pieces: List[str]) -> bool:
    """True if ``pieces`` begins with ``▁`` and no later piece does."""
    return bool(pieces) and pieces[0].startswith(SPM_SPACE) and not any(x.startswith(SPM_SPACE) for x in pieces[1:])


def load_segmenter(scheme: str, model_path: str = None) -> Segmenter:
    """Build the segmenter for ``scheme`` from a model file (none for ``none``)."""
    if scheme == "none":
        return Segmenter()
    if scheme not in SCHEMES:
        raise ValueError(f"unknown subword scheme {scheme!r}, expected one of {SCHEMES}")
    if not model_path:
        raise ValueError(f"--subword {scheme} needs --subword-model or --learn-subword")
    if not os.path.isfile(model_path):
        raise FileNotFoundError(f"subword model {model_path} does not exist")
    return BpeSegmenter(model_path) if scheme == "bpe" else SpmSegmenter(model_path)


def spm_model_path(path: str) -> str:
    """The ``.model`` file sentencepiece writes for ``--subword-model-out PATH``
    (``PATH`` if it ends with ``.model``, else ``PATH.model``; the vocabulary goes next
    to it with suffix ``.vocab``)."""
    return path if path.endswith(".model") else path + ".model"


def learn_model(
    scheme: str,
    lines: Iterable[str],
    size: int,
    out_path: str,
    spm_model_type: str = "unigram",
    spm_input_sentence_size: int = 2_000_000,
    quiet: bool = False,
) -> str:
    """Learn a joint subword model from escaped, space-separated lines.

    Args:
        scheme: ``"bpe"`` (``size`` merge operations) or ``"spm"`` (vocabulary ``size``).
        lines: escaped source-word and target-token lines (streamed once).
        size: number of merges (bpe) or vocabulary size (spm, a soft limit).
        out_path: codes file (bpe), or model path (spm, see :func:`spm_model_path`).
        spm_model_type: sentencepiece ``model_type`` (``unigram`` or ``bpe``).
        spm_input_sentence_size: sentences sampled by sentencepiece for training.
        quiet: hide subword-nmt's progress bar and messages (sentencepiece's log is
            always limited to warnings).

    Returns:
        The path of the written model file (written atomically).
    """
    if scheme == "bpe":
        from subword_nmt.learn_bpe import learn_bpe

        counts = Counter()
        for line in lines:
            counts.update(line.split())
        vocab = io.StringIO("".join(f"{w} {c}\n" for w, c in counts.items()))
        tmp = f"{out_path}.tmp-{os.getpid()}"
        with open(tmp, "w", encoding="utf-8", newline="\n") as out, \
                contextlib.redirect_stderr(io.StringIO()) if quiet else contextlib.nullcontext():
            learn_bpe(vocab, out, size, is_dict=True)
        os.replace(tmp, out_path)
        return out_path
    if scheme == "spm":
        import sentencepiece as spm

        model = spm_model_path(out_path)
        tmp_prefix = f"{model[:-len('.model')]}.tmp-{os.getpid()}"
        try:
            _train_spm(spm, lines, tmp_prefix, size, spm_model_type, spm_input_sentence_size)
        except RuntimeError as e:  # e.g. "Vocabulary size is smaller than required_chars"
            msg = str(e).strip().split("] ")[-1]
            raise ValueError(f"learning a sentencepiece model of size {size} failed: {msg}") from None
        os.replace(tmp_prefix + ".vocab", model[: -len(".model")] + ".vocab")
        os.replace(tmp_prefix + ".model", model)
        return model
    raise ValueError(f"cannot learn a subword model for scheme {scheme!r}")


def _train_spm(spm, lines, tmp_prefix, size, spm_model_type, spm_input_sentence_size):
    spm.SentencePieceTrainer.train(
        sentence_iterator=(line for line in lines if line),
        model_prefix=tmp_prefix,
        vocab_size=size,
        model_type=spm_model_type,
        character_coverage=1.0,
        hard_vocab_limit=False,
        input_sentence_size=spm_input_sentence_size,
        shuffle_input_sentence=True,
        minloglevel=2,
    )
