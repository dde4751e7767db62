"""syntax_nmt.syntax.noise against a naive per-word loop written from its definition (naive_heads, naive_tags of
tests/support/naive.py)."""

import random

import numpy as np
import pytest

from support.naive import naive_heads, naive_tags
from syntax_nmt.syntax import noise as N


def random_corpus(rng: random.Random, n_sent: int):
    """Flat (heads, word_start, tags, lengths) of random trees with 1-3 subwords per word."""
    heads, ws, tags, lengths = [], [], [], []
    for _ in range(n_sent):
        n = rng.randint(1, 7)
        pieces = [rng.choice([1, 1, 2, 3]) for _ in range(n)]
        first = np.cumsum([0] + pieces[:-1]).tolist()
        root = rng.randrange(n)
        head = {root: -1}
        placed = [root]
        for w in [i for i in range(n) if i != root]:
            head[w] = rng.choice(placed)
            placed.append(w)
        for w in range(n):
            tag = rng.randrange(4, 9)
            for k in range(pieces[w]):
                pos = first[w] + k
                heads.append(0 if head[w] < 0 else first[head[w]] - pos)
                ws.append(k == 0)
                tags.append(tag)
        lengths.append(sum(pieces))
    return np.array(heads), np.array(ws), np.array(tags), np.array(lengths)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rate", [0.0, 0.3, 1.0])
def test_heads_and_tags_match_the_naive_loop(seed, rate):
    heads, ws, tags, lengths = random_corpus(random.Random(seed), 30)
    if seed % 2:  # a sentence's first token starts a word even when its tag says otherwise
        ws[np.cumsum(lengths) - lengths] = False
    W = len(N.word_index(ws, lengths).first_token)
    selected, u = N.noise_draws(W, rate, seed)
    assert selected.sum() == round(rate * W)
    np.testing.assert_array_equal(N.corrupt_heads(heads, ws, lengths, selected, u),
                                  naive_heads(heads, ws, lengths, selected, u))
    choices = [4, 5, 6, 7, 8]
    np.testing.assert_array_equal(N.corrupt_tags(tags, ws, lengths, choices, selected, u),
                                  naive_tags(tags, ws, lengths, choices, selected, u))


def test_rate_zero_is_the_identity_and_rate_one_changes_every_word_that_can_change():
    heads, ws, tags, lengths = random_corpus(random.Random(7), 50)
    words = N.word_index(ws, lengths)
    W = len(words.first_token)
    for rate in (0.0, 1.0):
        selected, u = N.noise_draws(W, rate, 3)
        new_h = N.corrupt_heads(heads, ws, lengths, selected, u)
        new_t = N.corrupt_tags(tags, ws, lengths, [4, 5, 6, 7, 8], selected, u)
        old_hw, new_hw = N.head_words(heads, words, lengths), N.head_words(new_h, words, lengths)
        if rate == 0.0:
            np.testing.assert_array_equal(new_h, heads)
            np.testing.assert_array_equal(new_t, tags)
        else:
            multi = words.words_per_sentence[words.sentence_of_word] > 1
            assert multi.any() and (~multi).any()
            assert (new_hw != old_hw)[multi].all() and (new_hw == old_hw)[~multi].all()
            assert (new_t[words.first_token] != tags[words.first_token]).all()


def test_noisy_heads_stay_valid_and_shared_by_the_pieces_of_a_word():
    heads, ws, tags, lengths = random_corpus(random.Random(11), 40)
    words = N.word_index(ws, lengths)
    selected, u = N.noise_draws(len(words.first_token), 0.6, 5)
    new = N.corrupt_heads(heads, ws, lengths, selected, u)
    starts = np.cumsum(lengths) - lengths
    sent_of_tok = np.repeat(np.arange(len(lengths)), lengths)
    target = np.arange(len(new)) + new
    assert ((target >= starts[sent_of_tok]) & (target < starts[sent_of_tok] + lengths[sent_of_tok])).all()
    firsts = set(words.first_token.tolist())
    assert all(t in firsts for t, h in zip(target, new) if h != 0)  # heads point at first subwords
    for w in range(len(words.first_token)):  # every piece points at the same token
        toks = np.flatnonzero(words.word_of_token == w)
        assert len(set(target[toks].tolist())) == 1 or (new[toks] == 0).all()


def test_rates_of_one_seed_are_nested_with_the_same_wrong_values():
    heads, ws, tags, lengths = random_corpus(random.Random(2), 40)
    W = int(ws.sum())
    low, u1 = N.noise_draws(W, 0.2, 9)
    high, u2 = N.noise_draws(W, 0.6, 9)
    np.testing.assert_array_equal(u1, u2)
    assert (low <= high).all() and low.sum() < high.sum()
    h_low = N.corrupt_heads(heads, ws, lengths, low, u1)
    h_high = N.corrupt_heads(heads, ws, lengths, high, u2)
    changed = h_low != heads
    np.testing.assert_array_equal(h_low[changed], h_high[changed])
    other, _ = N.noise_draws(W, 0.6, 10)
    assert (other != high).any()


def test_unknown_current_tags_draw_from_every_choice_and_bad_rates_fail():
    ws = np.array([True, True, True])
    new = N.corrupt_tags(np.array([3, 4, 5]), ws, np.array([3]), [4], np.ones(3, bool), np.array([0.9, 0.0, 0.5]))
    np.testing.assert_array_equal(new, [4, 4, 4])  # 3 -> 4; 4 stays (no other choice); 5 -> 4
    with pytest.raises(ValueError):
        N.noise_draws(5, 1.5, 0)


def test_cycle_token_against_a_walk_from_every_token():
    """binarize's cycle check (pointer doubling) against following each token's heads one by one."""
    from syntax_nmt.data.heads import cycle_token

    rng = np.random.default_rng(5)
    found = {True: 0, False: 0}
    for _ in range(400):
        n = int(rng.integers(1, 12))
        heads = rng.integers(0, n, size=n)
        roots = rng.random(n) < 0.3
        heads[roots] = np.arange(n)[roots]
        offsets = heads - np.arange(n)
        cyclic = None
        for start in range(n):
            seen, i = [], start
            while offsets[i] != 0 and i not in seen:
                seen.append(i)
                i = i + offsets[i]
            if offsets[i] != 0:
                cyclic = i
                break
        got = cycle_token(offsets)
        found[got is not None] += 1
        assert (got is None) == (cyclic is None), offsets
        if got is not None:  # the token named is on a cycle: its heads lead back to it
            i, steps = got + offsets[got], 1
            while i != got and steps <= n:
                i, steps = i + offsets[i], steps + 1
            assert i == got, (offsets, got)
    assert found[True] > 50 and found[False] > 50
