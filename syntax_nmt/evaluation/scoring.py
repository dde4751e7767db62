"""Translation files scored: one system's fairseq-generate log extracted, detokenized and scored with every metric of
:mod:`syntax_nmt.evaluation.metrics` (:func:`score`, ``PREFIX.{tok,detok,json}``), the paired significance of
systems' hypothesis files against a baseline's (:func:`significance`, on
:mod:`syntax_nmt.evaluation.significance`'s tests), and the table of several scored systems (:func:`summary`): what
``syntax-nmt-evaluate score``, ``significance`` and ``summary`` print."""

import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from syntax_nmt.evaluation import significance as tests
from syntax_nmt.evaluation.generate_log import check_hypothesis, read_hypotheses
from syntax_nmt.evaluation.metrics import (chrf, compound_split_bleu, detok_bleu, detokenize, lc_tokenized_bleu,
                                           paired_metric, tokenized_bleu)
from syntax_nmt.utils import atomic_write_json, read_lines, write_lines


def score(generate_log: str, ref_raw: str, ref_tok: str, out_prefix: str, lang: str = "de",
          strip_target_tags: bool = False) -> Dict:
    """Extract, detokenize and score one system; writes ``out_prefix.{tok,detok,json}``. ``strip_target_tags``: the
    hypotheses hold interleaved target tags (``syntax-nmt-target-tags``), removed before anything is scored."""
    hyps_tok = read_hypotheses(generate_log, target_tags=strip_target_tags)
    if strip_target_tags:
        from syntax_nmt.annotate.target_tags import strip

        hyps_tok = [strip(h) for h in hyps_tok]
    return score_lines(hyps_tok, detokenize(hyps_tok, lang), ref_raw, ref_tok, out_prefix)


def score_lines(hyps_tok: Sequence[str], hyps: Sequence[str], ref_raw: str, ref_tok: str, out_prefix: str) -> Dict:
    """Score tokenized hypotheses and their detokenized form (:func:`score`'s scores, from translations kept
    as text); writes ``out_prefix.{tok,detok,json}``."""
    refs_raw, refs_tok = list(read_lines(ref_raw)), list(read_lines(ref_tok))
    if not len(hyps_tok) == len(hyps) == len(refs_raw) == len(refs_tok):
        raise ValueError(f"{len(hyps_tok)} tokenized and {len(hyps)} detokenized hypotheses, {len(refs_raw)} raw "
                         f"references ({ref_raw}) and {len(refs_tok)} tokenized ones ({ref_tok}): the line counts "
                         f"must agree")
    write_lines(out_prefix + ".tok", hyps_tok)
    write_lines(out_prefix + ".detok", hyps)
    bleu, bleu_str, signature = detok_bleu(hyps, refs_raw)
    split_bleu, split_str = compound_split_bleu(hyps_tok, refs_tok)
    tok_bleu, tok_str = tokenized_bleu(hyps_tok, refs_tok)
    lc_bleu, lc_str = lc_tokenized_bleu(hyps_tok, refs_tok)
    chrf_score, chrf_str, chrf_signature = chrf(hyps, refs_raw)
    result = {
        "name": os.path.basename(out_prefix), "sentences": len(hyps),
        "sacrebleu": bleu, "sacrebleu_str": bleu_str, "signature": signature,
        "chrf": chrf_score, "chrf_str": chrf_str, "chrf_signature": chrf_signature,
        "tokenized_bleu": tok_bleu, "tokenized_bleu_str": tok_str,
        "lc_tokenized_bleu": lc_bleu, "lc_tokenized_bleu_str": lc_str,
        "compound_split_bleu": split_bleu, "compound_split_bleu_str": split_str,
    }
    # written last and atomically: the recipes take PREFIX.json for the mark of a scored translation
    atomic_write_json(out_prefix + ".json", result, indent=2)
    return result


def _checked_lines(path: str) -> List[str]:
    """The lines of a hypothesis file for a paired test, refused as :func:`score` refuses them (subword pieces,
    target tags: :func:`~syntax_nmt.evaluation.generate_log.check_hypothesis`)."""
    lines = list(read_lines(path))
    for lineno, line in enumerate(lines, 1):
        check_hypothesis(line, f"{path}:{lineno}")
    return lines


def _files(spec) -> List[str]:
    """A system's hypothesis files: one path, or a list of them (one per training seed)."""
    return [spec] if isinstance(spec, str) else list(spec)


def significance(ref_raw: str, baseline: Tuple[str, object], systems: Sequence[Tuple[str, object]],
                 test_type: str = "bs", n_samples: int = 0, seed: Optional[int] = None,
                 metric: str = "sacrebleu") -> List[Dict]:
    """Paired significance of each system against the baseline, the test sentence as the unit
    (:mod:`syntax_nmt.evaluation.significance`, which the recipes' and the demo's tables use too).

    With one hypothesis file per system, ``bs-sacrebleu`` and ``ar`` are sacreBLEU's ``--paired-bs`` /
    ``--paired-ar`` exactly (scores, bootstrap means and confidence intervals, p-values); ``bs`` has sacreBLEU's
    scores, means and intervals and the two-sided p-value of the same resamples. With several (the translations of
    several training seeds, seed s of a system paired with seed s of the baseline) every resample carries, and every
    trial swaps, the lines of all seeds of a sentence together.

    Args:
        ref_raw: the reference file: untokenized for ``sacrebleu``, tokenized for ``tokenized``.
        baseline, systems: ``(name, hypothesis file or list of files)``, detokenized or tokenized like the
            reference; every system has as many files as the baseline.
        test_type: ``"bs"`` (two-sided paired bootstrap, 1000 samples), ``"bs-sacrebleu"`` (sacreBLEU's bootstrap
            statistic, 1000 samples) or ``"ar"`` (approximate randomization, 10000 trials) when ``n_samples`` is 0.
        metric: ``sacrebleu`` (13a-tokenized BLEU of detokenized text) or ``tokenized``
            (:func:`~syntax_nmt.evaluation.metrics.multi_bleu` on tokenized text).
        seed: seed of the resampling; ``None``: ``$SACREBLEU_SEED`` if set (``none``: unseeded), else
            sacrebleu's 12345. Must not be 0 (sacreBLEU reads 0 as unseeded; refused, so both agree).

    Returns:
        One dict per system: name, BLEU (over all its files), bootstrap mean and 95% CI (the bootstraps; None for
        ``ar``) and p-value (None for the baseline).
    """
    if seed == 0:
        raise ValueError("significance seed 0 is not reproducible in sacrebleu (it means unseeded); use another")
    bleu = paired_metric(metric)
    named = [(name, _files(spec)) for name, spec in [baseline, *systems]]
    for name, files in named[1:]:
        if len(files) != len(named[0][1]):
            raise ValueError(f"{name} has {len(files)} hypothesis files, the baseline {named[0][0]} "
                             f"{len(named[0][1])}: give each system one file per seed, in the same order")
    refs = list(read_lines(ref_raw))
    if not refs:
        raise ValueError(f"{ref_raw} is empty: no test sentence to resample")
    stats = [tests.sentence_statistics(bleu, [_checked_lines(f) for f in files], refs) for _, files in named]
    rng_seed = tests.resampling_seed(seed)
    results = [tests.paired_test(bleu, stats[0], s, test_type, n_samples, rng_seed) for s in stats[1:]]
    first = results[0]  # the baseline's resamples are the same draws in every comparison
    rows = [{"name": named[0][0], "bleu": first.baseline, "mean": first.baseline_mean, "ci": first.baseline_ci,
             "p_value": None}]
    for (name, _), res in zip(named[1:], results):
        rows.append({"name": name, "bleu": res.system, "mean": res.mean, "ci": res.ci, "p_value": res.p_value})
    return rows



def format_significance(rows: List[Dict], test_type: str) -> str:
    """One line per system: ``name BLEU (mu +- ci) p = ...``; ``*`` marks p < 0.05."""
    label = tests.TEST_LABELS[test_type]
    lines = []
    for i, r in enumerate(rows):
        spread = f" (mu = {r['mean']:.2f} +- {r['ci']:.2f})" if r.get("mean") is not None else ""
        if i == 0:
            lines.append(f"{r['name']:<16} BLEU = {r['bleu']:.2f}{spread}  [baseline]")
        else:
            star = "*" if tests.significant(r["p_value"]) else " "
            lines.append(f"{r['name']:<16} BLEU = {r['bleu']:.2f}{spread}  p = {r['p_value']:.4f}{star} "
                         f"({label} vs {rows[0]['name']})")
    return "\n".join(lines)


def _prefix_list(spec) -> List[str]:
    """A system of :func:`summary`: ``PREFIX[,PREFIX...]`` (one per training seed) or a list of prefixes."""
    if isinstance(spec, str):
        items = spec.split(",")
        if not all(items):
            raise ValueError(f"{spec}: an empty prefix (a comma too many?)")
        return items
    return list(spec)


def summary(ref_raw: str, prefixes: Sequence, baseline=None, test_type: str = "bs",
            n_samples: int = 0, title: str = "", ref_tok: Optional[str] = None, seed: Optional[int] = None) -> str:
    """A table of the scores of ``score`` (``PREFIX.json``) for several systems, with the
    p-value of a paired test against ``baseline`` (a prefix, also listed first): on sacreBLEU
    (``PREFIX.detok`` against ``ref_raw``) and, when ``ref_tok`` is given, on tokenized BLEU
    (``PREFIX.tok`` against ``ref_tok``).

    A system may be the translations of several training seeds: ``PREFIX,PREFIX,...`` (or a list), one per seed, as
    many as the baseline's, seed s paired with the baseline's seed s. Its scores are then the means over its seeds,
    and its p-values :func:`significance`'s with the seeds' files (the test sentence the unit, all seeds' lines of a
    sentence together). The p-values are kept by system, not by name: two systems of one name (``seed1/s``,
    ``seed2/s``) are shown by their prefixes."""
    systems = [_prefix_list(p) for p in prefixes]
    base = _prefix_list(baseline) if baseline else None
    systems = ([base] if base else []) + [p for p in systems if p != base]
    seeds = len(systems[0]) if systems else 1
    if base:
        for p in systems[1:]:
            if len(p) != len(base):
                raise ValueError(f"{','.join(p)} has {len(p)} seed(s), the baseline {','.join(base)} {len(base)}: "
                                 f"give every system one prefix per seed, in the same order")
    results = []
    for spec in systems:
        runs = []
        for prefix in spec:
            with open(prefix + ".json") as f:
                try:
                    runs.append(json.load(f))
                except ValueError as e:
                    raise ValueError(f"{prefix}.json is not valid JSON ({e}): score {prefix} again") from None
        row = dict(runs[0])
        for key in ("sacrebleu", "tokenized_bleu", "compound_split_bleu"):
            values = [r.get(key) for r in runs]
            row[key] = None if any(v is None for v in values) else sum(values) / len(values)
        results.append(row)
    names = [r["name"] for r in results]
    shown = [r["name"] if names.count(r["name"]) == 1 else ",".join(spec) for r, spec in zip(results, systems)]
    p_values: Dict[str, Dict[int, float]] = {"sacrebleu": {}, "tokenized": {}}
    if base and len(systems) > 1:
        for metric, ref, ext in (("sacrebleu", ref_raw, ".detok"), ("tokenized", ref_tok, ".tok")):
            if ref is None:
                continue
            files = [[p + ext for p in spec] for spec in systems]
            rows = significance(ref, (shown[0], files[0] if seeds > 1 else files[0][0]),
                                [(n, f if seeds > 1 else f[0]) for n, f in zip(shown[1:], files[1:])],
                                test_type, n_samples, seed, metric=metric)
            p_values[metric] = {i: r["p_value"] for i, r in enumerate(rows[1:], 1)}

    def p_str(metric, i):
        if base and i == 0:
            return "baseline"
        p = p_values[metric].get(i)
        return "-" if p is None else f"{p:.4f}{'*' if tests.significant(p) else ''}"

    def num(value):
        return "-" if value is None else f"{value:.2f}"

    lines = [title] if title else []
    lines.append(f"{'system':<16} {'sacreBLEU':>9} {'p':>9} {'tok.BLEU':>9} {'p':>9} {'split BLEU':>11}")
    for i, (r, name) in enumerate(zip(results, shown)):
        lines.append(f"{name:<16} {r['sacrebleu']:>9.2f} {p_str('sacrebleu', i):>9} "
                     f"{num(r.get('tokenized_bleu')):>9} {p_str('tokenized', i):>9} "
                     f"{r['compound_split_bleu']:>11.2f}")
    lines.append("tok.BLEU: tokenized case-sensitive BLEU (= multi-bleu.perl); split BLEU: tokenized, "
                 "compound-split BLEU (as most WMT14 papers)")
    if seeds > 1:
        lines.append(f"scores: mean over {seeds} seeds (one prefix per training seed)")
    if base and len(systems) > 1:
        unit = "the test sentence" if seeds == 1 else f"the test sentence, with the lines of all {seeds} seeds"
        lines.append(f"p: {tests.TEST_NAMES[test_type]} against the baseline "
                     f"({tests.samples_text(test_type, n_samples)}, unit: {unit}; p = 1 where the scores are equal); "
                     f"* p < 0.05")
    lines.append(f"sacreBLEU signature: {results[0]['signature']}")
    return "\n".join(lines)
