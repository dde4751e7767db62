"""Write the synthetic English->German corpus with gold English syntax.

For every split ``S`` the output directory gets::

    S.en.conllu   English gold trees (FORM UPOS XPOS HEAD DEPREL, SpaceAfter=No,
                  "# sent_id = S-<n>" and "# text = <raw English>")
    S.en          raw (detokenised) English, one sentence per line
    S.tok.en      English tokens (the CoNLL-U forms) joined by spaces
    S.de          raw German
    S.tok.de      German tokens joined by spaces

Sentences are unique across (and within) splits, on both the English and the
German side. Each split has its own random stream derived from ``seed`` and the
split name, and ``test`` then ``valid`` are drawn before the other splits, so the
test and validation sets do not change when only the training size changes.
"""

import hashlib
import os
import random
from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple

from tqdm import tqdm

from syntax_nmt.syntax.conllu import Sentence, format_conllu
from syntax_nmt.synthetic.grammar import detokenize_de, realize
from syntax_nmt.synthetic.lexicon import Lexicon, load_lexicon
from syntax_nmt.synthetic.sampler import Sampler

DEFAULT_SIZES = {"train": 20000, "valid": 1000, "test": 1000}
FILE_KINDS = ("en.conllu", "en", "tok.en", "de", "tok.de")


def split_rng(seed: int, split: str) -> random.Random:
    """The random stream of one split (independent of the other splits)."""
    digest = hashlib.sha256(f"syntax-nmt-synth:{seed}:{split}".encode("utf-8")).hexdigest()
    return random.Random(int(digest[:16], 16))


def generate_pairs(n: int, rng: random.Random, seen: Optional[Set[str]] = None,
                   lex: Optional[Lexicon] = None, max_tries_factor: int = 50) -> Iterator[Tuple[Sentence, List[str]]]:
    """Yield ``n`` new (English sentence, German tokens) pairs.

    Args:
        n: how many pairs.
        rng: source of randomness.
        seen: English and German raw texts already used (updated in place);
            pairs whose English or German text is in it are skipped.
        lex: lexicon (default shared one).
        max_tries_factor: give up after ``n * max_tries_factor`` draws.

    Raises:
        RuntimeError: when the grammar cannot produce ``n`` new sentences.
    """
    seen = set() if seen is None else seen
    sampler = Sampler(rng, lex)
    made = tries = 0
    while made < n:
        tries += 1
        if tries > max(1000, n * max_tries_factor):
            raise RuntimeError(f"could only generate {made} unique sentences out of {n}")
        sent, de = realize(sampler.sentence(), sampler.lex)
        en_text, de_text = sent.comments["text"], detokenize_de(de)
        if ("en:" + en_text) in seen or ("de:" + de_text) in seen:
            continue
        seen.add("en:" + en_text)
        seen.add("de:" + de_text)
        made += 1
        yield sent, de


def _order(splits) -> List[str]:
    first = [s for s in ("test", "valid") if s in splits]
    return first + [s for s in splits if s not in first]


def generate_corpus(out_dir: str, sizes: Mapping[str, int] = DEFAULT_SIZES, seed: int = 1,
                    progress: bool = False) -> Dict[str, Dict[str, str]]:
    """Generate all splits and write them to ``out_dir`` (created if needed).

    Args:
        out_dir: output directory.
        sizes: sentences per split, e.g. ``{"train": 20000, "valid": 1000, "test": 1000}``.
        seed: corpus seed; the same seed and sizes give byte-identical files.
        progress: show a tqdm progress bar per split.

    Returns:
        ``{split: {kind: path}}`` with kinds ``en.conllu``, ``en``, ``tok.en``,
        ``de``, ``tok.de``.
    """
    os.makedirs(out_dir, exist_ok=True)
    lex = load_lexicon()
    seen: Set[str] = set()
    paths: Dict[str, Dict[str, str]] = {}
    for split in _order(list(sizes)):
        n = int(sizes[split])
        p = {kind: os.path.join(out_dir, f"{split}.{kind}") for kind in FILE_KINDS}
        files = {kind: open(path, "w", encoding="utf-8", newline="\n") for kind, path in p.items()}
        try:
            pairs = generate_pairs(n, split_rng(seed, split), seen, lex)
            for i, (sent, de) in enumerate(tqdm(pairs, total=n, desc=f"synth {split}", disable=not progress)):
                text = sent.comments.pop("text")
                sent.comments["sent_id"] = f"{split}-{i + 1}"
                sent.comments["text"] = text
                files["en.conllu"].write(format_conllu(sent))
                files["en"].write(text + "\n")
                files["tok.en"].write(" ".join(sent.words) + "\n")
                files["de"].write(detokenize_de(de) + "\n")
                files["tok.de"].write(" ".join(de) + "\n")
        finally:
            for f in files.values():
                f.close()
        paths[split] = p
    return paths
