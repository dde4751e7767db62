"""Longer lines for the synthetic corpus: consecutive sentence pairs joined into one line.

The synthetic sentences are short (10-15 subwords), WMT14's are not (about 30 subwords on average, a long
tail beyond 100). ``syntax-nmt-synth --join MEAN`` joins each run of ``1 + Poisson(MEAN)`` consecutive
pairs of a split into one line, on both sides and in every file of the split: the English CoNLL-U block
becomes one block whose words are renumbered, each sentence keeping its own root (a forest, which every
syntax method handles: the stream contract allows several roots). ``MEAN = 1.2`` gives lines of about
2.2 sentences, 25-30 words, with the longest near 100: a WMT-like length distribution for ``make bench``.
"""

import os
import random
from typing import Dict, Iterator, List

from syntax_nmt.syntax.conllu import Sentence, format_conllu, read_conllu

TEXT_KINDS = ("en", "tok.en", "de", "tok.de")


def join_sentences(sentences: List[Sentence]) -> Sentence:
    """One CoNLL-U sentence of ``sentences`` in order: words renumbered, heads shifted, one root per part,
    ``# text`` the parts' texts joined by a space (the raw file's line)."""
    out = Sentence([], [], [], [], [], [], {})
    for s in sentences:
        offset = len(out.words)
        out.words += s.words
        out.upos += s.upos
        out.xpos += s.xpos
        out.heads += [h + offset if h else 0 for h in s.heads]
        out.deprels += s.deprels
        out.space_after += s.space_after[:-1] + [True]
    if out.space_after:
        out.space_after[-1] = sentences[-1].space_after[-1]
    out.comments["text"] = " ".join(s.text for s in sentences)
    return out


def group_sizes(n: int, mean_extra: float, rng: random.Random) -> Iterator[int]:
    """Sizes ``1 + Poisson(mean_extra)`` (Knuth's method) until ``n`` items are used up (the last one cut)."""
    import math

    left = n
    limit = math.exp(-mean_extra)
    while left > 0:
        k, p = 0, rng.random()
        while p > limit:
            k += 1
            p *= rng.random()
        size = min(left, 1 + k)
        left -= size
        yield size


def join_split(directory: str, split: str, mean_extra: float, seed: int) -> int:
    """Rewrite one split of a corpus written by :func:`~syntax_nmt.synthetic.generate.generate_corpus` with joined
    lines (every file of the split alike); returns the number of lines."""
    conllu = os.path.join(directory, f"{split}.en.conllu")
    with open(conllu, encoding="utf-8") as f:
        sentences = list(read_conllu(f, conllu))
    texts: Dict[str, List[str]] = {}
    for kind in TEXT_KINDS:
        with open(os.path.join(directory, f"{split}.{kind}"), encoding="utf-8") as f:
            texts[kind] = f.read().split("\n")[:-1]
        if len(texts[kind]) != len(sentences):
            raise ValueError(f"{directory}/{split}.{kind} has {len(texts[kind])} lines, {conllu} "
                             f"{len(sentences)} sentences")
    sizes = list(group_sizes(len(sentences), mean_extra, random.Random(f"join:{seed}:{split}")))
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    blocks = []
    for i, (start, size) in enumerate(zip(starts, sizes)):
        joined = join_sentences(sentences[start:start + size])
        joined.comments = {"sent_id": f"{split}-{i + 1}", "text": joined.comments["text"]}
        blocks.append(format_conllu(joined))
    _write(conllu, blocks)
    for kind in TEXT_KINDS:
        _write(os.path.join(directory, f"{split}.{kind}"),
               [" ".join(texts[kind][s:s + k]) + "\n" for s, k in zip(starts, sizes)])
    return len(sizes)


def _write(path: str, chunks: List[str]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(chunks)
    os.replace(tmp, path)
