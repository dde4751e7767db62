"""The one guard of every command: an output is never an input.

Each command marks, where it declares its options, which ones read and which write: :func:`reads`, :func:`writes`
and :func:`updates` put a :class:`Role` on the argparse action (``action.io``). Right after parsing, the command
calls :func:`guard` with its parser and the parsed arguments (once; a subcommand's options are found through the
chosen subparser), before it reads, writes or deletes anything. The guard

* expands every input to the files it reads: a file, a folder (every file under it, or the files the command names),
  a prefix (every file whose path starts with it, or the files the command names), a list of them;
* refuses a missing input (and a folder given for a file, a file for a folder) and a ``.gz`` input that is not
  whole gzip where the command reads gzip;
* expands every output to the files it would write: a file, a prefix or a folder (the files the command names, or
  everything under the folder or starting with the prefix);
* refuses an output that is one of the inputs under any spelling: ``..``, a symbolic link (either way), a hard link.

A refusal is one line ``PROG: error: ...`` naming the option (:func:`syntax_nmt.cli_errors.fail`), exit status 2,
nothing read, written or deleted. ``tests/unit/test_io_guard_walk.py`` walks every command's parser: a command that
marks its options but forgets the call, or an option that looks like a path but has no role, fails it.
"""

import argparse
import gzip
import os
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

#: the attribute of an argparse action that holds its :class:`Role`
ATTR = "io"
#: what a role reads or writes
KINDS = ("file", "dir", "prefix")

#: ``fn(value, args) -> paths``: the paths an option's value stands for (``value`` as argparse stored it: a string, a
#: list for ``nargs``/``append``)
Expand = Callable[[object, argparse.Namespace], Iterable[str]]


class GuardError(ValueError):
    """An input that is missing or unreadable, or an output that is an input; the message names the option."""


@dataclass(frozen=True)
class Role:
    """What an option's value is to the command.

    Attributes:
        way: ``in`` (read), ``out`` (written), ``inout`` (a working folder read and written in place: checked for
            nothing but being no file), ``none`` (looks like a path but is none: a name, a spec; say why).
        kind: ``file``, ``dir`` or ``prefix``.
        gz: an input ending in ``.gz`` is read as gzip (checked whole).
        name_or_path: an input that may be a name instead of a path (a spaCy pipeline): checked only where it exists.
        optional: an input the command reads only where it exists (a missing one is not refused).
        paths: the paths the value stands for (default: the value, each item of a list); of a folder or a prefix,
            the files the command reads or writes there (default: all under the folder, all starting with the prefix).
        why: of ``none``, why it is not checked.
    """
    way: str
    kind: str = "file"
    gz: bool = False
    name_or_path: bool = False
    optional: bool = False
    paths: Optional[Expand] = None
    why: str = ""
    #: of an output: its files are replaced by a rename (written beside, then moved into place), never written
    #: through, so a hard link of an input among them is not written (its path, or a symbolic link, still is)
    replaces: bool = False

    def __post_init__(self):
        if self.way not in ("in", "out", "inout", "none") or self.kind not in KINDS:
            raise ValueError(f"no such role: {self.way} {self.kind}")
        if self.way == "none" and not self.why:
            raise ValueError("an option that is no path says why")


def _mark(action: argparse.Action, role: Role) -> argparse.Action:
    setattr(action, ATTR, role)
    return action


def reads(action: argparse.Action, kind: str = "file", *, gz: bool = False, name_or_path: bool = False,
          optional: bool = False, paths: Optional[Expand] = None) -> argparse.Action:
    """Mark ``action`` (what ``add_argument`` returned) as an input; returns it."""
    return _mark(action, Role("in", kind, gz, name_or_path, optional, paths))


def writes(action: argparse.Action, kind: str = "file", *, paths: Optional[Expand] = None,
           replaces: bool = False) -> argparse.Action:
    """Mark ``action`` as an output: a file, a prefix or a folder; ``paths``: the files written (default: a prefix
    or a folder writes every file starting with or under it); ``replaces``: files replaced by a rename, so a hard
    link of an input there is no conflict (:attr:`Role.replaces`)."""
    return _mark(action, Role("out", kind, paths=paths, replaces=replaces))


def updates(action: argparse.Action, kind: str = "dir") -> argparse.Action:
    """Mark ``action`` as a working folder the command reads and writes in place (resumable steps)."""
    return _mark(action, Role("inout", kind))


def no_path(action: argparse.Action, why: str) -> argparse.Action:
    """Mark ``action``, whose name or help looks like a path's, as none the guard checks, saying why."""
    return _mark(action, Role("none", why=why))


def action_of(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    """The action of ``parser`` storing ``dest`` (to mark the options of a parser made elsewhere: fairseq's)."""
    for action in parser._actions:
        if action.dest == dest:
            return action
    raise KeyError(f"{parser.prog} has no option storing {dest!r}")


def role_of(action: argparse.Action) -> Optional[Role]:
    return getattr(action, ATTR, None)


def chosen_actions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> List[argparse.Action]:
    """The actions of ``parser`` that parsed ``args``: its own, and those of the subcommand chosen (recursively)."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None) if action.dest != argparse.SUPPRESS else None
            if name is None:
                raise ValueError(f"{parser.prog}: a subcommand parser needs a dest for the guard to find it")
            out += chosen_actions(action.choices[name], args)
        else:
            out.append(action)
    return out


def label(action: argparse.Action) -> str:
    """How a message names the option: its longest option string, or a positional's name."""
    return max(action.option_strings, key=len) if action.option_strings else action.metavar or action.dest


def _items(value) -> List[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v) != ""]
    return [str(value)] if str(value) != "" else []


def _files_under(folder: str) -> List[str]:
    out = []
    for d, dirs, files in os.walk(folder):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out


def files_starting(prefix: str) -> List[str]:
    """The existing files whose path starts with ``prefix`` (and every file under a folder that does)."""
    folder, base = os.path.split(prefix)
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.startswith(base):
            continue
        path = os.path.join(folder, name)
        out += _files_under(path) if os.path.isdir(path) else [path]
    return out


def _check_gzip(option: str, path: str) -> None:
    try:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as e:
        raise GuardError(f"{option} {path}: not a whole gzip file ({e})") from None


def inputs_of(action: argparse.Action, args: argparse.Namespace) -> List[str]:
    """The existing files an input option reads; refuses a missing one (:class:`GuardError`)."""
    role, value, option = role_of(action), getattr(args, action.dest, None), label(action)
    values = _items(value)
    if role.name_or_path:
        values = [v for v in values if os.path.exists(v)]
    if not values:
        return []
    if role.kind == "dir":
        for folder in values:
            if os.path.isfile(folder):
                raise GuardError(f"{option} {folder} is a file, not a folder")
            if not os.path.isdir(folder) and not role.optional:
                raise GuardError(f"{option}: no such folder {folder}")
    out: List[str] = []
    if role.paths is not None:  # the files the command reads
        for path in _items(list(role.paths(value, args))):
            if os.path.exists(path):
                out.append(path)
            elif not role.optional:
                raise GuardError(f"{option}: no such file {path}")
    elif role.kind == "file":
        for path in values:
            if os.path.isdir(path):
                raise GuardError(f"{option} {path} is a folder, not a file")
            if os.path.exists(path):
                out.append(path)
            elif not role.optional:
                raise GuardError(f"{option}: no such file {path}")
    elif role.kind == "dir":
        out = [f for folder in values for f in _files_under(folder)]
    else:  # a prefix: every file starting with it
        for prefix in values:
            found = files_starting(prefix)
            if not found and not role.optional:
                raise GuardError(f"{option}: no file {prefix}*")
            out += found
    if role.gz:
        for path in out:
            if path.endswith(".gz") and os.path.isfile(path):
                _check_gzip(option, path)
    return out


@dataclass(frozen=True)
class Written:
    """What one output writes: ``exact`` files, or every file ``under`` a folder, or every file ``starting`` with a
    prefix."""
    option: str
    value: str
    exact: Tuple[str, ...] = ()
    under: Optional[str] = None
    starting: Optional[str] = None
    #: the files are replaced by a rename: hard links are not followed (:attr:`Role.replaces`)
    replaces: bool = False


def outputs_of(action: argparse.Action, args: argparse.Namespace) -> List[Written]:
    """What an output option writes (:class:`Written`, one per value)."""
    role, value, option = role_of(action), getattr(args, action.dest, None), label(action)
    values = _items(value)
    if not values:
        return []
    if role.paths is not None or role.kind == "file":
        files = values if role.paths is None else _items(list(role.paths(value, args)))
        return [Written(option, " ".join(values), tuple(files), replaces=role.replaces)]
    if role.kind == "dir":
        return [Written(option, v, under=v, replaces=role.replaces) for v in values]
    return [Written(option, v, starting=v, replaces=role.replaces) for v in values]


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _inode(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def conflict(written: Written, inputs: Sequence[Tuple[str, str]]) -> Optional[str]:
    """The message refusing ``written`` if it writes one of ``inputs`` (``(option, path)`` pairs), else None."""
    if not inputs:
        return None
    real_inputs = [(_real(path), path) for _, path in inputs]
    inodes = {}
    for _, path in inputs:
        node = _inode(path)
        if node is not None:
            inodes.setdefault(node, path)

    def found(out: str, inp: str) -> str:
        return (f"{written.option} {written.value} is the input {inp}" if out == written.value else
                f"{written.option} {written.value} writes {out}, which is the input {inp}")

    for out in written.exact:
        real = _real(out)
        for r, inp in real_inputs:
            if r == real:
                return found(out, inp)
        node = None if written.replaces else _inode(out)
        if node is not None and node in inodes:
            return found(out, inodes[node])
    if written.under is not None:
        root = _real(written.under)
        for r, inp in real_inputs:
            if r == root or r.startswith(root.rstrip(os.sep) + os.sep):
                return f"{written.option} {written.value} would write the input {inp} (a file under it)"
        for path in _files_under(written.under) if os.path.isdir(written.under) and not written.replaces else []:
            node = _inode(path)
            if node in inodes:
                return f"{written.option} {written.value} would write {path}, which is the input {inodes[node]}"
    if written.starting is not None:
        start = _real(written.starting)
        for r, inp in real_inputs:
            if r.startswith(start):
                return f"{written.option} {written.value} would write the input {inp} (a file starting with it)"
        for path in ([] if written.replaces else files_starting(written.starting)):
            node = _inode(path)
            if node in inodes:
                return f"{written.option} {written.value} would write {path}, which is the input {inodes[node]}"
    return None


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Raise :class:`GuardError` on a missing input or an output that is an input (see the module's docstring)."""
    actions = [a for a in chosen_actions(parser, args) if role_of(a) is not None]
    inputs: List[Tuple[str, str]] = []
    for action in actions:
        if role_of(action).way == "in":
            inputs += [(label(action), path) for path in inputs_of(action, args)]
        elif role_of(action).way == "inout":
            for path in _items(getattr(args, action.dest, None)):
                if role_of(action).kind == "dir" and os.path.isfile(path):
                    raise GuardError(f"{label(action)} {path} is a file, not a folder")
    for action in actions:
        if role_of(action).way != "out":
            continue
        for written in outputs_of(action, args):
            message = conflict(written, inputs)
            if message:
                raise GuardError(message)


def guard(parser: argparse.ArgumentParser, args: argparse.Namespace, prog: Optional[str] = None) -> None:
    """:func:`check`, a refusal (or a value that names no paths) reported as one line ``PROG: error: ...``, exit
    status 2."""
    from syntax_nmt.cli_errors import USER_ERRORS, fail

    try:
        check(parser, args)
    except USER_ERRORS as e:  # a refusal, or a value an option's paths could not expand (a bad NAME=FILE spec)
        fail(prog or parser.prog, e)


def parse_args(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]] = None,
               prog: Optional[str] = None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, then :func:`guard`: the one call a command makes."""
    args = parser.parse_args(argv)
    guard(parser, args, prog)
    return args
