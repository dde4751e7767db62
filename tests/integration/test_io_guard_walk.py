"""Every command, by its parser (issue 56.2): an output can never be an input, and a missing, empty, not UTF-8 or
corrupt gzip input ends in one line, exit status 2, with nothing written or deleted.

The commands are found, not listed: the console scripts of ``setup.py``, every module of ``syntax_nmt`` with a
``__main__`` block (``python -m syntax_nmt...``) and every script of ``scripts/``. Each one's parser is caught while
it prints ``--help``; which options read and which write comes from the roles the parser's options carry
(:mod:`syntax_nmt.io_guard`). For every (sub)command the walk builds a command line from the parser alone, then
tries, in-process:

* each output made to write each input (the output moved onto the input's file, or the input onto a file the output
  writes): refused, the one line naming the output option and the input, nothing changed;
* each input missing: refused, the line naming the path;
* each input file empty, then invalid UTF-8: no traceback; a failure is one line and changes nothing;
* a corrupt ``.gz`` where the option reads gzip: refused, the line naming the file.

A new command, or a new option of an old one, is covered without a row here; an option whose name or help says it
is a file, a folder, a prefix or a path must carry a role (``test_every_path_option_has_a_role``).
"""

import argparse
import contextlib
import gzip
import io
import itertools
import os
import re
import runpy
import sys
import warnings
from typing import Dict, List, Optional, Tuple

import pytest

from syntax_nmt import io_guard

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD_UTF8 = b"The cat sat .\nA dog \xff runs .\n"
#: a command with a __main__ block but no parser of its own (it prints docs/cli.md)
NO_PARSER: set = set()  # every command has a parser the walk can catch (cli_docs writes -o through the guard)
#: "module:function" of a console script -> its name
CONSOLE: Dict[str, str] = {}


def commands() -> List[Tuple[str, str, str]]:
    """``(name, how, target)``: ``how`` is ``entry`` (a console script: ``module:function``), ``module`` (python -m)
    or ``script`` (a file of scripts/)."""
    out = []
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        for name, target in re.findall(r'"([\w-]+)\s*=\s*([\w.]+:\w+)"', f.read()):
            out.append((name, "entry", target))
    for d, _, files in os.walk(os.path.join(ROOT, "syntax_nmt")):
        for f in sorted(files):
            path = os.path.join(d, f)
            if not f.endswith(".py"):
                continue
            with open(path, encoding="utf-8") as fh:
                if 'if __name__ == "__main__":' not in fh.read():
                    continue
            module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
            module = module[: -len(".__main__")] if module.endswith(".__main__") else module
            out.append((f"python -m {module}", "module", module))
    for f in sorted(os.listdir(os.path.join(ROOT, "scripts"))):
        if f.endswith(".py"):
            out.append((f"scripts/{f}", "script", os.path.join(ROOT, "scripts", f)))
    CONSOLE.update({target: name for name, how, target in out if how == "entry"})
    order = {"entry": 0, "script": 1, "module": 2}  # a console script before its module's python -m
    return sorted(set(out), key=lambda c: (order[c[1]], c[0]))


def invoke(how: str, target: str, argv: List[str]) -> int:
    """Run a command in this process as its console script or ``python -m`` would; its exit status."""
    old = sys.argv
    sys.argv = [{"entry": lambda t: CONSOLE.get(t, t), "module": lambda t: t, "script": lambda t: t}[how](target),
                *argv]  # argv[0]: the console script's name (what a parser without a prog shows)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module was imported before
            if how == "entry":
                module, function = target.split(":")
                __import__(module)
                result = getattr(sys.modules[module], function)()
            elif how == "module":
                runpy.run_module(target, run_name="__main__", alter_sys=False)
                result = 0
            else:
                runpy.run_path(target, run_name="__main__")
                result = 0
    except SystemExit as e:
        result = e.code
    finally:
        sys.argv = old
    return 0 if result is None else result if isinstance(result, int) else 1


def parser_of(how: str, target: str) -> Optional[argparse.ArgumentParser]:
    """The parser that prints the command's ``--help`` (the last one parsing before the exit)."""
    seen = []
    original = argparse.ArgumentParser.parse_known_args

    def spy(self, args=None, namespace=None):
        if self.add_help and "--help" in (sys.argv[1:] if args is None else list(args)):
            seen.append(self)
        return original(self, args, namespace)

    argparse.ArgumentParser.parse_known_args = spy
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            invoke(how, target, ["--help"])
    finally:
        argparse.ArgumentParser.parse_known_args = original
    return seen[-1] if seen else None


_PARSERS: Dict[str, Optional[argparse.ArgumentParser]] = {}


def parsers() -> Dict[str, Tuple[str, str, argparse.ArgumentParser]]:
    """name -> (how, target, parser), one command per parser (the old paths' aliases run the same one)."""
    out, progs = {}, set()
    entries = {target.split(":")[0] for _, how, target in commands() if how == "entry"}
    for name, how, target in commands():
        if how == "module" and target in entries:
            continue
        if name not in _PARSERS:
            _PARSERS[name] = parser_of(how, target)
        parser = _PARSERS[name]
        if parser is None or parser.prog in progs:
            continue
        progs.add(parser.prog)
        out[name] = (how, target, parser)
    return out


def units(parser: argparse.ArgumentParser, path=()) -> List[Tuple[Tuple[str, ...], argparse.ArgumentParser,
                                                                   List[argparse.Action]]]:
    """``(subcommand names, parser, actions)`` of every runnable (sub)command: a subcommand's actions are its
    parents' and its own."""
    own = [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser, own)]
    return [(p, sp, own + acts) for name, sub in subs[0].choices.items()
            for p, sp, acts in units(sub, path + (name,))]


class Line:
    """A command line built from a parser: a value per action, rendered to argv."""

    def __init__(self, sub: Tuple[str, ...], values: Dict[argparse.Action, object]):
        self.sub, self.values = sub, dict(values)

    def argv(self) -> List[str]:
        out, positional = list(self.sub), []
        for action, value in self.values.items():
            items = value if isinstance(value, list) else [value]
            if not action.option_strings:
                positional += items
            elif isinstance(action, argparse._AppendAction):
                for item in items:
                    out += [action.option_strings[0], item]
            else:
                out += [action.option_strings[0], *items]
        return list(self.sub) + positional + out[len(self.sub):]


def _dummy(action: argparse.Action) -> str:
    if action.choices:
        return str(list(action.choices)[0])
    if action.type in (int, float):
        return "1"
    return "x"


def build(tmp: str, sub, actions, group_choice: Dict[int, argparse.Action]) -> Line:
    """A value for every required action and every action with a role (one member per mutually exclusive group):
    inputs are small text files (folders holding one), outputs fresh paths under ``tmp``."""
    values = {}
    for action in actions:
        role = io_guard.role_of(action)
        group = next((g for g in group_choice if action in g_members(g)), None)
        if group is not None and group_choice[group] is not action:
            continue
        if role is None or role.way == "none":
            if not action.required and (action.option_strings or action.nargs in ("?", "*")):
                continue
            if action.nargs == 0:
                values[action] = []
                continue
            values[action] = _dummy(action)
            continue
        name = os.path.join(tmp, f"{role.way}-{action.dest}")
        if role.way == "in" and role.name_or_path:
            values[action] = "no-such-pipeline"
        elif role.way == "in" and role.kind == "dir":
            values[action] = name
        elif role.way == "in" and role.kind == "prefix":
            values[action] = name
        elif role.way == "in":
            values[action] = name + ".txt"
        else:
            values[action] = name
        if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
            values[action] = [values[action]]
    return Line(sub, values)


_GROUPS: Dict[int, argparse._MutuallyExclusiveGroup] = {}


def g_members(key: int) -> List[argparse.Action]:
    return _GROUPS[key]._group_actions


def group_variants(parser: argparse.ArgumentParser, actions) -> List[Dict[int, argparse.Action]]:
    """One choice of a member per mutually exclusive group (a variant for each member with a role)."""
    groups = [g for g in parser._mutually_exclusive_groups if set(g._group_actions) & set(actions)]
    for g in groups:
        _GROUPS[id(g)] = g
    options = []
    for g in groups:
        members = [a for a in g._group_actions if io_guard.role_of(a) is not None] or g._group_actions[:1]
        options.append([(id(g), a) for a in members])
    return [dict(choice) for choice in itertools.product(*options)] or [{}]


def parse(parser_top: argparse.ArgumentParser, line: Line) -> argparse.Namespace:
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            return parser_top.parse_args(line.argv())
        except SystemExit:
            raise AssertionError(f"the walk built a command line its parser refuses: {line.argv()}: "
                                 f"{err.getvalue()}") from None


def materialize(parser_top, line: Line, tmp: str) -> argparse.Namespace:
    """Create every input the line names: files with two lines of text, a folder with one such file, the files a
    prefix or an option's ``paths`` names."""
    args = parse(parser_top, line)
    for action in line.values:
        role = io_guard.role_of(action)
        if role is None or role.way != "in" or role.name_or_path:
            continue
        value = getattr(args, action.dest)
        items = value if isinstance(value, list) else [value]
        if role.kind == "dir":
            for d in items:
                os.makedirs(d, exist_ok=True)
                write(os.path.join(d, "f.txt"))
        elif role.paths is None and role.kind == "prefix":
            for p in items:
                write(p + ".txt")
        elif role.paths is None:
            for p in items:
                write(p)
        if role.paths is not None:
            for p in role.paths(value, args):
                if not os.path.exists(p):
                    write(p)
    return args


def write(path: str, data: bytes = b"The cat sat .\nA dog runs .\n") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def snapshot(folder: str) -> Dict[str, bytes]:
    out = {}
    for d, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.join(d, name) + "/"] = b""
        for name in files:
            p = os.path.join(d, name)
            out[p] = os.readlink(p).encode() if os.path.islink(p) else open(p, "rb").read()
    return out


def errors(text: str) -> List[str]:
    """stderr without log lines and progress (what a user reads as the error)."""
    return [line for line in text.splitlines() if " | INFO | " not in line and " | WARNING | " not in line
            and not line.startswith(("warning:", "INFO:", "WARNING:")) and line.strip()]


def run_case(how, target, argv, tmp, capsys) -> Tuple[int, List[str], bool]:
    """Run one command line; (status, error lines, whether ``tmp`` is unchanged)."""
    before = snapshot(tmp)
    capsys.readouterr()
    code = invoke(how, target, argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err, f"{argv}: {err[-3000:]}"
    return code, errors(err), snapshot(tmp) == before


def _collide(parser_top, line, out_action, in_action, tmp) -> Optional[Tuple[Line, argparse.Namespace]]:
    """``line`` with ``out_action`` writing a file ``in_action`` reads, or None where no value does."""
    args = materialize(parser_top, line, tmp)
    out_role, in_role = io_guard.role_of(out_action), io_guard.role_of(in_action)
    read = io_guard.inputs_of(in_action, args)
    multi = out_action.nargs in ("+", "*") or isinstance(out_action, argparse._AppendAction)

    def writes_file(value, target):
        trial = argparse.Namespace(**{**vars(args), out_action.dest: [value] if multi else value})
        return io_guard.conflict(io_guard.outputs_of(out_action, trial)[0], [("", target)]) is not None

    for target in read:  # the output onto the input
        stem = target
        candidates = [target]
        while os.path.splitext(stem)[1]:
            stem = os.path.splitext(stem)[0]
            candidates.append(stem)
        candidates += [os.path.dirname(target)]
        for value in candidates:
            if writes_file(value, target):
                moved = Line(line.sub, {**line.values, out_action: [value] if multi else value})
                return moved, args
    if in_role.paths is None and in_role.kind in ("file", "dir"):  # the input onto a file the output writes
        written = io_guard.outputs_of(out_action, args)
        files = [f for w in written for f in w.exact] or [os.path.join(w.under or w.starting, "f.txt")
                                                          for w in written]
        for f in files:
            value = f if in_role.kind == "file" else os.path.dirname(f)
            moved = Line(line.sub, {**line.values, in_action: value if not isinstance(line.values[in_action], list)
                                    else [value]})
            write(f)
            return moved, args
    return None


def _cases():
    for name, (how, target, parser) in parsers().items():
        for sub, sp, actions in units(parser):
            yield pytest.param(name, sub, id=" ".join((name,) + sub))


@pytest.fixture(scope="module")
def walk():
    return parsers()


def test_the_walk_finds_every_command(walk):
    assert {n for n, p in _PARSERS.items() if p is None} == NO_PARSER
    for expected in ("syntax-nmt-evaluate", "syntax-nmt-annotate", "syntax-nmt-binarize", "syntax-nmt-analyze",
                     "syntax-nmt-target-tags", "syntax-nmt-train-spacy", "syntax-nmt-synth",
                     "python -m syntax_nmt.recipes.budget_curve", "scripts/average_checkpoints.py",
                     "python -m syntax_nmt.recipes.report", "python -m syntax_nmt.bench.parse"):
        assert expected in walk


PATHLIKE = re.compile(r"\b(file|files|folder|dir|directory|prefix|path|paths|checkpoint|checkpoints)\b", re.I)


def test_every_path_option_has_a_role(walk):
    """An option whose value name or help speaks of a file, folder, prefix, path or checkpoint carries a role (or
    says why it is none), so that a new one is guarded without a row here."""
    missing = []
    for name, (how, target, parser) in walk.items():
        for sub, sp, actions in units(parser):
            for a in actions:
                if io_guard.role_of(a) is not None or a.nargs == 0 or a.type in (int, float) or a.choices:
                    continue
                text = " ".join(filter(None, [a.metavar if isinstance(a.metavar, str) else "", a.help or "",
                                              a.dest.replace("_", " ")]))
                if PATHLIKE.search(text):
                    missing.append(f"{name} {' '.join(sub)} {io_guard.label(a)}")
    assert not missing, missing


@pytest.mark.parametrize("name, sub", list(_cases()))
def test_misuse_of_every_command(name, sub, walk, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    how, target, parser = walk[name]
    sp, actions = next((sp, acts) for s, sp, acts in units(parser) if s == sub)
    roles = {a: io_guard.role_of(a) for a in actions if io_guard.role_of(a) is not None}
    inputs = [a for a, r in roles.items() if r.way == "in" and not r.name_or_path]
    outputs = [a for a, r in roles.items() if r.way == "out"]
    prog = parser.prog
    tried, case_no = 0, itertools.count()
    for variant in group_variants(sp, actions):
        present = [a for a in actions if a not in itertools.chain.from_iterable(
            g_members(k) for k in variant) or a in variant.values()]

        def fresh(tag):
            d = str(tmp_path / f"{tag}-{next(case_no)}")
            os.makedirs(d)
            return d

        # an output that is an input
        for out_action in [a for a in outputs if a in present]:
            for in_action in [a for a in inputs if a in present]:
                tmp = fresh("collide")
                line = build(tmp, sub, present, variant)
                found = _collide(parser, line, out_action, in_action, tmp)
                if found is None:
                    continue
                moved, _ = found
                materialize(parser, moved, tmp)
                code, err, same = run_case(how, target, moved.argv(), tmp, capsys)
                assert code == 2 and len(err) == 1, (moved.argv(), err)
                assert err[0].startswith(f"{prog}: error: {io_guard.label(out_action)} "), (moved.argv(), err)
                assert "input" in err[0] and same, (moved.argv(), err)
                tried += 1
        # a missing input
        for in_action in [a for a in inputs if a in present and not roles[a].optional]:
            tmp = fresh("missing")
            line = build(tmp, sub, present, variant)
            materialize(parser, line, tmp)
            gone = os.path.join(tmp, "missing", "x")
            line.values[in_action] = [gone] if isinstance(line.values[in_action], list) else gone
            code, err, same = run_case(how, target, line.argv(), tmp, capsys)
            assert code == 2 and len(err) == 1 and err[0].startswith(f"{prog}: error: "), (line.argv(), err)
            assert gone in err[0] and same, (line.argv(), err)
            tried += 1
        # an empty file, invalid UTF-8: a clean failure or a run
        for in_action in [a for a in inputs if a in present and roles[a].kind != "dir"]:
            for data in (b"", BAD_UTF8):
                tmp = fresh("content")
                line = build(tmp, sub, present, variant)
                args = materialize(parser, line, tmp)
                for path in io_guard.inputs_of(in_action, args):
                    write(path, data)
                code, err, same = run_case(how, target, line.argv(), tmp, capsys)
                if code != 0:
                    assert code == 2 and len(err) >= 1 and err[-1].startswith(f"{prog}: error: "), (line.argv(), err)
                    assert same, line.argv()
                tried += 1
        # a corrupt .gz where gzip is read
        for in_action in [a for a in inputs if a in present and roles[a].gz]:
            tmp = fresh("gz")
            line = build(tmp, sub, present, variant)
            args = materialize(parser, line, tmp)
            if roles[in_action].kind == "dir":
                bad = write(os.path.join(getattr(args, in_action.dest), "t.gz"), gzip.compress(b"a b c\n" * 100)[:30])
            else:
                bad = write(os.path.join(tmp, "corrupt.gz"), b"not gzip at all\n")
                line.values[in_action] = bad
            code, err, same = run_case(how, target, line.argv(), tmp, capsys)
            assert code == 2 and len(err) == 1 and bad in err[0] and same, (line.argv(), err)
            tried += 1
    if inputs and (outputs or any(not roles[a].optional for a in inputs)):
        assert tried, f"{name} {sub}: inputs (and outputs), but no case could be built"
