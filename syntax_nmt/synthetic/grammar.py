"""Sentence structures and their realisation as English (gold UD tree) and German.

A sentence is described by a language-neutral structure (:class:`Clause` with
:class:`NP`, :class:`Coord`, :class:`PP` arguments); :func:`realize` turns it
into an English :class:`~syntax_nmt.syntax.conllu.Sentence` (forms, UPOS,
PTB XPOS, UD heads and relations, ``SpaceAfter``) and a German token list.
Realisation is deterministic: all random choices are made when the structure is
sampled (:mod:`syntax_nmt.synthetic.sampler`), so tests can build a structure by
hand with :func:`np`, :func:`pp` and :func:`clause` and check the exact German.

German rules implemented (each needs the English syntax to get right):

* case by grammatical role: subject nominative, direct object accusative (dative
  for verbs like *helfen*), indirect object dative, preposition objects in the
  case the preposition governs (two-way prepositions: *in* + dative for a
  location, *into* -> *in* + accusative for a direction), *of* -> genitive;
* determiner and adjective agreement in gender/number/case with weak (after
  *der/dieser/jeder*), mixed (after *ein/kein/mein*) and strong (no article,
  numerals) inflection, weak masculine nouns, dative plural *-n*;
* preposition + article contraction (*in dem* -> *im*, *zu der* -> *zur*);
* verb-second main clauses with inversion after a fronted adverbial, PP or
  subordinate clause; verb-first yes/no questions; verb-final subordinate and
  relative clauses; separable prefixes at the end of main clauses
  (*ruft ... an*) and attached in verb-final position (*anruft*);
* perfect with *haben*/*sein* + participle at the end; future/modal + infinitive;
* relative pronouns agreeing in gender/number with the antecedent and taking
  their case from their role in the relative clause (or from a preposition);
* coordination of noun phrases (plural agreement with *and*) and of clauses;
* *when* -> *als* (past) / *wenn*; English double object and *to*-dative both
  map to the German dative.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

from syntax_nmt.syntax.conllu import Sentence
from syntax_nmt.synthetic.lexicon import (
    ADJ_STRONG,
    AUX_FORMS,
    CONTRACTIONS,
    COORDINATORS,
    REL_PRONOUN,
    Adjective,
    Adverb,
    Lexicon,
    Name,
    Noun,
    Prep,
    TimeExpr,
    Verb,
    load_lexicon,
)

TENSES = ("pres", "past", "perf", "fut", "can", "must")
_MODALS = {"fut": ("will", "werden"), "can": ("can", "können"), "must": ("must", "müssen")}
_AN_EXCEPTIONS = {"honest": "an", "hour": "an", "honor": "an", "university": "a", "union": "a",
                  "useful": "a", "useless": "a", "european": "a", "uniform": "a", "unique": "a",
                  "usual": "a", "user": "a", "one": "a"}


# --------------------------------------------------------------------------
# structures
# --------------------------------------------------------------------------


class Gap:
    """Placeholder for the relativised argument inside a relative clause."""

    def __repr__(self):
        return "GAP"


GAP = Gap()


@dataclass
class NP:
    """A noun phrase: a common noun with determiner/adjectives/modifiers, or a name."""

    noun: Optional[Noun] = None
    name: Optional[Name] = None
    number: str = "sg"
    det: Optional[str] = "the"  # key of lexicon.determiners, None = bare (plural)
    adjs: Tuple[Adjective, ...] = ()
    nmod: Optional["PP"] = None  # PP modifier; prep "of" = genitive
    relcl: Optional["Clause"] = None

    @property
    def gender(self) -> str:
        return self.name.gender if self.name else self.noun.gender

    @property
    def gn(self) -> str:
        return "pl" if self.number == "pl" else self.gender

    @property
    def person(self) -> bool:
        return bool(self.name) or "P" in self.noun.classes


@dataclass
class Coord:
    """Coordinated noun phrases (``the man and the woman``)."""

    conjuncts: Tuple[NP, ...]
    cc: str = "and"

    @property
    def number(self) -> str:
        return "pl" if self.cc == "and" else self.conjuncts[-1].number


@dataclass
class PP:
    """Preposition + noun phrase (``np`` may be :data:`GAP` in a relative clause)."""

    prep: Prep
    np: Union[NP, Coord, Gap]


@dataclass
class Clause:
    """A clause. ``verb.frame`` decides the arguments used: ``tr``/``dat`` use
    ``obj``, ``ditr`` uses ``iobj`` and ``obj``, ``cop`` uses ``adj``, ``ccomp``
    uses ``ccomp``. In a relative clause exactly one argument (or a PP object) is
    :data:`GAP`.

    Attributes:
        iobj_to: English ``gives the book to the child`` instead of
            ``gives the child the book`` (German is the same).
        front: ``"time"``, ``"pp"`` (first of ``pps``) or ``"advcl"`` is fronted.
        advcl: ``(subordinator, clause)``, e.g. ``("because", Clause(...))``.
        that: whether English writes the complementiser ``that`` for ``ccomp``.
        conj: a coordinated main clause joined with ``cc``.
        rel_word: English relative pronoun (``who``, ``which``, ``that``,
            ``whom``); derived from the antecedent when None.
    """

    verb: Verb
    subj: Union[NP, Coord, Gap]
    obj: Union[NP, Coord, Gap, None] = None
    iobj: Union[NP, Coord, Gap, None] = None
    adj: Optional[Adjective] = None
    tense: str = "pres"
    iobj_to: bool = False
    time: Optional[TimeExpr] = None
    manner: Optional[Adverb] = None
    pps: Tuple[PP, ...] = ()
    front: Optional[str] = None
    advcl: Optional[Tuple[str, "Clause"]] = None
    ccomp: Optional["Clause"] = None
    that: bool = True
    question: bool = False
    conj: Optional["Clause"] = None
    cc: str = "and"
    rel_word: Optional[str] = None


# --------------------------------------------------------------------------
# convenience constructors (used by tests and the README examples)
# --------------------------------------------------------------------------


def _lex(lex: Optional[Lexicon]) -> Lexicon:
    return lex or load_lexicon()


def noun(key: str, lex: Optional[Lexicon] = None) -> Noun:
    """Look up a noun; ``"federal transport ministry"`` or ``"liability insurance
    company"`` build compounds from a prefix adjective / modifier and a head."""
    lex = _lex(lex)
    if key in lex.nouns:
        return lex.nouns[key]
    words = key.split()
    head = words[-1]
    prefix = ""
    if words[0] in lex.prefix_adjectives:
        prefix, words = words[0], words[1:]
    return lex.compound(head, " ".join(words[:-1]), prefix)


def np(key: str, det: Optional[str] = "the", adjs: Tuple[str, ...] = (), number: str = "sg",
       nmod: Optional[PP] = None, relcl: Optional[Clause] = None, lex: Optional[Lexicon] = None) -> NP:
    """Build a noun phrase from English keys: ``np("man", "the", ("old",))``.

    A capitalised key that is a known name gives a name phrase (``np("Anna")``).
    """
    lex = _lex(lex)
    if key in lex.names:
        return NP(name=lex.names[key], det=None)
    if det == "an":
        det = "a"
    return NP(noun=noun(key, lex), number=number, det=det, adjs=tuple(lex.adjectives[a] for a in adjs),
              nmod=nmod, relcl=relcl)


def pp(prep: str, obj, lex: Optional[Lexicon] = None) -> PP:
    """``pp("in", np("garden"))``; ``obj`` may be :data:`GAP`."""
    return PP(_lex(lex).preps[prep], obj)


def coord(*conjuncts, cc: str = "and") -> Coord:
    return Coord(tuple(conjuncts), cc)


def clause(verb: str, subj, obj=None, iobj=None, frame: Optional[str] = None, adj: Optional[str] = None,
           time: Optional[str] = None, manner: Optional[str] = None, pps: Tuple[PP, ...] = (),
           lex: Optional[Lexicon] = None, **kw) -> Clause:
    """Build a clause from English keys.

    The frame is inferred when not given: ``be`` -> ``cop``; a ``ccomp`` keyword
    -> ``ccomp``; ``iobj`` -> ``ditr``; ``obj`` -> ``tr`` unless the verb is only
    known as a dative verb; otherwise ``intr``.
    """
    lex = _lex(lex)
    if frame is None:
        if verb == "be":
            frame = "cop"
        elif kw.get("ccomp") is not None:
            frame = "ccomp"
        elif iobj is not None:
            frame = "ditr"
        elif obj is not None:
            frame = "tr" if verb in lex.verbs["tr"] else "dat"
        else:
            frame = "intr"
    v = lex.copula if frame == "cop" else lex.verbs[frame][verb]
    return Clause(v, subj, obj=obj, iobj=iobj, adj=lex.adjectives[adj] if adj else None,
                  time=lex.times[time] if time else None, manner=lex.adverbs[manner] if manner else None,
                  pps=tuple(pps), **kw)


# --------------------------------------------------------------------------
# English realisation
# --------------------------------------------------------------------------


class Tok:
    """An English token under construction; ``head`` is another Tok or None (root)."""

    __slots__ = ("form", "upos", "xpos", "dep", "head")

    def __init__(self, form: str, upos: str, xpos: str, dep: str = "_", head: Optional["Tok"] = None):
        self.form, self.upos, self.xpos, self.dep, self.head = form, upos, xpos, dep, head

    def __repr__(self):
        return f"Tok({self.form!r}, {self.dep})"


def _punct(form: str, head: Optional[Tok]) -> Tok:
    return Tok(form, "PUNCT", "." if form in ".?!" else form, "punct", head)


def _article(next_word: str) -> str:
    w = next_word.lower()
    if w in _AN_EXCEPTIONS:
        return _AN_EXCEPTIONS[w]
    return "an" if w[0] in "aeiou" else "a"


def _attach(toks_head: Tuple[List[Tok], Tok], head: Tok, dep: str) -> List[Tok]:
    toks, h = toks_head
    h.head, h.dep = head, dep
    return toks


def _number(x) -> str:
    return x.number


def _rel_word_en(c: Clause, ante: NP, after_prep: bool) -> Tuple[str, str]:
    word = c.rel_word
    if word is None or (after_prep and word == "that"):
        if ante.person:
            word = "whom" if after_prep else "who"
        else:
            word = "which"
    return word, ("WP" if word in ("who", "whom") else "WDT")


def en_np(x) -> Tuple[List[Tok], Tok]:
    """English tokens of a noun phrase and its head token."""
    if isinstance(x, Coord):
        toks, head = en_np(x.conjuncts[0])
        for c in x.conjuncts[1:]:
            t2, h2 = en_np(c)
            toks += [Tok(x.cc, "CCONJ", "CC", "cc", h2)] + t2
            h2.head, h2.dep = head, "conj"
        return toks, head
    if x.name is not None:
        t = Tok(x.name.form, "PROPN", "NNP")
        return [t], t
    n = x.noun
    pl = x.number == "pl"
    head = Tok(n.en_pl if pl else n.en, "NOUN", "NNS" if pl else "NN")
    pre: List[Tok] = []
    if x.det is not None:
        d = load_lexicon().determiners[x.det]
        pre.append(Tok(d.en, d.upos, d.xpos, d.deprel, head))
    for a in x.adjs:
        pre.append(Tok(a.en, "ADJ", "JJ", "amod", head))
    mods = [Tok(f, u, xp, dep) for f, u, xp, dep, _ in n.en_mods]
    for t, m in zip(mods, n.en_mods):
        t.head = head if m[4] is None else mods[m[4]]
    pre += mods
    if x.det == "a":
        pre[0].form = _article((pre[1] if len(pre) > 1 else head).form)
    toks = pre + [head]
    if x.nmod is not None:
        toks += _attach(en_pp(x.nmod), head, "nmod")
    if x.relcl is not None:
        toks += _attach(en_clause(x.relcl, "rel", x), head, "acl:relcl")
    return toks, head


def en_pp(p: PP) -> Tuple[List[Tok], Tok]:
    toks, head = en_np(p.np)
    return [Tok(p.prep.en, "ADP", p.prep.xpos, "case", head)] + toks, head


def _time_en(t: TimeExpr) -> Tuple[List[Tok], Tok]:
    toks = [Tok(f, u, x, d) for f, u, x, d, _ in t.en]
    head = None
    for tok, spec in zip(toks, t.en):
        if spec[4] is None:
            head = tok
        else:
            tok.head = toks[spec[4]]
    return toks, head


def _en_verb_group(c: Clause, number: str, question: bool) -> Tuple[List[Tok], Tok, Optional[Tok]]:
    """(auxiliary tokens in order, predicate token, main verb token or None for copula)."""
    v = c.verb
    sg = number == "sg"
    cop = v.frame == "cop"
    pred = Tok(c.adj.en, "ADJ", "JJ") if cop else None
    auxes: List[Tok] = []
    if c.tense == "perf":
        auxes.append(Tok("has" if sg else "have", "AUX", "VBZ" if sg else "VBP", "aux"))
        main_form, main_x = v.en_pp, "VBN"
    elif c.tense in _MODALS:
        auxes.append(Tok(_MODALS[c.tense][0], "AUX", "MD", "aux"))
        main_form, main_x = v.en_base, "VB"
    elif c.tense == "past":
        main_form, main_x = v.en_past, "VBD"
    else:
        main_form, main_x = (v.en_3sg, "VBZ") if sg else (v.en_base, "VBP")
    if cop:
        if c.tense == "past":
            main_form = "was" if sg else "were"
        elif c.tense == "pres":
            main_form = "is" if sg else "are"
        auxes.append(Tok(main_form, "AUX", main_x, "cop"))
        main = None
    else:
        if question and not auxes:  # do-support
            do = {"pres": ("does", "VBZ") if sg else ("do", "VBP"), "past": ("did", "VBD")}[c.tense]
            auxes.append(Tok(do[0], "AUX", do[1], "aux"))
            main_form, main_x = v.en_base, "VB"
        main = pred = Tok(main_form, "VERB", main_x)
    for a in auxes:
        a.head = pred
    return auxes, pred, main


def en_clause(c: Clause, mode: str = "main", ante: Optional[NP] = None) -> Tuple[List[Tok], Tok]:
    """English tokens of a clause and its predicate (head) token.

    ``mode``: ``main`` (declarative), ``question``, ``sub`` (without its marker),
    ``rel`` (relative clause of antecedent ``ante``).
    """
    number = ante.number if c.subj is GAP else _number(c.subj)
    question = mode == "question" or c.question
    auxes, pred, main = _en_verb_group(c, number, question)

    relphrase: List[Tok] = []

    def relpro(dep: str, after_prep: bool = False) -> Tok:
        w, xp = _rel_word_en(c, ante, after_prep)
        return Tok(w, "PRON", xp, dep, pred)

    # subject
    if c.subj is GAP:
        relphrase = [relpro("nsubj")]
        subj: List[Tok] = []
    else:
        subj = _attach(en_np(c.subj), pred, "nsubj")
    # objects
    objs: List[Tok] = []
    obj_toks: List[Tok] = []
    if c.obj is GAP:
        relphrase = [relpro("obj")]
    elif c.obj is not None:
        obj_toks = _attach(en_np(c.obj), pred, "obj")
    if c.iobj is GAP:
        w = relpro("obl", after_prep=True)
        relphrase = [Tok("to", "ADP", "TO", "case", w), w]
        objs = obj_toks
    elif c.iobj is not None:
        if c.iobj_to or not c.verb.dbl:
            itoks, ih = en_np(c.iobj)
            ih.head, ih.dep = pred, "obl"
            objs = obj_toks + [Tok("to", "ADP", "TO", "case", ih)] + itoks
        else:
            objs = _attach(en_np(c.iobj), pred, "iobj") + obj_toks
    else:
        objs = obj_toks
    # adverbials
    manner = [Tok(c.manner.en, "ADV", "RB", "advmod", pred)] if c.manner else []
    pp_toks: List[List[Tok]] = []
    for p in c.pps:
        if p.np is GAP:
            w = relpro("obl", after_prep=True)
            relphrase = [Tok(p.prep.en, "ADP", p.prep.xpos, "case", w), w]
            pp_toks.append([])
        else:
            pp_toks.append(_attach(en_pp(p), pred, "obl"))
    time: List[Tok] = []
    if c.time is not None:
        time, th = _time_en(c.time)
        th.head = pred
    ccomp: List[Tok] = []
    if c.ccomp is not None:
        ctoks, ch = en_clause(c.ccomp, "sub")
        ch.head, ch.dep = pred, "ccomp"
        ccomp = ([Tok("that", "SCONJ", "IN", "mark", ch)] if c.that else []) + ctoks
    advcl: List[Tok] = []
    if c.advcl is not None:
        sconj, sub = c.advcl
        atoks, ah = en_clause(sub, "sub")
        ah.head, ah.dep = pred, "advcl"
        advcl = [Tok(sconj, "SCONJ", "IN", "mark", ah)] + atoks

    front: List[Tok] = []
    if c.front == "time":
        front, time = time, []
    elif c.front == "pp":
        front, pp_toks = pp_toks[0], pp_toks[1:]
    elif c.front == "advcl":
        front, advcl = advcl + [_punct(",", pred)], []

    rest = [pred] if main is None else []
    rest += objs + manner + [t for p in pp_toks for t in p] + time + ccomp + advcl
    if question:
        toks = auxes[:1] + subj + auxes[1:] + ([main] if main else []) + rest
    elif mode == "rel":
        toks = relphrase + subj + auxes + ([main] if main else []) + rest
    else:
        toks = front + subj + auxes + ([main] if main else []) + rest
    if c.conj is not None:
        ctoks, ch = en_clause(c.conj, mode)
        ch.head, ch.dep = pred, "conj"
        if c.cc == "but":
            toks.append(_punct(",", ch))
        toks += [Tok(c.cc, "CCONJ", "CC", "cc", ch)] + ctoks
    return toks, pred


# --------------------------------------------------------------------------
# German realisation
# --------------------------------------------------------------------------


def de_np(x, case: str) -> List[str]:
    """German tokens of a noun phrase in a case (nom/acc/dat/gen)."""
    if isinstance(x, Coord):
        out = de_np(x.conjuncts[0], case)
        for c in x.conjuncts[1:]:
            out += [COORDINATORS[x.cc]] + de_np(c, case)
        return out
    if x.name is not None:
        return [x.name.form]
    lex = load_lexicon()
    gn = x.gn
    d = lex.determiners[x.det] if x.det is not None else None
    out = []
    if d is not None:
        out.append(d.de_form(case, gn))
    table = d.adj_table if d is not None else ADJ_STRONG
    out += [a.stem + table[case][gn] for a in x.adjs]
    out.append(x.noun.de_form(case, x.number))
    if x.nmod is not None:
        out += de_pp(x.nmod)
    if x.relcl is not None:
        out += [","] + de_clause(x.relcl, "rel", x) + [","]
    return out


def de_pp(p: PP) -> List[str]:
    if p.prep.case == "gen" and p.prep.en == "of":
        return de_np(p.np, "gen")
    toks = de_np(p.np, p.prep.case)
    if isinstance(p.np, NP) and p.np.det == "the":
        c = CONTRACTIONS.get((p.prep.de, toks[0]))
        if c:
            return [c] + toks[1:]
    return [p.prep.de] + toks


def _relpro_de(ante: NP, case: str) -> str:
    return REL_PRONOUN[case][ante.gn]


def _de_verb(c: Clause, number: str) -> Tuple[str, List[str], str]:
    """(finite form without separable prefix, non-finite forms, separable prefix)."""
    v = c.verb
    idx = 0 if number == "sg" else 1
    if c.tense == "pres":
        return v.de_present(number), [], v.prefix
    if c.tense == "past":
        if v.frame == "cop":
            return ("war", "waren")[idx], [], ""
        return v.de_preterite(number), [], v.prefix
    if c.tense == "perf":
        return AUX_FORMS[v.aux][idx], [v.de_pp], ""
    return AUX_FORMS[_MODALS[c.tense][1]][idx], [v.de_infinitive], ""


def _subordinator_de(lex: Lexicon, sconj: str, sub: Clause) -> str:
    de = lex.subordinators[sconj][0]
    if "/" in de:  # when -> als (past) / wenn
        wenn, als = de.split("/")
        return als if sub.tense == "past" else wenn
    return de


def de_clause(c: Clause, mode: str = "main", ante: Optional[NP] = None) -> List[str]:
    """German tokens of a clause.

    ``mode``: ``main`` (verb second), ``question`` (verb first), ``sub``
    (verb final, without the subordinator), ``rel`` (verb final, introduced by
    the relative pronoun of antecedent ``ante``).
    """
    lex = load_lexicon()
    number = ante.number if c.subj is GAP else _number(c.subj)
    if c.question:
        mode = "question"
    fin, nonfin, prefix = _de_verb(c, number)
    frame = c.verb.frame
    relphrase: List[str] = []
    subj: List[str] = []
    if c.subj is GAP:
        relphrase = [_relpro_de(ante, "nom")]
    else:
        subj = de_np(c.subj, "nom")
    mf: List[str] = []
    if c.time is not None and c.front != "time":
        mf += list(c.time.de)
    if c.iobj is GAP:
        relphrase = [_relpro_de(ante, "dat")]
    elif c.iobj is not None:
        mf += de_np(c.iobj, "dat")
    obj_case = "dat" if frame == "dat" else "acc"
    if c.obj is GAP:
        relphrase = [_relpro_de(ante, obj_case)]
    elif c.obj is not None:
        mf += de_np(c.obj, obj_case)
    if c.manner is not None:
        mf.append(c.manner.de)
    for i, p in enumerate(c.pps):
        if c.front == "pp" and i == 0:
            continue
        if p.np is GAP:
            relphrase = [p.prep.de, _relpro_de(ante, p.prep.case)]
        else:
            mf += de_pp(p)
    if frame == "cop":
        mf.append(c.adj.de)
    extra: List[str] = []
    if c.ccomp is not None:
        extra += [",", "dass"] + de_clause(c.ccomp, "sub")
    sub_front: List[str] = []
    if c.advcl is not None:
        sconj, sub = c.advcl
        part = [_subordinator_de(lex, sconj, sub)] + de_clause(sub, "sub")
        if c.front == "advcl":
            sub_front = part + [","]
        else:
            extra += [","] + part

    if mode in ("main", "question"):
        right = ([prefix] if prefix else []) + nonfin
        if mode == "question":
            out = [fin] + subj + mf + right + extra
        else:
            if c.front == "time":
                vf = list(c.time.de)
            elif c.front == "pp":
                vf = de_pp(c.pps[0])
            elif c.front == "advcl":
                vf = sub_front
            else:
                vf, subj = subj, []
            out = vf + [fin] + subj + mf + right + extra
        if c.conj is not None:
            out += ([","] if c.cc == "but" else []) + [COORDINATORS[c.cc]] + de_clause(c.conj, "main")
        return out
    cluster = nonfin + [prefix + fin]
    if mode == "rel":
        return relphrase + subj + mf + cluster + extra
    return subj + mf + cluster + extra


# --------------------------------------------------------------------------
# whole sentences
# --------------------------------------------------------------------------


def _capitalize(w: str) -> str:
    return w[:1].upper() + w[1:]


def _clean_commas(toks: List[str]) -> List[str]:
    """Drop a comma directly before another comma or the final punctuation
    (a relative clause ending the sentence or meeting another clause boundary)."""
    out: List[str] = []
    for t in toks:
        if t in (",", ".", "?") and out and out[-1] == ",":
            out.pop()
        out.append(t)
    return out


def realize(c: Clause, lex: Optional[Lexicon] = None) -> Tuple[Sentence, List[str]]:
    """Realise a top-level clause.

    Returns:
        ``(english, german)``: the English gold-annotated
        :class:`~syntax_nmt.syntax.conllu.Sentence` (``# text`` comment set)
        and the German tokens, both capitalised and with final punctuation.
    """
    mode = "question" if c.question else "main"
    toks, root = en_clause(c, mode)
    toks.append(_punct("?" if c.question else ".", root))
    toks[0].form = _capitalize(toks[0].form)
    index = {id(t): i + 1 for i, t in enumerate(toks)}
    heads = [0 if t.head is None else index[id(t.head)] for t in toks]
    deps = ["root" if t.head is None else t.dep for t in toks]
    space = [not (i + 1 < len(toks) and toks[i + 1].upos == "PUNCT") for i in range(len(toks))]
    sent = Sentence([t.form for t in toks], [t.upos for t in toks], [t.xpos for t in toks], heads, deps, space)
    sent.comments["text"] = "".join(t.form + (" " if sp else "") for t, sp in zip(toks, space)).rstrip()
    de = _clean_commas(de_clause(c, mode) + ["?" if c.question else "."])
    de[0] = _capitalize(de[0])
    return sent, de


def detokenize_de(tokens: List[str]) -> str:
    """Raw German text: tokens joined by spaces, no space before , . ?"""
    out = ""
    for t in tokens:
        out += t if (t in (",", ".", "?") or not out) else " " + t
    return out
