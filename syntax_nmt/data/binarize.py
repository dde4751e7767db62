"""``syntax-nmt-binarize``: fairseq-preprocess for the subword text plus the source streams.

The subword source/target text goes through fairseq's own preprocessing (every
``fairseq-preprocess`` option works: ``--joined-dictionary``, ``--workers``,
``--srcdict``...). Each tag stream (pos, case, subword, dep) is then binarized with
fairseq's own binarizer into ``{destdir}/{split}.{src}-{tgt}.{stream}.{bin,idx}``
with its own small dictionary ``dict.{stream}.txt``; heads are written as raw
int16 offsets (int32 if a sentence needs it). Finally every stream is checked
against the binarized source, sentence by sentence.

The annotation settings written by ``syntax-nmt-annotate`` beside each split
(``{prefix}.annotation.json``) must agree across splits; they are copied to
``{destdir}/annotation.json`` (for inference on raw text). Splits without settings
(text annotated by an older version, or not by syntax-nmt-annotate) are binarized with a
warning, unless other splits have them (an error: the splits may differ).

Nothing is half written: the text, the streams and ``--destdir`` are checked first (a file
this run would write that is already there with other content is refused; so is a
``--dataset-impl`` other than ``mmap``), everything is built in the staging directory
``.{destdir}.binarize`` beside ``--destdir`` and moved into it at the end; an error removes it.
A run killed while binarizing (or stopped with Ctrl-C) leaves it, with a record of the parts it finished (the
text through fairseq-preprocess, then each stream); the next run with the same options and input files (by path,
size and modification time) resumes after them, other options or inputs start it over. A live run holding it
(its process id on this host) is refused. New splits may join a directory binarized
before when they use its own dictionaries (``--srcdict``/``--tgtdict``/``--streamdict-dir``).
"""

import filecmp
import logging
import os
import shutil
import time
from argparse import Namespace
from typing import List, Optional

import numpy as np
import torch
from tqdm import tqdm

from syntax_nmt import io_guard
from syntax_nmt.constants import DATA_SETTINGS_FILE
from syntax_nmt.utils import atomic_write_json, numbered_lines, process_alive
from syntax_nmt.data.streams import (
    HEAD_STREAM,
    STREAMS,
    TARGET_PREFIX,
    parse_stream_list,
    parse_target_streams,
    stream_data_prefix,
    stream_dict_path,
    target_stream,
)

from syntax_nmt.annotation_settings import AnnotationSettings, check_compatible, settings_path
from syntax_nmt.data.heads import StreamMismatchError, cycle_token, parse_heads  # noqa: F401  (their home until now)

logger = logging.getLogger("syntax_nmt.binarize")

EPILOG = f"""example:
  syntax-nmt-binarize --source-lang en --target-lang de \\
      --trainpref data/train --validpref data/valid --testpref data/test \\
      --destdir data-bin --joined-dictionary --workers 8

reads data/train.en, data/train.de and the streams data/train.{{{','.join(STREAMS)}}}
written by syntax-nmt-annotate; train with
  fairseq-train data-bin --user-dir $(python -c 'import syntax_nmt,os;print(os.path.dirname(syntax_nmt.__file__))') \\
      --task syntax_translation --arch syntax_transformer_wmt_en_de ...
"""


def get_parser():
    from fairseq import options

    parser = options.get_preprocessing_parser()
    parser.description = __doc__.splitlines()[0]
    parser.epilog = EPILOG
    group = parser.add_argument_group("syntax-nmt streams")
    io_guard.no_path(group.add_argument(
        "--streams",
        default="auto",
        help=f"comma-separated streams to binarize ({','.join(STREAMS)}); "
        "'auto' (default): every {trainpref}.{stream} file that exists",
    ), "stream names")
    for dest in ("trainpref", "validpref", "testpref"):
        io_guard.reads(io_guard.action_of(parser, dest), "prefix", paths=_split_files)
    for dest in ("srcdict", "tgtdict"):
        io_guard.reads(io_guard.action_of(parser, dest))
    io_guard.no_path(io_guard.action_of(parser, "user_dir"), "a package fairseq imports while it builds this parser")
    io_guard.writes(io_guard.action_of(parser, "destdir"), "dir", paths=_written)
    io_guard.reads(io_guard.action_of(parser, "alignfile"))
    io_guard.no_path(io_guard.action_of(parser, "align_suffix"), "a suffix of the prefixes, read with them")
    for dest in ("log_file", "aim_repo", "tensorboard_logdir", "wandb_project", "azureml_logging",
                 "quantization_config_path", "plasma_path"):
        if any(a.dest == dest for a in parser._actions):  # fairseq-train's, which fairseq-preprocess ignores
            io_guard.no_path(io_guard.action_of(parser, dest), "fairseq's, unused by fairseq-preprocess")
    io_guard.reads(group.add_argument(
        "--streamdict-dir",
        default=None,
        help="reuse dict.{stream}.txt from this directory (default: the directory of --srcdict if given, "
        "else build the dictionaries from the training streams)",
    ), "dir", optional=True,  # a missing dictionary: main() names the stream
        paths=lambda d, a: [stream_dict_path(d, s) for s in resolve_streams(a) if s != HEAD_STREAM])
    io_guard.no_path(group.add_argument(
        "--target-streams",
        default="",
        help="comma-separated tag streams of the target to binarize (pos,case,subword,dep; default: none), for "
        "--target-factors: {prefix}.tgt.{stream}, written by syntax-nmt-annotate run on the target text with "
        "--output-prefix {prefix}.tgt (its subwords, {prefix}.tgt.{target-lang}, must equal {prefix}.{target-lang} "
        "line for line); stored as {split}.{src}-{tgt}.tgt.{stream} with dict.tgt.{stream}.txt",
    ), "stream names")
    return parser


def _split_files(value: str, args) -> List[str]:
    """The files a --trainpref/--validpref/--testpref (comma-separated) reads: every ``PREFIX.*``."""
    out = []
    for prefix in value.split(","):
        out += io_guard.files_starting(prefix + ".") or [f"{prefix}.{args.source_lang}"]
    return out


def _written(dest: str, args) -> List[str]:
    """The files of --destdir a run may write anew: the splits' data of text and streams, the log, the settings (a
    dictionary already there is never replaced by another content: :func:`check_destination`)."""
    src, tgt = args.source_lang, None if args.only_source else args.target_lang
    pair = f"{src}-{tgt}" if tgt is not None else src
    out = [os.path.join(dest, "preprocess.log"), os.path.join(dest, DATA_SETTINGS_FILE)]
    for _, split in _prefixes(args):
        for name in [x for x in (src, tgt) if x is not None] + list(STREAMS) + [target_stream(s) for s in STREAMS]:
            out += [os.path.join(dest, f"{split}.{pair}.{name}.{ext}") for ext in ("bin", "idx")]
    return out


def _prefixes(args) -> List[tuple]:
    """[(input_prefix, output_split)] as fairseq-preprocess names them."""
    out = []
    if args.trainpref:
        out.append((args.trainpref, "train"))
    for pref_arg, name in ((args.validpref, "valid"), (args.testpref, "test")):
        if pref_arg:
            for k, pref in enumerate(pref_arg.split(",")):
                out.append((pref, f"{name}{k}" if k > 0 else name))
    return out


def resolve_streams(args) -> List[str]:
    if args.streams != "auto":
        return parse_stream_list(args.streams)
    first = args.trainpref or (args.validpref or args.testpref or "").split(",")[0]
    return [s for s in STREAMS if os.path.exists(f"{first}.{s}")]


def binarize_heads(input_file: str, output_prefix: str, impl: str = "mmap") -> int:
    """Write one head-offset line per sentence as an indexed dataset; returns the sentence count.

    Streams the file (one line in memory): stored as int16, and written again as int32 from the start only if an
    offset does not fit int16 (a sentence of more than 32,767 tokens). It collected every line's array in a list
    before, about 150 bytes a sentence: most of a GB for WMT14's 4.5 M sentences.
    """
    from fairseq.data import indexed_dataset

    if impl != "mmap":
        raise ValueError(f"heads are only written with --dataset-impl mmap, not {impl!r}")
    for dtype in (np.int16, np.int32):
        limit = np.iinfo(dtype).max
        builder = indexed_dataset.MMapIndexedDatasetBuilder(output_prefix + ".bin", dtype=dtype)
        n, fits = 0, True
        with open(input_file, encoding="utf-8") as f:
            for lineno, line in enumerate(tqdm(f, desc=f"heads {os.path.basename(input_file)}", unit=" lines",
                                               disable=None, leave=False), 1):
                row = parse_heads(line, input_file, lineno)
                if len(row) and int(np.abs(row).max()) > limit:
                    fits = False
                    break
                builder.add_item(torch.from_numpy(row.astype(dtype)))
                n += 1
        if fits:
            builder.finalize(output_prefix + ".idx")
            return n
        builder._data_file.close()  # written again, wider
    raise AssertionError("unreachable: a head offset is below the sentence length, which fits int32")


def check_stream_sizes(data_path: str, split: str, src: str, tgt: str, streams: List[str], impl: str,
                       text_prefix: Optional[str] = None, side: str = "source") -> None:
    """Raise :class:`StreamMismatchError` unless every stream has the per-sentence lengths of the source (or, with
    ``side="target"``, of the target)."""
    from fairseq.data import indexed_dataset

    lang = src if side == "source" else tgt
    src_ds = indexed_dataset.make_dataset(os.path.join(data_path, f"{split}.{src}-{tgt}.{lang}"), impl=impl)
    for stream in streams:
        ds = indexed_dataset.make_dataset(stream_data_prefix(data_path, split, src, tgt, stream), impl=impl)
        where = f"{text_prefix}.{stream}" if text_prefix else f"split {split!r}"
        if ds is None:
            raise StreamMismatchError(f"stream {stream!r} of split {split!r} is missing in {data_path}")
        if len(ds) != len(src_ds):
            raise StreamMismatchError(
                f"{where}: stream {stream!r} of split {split!r} has {len(ds)} lines, the {side} has {len(src_ds)}"
            )
        bad = np.nonzero(np.asarray(ds.sizes) != np.asarray(src_ds.sizes))[0]
        if len(bad):
            i = int(bad[0])
            raise StreamMismatchError(
                f"{where}:{i + 1}: stream {stream!r} of split {split!r} has {ds.sizes[i] - 1} tokens, "
                f"the {side} line has {src_ds.sizes[i] - 1} ({len(bad)} mismatching lines in all)"
            )


def annotation_settings(splits: List[tuple]) -> Optional[AnnotationSettings]:
    """The annotation settings shared by every split, or None if no split has any.

    Raises:
        ValueError: if only some splits have a settings file, or two of them differ
            (naming the setting and both files).
    """
    found, missing = {}, []
    for prefix, _ in splits:
        path = settings_path(prefix)
        if os.path.exists(path):
            found[path] = AnnotationSettings.read(path)
        else:
            missing.append(path)
    if not found:
        logger.warning("no annotation settings (%s) beside the text: inference on raw text will not know how the "
                       "data was annotated", settings_path(splits[0][0] if splits else "PREFIX"))
        return None
    first = next(iter(found))
    if missing:
        raise ValueError(f"{missing[0]} does not exist but {first} does: annotate every split with the same "
                         f"syntax-nmt-annotate settings")
    for path, settings in found.items():
        check_compatible(found[first], settings, first, path)
    return found[first]


def check_text(splits: List[tuple], src: str, tgt: Optional[str], streams: List[str]) -> None:
    """Check the text files before anything is written: the source (and target) files exist and
    are not empty, and every stream line has as many fields as its source line (heads also
    point inside their sentence).

    Raises:
        StreamMismatchError: naming the file and line.
        FileNotFoundError: naming a missing file.
    """
    for prefix, split in splits:
        for lang in (src, tgt):
            if lang is None:
                continue
            path = f"{prefix}.{lang}"
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path} (split {split!r}) does not exist")
            if os.path.getsize(path) == 0:
                raise StreamMismatchError(f"{path} (split {split!r}) is empty: fairseq cannot binarize an empty file")
        if not streams:
            continue
        src_path = f"{prefix}.{src}"
        files = {s: open(f"{prefix}.{s}", encoding="utf-8") for s in streams}
        try:
            with open(src_path, encoding="utf-8") as fsrc:
                lineno = 0
                for lineno, line in enumerate(fsrc, 1):
                    n = len(line.split())
                    for s, f in files.items():
                        other = f.readline()
                        if not other:
                            raise StreamMismatchError(f"{prefix}.{s} has {lineno - 1} lines, {src_path} has more")
                        m = len(other.split())
                        if m != n:
                            raise StreamMismatchError(f"{prefix}.{s}:{lineno}: {m} fields, but the source line "
                                                      f"{src_path}:{lineno} has {n} tokens")
                        if s == HEAD_STREAM:
                            parse_heads(other, f"{prefix}.{s}", lineno)
            for s, f in files.items():
                if f.readline():
                    raise StreamMismatchError(f"{prefix}.{s} has more lines than {src_path} ({lineno})")
        except UnicodeDecodeError as e:
            raise StreamMismatchError(f"{prefix}: invalid UTF-8 in a text file of split {split!r} ({e.reason})") from None
        finally:
            for f in files.values():
                f.close()


def check_target_streams(splits: List[tuple], tgt: str, streams: List[str]) -> None:
    """Check the target streams before anything is written: the target annotation's subwords
    ``{prefix}.tgt.{tgt}`` are the target ``{prefix}.{tgt}`` line for line, and every stream line has as many
    fields as the target line.

    Raises:
        StreamMismatchError: naming the file and line.
        FileNotFoundError: naming a missing file.
    """
    for prefix, split in splits:
        text = f"{prefix}.{tgt}"
        names = [f"{prefix}.{target_stream(tgt)}"] + [f"{prefix}.{target_stream(s)}" for s in streams]
        for path in names:
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path} (target streams of split {split!r}) does not exist: annotate the "
                                        f"target with syntax-nmt-annotate --output-prefix {prefix}.{TARGET_PREFIX}")
        files = [open(path, encoding="utf-8") for path in names]
        try:
            with open(text, encoding="utf-8") as ftext:
                lineno = 0
                for lineno, line in enumerate(ftext, 1):
                    tokens = line.split()
                    for path, f in zip(names, files):
                        other = f.readline()
                        if not other:
                            raise StreamMismatchError(f"{path} has {lineno - 1} lines, {text} has more")
                        if path == names[0]:
                            if other.split() != tokens:
                                raise StreamMismatchError(
                                    f"{path}:{lineno}: the target annotation's subwords differ from {text}:{lineno} "
                                    f"(annotate the same target text with the same subword model and settings)")
                        elif len(other.split()) != len(tokens):
                            raise StreamMismatchError(f"{path}:{lineno}: {len(other.split())} fields, but the target "
                                                      f"line {text}:{lineno} has {len(tokens)} tokens")
            for path, f in zip(names, files):
                if f.readline():
                    raise StreamMismatchError(f"{path} has more lines than {text} ({lineno})")
        except UnicodeDecodeError as e:
            raise StreamMismatchError(f"{prefix}: invalid UTF-8 in a target stream of split {split!r} "
                                      f"({e.reason})") from None
        finally:
            for f in files:
                f.close()


def _same_file_content(a: Optional[str], b: str) -> bool:
    return bool(a) and os.path.isfile(a) and os.path.isfile(b) and filecmp.cmp(a, b, shallow=False)


def _settings_agree(existing_path: str, settings: Optional[AnnotationSettings]) -> bool:
    """Whether the settings file already at ``existing_path`` agrees with this run's ``settings``."""
    if settings is None:
        return False
    try:
        check_compatible(AnnotationSettings.read(existing_path), settings, existing_path, "this run")
    except ValueError:
        return False
    return True


def check_destination(args, splits: List[tuple], streams: List[str], settings: Optional[AnnotationSettings]) -> None:
    """Refuse, before anything is written, a ``--dataset-impl`` the streams cannot be stored with
    and a ``--destdir`` that already holds a file this run would write (fairseq-preprocess would
    stop on the dictionary with the bare path as its message, or overwrite splits).

    A file already there with the content this run writes is no conflict: a dictionary given with
    ``--srcdict``/``--tgtdict``/``--streamdict-dir`` that is byte-identical to it, and agreeing
    annotation settings (so new splits can join a data directory with its own dictionaries).

    Raises:
        ValueError: an unsupported ``--dataset-impl``.
        FileExistsError: naming the first file of ``--destdir`` in the way.
    """
    if streams and args.dataset_impl != "mmap":
        raise ValueError(f"--dataset-impl {args.dataset_impl}: syntax-nmt-binarize stores the source streams "
                         f"({','.join(streams)}) only as mmap datasets; use --dataset-impl mmap (the default)")
    dest = args.destdir
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise FileExistsError(f"--destdir {dest} exists and is not a directory")
    if not os.path.isdir(dest):
        return
    src, tgt = args.source_lang, None if args.only_source else args.target_lang
    given = {src: args.srcdict or (args.tgtdict if args.joined_dictionary else None),
             tgt: args.tgtdict or (args.srcdict if args.joined_dictionary else None)}
    streamdict_dir = args.streamdict_dir or (os.path.dirname(args.srcdict) if args.srcdict else None)
    wanted = []  # (file name, the file whose content it will have, if known)
    for lang in (src, tgt):
        if lang is not None:
            wanted.append((f"dict.{lang}.txt", given[lang]))
    for s in streams:
        if s != HEAD_STREAM:
            wanted.append((os.path.basename(stream_dict_path(dest, s)),
                           stream_dict_path(streamdict_dir, s) if streamdict_dir else None))
    pair = f"{src}-{tgt}" if tgt is not None else src
    for _, split in splits:
        for name in [x for x in (src, tgt) if x is not None] + list(streams):
            for ext in ("bin", "idx"):
                wanted.append((f"{split}.{pair}.{name}.{ext}", None))
    for name, content in wanted:
        path = os.path.join(dest, name)
        if os.path.exists(path) and not _same_file_content(content, path):
            raise FileExistsError(f"--destdir {dest} already holds {name} (binarized before?): remove it or choose "
                                  f"another --destdir (nothing was written)")
    path = os.path.join(dest, DATA_SETTINGS_FILE)
    if settings is not None and os.path.exists(path) and not _settings_agree(path, settings):
        raise FileExistsError(f"--destdir {dest} already holds {DATA_SETTINGS_FILE} from other annotation settings: "
                              f"remove it or choose another --destdir (nothing was written)")


def publish(stage: str, dest: str, settings: Optional[AnnotationSettings]) -> None:
    """Move everything built in ``stage`` into ``dest`` (created if need be), refusing to replace
    a file of other content; fairseq's ``preprocess.log`` is appended to."""
    names = sorted(n for n in os.listdir(stage) if n not in (_PROGRESS, _LOCK))
    for name in names:
        path = os.path.join(dest, name)
        if name in ("preprocess.log", DATA_SETTINGS_FILE) or not os.path.exists(path):
            continue
        if not _same_file_content(os.path.join(stage, name), path):
            raise FileExistsError(f"--destdir {dest} gained {name} while binarizing: remove it or choose another "
                                  f"--destdir (nothing was written)")
    os.makedirs(dest, exist_ok=True)
    for name in names:
        staged, path = os.path.join(stage, name), os.path.join(dest, name)
        if name == "preprocess.log" and os.path.exists(path):
            with open(staged, "rb") as f, open(path, "ab") as out:
                shutil.copyfileobj(f, out)
        elif name == DATA_SETTINGS_FILE and os.path.exists(path) and _settings_agree(path, settings):
            continue  # the same settings, maybe with the subword model at another path: keep the first
        elif os.path.exists(path) and _same_file_content(staged, path):
            continue
        else:
            os.replace(staged, path)


def _close_logs_under(directory: str) -> None:
    """Detach the file handlers fairseq-preprocess left on its logger for files under ``directory``."""
    log = logging.getLogger("fairseq_cli.preprocess")
    for h in list(log.handlers):
        if isinstance(h, logging.FileHandler) and os.path.abspath(h.baseFilename).startswith(directory + os.sep):
            log.removeHandler(h)
            h.close()


# -- the resumable staging directory ----------------------------------------------------------------------------
_PROGRESS, _LOCK = ".progress.json", ".lock"


def _file_id(path: Optional[str]) -> Optional[List]:
    if not path or not os.path.exists(path):
        return None
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def resume_key(args, splits: List[tuple], streams: List[str], target_streams: List[str],
               streamdict_dir: Optional[str]) -> str:
    """What the staged parts depend on: every option but ``--workers`` and ``--destdir``, and every input file by
    path, size and modification time."""
    import hashlib
    import json

    options = {k: v for k, v in sorted(vars(args).items()) if k not in ("workers", "destdir")}
    files = []
    langs = [args.source_lang] + ([] if args.only_source else [args.target_lang])
    for prefix, _ in splits:
        files += [f"{prefix}.{x}" for x in langs + list(streams)]
        files += [f"{prefix}.{target_stream(x)}" for x in target_streams]
    files += [args.srcdict, args.tgtdict] + [stream_dict_path(streamdict_dir, x) for x in streams if streamdict_dir]
    blob = json.dumps([options, [_file_id(f) for f in files]], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def stage_path(dest: str) -> str:
    """The staging directory of ``dest``: beside it, hidden, one per destination."""
    return os.path.join(os.path.dirname(os.path.abspath(dest)), f".{os.path.basename(os.path.abspath(dest))}.binarize")


def open_stage(dest: str, key: str) -> str:
    """Create the staging directory of ``dest``, or take over the one a killed run left there: its finished parts
    (the text, each stream) are kept if it was made from the same options and input files (``key``), else it is
    emptied. Refused while a live process on this host holds it.

    Raises:
        FileExistsError: another run is binarizing into ``dest``.
    """
    import json
    import socket

    stage = stage_path(dest)
    os.makedirs(stage, exist_ok=True)
    lock = os.path.join(stage, _LOCK)
    me = f"{socket.gethostname()} {os.getpid()}"
    try:
        with open(lock, encoding="utf-8") as f:
            host, pid = f.read().split()
        alive = host != socket.gethostname() or process_alive(int(pid))
    except (FileNotFoundError, ValueError):
        alive = False
    if alive:
        raise FileExistsError(f"another syntax-nmt-binarize (pid {pid} on {host}) is binarizing into {dest} "
                              f"({stage}); if it is dead, delete {lock}")
    progress = os.path.join(stage, _PROGRESS)
    try:
        with open(progress, encoding="utf-8") as f:
            done = json.load(f)
    except (FileNotFoundError, ValueError):
        done = {}
    if done.get("key") != key or "publish" in done.get("done", ()):
        if os.listdir(stage):
            logger.info("%s holds parts made from other inputs or options: starting over", stage)
        shutil.rmtree(stage)
        os.makedirs(stage)
        done = {"key": key, "done": []}
    elif done.get("done"):
        logger.info("resuming in %s: %s done by an interrupted run", stage, ", ".join(done["done"]))
    for name in os.listdir(stage):  # a killed fairseq-preprocess may leave its log half written
        if name == "preprocess.log" and "text" not in done["done"]:
            os.remove(os.path.join(stage, name))
    with open(lock, "w", encoding="utf-8") as f:
        f.write(me)
    with open(progress, "w", encoding="utf-8") as f:
        json.dump(done, f)
    return stage


def release_stage(stage: str) -> None:
    try:
        os.remove(os.path.join(stage, _LOCK))
    except FileNotFoundError:
        pass


def part_done(stage: str, part: str) -> bool:
    import json

    with open(os.path.join(stage, _PROGRESS), encoding="utf-8") as f:
        return part in json.load(f)["done"]


def mark_done(stage: str, part: str) -> None:
    """Record a finished part (atomically: a kill leaves the record before or after)."""
    import json

    path = os.path.join(stage, _PROGRESS)
    with open(path, encoding="utf-8") as f:
        done = json.load(f)
    done["done"].append(part)
    atomic_write_json(path, done)



def main(args: Namespace) -> None:
    """Check everything that can be checked, binarize into a temporary directory beside
    ``--destdir`` and move the files into place at the end: a failure leaves nothing behind."""
    start = time.time()
    streams = resolve_streams(args)
    target_streams = parse_target_streams(args.target_streams)
    if target_streams and args.only_source:
        raise ValueError("--target-streams needs the target: drop --only-source")
    splits = _prefixes(args)
    for prefix, split in splits:  # fail before any work if a stream file is missing
        for s in streams:
            if not os.path.exists(f"{prefix}.{s}"):
                raise FileNotFoundError(f"stream file {prefix}.{s} for split {split!r} not found")
    streamdict_dir = args.streamdict_dir or (os.path.dirname(args.srcdict) if args.srcdict else None)
    if streamdict_dir:
        for s in streams:
            if s != HEAD_STREAM and not os.path.exists(stream_dict_path(streamdict_dir, s)):
                raise FileNotFoundError(f"--streamdict-dir {streamdict_dir} has no dictionary for stream {s!r} "
                                        f"({stream_dict_path(streamdict_dir, s)})")
    for path in [args.srcdict, args.tgtdict] + [stream_dict_path(streamdict_dir, s) for s in streams
                                                if streamdict_dir and s != HEAD_STREAM]:
        if path:  # fairseq's Dictionary.load raises a bare Exception on invalid UTF-8
            for _ in numbered_lines(path):
                pass
    settings = annotation_settings(splits)
    check_destination(args, splits, streams + [target_stream(s) for s in target_streams], settings)
    check_text(splits, args.source_lang, None if args.only_source else args.target_lang, streams)
    if target_streams:
        check_target_streams(splits, args.target_lang, target_streams)

    dest = args.destdir
    stage = open_stage(dest, resume_key(args, splits, streams, target_streams, streamdict_dir))
    keep = False
    try:
        _binarize(Namespace(**{**vars(args), "destdir": stage}), splits, streams, streamdict_dir, settings,
                  target_streams)
        mark_done(stage, "publish")  # a run killed while moving the files into --destdir: the next starts over
        publish(stage, dest, settings)
    except KeyboardInterrupt:  # like a kill: the finished parts stay for the rerun
        keep = True
        raise
    finally:
        _close_logs_under(stage)
        if keep:
            release_stage(stage)
        else:
            shutil.rmtree(stage, ignore_errors=True)
    logger.info("binarized streams %s for splits %s in %.1fs -> %s",
                ",".join(streams + [target_stream(s) for s in target_streams]) or "(none)",
                ",".join(s for _, s in splits), time.time() - start, dest)


def _binarize(args: Namespace, splits: List[tuple], streams: List[str], streamdict_dir: Optional[str],
              settings: Optional[AnnotationSettings], target_streams: List[str] = ()) -> None:
    """Binarize text and streams into ``args.destdir`` (checked beforehand by :func:`main`)."""
    from fairseq.data import Dictionary
    from fairseq_cli import preprocess

    stage = args.destdir
    if not part_done(stage, "text"):
        preprocess.main(args)  # subword text: fairseq's own preprocessing
        mark_done(stage, "text")

    for stream in streams + [target_stream(s) for s in target_streams]:
        if part_done(stage, stream):
            continue
        if stream == HEAD_STREAM:
            for prefix, split in splits:
                binarize_heads(f"{prefix}.{stream}",
                               stream_data_prefix(args.destdir, split, args.source_lang, args.target_lang, stream),
                               args.dataset_impl)
            mark_done(stage, stream)
            continue
        if streamdict_dir:
            vocab = Dictionary.load(stream_dict_path(streamdict_dir, stream))
        else:
            if not args.trainpref:
                raise ValueError(f"no training data to build dict.{stream}.txt from: pass --trainpref or --streamdict-dir")
            vocab = Dictionary()
            Dictionary.add_file_to_dictionary(f"{args.trainpref}.{stream}", vocab, tokenize=str.split,
                                              num_workers=args.workers)
            vocab.finalize(threshold=0, nwords=-1, padding_factor=1)
        vocab.save(stream_dict_path(args.destdir, stream))
        preprocess._make_all(stream, vocab, args)
        mark_done(stage, stream)

    for prefix, split in splits:
        check_stream_sizes(args.destdir, split, args.source_lang, args.target_lang, streams, args.dataset_impl,
                           text_prefix=prefix)
        check_stream_sizes(args.destdir, split, args.source_lang, args.target_lang,
                           [target_stream(s) for s in target_streams], args.dataset_impl, text_prefix=prefix,
                           side="target")
    if settings is not None:
        settings.write(os.path.join(args.destdir, DATA_SETTINGS_FILE))


def cli_main(argv=None) -> None:
    from syntax_nmt.utils import setup_logging

    setup_logging(logging.INFO)
    from syntax_nmt.cli_errors import run

    args = io_guard.parse_args(get_parser(), argv, "syntax-nmt-binarize")
    run("syntax-nmt-binarize", main, args)


if __name__ == "__main__":
    cli_main()
