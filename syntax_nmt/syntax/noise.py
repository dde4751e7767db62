"""Seeded parse noise on whole corpora of streams (pure numpy, no fairseq).

SG-Net (Zhang et al., 2020, sec. 7.6) measures robustness to parse errors by
turning a proportion r in {0, 0.2, ..., 1} of the parser's labels into random
wrong ones. Here the unit is the *word*: a chosen word gets a new head (a random
other word of its sentence, or the root) or a new tag (a random other tag of the
tagset), and every subword of the word carries the new value, exactly as
``syntax-nmt-annotate`` writes streams. The new value always differs from the old
one when the sentence (or tagset) allows it, so r = 1 changes every word that
can change; a head may point anywhere, so noisy trees may contain cycles (the
tree code treats a cycle's nodes as ancestors of each other, as it does for any
bad parse).

Inputs are flat arrays over a corpus of sentences without special tokens
(``lengths`` gives the tokens of each sentence):

* ``word_start`` ``(M,)`` bool: True at the first subword of each word (subword
  tags ``B``/``O``); the first token of every sentence always starts a word.
* ``heads`` ``(M,)`` int: relative offset to the first subword of the head word,
  ``0`` at roots (the stream ``head``).
* ``tags`` ``(M,)`` int: tag ids (e.g. the stream ``pos``).

Randomness is separated from the corruption: :func:`noise_draws` returns, for a
seed, one random order and one uniform number per word; the words corrupted at
rate r are the first ``round(r * W)`` of that order. Rates with one seed are
therefore nested (the words noisy at 0.2 are noisy at 0.4 too, with the same
wrong values), which makes a BLEU-against-r curve smooth.
"""

from typing import NamedTuple, Sequence, Tuple

import numpy as np


class WordIndex(NamedTuple):
    """Word structure of a flat corpus.

    Attributes:
        word_of_token: ``(M,)`` global word id of every token.
        first_token: ``(W,)`` flat position of each word's first token.
        sentence_of_word: ``(W,)`` sentence of each word.
        word_in_sentence: ``(W,)`` position of each word within its sentence (0-based).
        words_per_sentence: ``(N,)`` number of words of each sentence.
        first_word: ``(N,)`` global id of the first word of each sentence.
    """

    word_of_token: np.ndarray
    first_token: np.ndarray
    sentence_of_word: np.ndarray
    word_in_sentence: np.ndarray
    words_per_sentence: np.ndarray
    first_word: np.ndarray


def word_index(word_start: np.ndarray, lengths: np.ndarray) -> WordIndex:
    """Words of a flat corpus (see :class:`WordIndex`).

    Args:
        word_start: ``(M,)`` bool, ``M = lengths.sum()``.
        lengths: ``(N,)`` tokens per sentence (0 allowed).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    ws = np.asarray(word_start, dtype=bool).copy()
    if ws.shape != (int(lengths.sum()),):
        raise ValueError(f"word_start has {ws.shape[0]} tokens, lengths sum to {int(lengths.sum())}")
    starts = np.cumsum(lengths) - lengths
    ws[starts[lengths > 0]] = True  # a sentence never continues the previous one's last word
    first_token = np.flatnonzero(ws)
    word_of_token = np.cumsum(ws) - 1
    sentence_of_token = np.repeat(np.arange(len(lengths)), lengths)
    sentence_of_word = sentence_of_token[first_token]
    words_per_sentence = np.bincount(sentence_of_word, minlength=len(lengths))
    first_word = np.cumsum(words_per_sentence) - words_per_sentence
    word_in_sentence = np.arange(len(first_token)) - first_word[sentence_of_word]
    return WordIndex(word_of_token, first_token, sentence_of_word, word_in_sentence, words_per_sentence, first_word)


def noise_draws(num_words: int, rate: float, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Which words to corrupt at ``rate``, and one uniform number per word for the new value.

    Args:
        num_words: ``W``.
        rate: fraction in [0, 1]; exactly ``round(rate * W)`` words are selected.
        seed: numpy seed; the order and the uniforms do not depend on ``rate``.

    Returns:
        ``(selected, u)``: ``(W,)`` bool and ``(W,)`` float in [0, 1).
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"noise rate must lie in [0, 1], got {rate}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(num_words)
    u = rng.random(num_words)
    selected = np.zeros(num_words, dtype=bool)
    selected[order[: int(round(rate * num_words))]] = True
    return selected, u


def head_words(heads: np.ndarray, words: WordIndex, lengths: np.ndarray) -> np.ndarray:
    """Head of every word as a word position within its sentence, ``-1`` for roots.

    Read from the offset of each word's first subword; an offset of 0, one that
    leaves the sentence, or one into the word itself makes the word a root.

    Returns:
        ``(W,)`` int64.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    sent = words.sentence_of_word
    first = words.first_token
    target = first + heads[first]
    lo, hi = starts[sent], starts[sent] + lengths[sent]
    inside = (target >= lo) & (target < hi)
    target_word = words.word_of_token[np.where(inside, target, first)]
    own = np.arange(len(first))
    root = ~inside | (heads[first] == 0) | (target_word == own)
    return np.where(root, -1, words.word_in_sentence[target_word])


def corrupt_heads(heads: np.ndarray, word_start: np.ndarray, lengths: np.ndarray, selected: np.ndarray,
                  u: np.ndarray) -> np.ndarray:
    """Give every selected word a random wrong head.

    Word ``w`` of an ``n``-word sentence whose head is ``h`` (``-1``: root) gets a
    value from ``[root, word 0, ..., word n-1]`` without ``w`` itself and ``h``
    (``n - 1`` candidates, in that order), namely candidate ``floor(u[w] * (n - 1))``;
    one-word sentences have no candidate and stay unchanged. Every subword of the
    word then points at the first subword of the new head word (0 for root).

    Args:
        heads: ``(M,)`` relative head offsets.
        word_start: ``(M,)`` bool.
        lengths: ``(N,)`` tokens per sentence.
        selected, u: ``(W,)`` from :func:`noise_draws`.

    Returns:
        ``(M,)`` int64 new offsets (unselected words keep theirs).
    """
    heads = np.asarray(heads, dtype=np.int64)
    words = word_index(word_start, lengths)
    n = words.words_per_sentence[words.sentence_of_word]
    cur = head_words(heads, words, lengths)
    k = np.minimum(np.floor(u * (n - 1)).astype(np.int64), np.maximum(n - 2, 0))
    # candidate list index: 0 = root, j + 1 = word j; skip the two excluded entries
    a = np.minimum(words.word_in_sentence, cur) + 1
    b = np.maximum(words.word_in_sentence, cur) + 1
    k = k + (k >= a)
    k = k + (k >= b)
    new_head = k - 1
    change = np.asarray(selected, dtype=bool) & (n > 1)
    new_word_head = np.where(change, new_head, cur)
    # per token: offset to the first subword of its word's (new) head word
    tok_word = words.word_of_token
    tok_head = new_word_head[tok_word]
    head_global = words.first_word[words.sentence_of_word[tok_word]] + np.maximum(tok_head, 0)
    offsets = words.first_token[head_global] - np.arange(len(heads))
    new = np.where(tok_head < 0, 0, offsets)
    return np.where(change[tok_word], new, heads)


def corrupt_tags(tags: np.ndarray, word_start: np.ndarray, lengths: np.ndarray, choices: Sequence[int],
                 selected: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Give every selected word a random wrong tag from ``choices``.

    The candidates of word ``w`` are ``choices`` without its current tag (the tag
    of its first subword), in order; it gets candidate ``floor(u[w] * len)``. With
    a single choice equal to the current tag nothing changes.

    Args:
        tags: ``(M,)`` tag ids.
        word_start: ``(M,)`` bool.
        lengths: ``(N,)``.
        choices: the valid tag ids (e.g. a stream dictionary without its special symbols).
        selected, u: ``(W,)`` from :func:`noise_draws`.

    Returns:
        ``(M,)`` int64 new tags.
    """
    tags = np.asarray(tags, dtype=np.int64)
    choices = np.asarray(sorted(set(int(c) for c in choices)), dtype=np.int64)
    if len(choices) == 0:
        raise ValueError("no tag to choose from")
    words = word_index(word_start, lengths)
    cur = tags[words.first_token]
    pos = np.searchsorted(choices, cur)
    known = (pos < len(choices)) & (choices[np.minimum(pos, len(choices) - 1)] == cur)
    m = len(choices) - known.astype(np.int64)
    k = np.minimum(np.floor(u * m).astype(np.int64), np.maximum(m - 1, 0))
    k = k + (known & (k >= pos))
    change = np.asarray(selected, dtype=bool) & (m > 0)
    new_word_tag = np.where(change, choices[np.minimum(k, len(choices) - 1)], cur)
    tok_word = words.word_of_token
    return np.where(change[tok_word], new_word_tag[tok_word], tags)
