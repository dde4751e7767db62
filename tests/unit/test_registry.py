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
