"""What a recipe's run (``examples/multi30k_en_de/run_all.sh``) asks before it skips a step done by an earlier run.

* ``todo``: the splits of a trained system still to translate and score. A split is done when its score
  (``EVAL/SPLIT/NAME.json``, the mark of a scored translation, written atomically by ``syntax-nmt-evaluate score``)
  and, for a system that predicts target tags, its factor accuracy (``NAME.factors.json``) are both there, valid
  JSON and newer than the training's end (``SAVE/.done``): the score and the factors of a split are done together
  or not at all. A marker that is not valid JSON (a write cut short: a full disk, a kill) makes its split be done
  again, with a warning naming it; so does a translation made with other settings (``record``: BEAM, LENPEN,
  CHECKPOINT... beside the score, ``NAME.settings.json``), saying which, or one whose record of its settings is cut
  short or missing.
* ``annotated``: whether an annotation (``PREFIX.annotation.json``, what ``syntax-nmt-annotate`` recorded) was
  made with the parser the run is given now; a run that skips the annotate stage would otherwise train and report
  the old parses under the new parser's name. Exit status 2 and one line naming the setting, both values and how to
  go on, when it was not.
* ``parser``: the parser of an annotation or a data directory as the results name it: the spaCy pipeline's name
  and version (:func:`syntax_nmt.recipes.training_record.model_version`), not the path it was loaded from.

    python -m syntax_nmt.recipes.markers todo --after SAVE/.done --eval EVAL --name NAME --splits "valid test" \\
        [--factors] [--setting NAME=VALUE ...]         # prints the splits to (re)do, one per line
    python -m syntax_nmt.recipes.markers record --eval EVAL --split SPLIT --name NAME [--setting NAME=VALUE ...]
    python -m syntax_nmt.recipes.markers annotated PREFIX --setting SPACY_MODEL --model MODEL   # exit 2 on a change
    python -m syntax_nmt.recipes.markers parser PREFIX_OR_DATA_DIR                              # en_core_web_sm 3.8.0
"""

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence

from syntax_nmt.cli_errors import fail
from syntax_nmt.io_guard import no_path, parse_args, reads, updates
from syntax_nmt.utils import atomic_write_json, read_json_marker

PROG = "python -m syntax_nmt.recipes.markers"


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def settings_file(eval_dir: str, split: str, name: str) -> str:
    """Where a split's translation records the settings it was made with (:func:`record`)."""
    return os.path.join(eval_dir, split, f"{name}.settings.json")


def split_done(eval_dir: str, split: str, name: str, after: str, factors: bool = False,
               settings: Optional[Dict[str, str]] = None) -> bool:
    """Whether ``name`` is scored on ``split`` (and, with ``factors``, its target tags measured) after ``after``
    (the training's ``.done``) was written: both markers present, valid JSON (else a warning) and newer; and, given
    ``settings``, translated with them as its record says (``NAME.settings.json``, :func:`record`): another BEAM, a
    record cut short or none (a run killed between the score and the record) make it be done again, said so."""
    paths = [os.path.join(eval_dir, split, f"{name}.json")]
    if factors:
        paths.append(os.path.join(eval_dir, split, f"{name}.factors.json"))
    for path in paths:
        if not os.path.exists(path) or (os.path.exists(after) and os.path.getmtime(path) <= os.path.getmtime(after)):
            return False
        if read_json_marker(path, _warn) is None:
            return False
    if not settings:
        return True
    path = settings_file(eval_dir, split, name)
    recorded = read_json_marker(path, _warn)
    if not isinstance(recorded, dict):  # cut short (warned), not a record, or missing (killed before record ran)
        if os.path.exists(path) and recorded is not None:
            _warn(f"{path} is not a record of settings: doing its step again")
        elif not os.path.exists(path):
            print(f"{name} on {split} has no record of the settings it was translated with ({path}): translating "
                  f"it again", file=sys.stderr, flush=True)
        return False
    changed = [f"{k}: {recorded[k]!r} -> {v!r}" for k, v in sorted(settings.items()) if k in recorded
               and recorded[k] != v]
    if changed:
        print(f"{name} on {split} was translated with other settings ({'; '.join(changed)}): translating it "
              f"again", file=sys.stderr, flush=True)
        return False
    return True


def todo(eval_dir: str, name: str, splits: Sequence[str], after: str, factors: bool = False,
         settings: Optional[Dict[str, str]] = None) -> List[str]:
    """The splits of ``splits`` that :func:`split_done` says are not done."""
    return [sp for sp in splits if not split_done(eval_dir, sp, name, after, factors, settings)]


def record(eval_dir: str, split: str, name: str, settings: Dict[str, str]) -> None:
    """Record (atomically) the settings a split's translation was made with, beside its score."""
    atomic_write_json(settings_file(eval_dir, split, name), dict(settings), indent=1, sort_keys=True)


def _settings_file(path: str) -> str:
    from syntax_nmt.annotation_settings import settings_path
    from syntax_nmt.constants import DATA_SETTINGS_FILE

    return os.path.join(path, DATA_SETTINGS_FILE) if os.path.isdir(path) else settings_path(path)


def recorded_parser(path: str) -> Optional[dict]:
    """The backend and spaCy pipeline an annotation prefix (or a data directory) records, None without a record."""
    found = read_json_marker(_settings_file(path))
    if not isinstance(found, dict):
        return None
    return {"backend": found.get("backend"), "spacy_model": found.get("spacy_model"),
            "spacy_pipeline": found.get("spacy_pipeline")}


def check_annotated(prefix: str, setting: str, model: str) -> None:
    """Refuse an annotation made with another parser than ``model`` (the run's ``setting``, e.g. ``SPACY_MODEL``).

    Raises:
        ValueError: naming the annotation, the setting, both parsers and how to go on.
    """
    from syntax_nmt.annotate.backends.spacy_backend import pipeline_record, recorded_model
    from syntax_nmt.annotation_settings import describe

    rec = recorded_parser(prefix)
    if rec is None or rec["backend"] != "spacy" or not rec["spacy_model"]:
        return  # nothing recorded to compare (or another backend): the annotate stage's own checks hold
    if rec["spacy_model"] != recorded_model(model):
        where = os.path.dirname(prefix) or "."
        raise ValueError(f"{where} was annotated with {setting}={rec['spacy_model']}, now {setting}={model}: set "
                         f"{setting}={rec['spacy_model']} to go on with these parses, or choose another WORK (or "
                         f"remove {where} and what was made from it) and run the annotate stage for the new parser")
    was = rec.get("spacy_pipeline")
    now = pipeline_record(model) if isinstance(was, dict) else None
    if now is not None and now.get("sha256") != was.get("sha256"):  # retrained or upgraded at the same name or path
        where = os.path.dirname(prefix) or "."
        raise ValueError(f"{where} was annotated by {setting}={model} as {describe('spacy_pipeline', was)}, and "
                         f"{model} is now {describe('spacy_pipeline', now)}: remove {where} and what was made from it "
                         f"and run the annotate stage again, or put the pipeline that made these parses back")


def parser_name(path: str) -> str:
    """``NAME VERSION`` of the spaCy pipeline an annotation or a data directory records, the backend's name for
    another backend, ``unknown`` without a record."""
    from syntax_nmt.recipes.training_record import model_version

    rec = recorded_parser(path)
    if rec is None:
        return "unknown"
    if isinstance(rec.get("spacy_pipeline"), dict):  # the pipeline that parsed, not the one at its path now
        return f"{rec['spacy_pipeline'].get('name')} {rec['spacy_pipeline'].get('version')}"
    if rec["spacy_model"]:
        return model_version(rec["spacy_model"])
    return str(rec["backend"])


def parse_settings(items: Sequence[str]) -> Dict[str, str]:
    from syntax_nmt.recipes.training_record import parse_settings as parse

    return parse(items)


def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("todo", help="print the splits still to translate and score")
    reads(t.add_argument("--after", required=True, help="the training's .done"), optional=True)
    updates(t.add_argument("--eval", required=True, help="EVAL: EVAL/SPLIT/NAME.json"))
    t.add_argument("--name", required=True, help="SYSTEM.seedN")
    t.add_argument("--splits", required=True, help="space-separated")
    t.add_argument("--factors", action="store_true", help="the system predicts target tags: NAME.factors.json too")
    t.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="what the translations are made with now (a split translated otherwise is done again)")
    r = sub.add_parser("record", help="record the settings of a split's translation (after it is scored)")
    updates(r.add_argument("--eval", required=True))
    r.add_argument("--split", required=True)
    r.add_argument("--name", required=True)
    r.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE")
    a = sub.add_parser("annotated", help="exit 2, naming the change, if PREFIX was annotated with another parser")
    reads(a.add_argument("prefix"), "prefix", optional=True)
    a.add_argument("--setting", required=True, help="the run's name for it (SPACY_MODEL, TGT_SPACY_MODEL)")
    a.add_argument("--model", required=True)
    n = sub.add_parser("parser", help="the recorded parser's name and version")
    reads(n.add_argument("path", help="an annotation prefix or a data directory"), "prefix", optional=True)
    no_path(n.add_argument("--default", default=None, help="printed when PATH records no parser"), "printed text")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(get_parser(), argv)
    try:
        if args.command == "todo":
            settings = parse_settings(args.setting)
            for split in todo(args.eval, args.name, args.splits.split(), args.after, args.factors, settings):
                print(split)
        elif args.command == "record":
            record(args.eval, args.split, args.name, parse_settings(args.setting))
        elif args.command == "annotated":
            check_annotated(args.prefix, args.setting, args.model)
        else:
            name = parser_name(args.path)
            print(args.default if name == "unknown" and args.default is not None else name)
    except (OSError, ValueError) as e:
        fail(PROG, str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
