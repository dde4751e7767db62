"""The recipes' multi-seed report: every system on every split (validation and test sets), mean ± sd over
training seeds of sacreBLEU, chrF and tokenized BLEU (cased and lowercased), paired tests against the baseline
on the seeds' translations pooled (:mod:`syntax_nmt.evaluation.compare`), a bar chart per split, training times; and the
parse-noise table (a system trained and tested on corrupted heads against the same system on clean parses).

Inputs are what ``examples/multi30k_en_de/run_all.sh`` writes: ``EVAL/SPLIT/SYSTEM.seedN.{json,detok}``
(:func:`syntax_nmt.evaluation.scoring.score`), ``CHECKPOINTS/SYSTEM/seedN/.done`` (wall and CPU seconds), and the
references ``REFS/SPLIT.raw.de``. Or the translations alone, as kept in a repository (``--translations``:
``DIR/SPLIT/SYSTEM.seedN.{tok,detok}.gz``, written by ``--pack``): they are scored again against the references
``REFS/SPLIT.raw.de`` and ``REFS/SPLIT.de`` (the recipe's ``prepare`` stage makes both) into ``--eval``, and
every table, p-value and chart is derived from them.

    python -m syntax_nmt.recipes.report --eval E --systems "transformer sgnet" --seeds "1 2 3" \\
        --splits "valid test2016" --refs PREP --checkpoints CKPT        # E/results.{md,json}, E/bleu-SPLIT.png
    python -m syntax_nmt.recipes.report --eval E ... --pack KEPT       # also KEPT/SPLIT/SYSTEM.seedN.*.gz
    python -m syntax_nmt.recipes.report --translations KEPT --eval NEW --refs PREP --systems ... --seeds ...
    python -m syntax_nmt.recipes.report --eval E --best-on-valid        # the best non-stock system on valid
    python -m syntax_nmt.recipes.report --noise N --eval E --system S --rates "0.3 1.0" ...   # N/results.md
        [--pack KEPT]                  # KEPT/clean/SPLIT/S.seedN.*.gz, KEPT/r0.3/..., KEPT/r1.0/...
    python -m syntax_nmt.recipes.report --noise NEW_N --eval NEW_E --translations KEPT --system S --rates ...
"""

import argparse
import gzip
import json
import os
import shutil
import sys
import zlib
from typing import Dict, List, Optional, Sequence

from syntax_nmt.cli_errors import fail
from syntax_nmt.evaluation import compare
from syntax_nmt.io_guard import parse_args, reads, updates, writes
from syntax_nmt.utils import atomic_write_json, atomic_write_text, markdown_table, mean_sd

PROG = "python -m syntax_nmt.recipes.report"
#: the metrics of the tables, the first the main one
METRICS = ("sacrebleu", "chrf", "lc_tokenized_bleu", "tokenized_bleu")
#: the metrics of the paired tests (on detokenized text)
TESTED = ("sacrebleu", "chrf")


def _read_json(path: str, what: str):
    """A JSON file the report reads; one that is not valid JSON (a write cut short) is named, with ``what`` to do."""
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError as e:
            raise ValueError(f"{path} is not valid JSON ({e}): {what}") from None


def _load(eval_dir: str, split: str, system: str, seed: int) -> dict:
    path = os.path.join(eval_dir, split, f"{system}.seed{seed}.json")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: translate and score {system} seed {seed} on {split} first")
    return _read_json(path, f"run the evaluate stage again (it scores {system} seed {seed} on {split} again)")


def _done_file(checkpoints: Optional[str], system: str, seed: int) -> Optional[str]:
    """A training's record of its wall and CPU seconds: the recipe's ``CHECKPOINTS/SYSTEM/seedN/.done``, or the
    copy that :func:`pack` keeps beside the translations (``DIR/training/SYSTEM.seedN.json``); None if neither."""
    if not checkpoints:
        return None
    for path in (os.path.join(checkpoints, system, f"seed{seed}", ".done"),
                 os.path.join(checkpoints, "training", f"{system}.seed{seed}.json")):
        if os.path.exists(path):
            return path
    return None


def _timing(checkpoints: Optional[str], system: str, seed: int) -> dict:
    path = _done_file(checkpoints, system, seed)
    if path is None:
        return {}
    with open(path) as f:
        t = json.load(f)
    return {"train_seconds": t.get("wall_seconds"), "train_cpu_seconds": t.get("cpu_seconds")}


def _record(checkpoints: Optional[str], system: str, seed: int) -> Optional[dict]:
    path = _done_file(checkpoints, system, seed)
    if path is None:
        return None
    with open(path) as f:
        return json.load(f)


def run_records_lines(checkpoints: Optional[str], systems: Sequence[str], seeds: Sequence[int]) -> List[str]:
    """What the trainings ran on (device, threads, library versions, parser, resumption), from their records
    (:mod:`syntax_nmt.recipes.training_record`): what they share, and every field in which they differ."""
    from syntax_nmt.recipes import training_record

    records = {f"{n} seed {s}": _record(checkpoints, n, s) for n in systems for s in seeds}
    records = {k: v for k, v in records.items() if v is not None}
    if not records:
        return []
    shared = training_record.common(records)
    lines = ["## The trainings' records", "",
             "Shared by every training: " + (", ".join(f"{k} {v}" for k, v in shared.items()) or "nothing") + "."]
    diffs = training_record.differences(records)
    if diffs:
        lines += ["", "**The trainings of this table differ in what they ran with** (a figure may move with these, "
                  "not only with the system):", ""] + [f"- {d}" for d in diffs]
    return lines + [""]


#: the forms of a translation kept by :func:`pack`: tokenized (tokenized BLEU) and detokenized (sacreBLEU, chrF)
KEPT = ("tok", "detok")


def _kept(directory: str, split: str, system: str, seed: int, form: str) -> str:
    return os.path.join(directory, split, f"{system}.seed{seed}.{form}.gz")


def pack(eval_dir: str, out_dir: str, systems: Sequence[str], seeds: Sequence[int], splits: Sequence[str],
         checkpoints: Optional[str] = None, suffix: str = "") -> int:
    """Keep the translations behind a report: ``out_dir/SPLIT/SYSTEM.seedN.{tok,detok}.gz``, the same bytes for
    the same text (no time stamp, no file name in the gzip header), and with ``checkpoints`` the trainings' times
    (``out_dir/training/SYSTEM.seedN.json``). With ``suffix``, each system is kept as ``SYSTEM{suffix}`` (another
    budget of the same system beside it in one pool: ``lisa-6400``). Returns how many translation files were
    written."""
    count = 0
    for n in systems:
        for s in seeds:
            done = _done_file(checkpoints, n, s)
            if done is not None:
                os.makedirs(os.path.join(out_dir, "training"), exist_ok=True)
                with open(done) as f:
                    record = json.load(f)
                atomic_write_json(os.path.join(out_dir, "training", f"{n}{suffix}.seed{s}.json"), record, indent=1,
                                  sort_keys=True)
    for sp in splits:
        os.makedirs(os.path.join(out_dir, sp), exist_ok=True)
        for n in systems:
            for s in seeds:
                for form in KEPT:
                    src = os.path.join(eval_dir, sp, f"{n}.seed{s}.{form}")
                    if not os.path.exists(src):
                        raise FileNotFoundError(f"{src} is missing: translate and score {n} seed {s} on {sp} first")
                    with open(src, "rb") as f:
                        data = f.read()
                    with open(_kept(out_dir, sp, n + suffix, s, form), "wb") as raw:
                        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as g:
                            g.write(data)
                    count += 1
                factors = os.path.join(eval_dir, sp, f"{n}.seed{s}.factors.json")
                if os.path.exists(factors):  # the target tags' accuracy (it needs the target parser to redo)
                    shutil.copyfile(factors, os.path.join(out_dir, sp, f"{n}{suffix}.seed{s}.factors.json"))
    return count


#: the target language of the references (``--tgt-lang``)
REF_LANG = {"lang": "de"}


def ref_path(refs: str, split: str, raw: bool = False) -> str:
    """``refs/SPLIT.raw.LANG`` (untokenized) or ``refs/SPLIT.LANG`` (tokenized), LANG the target language."""
    lang = REF_LANG["lang"]
    return os.path.join(refs, f"{split}.raw.{lang}" if raw else f"{split}.{lang}")


def read_kept(translations: str, systems: Sequence[str], seeds: Sequence[int], splits: Sequence[str],
              refs: str) -> Dict[tuple, Dict[str, List[str]]]:
    """``(split, system, seed)`` -> the lines of each form of its kept translation (:func:`pack`), every file and
    reference checked before anything is written: a missing reference or translation, or a file cut short, not
    gzip or not UTF-8 (EOFError, BadGzipFile...), is a ValueError / FileNotFoundError naming it."""
    kept: Dict[tuple, Dict[str, List[str]]] = {}
    for sp in splits:
        for name in (f"raw.{REF_LANG['lang']}", REF_LANG["lang"]):
            if not os.path.exists(os.path.join(refs, f"{sp}.{name}")):
                raise FileNotFoundError(f"{os.path.join(refs, f'{sp}.{name}')} is missing: --refs must be the "
                                        f"recipe's prepared data (STAGES=\"download prepare\" run_all.sh makes it)")
        for n in systems:
            for s in seeds:
                lines = kept[(sp, n, s)] = {}
                for form in KEPT:
                    path = _kept(translations, sp, n, s, form)
                    if not os.path.exists(path):
                        raise FileNotFoundError(f"{path} is missing: no kept translation of {n} seed {s} on {sp}")
                    try:
                        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
                            lines[form] = [line.rstrip("\n") for line in f]
                    except (EOFError, OSError, UnicodeDecodeError, zlib.error) as e:  # cut short, not gzip, not UTF-8
                        raise ValueError(f"{path} is not a whole gzip file of UTF-8 text ({e or type(e).__name__}): "
                                         f"keep the translation again (report --pack)") from None
    return kept


def unpack(translations: str, eval_dir: str, systems: Sequence[str], seeds: Sequence[int], splits: Sequence[str],
           refs: str) -> None:
    """Score translations kept by :func:`pack` against ``refs/SPLIT.raw.de`` and ``refs/SPLIT.de``, into
    ``eval_dir/SPLIT/SYSTEM.seedN.{tok,detok,json}``: what the recipe's evaluate stage leaves. Every kept file is
    read and checked first (:func:`read_kept`): one that is missing or broken writes nothing."""
    from syntax_nmt.evaluation.scoring import score_lines

    for (sp, n, s), lines in read_kept(translations, systems, seeds, splits, refs).items():
        os.makedirs(os.path.join(eval_dir, sp), exist_ok=True)
        score_lines(lines["tok"], lines["detok"], ref_path(refs, sp, raw=True), ref_path(refs, sp),
                    os.path.join(eval_dir, sp, f"{n}.seed{s}"))
        factors = os.path.join(translations, sp, f"{n}.seed{s}.factors.json")
        if os.path.exists(factors):
            shutil.copyfile(factors, os.path.join(eval_dir, sp, os.path.basename(factors)))


def split_rows(eval_dir: str, split: str, systems: Sequence[str], seeds: Sequence[int], refs: str,
               tests: Sequence[str], checkpoints: Optional[str] = None, seed: Optional[int] = None) -> List[dict]:
    """The rows of one split: scores over seeds and the pooled paired tests against ``systems[0]``."""
    runs = {(n, s): {**_load(eval_dir, split, n, s), **_timing(checkpoints, n, s)} for n in systems for s in seeds}
    rows = compare.summarize(runs, systems, seeds, METRICS)
    hyps = {(n, s): os.path.join(eval_dir, split, f"{n}.seed{s}.detok") for n in systems for s in seeds}
    compare.significance(rows, hyps, ref_path(refs, split, raw=True), seeds, tests, TESTED,
                         pooled_dir=os.path.join(eval_dir, split, "pooled"), seed=seed)
    return rows


def significance_caption(tests: Sequence[str], seeds: Sequence[int], baseline: str) -> str:
    """What the tables' p-values and seed columns are."""
    from syntax_nmt.evaluation.significance import caption

    text = caption(tests, len(seeds), baseline=baseline)
    if len(seeds) > 1:
        text += (f" Seeds better: in how many seeds the system's sacreBLEU beats {baseline}'s same seed; p per seed: "
                 f"each seed's translations alone ({compare.TEST_LABELS.get(tests[0], tests[0])}, sacreBLEU).")
    return text


def _minutes(values) -> str:
    values = [v for v in values or [] if v is not None]
    return f"{sum(values) / len(values) / 60:.1f}" if values else "-"


def report(eval_dir: str, systems: Sequence[str], seeds: Sequence[int], splits: Sequence[str], refs: str,
           tests: Sequence[str], checkpoints: Optional[str] = None, title: str = "") -> str:
    """Write ``results.json``, ``results.md`` and ``bleu-SPLIT.png`` into ``eval_dir``; returns the markdown."""
    by_split = {sp: split_rows(eval_dir, sp, systems, seeds, refs, tests, checkpoints) for sp in splits}
    first = by_split[splits[0]]
    lines = [f"# {title}" if title else "# Results", "",
             f"Systems: {', '.join(systems)} (baseline: {systems[0]}); training seeds {', '.join(map(str, seeds))}. "
             f"Metrics: sacreBLEU and chrF (cased, detokenized; signatures below), tokenized BLEU cased and "
             f"lowercased (multi-bleu; lowercased: the Multi30k literature's metric). Mean ± sample sd over seeds. "
             + significance_caption(tests, seeds, systems[0]), ""]
    for sp in splits:
        rows = by_split[sp]
        lines += [f"## {sp} ({rows[0]['sentences']} sentences)", "",
                  compare.results_table(rows, METRICS, tests, TESTED), ""]
        compare.plot_bars(rows, os.path.join(eval_dir, f"bleu-{sp}.png"),
                          f"{title}\n{sp}, {len(seeds)} seeds" if title else f"{sp}, {len(seeds)} seeds")
    ranked = sorted(first, key=lambda r: -r["mean"])
    lines += [f"Ranking on {splits[0]} (mean sacreBLEU): "
              + ", ".join(f"{r['system']} {r['mean']:.2f}" for r in ranked), ""]
    lines += factor_accuracy_lines(eval_dir, systems, seeds, splits)
    lines += ["## Training time", "", markdown_table(
        ["system", "wall min per training", "CPU min per training"],
        [[r["system"], _minutes(r.get("train_seconds")), _minutes(r.get("train_cpu_seconds"))] for r in first])]
    walls = [v for r in first for v in r.get("train_seconds") or [] if v is not None]
    if walls:
        lines += ["", f"All {len(walls)} trainings: {sum(walls) / 3600:.2f} h of wall time one after the other."]
    lines += [""] + run_records_lines(checkpoints, systems, seeds)
    sig = first[0].get("signature")
    chrf_sig = _load(eval_dir, splits[0], systems[0], seeds[0]).get("chrf_signature")
    lines += ["", f"sacreBLEU signature: `{sig}`", f"chrF signature: `{chrf_sig}`", ""]
    text = "\n".join(lines)
    atomic_write_text(os.path.join(eval_dir, "results.md"), text)
    atomic_write_json(os.path.join(eval_dir, "results.json"),
                      {"title": title, "systems": list(systems), "seeds": list(seeds), "splits": by_split}, indent=1)
    return text


def factor_accuracies(eval_dir: str, systems: Sequence[str], seeds: Sequence[int],
                      splits: Sequence[str]) -> Dict[str, Dict[str, Dict[str, List[float]]]]:
    """split -> system -> stream -> the target tags' accuracy against the target parser (``SPLIT/SYSTEM.seedN.
    factors.json`` of ``syntax-nmt-evaluate factors``: each stream its target scheme scores, e.g. ``pos``), one value
    per seed, for the systems that predict tags.

    Raises:
        FileNotFoundError: the tags of some seeds only.
        ValueError: a file that is not valid JSON, or seeds whose files score other streams.
    """
    out: Dict[str, Dict[str, Dict[str, List[float]]]] = {}
    for sp in splits:
        for n in systems:
            paths = [os.path.join(eval_dir, sp, f"{n}.seed{s}.factors.json") for s in seeds]
            if any(os.path.exists(p) for p in paths):
                values: Dict[str, List[float]] = {}
                for s, p in zip(seeds, paths):
                    again = f"run the evaluate stage again (it measures the tags of {n} seed {s} on {sp} again)"
                    if not os.path.exists(p):  # the tags of some seeds only: a failed step, not a table to print
                        raise FileNotFoundError(f"{p} is missing: {again}")
                    measured = _read_json(p, again)
                    if values and list(measured) != list(values):
                        raise ValueError(f"{p} scores the tags of {', '.join(measured) or 'no stream'}, seed "
                                         f"{seeds[0]}'s those of {', '.join(values)}: {again}")
                    for stream, result in measured.items():
                        values.setdefault(stream, []).append(result["accuracy"])
                out.setdefault(sp, {})[n] = values
    return out


def factor_accuracy_lines(eval_dir: str, systems: Sequence[str], seeds: Sequence[int],
                          splits: Sequence[str]) -> List[str]:
    """The markdown table of :func:`factor_accuracies`, a row per system and stream (nothing when no system predicts
    target tags)."""
    acc = factor_accuracies(eval_dir, systems, seeds, splits)
    rows = []
    for n in systems:
        streams = list(dict.fromkeys(t for sp in splits for t in acc.get(sp, {}).get(n, {})))
        rows += [[n, t, *("{:.2f} ± {:.2f}".format(*mean_sd(acc[sp][n][t])) if t in acc.get(sp, {}).get(n, {})
                          else "-" for sp in splits)] for t in streams]
    if not rows:
        return []
    lines = ["## Target tags", "", "Accuracy (%) of the target tags each system predicts for its own translation "
             "(target factors: its F lines; interleaved: the tag before each word) against the target parser's tags "
             "of that translation (`syntax-nmt-evaluate factors`), for each stream its target scheme scores (`pos`: "
             "the POS tags), mean ± sd over seeds.", ""]
    return lines + [markdown_table(["system", "tags", *splits], rows), ""]


def best_on_valid(eval_dir: str, split: str = "valid") -> str:
    """The non-stock system with the highest mean sacreBLEU on ``split`` in ``eval_dir/results.json``."""
    from syntax_nmt.systems import get

    with open(os.path.join(eval_dir, "results.json")) as f:
        rows = json.load(f)["splits"][split]
    rows = [r for r in rows if not get(r["system"]).stock]
    if not rows:
        raise ValueError(f"{eval_dir}/results.json has no syntax system")
    return max(rows, key=lambda r: r["mean"])["system"]


def noise_dirs(noise_dir: str, eval_dir: str, rates: Sequence[str]) -> Dict[str, str]:
    """The evaluation directory of each row of the noise table: ``clean`` (the main comparison's) first, then
    ``rRATE`` (``noise_dir/eval/rRATE``); their kept translations go to ``DIR/clean``, ``DIR/rRATE``."""
    return {"clean": eval_dir, **{f"r{r}": os.path.join(noise_dir, "eval", f"r{r}") for r in rates}}


def noise_report(noise_dir: str, eval_dir: str, system: str, rates: Sequence[str], seeds: Sequence[int],
                 splits: Sequence[str], refs: str, tests: Sequence[str]) -> str:
    """``system`` on clean parses (``eval_dir``) against the same system trained and tested with a fraction of
    its heads corrupted (``noise_dir/eval/rRATE``): tables per split, clean first (the baseline of the tests),
    into ``noise_dir/results.{md,json}``."""
    dirs = noise_dirs(noise_dir, eval_dir, rates)
    names = list(dirs)
    lines = [f"# {system}: clean parses against corrupted heads", "",
             f"Each corrupted row trains and tests {system} on data whose heads are corrupted at that rate (a word's "
             "head replaced by a random other word of its sentence, in training, validation and test data; "
             f"syntax-nmt-analyze corrupt); clean: the same system on the parser's heads (seeds "
             f"{', '.join(map(str, seeds))}). " + significance_caption(tests, seeds, "clean"), ""]
    out = {}
    for sp in splits:
        runs, hyps = {}, {}
        for n in names:
            for s in seeds:
                runs[(n, s)] = _load(dirs[n], sp, system, s)
                hyps[(n, s)] = os.path.join(dirs[n], sp, f"{system}.seed{s}.detok")
        rows = compare.summarize(runs, names, seeds, METRICS)
        compare.significance(rows, hyps, ref_path(refs, sp, raw=True), seeds, tests, TESTED)
        out[sp] = rows
        lines += [f"## {sp}", "", compare.results_table(rows, METRICS, tests, TESTED), ""]
    text = "\n".join(lines)
    os.makedirs(noise_dir, exist_ok=True)
    atomic_write_text(os.path.join(noise_dir, "results.md"), text)
    atomic_write_json(os.path.join(noise_dir, "results.json"),
                      {"system": system, "rates": list(rates), "seeds": list(seeds), "splits": out}, indent=1)
    return text


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    updates(p.add_argument("--eval", required=True, help="the recipe's evaluation directory (SPLIT/SYSTEM.seedN.*); "
                           "with --translations, where they are scored again"))
    translations = p.add_argument("--translations", default=None, metavar="DIR",
                   help="report on kept translations (DIR/SPLIT/SYSTEM.seedN.{tok,detok}.gz), scored again against "
                        "--refs into --eval (with --noise: DIR/ROW/SPLIT/..., ROW clean or rRATE, into --eval and "
                        "--noise)")
    reads(translations, "dir", gz=True)
    pack_dir = p.add_argument("--pack", default=None, metavar="DIR",
                   help="also keep the report's translations in DIR/SPLIT/SYSTEM.seedN.{tok,detok}.gz (with --noise: "
                        "DIR/ROW/SPLIT/..., ROW clean or rRATE)")
    writes(pack_dir, "dir")
    p.add_argument("--systems", default="", help="space- or comma-separated, the baseline first")
    p.add_argument("--seeds", default="1 2 3")
    p.add_argument("--splits", default="valid test2016 test2017 mscoco", help="the first is the validation split")
    reads(p.add_argument("--refs", default="", help="directory with the references SPLIT.raw.de (and SPLIT.de, "
                         "tokenized: with --translations)"), "dir")
    p.add_argument("--tgt-lang", default="de", help="target language: the references are SPLIT.raw.LANG, SPLIT.LANG")
    p.add_argument("--tests", default="bs ar", help="paired tests, the first one's stars on the charts: bs (two-sided "
                   "bootstrap), ar (approximate randomization), bs-sacrebleu (sacreBLEU's bootstrap statistic, about "
                   "one-sided)")
    reads(p.add_argument("--checkpoints", default=None, help="checkpoint directory (SYSTEM/seedN/.done: training "
                         "times)"), "dir")
    p.add_argument("--pack-suffix", default="", metavar="SUFFIX",
                   help="with --pack: keep each system as SYSTEM+SUFFIX (another budget beside it: -6400)")
    p.add_argument("--title", default="")
    p.add_argument("--best-on-valid", action="store_true",
                   help="print the non-stock system with the best mean sacreBLEU on the first split, then exit")
    updates(p.add_argument("--noise", default=None, help="the noise stage's directory: write its table instead"))
    p.add_argument("--system", default=None, help="with --noise: the system trained on corrupted heads")
    p.add_argument("--rates", default="", help="with --noise: the corruption rates")
    return p


def _words(value: str) -> List[str]:
    return [v for v in value.replace(",", " ").split() if v]


def main(argv: Optional[Sequence[str]] = None) -> None:
    import logging

    from syntax_nmt.utils import setup_logging

    setup_logging(logging.WARNING)
    a = parse_args(get_parser(), argv)
    REF_LANG["lang"] = a.tgt_lang
    splits = _words(a.splits)
    try:
        seeds = [int(s) for s in _words(a.seeds)]
        if a.best_on_valid:
            if not splits:
                fail(PROG, "--best-on-valid needs --splits (the first is the one compared)")
            print(best_on_valid(a.eval, splits[0]))
            return
        tests = _words(a.tests)
        if a.noise:
            if not a.system or not _words(a.rates):
                fail(PROG, "--noise needs --system and --rates")
            dirs = noise_dirs(a.noise, a.eval, _words(a.rates))
            if a.translations:
                for row in dirs:  # every row's files checked before any is scored
                    read_kept(os.path.join(a.translations, row), [a.system], seeds, splits, a.refs)
                for row, d in dirs.items():
                    unpack(os.path.join(a.translations, row), d, [a.system], seeds, splits, a.refs)
            print(noise_report(a.noise, a.eval, a.system, _words(a.rates), seeds, splits, a.refs, tests))
            if a.pack:
                n = sum(pack(d, os.path.join(a.pack, row), [a.system], seeds, splits) for row, d in dirs.items())
                print(f"kept {n} translation files in {a.pack}", file=sys.stderr)
            return
        systems = _words(a.systems)
        if not systems or not seeds or not splits:
            fail(PROG, "--systems, --seeds and --splits must not be empty")
        checkpoints = a.checkpoints
        if a.translations:
            unpack(a.translations, a.eval, systems, seeds, splits, a.refs)
            checkpoints = checkpoints or a.translations  # the training times kept beside them
        print(report(a.eval, systems, seeds, splits, a.refs, tests, checkpoints, a.title))
        if a.pack:
            n = pack(a.eval, a.pack, systems, seeds, splits, checkpoints, a.pack_suffix)
            print(f"kept {n} translation files in {a.pack}", file=sys.stderr)
    except (FileNotFoundError, ValueError, KeyError) as e:
        fail(PROG, e)


if __name__ == "__main__":
    main(sys.argv[1:])
