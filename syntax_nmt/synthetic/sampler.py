"""Random sentence structures for the synthetic corpus.

All randomness comes from the ``random.Random`` instance passed in (never the
global RNG), so a seed fixes the corpus. Nouns are drawn with a Zipf-like
distribution over the lexicon order (frequent and rare words), verbs and nouns
respect coarse selectional restrictions (semantic classes), time adverbials
agree with the tense.
"""

import bisect
import random
from functools import lru_cache
from typing import Dict, List, Optional, Sequence, Tuple

from syntax_nmt.synthetic.grammar import GAP, NP, PP, Clause, Coord
from syntax_nmt.synthetic.lexicon import ATTRIBUTIVE_ONLY, Lexicon, Noun, Verb, load_lexicon

_TENSES = (("pres", 30), ("past", 30), ("perf", 20), ("fut", 10), ("can", 5), ("must", 5))
_SG_DETS = (("the", 50), ("a", 25), ("this", 6), ("my", 6), ("our", 4), ("no", 3), ("every", 3))
_PL_DETS = (("the", 45), (None, 20), ("these", 7), ("my", 7), ("our", 5), ("no", 4), ("two", 3), ("three", 3),
            ("four", 1), ("five", 1), ("six", 1), ("seven", 1), ("ten", 1), ("twelve", 1))
_GEN_DETS = (("the", 70), ("a", 15), ("this", 5), ("my", 5), ("our", 5))
_PREP_WEIGHTS = {"in": 4.0, "on": 2.5, "into": 3.0, "onto": 1.5, "to": 3.0, "with": 4.0, "for": 2.0, "from": 2.0}
_FRAMES = (("tr", 36), ("ditr", 12), ("dat", 9), ("intr", 21), ("cop", 12), ("ccomp", 10))


class _Table:
    """A weighted choice table: ``pick(rng)`` draws an item with its weight."""

    __slots__ = ("items", "cum", "total")

    def __init__(self, pairs):
        self.items = [p[0] for p in pairs]
        self.cum, tot = [], 0.0
        for p in pairs:
            tot += p[1]
            self.cum.append(tot)
        self.total = tot

    def pick(self, rng: random.Random):
        return self.items[bisect.bisect(self.cum, rng.random() * self.total)]


_TABLES: Dict[tuple, _Table] = {}


class _Index:
    """Lists the sampler draws from, precomputed once per lexicon."""

    def __init__(self, lex: Lexicon):
        self.lex = lex
        classes = "PATXFDLSVOEBY"
        self.nouns: Dict[str, Tuple[List[Noun], List[float]]] = {}
        for c in classes:
            items = [n for n in lex.nouns.values() if c in n.classes]
            cum, tot = [], 0.0
            for i in range(len(items)):
                tot += 1.0 / (i + 3) ** 0.9
                cum.append(tot)
            self.nouns[c] = (items, cum)
        self.heads = {c: [k for k in lex.compound_heads if c in lex.nouns[k].classes] for c in classes}
        self.modifiers = list(lex.modifiers)
        self.prefix_adjs = list(lex.prefix_adjectives)
        self.names = list(lex.names.values())
        self.adjs_animate = [a for a in lex.adjectives.values() if a.classes in "A*"]
        self.adjs_inanimate = [a for a in lex.adjectives.values() if a.classes in "I*"]
        self.pred_animate = [a for a in self.adjs_animate if a.en not in ATTRIBUTIVE_ONLY]
        self.pred_inanimate = [a for a in self.adjs_inanimate if a.en not in ATTRIBUTIVE_ONLY]
        self.adverbs = list(lex.adverbs.values())
        self.times = {t: [x for x in lex.times.values() if t in x.tenses] for t, _ in _TENSES}
        self.preps = {k: [p for p in lex.preps.values() if p.kind == k] for k in ("loc", "dir", "com", "temp", "gen")}
        self.rel_preps = [p for p in lex.preps.values() if p.kind in ("loc", "dir", "com") and p.case != "gen"]
        self.verbs = {f: list(d.values()) for f, d in lex.verbs.items()}
        # verbs by (frame, slot, class letter) for relative clauses
        self.by_slot: Dict[Tuple[str, str, str], List[Verb]] = {}
        for f, vs in self.verbs.items():
            for v in vs:
                for slot in ("subj", "obj", "iobj"):
                    for c in getattr(v, slot):
                        self.by_slot.setdefault((f, slot, c), []).append(v)


@lru_cache(maxsize=4)
def _index(lex: Lexicon) -> _Index:
    return _Index(lex)


class Sampler:
    """Draws random :class:`~syntax_nmt.synthetic.grammar.Clause` structures.

    Args:
        rng: the only source of randomness.
        lex: lexicon (default :func:`~syntax_nmt.synthetic.lexicon.load_lexicon`).
    """

    def __init__(self, rng: random.Random, lex: Optional[Lexicon] = None):
        self.rng = rng
        self.lex = lex or load_lexicon()
        self.ix = _index(self.lex)
        self._relcl_budget = 0

    # -- helpers ---------------------------------------------------------
    def _w(self, pairs):
        """Weighted choice from ``((item, weight), ...)`` (tables of constant tuples are cached)."""
        if isinstance(pairs, tuple):
            t = _TABLES.get(pairs)
            if t is None:
                t = _TABLES[pairs] = _Table(pairs)
        else:
            t = _Table(pairs)
        return t.pick(self.rng)

    def _p(self, p: float) -> bool:
        return self.rng.random() < p

    # -- noun phrases ----------------------------------------------------
    def noun(self, cls: str) -> Noun:
        """A noun of semantic class ``cls`` (a compound 15% of the time when possible)."""
        heads = self.ix.heads.get(cls)
        if heads and self._p(0.15):
            head = self.rng.choice(heads)
            mod = self.rng.choice(self.ix.modifiers)
            pre = self.rng.choice(self.ix.prefix_adjs) if self._p(0.2) else ""
            return self.lex.compound(head, mod, pre)
        items, cum = self.ix.nouns[cls]
        return self.rng.choices(items, cum_weights=cum)[0]

    def np(self, classes: str, depth: int = 0, coord: bool = True, names: bool = True,
           dets: Optional[Sequence] = None) -> "NP | Coord":
        """A noun phrase whose head has one of the semantic ``classes``.

        ``depth`` 0 phrases may get a genitive/PP modifier or a relative clause
        and may be coordinated; deeper ones are kept simple.
        """
        rng = self.rng
        if coord and depth == 0 and self._p(0.06):
            cc = "and" if self._p(0.85) else "or"
            return Coord((self.np(classes, 1, False, names), self.np(classes, 1, False, names)), cc)
        cls = rng.choice(classes)
        if cls == "P" and names and self._p(0.08):
            return NP(name=rng.choice(self.ix.names), det=None)
        n = self.noun(cls)
        number = "pl" if self._p(0.3) else "sg"
        if dets is not None:
            dets = [d for d in dets if (d[0] is None and number == "pl")
                    or (d[0] is not None and number in self.lex.determiners[d[0]].numbers)]
        det = self._w(dets or (_PL_DETS if number == "pl" else _SG_DETS))
        pool = self.ix.adjs_animate if n.animate else self.ix.adjs_inanimate
        k = self._w(((0, 60), (1, 30), (2, 10)))
        adjs = tuple(rng.sample(pool, k)) if k else ()
        x = NP(noun=n, number=number, det=det, adjs=adjs)
        if depth == 0:
            r = rng.random()
            if r < 0.06:
                x.nmod = PP(self.lex.preps["of"], self.np("PATXLVOEB", 1, False, False, dets=_GEN_DETS))
            elif r < 0.10:
                p = rng.choice(self.ix.preps["com"])
                x.nmod = PP(p, self.np(p.classes, 1, False))
            if self._relcl_budget > 0 and self._p(0.10):
                self._relcl_budget -= 1
                x.relcl = self.rel_clause(x)
        return x

    def pp(self, verb: Verb, depth: int) -> PP:
        """An oblique PP for ``verb`` (directional ones only for motion verbs)."""
        kinds = [("loc", 45), ("com", 30), ("temp", 10)]
        if verb.motion:
            kinds.append(("dir", 100))
        preps = self.ix.preps[self._w(kinds)]
        if verb.en_base in self.lex.verbs["ditr"]:
            # "throws the ball to the dog" must stay the ditransitive (dative) reading
            preps = [p for p in preps if p.en != "to"]
        p = self._w([(p, _PREP_WEIGHTS.get(p.en, 1.0)) for p in preps])
        return PP(p, self.np(p.classes, max(depth, 1), False))

    # -- clauses ---------------------------------------------------------
    def sentence(self) -> Clause:
        """A top-level sentence structure."""
        self._relcl_budget = 2 if self._p(0.3) else 1
        r = self.rng.random()
        if r < 0.08:
            return self.clause("question")
        c = self.clause("main")
        if r < 0.20 and c.advcl is None and c.verb.frame != "ccomp":
            c.cc = self._w((("and", 60), ("but", 25), ("or", 15)))
            c.conj = self.clause("conj")
        return c

    def clause(self, kind: str = "main", tenses: Optional[Sequence[str]] = None) -> Clause:
        """A clause; ``kind`` in main, question, conj (second main clause), sub, ccomp."""
        rng, lex = self.rng, self.lex
        frames = _FRAMES if kind == "main" else _FRAMES[:-1]
        frame = self._w(frames)
        verb = lex.copula if frame == "cop" else rng.choice(self.ix.verbs[frame])
        tense = rng.choice(tenses) if tenses else self._w(_TENSES)
        depth = 0
        c = Clause(verb, self.np(verb.subj, depth), tense=tense)
        if frame in ("tr", "dat"):
            c.obj = self.np(verb.obj, depth)
        elif frame == "ditr":
            c.iobj = self.np(verb.iobj, depth, coord=False)
            c.obj = self.np(verb.obj, depth, coord=False)
            c.iobj_to = verb.dbl and self._p(0.35)
        elif frame == "cop":
            c.adj = self._adj_for(c.subj)
        elif frame == "ccomp":
            c.ccomp = self.clause("ccomp")
            c.that = self._p(0.75)
        if self._p(0.25):
            times = self.ix.times[tense]
            c.time = rng.choice(times)
        if frame not in ("cop", "ccomp"):
            if self._p(0.12):
                c.manner = rng.choice(self.ix.adverbs)
            if self._p(0.5 if frame == "intr" else 0.25):
                c.pps = (self.pp(verb, depth),) + ((self.pp(verb, depth),) if self._p(0.15) else ())
        if kind == "main" and frame != "ccomp" and self._p(0.18):
            sconj = rng.choice(list(lex.subordinators))
            c.advcl = (sconj, self.clause("sub", lex.subordinators[sconj][1]))
        if kind == "question":
            c.question = True
        elif kind in ("main", "conj"):
            r = rng.random()
            if c.time is not None and c.time.frontable and r < 0.35:
                c.front = "time"
            elif c.pps and r < 0.5:
                c.front = "pp"
            elif c.advcl is not None and r < 0.7:
                c.front = "advcl"
        return c

    def _adj_for(self, x):
        if isinstance(x, Coord):
            x = x.conjuncts[0]
        animate = x.name is not None or x.noun.animate
        return self.rng.choice(self.ix.pred_animate if animate else self.ix.pred_inanimate)

    def rel_clause(self, ante: NP) -> Clause:
        """A relative clause whose gap agrees with the antecedent's semantic class."""
        rng, ix = self.rng, self.ix
        classes = ante.noun.classes
        tense = self._w(_TENSES[:3])
        roles = [("nsubj", 50), ("obj", 30), ("iobj", 8), ("obl", 12)]
        for _ in range(4):
            role = self._w(roles)
            if role == "obl":
                preps = [p for p in ix.rel_preps if any(c in p.classes for c in classes)]
                if not preps:
                    continue
                p = rng.choice(preps)
                frame = "intr" if p.kind == "dir" else self._w((("intr", 50), ("tr", 50)))
                cands = [v for v in ix.verbs[frame] if p.kind != "dir" or v.motion]
                v = rng.choice(cands)
                c = Clause(v, self.np(v.subj, 1, False), tense=tense, pps=(PP(p, GAP),))
                if frame == "tr":
                    c.obj = self.np(v.obj, 1, False)
                return c
            frame = {"nsubj": self._w((("tr", 40), ("intr", 25), ("dat", 10), ("ditr", 10), ("cop", 15))),
                     "obj": self._w((("tr", 75), ("dat", 15), ("ditr", 10))), "iobj": "ditr"}[role]
            if frame == "cop":
                return Clause(self.lex.copula, GAP, adj=self._adj_for(ante), tense=tense,
                              rel_word=self._rel_word(ante))
            slot = {"nsubj": "subj", "obj": "obj", "iobj": "iobj"}[role]
            cands = [c for c in classes if (frame, slot, c) in ix.by_slot]
            if not cands:
                continue
            v = rng.choice(ix.by_slot[(frame, slot, rng.choice(cands))])
            c = Clause(v, GAP if role == "nsubj" else self.np(v.subj, 1, False), tense=tense,
                       rel_word=None if role == "iobj" else self._rel_word(ante))
            if frame in ("tr", "dat"):
                c.obj = GAP if role == "obj" else self.np(v.obj, 1, False)
            elif frame == "ditr":
                c.obj = GAP if role == "obj" else self.np(v.obj, 1, False)
                c.iobj = GAP if role == "iobj" else self.np(v.iobj, 1, False)
                c.iobj_to = v.dbl and self._p(0.35)
            if role != "nsubj" or frame != "cop":
                if frame != "ditr" and self._p(0.1):
                    c.manner = rng.choice(ix.adverbs)
            return c
        return Clause(self.lex.copula, GAP, adj=self._adj_for(ante), tense=tense, rel_word=self._rel_word(ante))

    def _rel_word(self, ante: NP) -> str:
        if ante.person:
            return "who" if self._p(0.7) else "that"
        return "which" if self._p(0.6) else "that"
