"""A tiny parallel corpus with aligned streams, made without any parser.

Sentences are random trees over a small vocabulary; words are split into one to
three pieces with ``@@``; every stream is derived from the tokens, as
``syntax-nmt-annotate`` would write it. The target is the source words reversed
with a suffix, so a model can learn something in a few updates.
"""

import os
import random
from typing import Dict, List

POS = ["NOUN", "VERB", "ADJ", "DET", "ADP"]
DEPS = ["nsubj", "obj", "amod", "det", "case", "obl"]


def random_sentence(rng: random.Random, vocab: List[str], max_roots: int = 1) -> Dict[str, List[str]]:
    """One sentence; with ``max_roots > 1`` its parse is a forest of 1 to ``max_roots`` trees."""
    n = rng.randint(1, 9)
    words = [rng.choice(vocab) for _ in range(n)]
    words[0] = words[0].capitalize()
    roots = rng.sample(range(n), rng.randint(1, min(max_roots, n))) if max_roots > 1 else [rng.randrange(n)]
    # absolute word index of the head, -1 for a root (a random forest: attach to an earlier node)
    order = roots + [i for i in range(n) if i not in roots]
    placed = list(roots)
    head_of = {r: -1 for r in roots}
    for i in order[len(roots):]:
        head_of[i] = rng.choice(placed)
        placed.append(i)
    heads = [head_of[i] for i in range(n)]
    pieces = []
    for w in words:
        k = min(len(w), rng.choice([1, 1, 2, 3]))
        cuts = sorted(rng.sample(range(1, len(w)), k - 1)) if k > 1 else []
        parts = [w[a:b] for a, b in zip([0] + cuts, cuts + [len(w)])]
        pieces.append([p + "@@" for p in parts[:-1]] + [parts[-1]])
    first = []
    pos = 0
    for p in pieces:
        first.append(pos)
        pos += len(p)
    out = {k: [] for k in ("src", "pos", "case", "subword", "head", "dep")}
    for wi, (w, p) in enumerate(zip(words, pieces)):
        for k, piece in enumerate(p):
            here = first[wi] + k
            out["src"].append(piece)
            out["pos"].append(POS[len(w) % len(POS)])
            out["case"].append("C" if w[0].isupper() else "L")
            out["subword"].append("O" if len(p) == 1 else "B" if k == 0 else "E" if k == len(p) - 1 else "M")
            out["head"].append(str(0 if heads[wi] < 0 else first[heads[wi]] - here))
            out["dep"].append("root" if heads[wi] < 0 else DEPS[len(words[heads[wi]]) % len(DEPS)])
    out["tgt"] = [w.lower() + "en" for w in reversed(words)]
    # the target's own tags (target factors): each target word is a source word's, its POS that word's; target
    # words are not split, so each is one piece (O)
    out["tgt.pos"] = [POS[len(w) % len(POS)] for w in reversed(words)]
    out["tgt.subword"] = ["O"] * len(words)
    return out


def write_corpus(out_dir: str, sizes=None, seed: int = 0, src: str = "en", tgt: str = "de",
                 max_roots: int = 1, target_streams: bool = False) -> Dict[str, str]:
    """Write ``{split}.{en,de,pos,case,subword,head,dep}``; returns split -> prefix. ``max_roots > 1``: lines
    whose parse has several trees (see :func:`random_sentence`). ``target_streams``: also the target's streams as
    ``syntax-nmt-annotate -o {split}.tgt`` writes them (``{split}.tgt.{de,pos,subword}``)."""
    sizes = sizes or {"train": 200, "valid": 20, "test": 20}
    rng = random.Random(seed)
    vocab = ["haus", "baum", "katze", "hund", "garten", "sonne", "mond", "stern", "wasser", "feuer",
             "erde", "luft", "berg", "tal", "fluss", "see", "wald", "feld", "stadt", "dorf"]
    os.makedirs(out_dir, exist_ok=True)
    prefixes = {}
    for split, n in sizes.items():
        prefix = os.path.join(out_dir, split)
        files = {k: open(f"{prefix}.{ext}", "w", encoding="utf-8")
                 for k, ext in (("src", src), ("tgt", tgt), ("pos", "pos"), ("case", "case"),
                                ("subword", "subword"), ("head", "head"), ("dep", "dep"))}
        if target_streams:
            files.update({"tgt2": open(f"{prefix}.tgt.{tgt}", "w", encoding="utf-8"),
                          "tgt.pos": open(f"{prefix}.tgt.pos", "w", encoding="utf-8"),
                          "tgt.subword": open(f"{prefix}.tgt.subword", "w", encoding="utf-8")})
        for _ in range(n):
            s = random_sentence(rng, vocab, max_roots)
            for k, f in files.items():
                f.write(" ".join(s["tgt" if k == "tgt2" else k]) + "\n")
        for f in files.values():
            f.close()
        prefixes[split] = prefix
    return prefixes


def binarized_corpus(root: str, sizes: Dict[str, int], seed: int, max_roots: int = 1):
    """:func:`write_corpus` into ``root/text``, binarized with syntax-nmt-binarize (joined dictionary) into
    ``root/data-bin``: ``(data directory, split -> text prefix)``."""
    from syntax_nmt.data import binarize

    corpus = write_corpus(os.path.join(root, "text"), sizes=sizes, seed=seed, max_roots=max_roots)
    data = os.path.join(root, "data-bin")
    binarize.cli_main(["--source-lang", "en", "--target-lang", "de", "--trainpref", corpus["train"],
                       "--validpref", corpus["valid"], "--testpref", corpus["test"], "--destdir", data,
                       "--joined-dictionary", "--workers", "1"])
    return data, corpus
