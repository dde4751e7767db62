"""The class registry shared by the parser backends and the syntax methods."""

import pytest

from syntax_nmt.registry import register_class


def test_register_class_names_and_records_the_class_and_refuses_a_second_of_the_same_name():
    registry = {}

    @register_class(registry, "widget", "a")
    class A:
        pass

    assert registry == {"a": A} and A.name == "a"
    with pytest.raises(ValueError, match="widget 'a' registered twice"):
        register_class(registry, "widget", "a")(type("B", (), {}))
    assert registry == {"a": A}


def test_syntax_methods_refuse_a_second_method_of_a_registered_name():
    from syntax_nmt.models.modules.methods.base import register_syntax_method, registered_methods

    first = registered_methods()["sgnet"]
    with pytest.raises(ValueError, match="syntax method 'sgnet' registered twice"):
        register_syntax_method("sgnet")(type("Other", (), {}))
    assert registered_methods()["sgnet"] is first


@pytest.fixture
def widgets(tmp_path, monkeypatch):
    """A package ``widgets_pkg`` with a registry in ``base`` and three modules that register (one, ``zeta``,
    built in and so first), and one that registers nothing."""
    pkg = tmp_path / "widgets_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(
        "from syntax_nmt.registry import Registry\n"
        "WIDGETS = Registry('widget', 'widgets_pkg', builtin=('zeta',))\n"
        "IMPORTED = []\n")
    for name in ("zeta", "alpha", "beta"):
        (pkg / f"{name}.py").write_text(
            "from widgets_pkg.base import WIDGETS, IMPORTED\n"
            f"IMPORTED.append({name!r})\n"
            f"@WIDGETS.register({name!r} + '_w')\nclass W: pass\n")
    (pkg / "_private.py").write_text("raise AssertionError('a module starting with _ is not imported')\n")
    (pkg / "math_only.py").write_text("from widgets_pkg.base import IMPORTED\nIMPORTED.append('math_only')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import sys

    yield importlib.import_module("widgets_pkg.base")
    for m in [m for m in sys.modules if m == "widgets_pkg" or m.startswith("widgets_pkg.")]:
        del sys.modules[m]


def test_a_registry_discovers_its_package_on_first_read_built_in_modules_first(widgets):
    import importlib

    assert widgets.IMPORTED == []  # nothing imported before the registry is read
    importlib.import_module("widgets_pkg.beta")  # imported directly: registered early, put back in place
    assert list(widgets.WIDGETS) == ["zeta_w", "alpha_w", "beta_w"]
    assert widgets.IMPORTED == ["beta", "zeta", "alpha", "math_only"]
    assert widgets.WIDGETS["alpha_w"].name == "alpha_w" and widgets.WIDGETS["alpha_w"].__module__ == "widgets_pkg.alpha"
    with pytest.raises(ValueError, match="unknown widget 'gamma_w'; this syntax-nmt has: zeta_w, alpha_w, beta_w"):
        widgets.WIDGETS.get_class("gamma_w")


def test_a_class_from_outside_is_registered_last_and_a_taken_name_is_refused_where_it_is_registered(widgets):
    """Registering from a test before anything read the registry: the package is discovered first, so a name that
    a module of the package takes is refused now (it used to succeed, and the module's import failed later)."""
    with pytest.raises(ValueError, match="widget 'alpha_w' registered twice"):
        widgets.WIDGETS.register("alpha_w")(type("Toy", (), {}))
    toy = widgets.WIDGETS.register("toy_w")(type("Toy", (), {}))
    assert list(widgets.WIDGETS) == ["zeta_w", "alpha_w", "beta_w", "toy_w"] and widgets.WIDGETS["toy_w"] is toy
    del widgets.WIDGETS["toy_w"]
    assert "toy_w" not in widgets.WIDGETS and len(widgets.WIDGETS) == 3


def test_backends_methods_and_target_schemes_share_the_mechanism():
    from syntax_nmt.annotate.backends import PARSER_BACKENDS
    from syntax_nmt.models.modules.methods.base import SYNTAX_METHODS
    from syntax_nmt.registry import Registry
    from syntax_nmt.targets import TARGET_SCHEMES, register_target_scheme, registered_schemes

    assert all(isinstance(r, Registry) for r in (PARSER_BACKENDS, SYNTAX_METHODS, TARGET_SCHEMES))
    assert list(PARSER_BACKENDS)[:2] == ["spacy", "conllu"]
    assert list(SYNTAX_METHODS)[:5] == ["sgnet", "sla", "syntax_bert", "seprem", "lisa"]
    assert list(TARGET_SCHEMES)[:2] == ["factors", "tags"] and registered_schemes() is TARGET_SCHEMES
    first = TARGET_SCHEMES["tags"]
    with pytest.raises(ValueError, match="target scheme 'tags' registered twice"):
        register_target_scheme("tags")(type("Other", (), {}))
    assert TARGET_SCHEMES["tags"] is first
