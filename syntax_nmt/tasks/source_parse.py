"""A model's own parse of the source as an output (LISA's parse head), for ``syntax_translation``.

LISA's parse head (Strubell et al., 2018, sec. 2.2) is trained to attend from each subword to its parent: the first
subword of its head word, a root word's subwords and the special tokens to themselves
(:func:`~syntax_nmt.models.modules.methods.lisa_masks.lisa_parents`, the convention of the head stream). Read back
the same way, its argmax from each word's first subword names the word's head: the word holding the key it points
to, or none (a root) when that key is in the word itself or is a special token. :func:`word_heads` does this for a
batch; the words are the source's subword pieces joined as ``--remove-bpe`` joins them (:func:`token_word_starts`:
from the tokens and the recorded subword scheme, so no stream is needed). The task prints the parses beside the
translations (``--print-source-parse``, :mod:`syntax_nmt.syntax.parse_lines`), the hub returns them (``hub.parse``), and
``syntax-nmt-evaluate parse`` scores them against a parser (UAS).
"""

import sys
from typing import List, Optional, Sequence, TextIO

import torch
from torch import Tensor

from syntax_nmt.annotate.subwords import BPE_SEPARATOR, SPM_SPACE, piece_text
from syntax_nmt.data.streams import StreamConfigError
from syntax_nmt.syntax.conllu import Sentence
from syntax_nmt.syntax.parse_lines import parse_lines



def token_word_starts(tokens: Tensor, special: Tensor, table: Tensor, scheme: str) -> Tensor:
    """Bool ``(B, T)``: the tokens that start a word, as ``--remove-bpe`` joins subwords
    (:func:`~syntax_nmt.annotate.subwords.word_starts`) and the annotator's ``subword`` stream marks them, but a word
    whose tokens hold no text (sentencepiece's bare ``▁`` of a word it normalizes to nothing, e.g. U+FFFD): it is
    none, as ``--remove-bpe`` leaves nothing of it (its tokens go on the word before; issue 56).

    Args:
        tokens: ``(B, T)`` token ids.
        special: bool ``(B, T)``, pad/BOS/EOS positions (never a word).
        table: bool ``(V, 2)`` of :func:`marker_table`: column 0, ``bpe``: whether a symbol ends with ``@@`` (the next
            token goes on its word), ``spm``: whether it starts with ``▁`` (it starts a word); column 1, whether it
            holds text once its marker is removed.
        scheme: ``bpe``, ``spm`` or ``none`` (every real token is a word).
    """
    real = ~special
    marker = table[:, 0][tokens]
    if scheme == "bpe":
        joined = torch.nn.functional.pad(marker[:, :-1], (1, 0), value=False)  # the token before ends with @@
        starts = real & ~joined
    elif scheme == "spm":
        after_special = torch.nn.functional.pad(special[:, :-1], (1, 0), value=True)
        starts = real & (marker | after_special)
    else:
        return real
    word = torch.cumsum(starts.long(), dim=1)  # each token's word, 0 before the first
    text = torch.zeros(word.shape[0], word.shape[1] + 1, dtype=torch.long, device=word.device)
    text.scatter_add_(1, word, (real & table[:, 1][tokens]).long())  # tokens with text, per word
    return starts & text.gather(1, word).gt(0)


def marker_table(symbols: List[str], scheme: str, device=None) -> Tensor:
    """Bool ``(V, 2)`` over a dictionary's symbols for :func:`token_word_starts`: each symbol's subword marker, and
    whether it holds text without it (:func:`~syntax_nmt.annotate.subwords.piece_text`)."""
    if scheme == "bpe":
        flags = [s.endswith(BPE_SEPARATOR) for s in symbols]
    elif scheme == "spm":
        flags = [s.startswith(SPM_SPACE) for s in symbols]
    else:
        flags = [False] * len(symbols)
    text = [bool(piece_text(s, scheme)) for s in symbols]
    return torch.tensor(list(zip(flags, text)), dtype=torch.bool, device=device).reshape(len(symbols), 2)


def guess_scheme(symbols: List[str]) -> str:
    """The subword scheme of a dictionary whose annotation settings are unknown (a checkpoint trained before they
    were recorded, on data without them): ``bpe`` if a symbol ends with ``@@``, ``spm`` if one starts with ``▁``,
    else ``none``."""
    if any(s.endswith(BPE_SEPARATOR) for s in symbols):
        return "bpe"
    return "spm" if any(s.startswith(SPM_SPACE) for s in symbols) else "none"


def word_heads(parents: Tensor, word_start: Tensor, special: Tensor) -> Tensor:
    """Word-level heads of predicted parent positions, ``(B, T)`` long: at each word's first subword the 1-based
    index (in its sentence) of the word holding its parent token, 0 when that token is in the word itself (the
    root convention of the head stream) or is a special token; -1 at every other position. A token before the first
    word (a word without text that :func:`token_word_starts` dropped) is in the first word.

    Args:
        parents: ``(B, T)`` long, each token's predicted parent position (e.g. LISA's argmax).
        word_start: bool ``(B, T)``, the first subwords of words (:func:`token_word_starts`).
        special: bool ``(B, T)``, pad/BOS/EOS positions.
    """
    word_of = torch.cumsum(word_start.long(), dim=1).clamp(min=1)  # the 1-based word of each token
    head = word_of.gather(1, parents)
    head = head.masked_fill(special.gather(1, parents) | head.eq(word_of), 0)
    return head.masked_fill(~word_start, -1)


def sentences(pieces: List[List[str]], starts: List[List[bool]], heads: List[List[int]], scheme: str,
              ) -> List[Sentence]:
    """One :class:`Sentence` per row: its words (pieces joined, subword markers removed), the heads of
    :func:`word_heads` at their first subwords, no tags or labels (``_``).

    Args:
        pieces: each row's real tokens (no pad, BOS, EOS).
        starts, heads: the same rows of :func:`token_word_starts` and :func:`word_heads`.
    """
    out = []
    for row, row_starts, row_heads in zip(pieces, starts, heads):
        words: List[str] = []
        for piece, start in zip(row, row_starts):
            text = piece_text(piece, scheme)
            if start:
                words.append(text)
            elif words:
                words[-1] += text
            # else: a piece before the first word, of a word without text (token_word_starts), adds nothing
        h = [x for x, start in zip(row_heads, row_starts) if start]
        n = len(words)
        out.append(Sentence(words, ["_"] * n, ["_"] * n, h, ["_"] * n))
    return out


class SourceParses:
    """The parses of the source a model predicts, as the task reads them off a batch (``--print-source-parse``, the
    hub's ``parse``).

    Args:
        src_dict: the source dictionary (its pieces are the subwords joined into words).
    """

    def __init__(self, src_dict):
        self.src_dict = src_dict
        self._table = None  # (scheme, marker_table) of the dictionary

    def __call__(self, model, net_input, scheme: Optional[str]) -> List[Sentence]:
        """The parse of each source sentence of a batch that ``model`` predicts: its words (the source subwords joined,
        as ``--remove-bpe`` joins them; ``scheme``: the recorded subword scheme, None: guessed from the dictionary)
        and their 1-based heads (0: root), no tags or labels. The encoder runs once more on the batch.

        Raises:
            StreamConfigError: the model predicts no parse.
        """
        if not getattr(model, "predicts_source_parse", False):
            raise StreamConfigError("the model predicts no parse of the source: only --syntax-attention lisa has a "
                                    "parse head")
        tokens = net_input["src_tokens"]
        parents = model.predict_source_parents(net_input)
        d = self.src_dict
        special = tokens.eq(d.pad()) | tokens.eq(d.eos()) | tokens.eq(d.bos())
        scheme = scheme if scheme is not None else guess_scheme(d.symbols)
        if self._table is None or self._table[0] != scheme:
            self._table = (scheme, marker_table(d.symbols, scheme))
        starts = token_word_starts(tokens, special, self._table[1].to(tokens.device), scheme)
        heads = word_heads(parents.to(tokens.device), starts, special)
        real = (~special).cpu()
        rows = [r[m] for r, m in zip(tokens.cpu(), real)]
        return sentences([[d[int(k)] for k in r] for r in rows], [r[m].tolist() for r, m in zip(starts.cpu(), real)],
                         [r[m].tolist() for r, m in zip(heads.cpu(), real)], scheme)


def fairseq_output() -> TextIO:
    """Where fairseq prints its S-, H-... lines, for the plugin's ``G-`` and ``F-`` lines: in fairseq-generate, the
    file of ``--results-path`` (``RESULTS/generate-SUBSET.txt``) or the standard output; elsewhere (fairseq-interactive,
    the hub) the standard output. fairseq-generate hands that file to no hook of the task (its ``_main(cfg,
    output_file)`` prints to it), so it is read off that call's frame, one of the callers of the task's
    ``inference_step`` (issue 56.7: the G- lines went to the standard output, the S- lines to the file)."""
    generate = sys.modules.get("fairseq_cli.generate")
    main = getattr(generate, "_main", None)
    frame = sys._getframe(1)
    while main is not None and frame is not None:
        if frame.f_code is main.__code__:
            return frame.f_locals["output_file"]
        frame = frame.f_back
    return sys.stdout


def print_parses(ids: Sequence[int], parses: Sequence[Sentence], fmt: str, file: Optional[TextIO] = None) -> None:
    """The ``G-`` lines of ``--print-source-parse`` (:func:`~syntax_nmt.syntax.parse_lines.parse_lines`), numbered
    ``ids`` as fairseq numbers the S- and H- lines, on ``file`` (default: the standard output)."""
    for sid, sentence in zip(ids, parses):
        for line in parse_lines(sid, sentence, fmt):
            print(line, file=file, flush=False)
