"""The package's floors: what may import what (issue 35.4).

Each top-level unit of ``syntax_nmt`` (a subpackage or a module) sits on a floor, and imports only from its own
floor or below, including the imports inside functions; and no module of the package imports itself back through
a circle of imports. A new unit must be given a floor here, which says what it depends on.
"""

import ast
import os
from collections import defaultdict
from typing import Dict, List, Set, Tuple

import syntax_nmt

PACKAGE = os.path.dirname(syntax_nmt.__file__)

#: bottom to top
FLOORS: List[Set[str]] = [
    # no syntax method, parser, fairseq model or data set: the tree math, the settings record, tests of significance
    {"constants", "registry", "utils", "cli_errors", "io_guard", "checkpoint_compat", "syntax", "annotation_settings"},
    # data on disk and in batches; the synthetic corpus; the hub's interface
    {"data", "synthetic", "hub"},
    # annotation (parsers -> aligned streams), the model and its methods; the target-side schemes (what each
    # declares: its options, streams and data, the truth of its tags); metrics, tests of significance and multi-seed
    # tables (the target tags' accuracy parses the hypotheses with the annotator's parser and scores each scheme's
    # streams)
    {"annotate", "models", "targets", "evaluation"},
    # what reads the model's registry: the criterion, the table of systems
    {"criterions", "systems"},
    # the task: training data, raw-text inference
    {"tasks"},
    # the plugin's registration with fairseq (syntax_nmt/__init__.py)
    {""},
    # applications on top; the command-line reference built from their parsers (docs/cli.md)
    {"analyze", "demo", "bench", "recipes", "cli_docs", "export"},
]

#: the modules of ``evaluation/``, bottom to top (issue 57.4: one concern a module, as sacreBLEU keeps one metric a
#: module): the metrics, the readers of fairseq-generate's output and the tests on sacreBLEU's sentence statistics;
#: what uses them (translation files scored, systems over seeds, the syntax of translations against a parser); the
#: command line (``syntax-nmt-evaluate``)
EVALUATION_FLOORS: List[Set[str]] = [
    {"", "metrics", "generate_log", "significance"},
    {"scoring", "compare", "syntax_accuracy"},
    {"evaluate"},
]
#: what of ``annotate/`` the evaluation reads outside :mod:`syntax_nmt.evaluation.syntax_accuracy`: the format of
#: interleaved target tags (a hypothesis holding tags is refused, or stripped before scoring); the parser (its
#: backends, spaCy) only the syntax accuracy runs
TAG_FORMAT = "syntax_nmt.annotate.target_tags"


def _module(path: str) -> str:
    rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _exists(module: str) -> bool:
    base = os.path.join(os.path.dirname(PACKAGE), *module.split("."))
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def import_graph() -> Dict[str, Dict[str, List[str]]]:
    """module -> {imported syntax_nmt module: ["file:line", ...]}, every import statement (in functions too)."""
    graph: Dict[str, Dict[str, List[str]]] = {}
    for d, _, files in os.walk(PACKAGE):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            mod = _module(path)
            pkg = mod if f == "__init__.py" else mod.rsplit(".", 1)[0]
            out: Dict[str, List[str]] = defaultdict(list)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        parts = pkg.split(".")
                        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
                    else:
                        base = node.module or ""
                    names = [f"{base}.{a.name}" if _exists(f"{base}.{a.name}") else base for a in node.names]
                else:
                    continue
                for name in names:
                    if (name == "syntax_nmt" or name.startswith("syntax_nmt.")) and name != mod:
                        out[name].append(f"{os.path.relpath(path, os.path.dirname(PACKAGE))}:{node.lineno}")
            graph[mod] = dict(out)
    return graph


def unit(module: str) -> str:
    """``syntax_nmt.annotate.backends.base`` -> ``annotate``; the package itself -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def floor_of(name: str) -> int:
    for i, units in enumerate(FLOORS):
        if name in units:
            return i
    raise KeyError(name)


def upward_imports(graph) -> List[Tuple[str, str, str]]:
    return [(where[0], unit(a), unit(b)) for a, targets in graph.items() for b, where in targets.items()
            if floor_of(unit(b)) > floor_of(unit(a))]


def circles(graph) -> List[List[str]]:
    """The import circles among modules (strongly connected components of more than one module)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm (the graph is a few hundred modules: recursion is fine)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_unit_has_a_floor():
    units = {unit(m) for m in import_graph()}
    missing = sorted(u for u in units if not any(u in f for f in FLOORS))
    assert not missing, f"give these a floor in {__file__}: {missing}"


def test_every_floor_names_units_that_exist():
    """A unit removed from the package leaves its floor too (the old paths' aliases, removed in issue 57.3)."""
    units = {unit(m) for m in import_graph()}
    gone = sorted(u for floor in FLOORS for u in floor if u not in units)
    assert not gone, f"remove these from the floors in {__file__}: {gone}"


def test_no_import_goes_up_a_floor():
    ups = upward_imports(import_graph())
    assert not ups, "imports from a lower floor up to a higher one:\n" + "\n".join(
        f"  {where}: {a or 'syntax_nmt'} (floor {floor_of(a)}) imports {b or 'syntax_nmt'} (floor {floor_of(b)})"
        for where, a, b in ups)


def test_no_import_circle():
    assert circles(import_graph()) == []


def test_the_checks_see_an_upward_import_and_a_circle():
    """The checks themselves: an upward import (the binarizer reading the settings from annotate/, as it did) and
    a circle of two modules are found."""
    graph = import_graph()
    graph["syntax_nmt.data.binarize"] = {**graph["syntax_nmt.data.binarize"],
                                         "syntax_nmt.annotate.settings": ["syntax_nmt/data/binarize.py:46"]}
    assert upward_imports(graph) == [("syntax_nmt/data/binarize.py:46", "data", "annotate")]
    compare, evaluate = "syntax_nmt.evaluation.compare", "syntax_nmt.evaluation.evaluate"
    graph[compare] = {**graph[compare], evaluate: ["x"]}
    graph[evaluate] = {**graph[evaluate], compare: ["y"]}
    assert circles(graph) == [["syntax_nmt.evaluation.compare", "syntax_nmt.evaluation.evaluate"]]


def evaluation_floor(module: str) -> int:
    """The floor of a module of ``evaluation/`` in :data:`EVALUATION_FLOORS` (the package itself: ``""``)."""
    name = module[len("syntax_nmt.evaluation"):].lstrip(".")
    for i, names in enumerate(EVALUATION_FLOORS):
        if name in names:
            return i
    raise KeyError(name)


def evaluation_upward_imports(graph) -> List[Tuple[str, str, str]]:
    return [(where[0], a, b) for a, targets in graph.items() if unit(a) == "evaluation"
            for b, where in targets.items() if unit(b) == "evaluation" and evaluation_floor(b) > evaluation_floor(a)]


def parser_readers(graph) -> List[str]:
    """The modules of ``evaluation/`` that import anything of ``annotate/`` but the target tags' format."""
    return sorted(a for a, targets in graph.items() if unit(a) == "evaluation"
                  and any(unit(b) == "annotate" and b != TAG_FORMAT for b in targets))


def test_every_evaluation_module_has_a_floor():
    graph = import_graph()
    missing = []
    for module in graph:
        if unit(module) == "evaluation":
            try:
                evaluation_floor(module)
            except KeyError:
                missing.append(module)
    assert not missing, f"give these a floor in EVALUATION_FLOORS of {__file__}: {missing}"
    named = {n for names in EVALUATION_FLOORS for n in names}
    assert named == {m[len("syntax_nmt.evaluation"):].lstrip(".") for m in graph if unit(m) == "evaluation"}


def test_the_evaluation_modules_import_downwards_and_only_the_syntax_accuracy_runs_a_parser():
    graph = import_graph()
    assert evaluation_upward_imports(graph) == []
    assert parser_readers(graph) == ["syntax_nmt.evaluation.syntax_accuracy"]


def test_the_evaluation_checks_see_an_upward_import_and_a_parser_elsewhere():
    graph = import_graph()
    metrics, scoring = "syntax_nmt.evaluation.metrics", "syntax_nmt.evaluation.scoring"
    graph[metrics] = {**graph[metrics], scoring: ["syntax_nmt/evaluation/metrics.py:1"]}
    graph[scoring] = {**graph[scoring], "syntax_nmt.annotate.backends.spacy_backend": ["x"]}
    assert evaluation_upward_imports(graph) == [("syntax_nmt/evaluation/metrics.py:1", metrics, scoring)]
    assert parser_readers(graph) == [scoring, "syntax_nmt.evaluation.syntax_accuracy"]
