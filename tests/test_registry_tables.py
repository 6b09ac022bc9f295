"""The tables that name each built-in method's and generator's module are exactly what
importing every module registers, and the registry keeps one registration per name."""

from __future__ import annotations

import sys

import pytest

from dlsched import registry
from dlsched.errors import InputError
from dlsched.registry import (
    GeneratorSpec,
    MethodSpec,
    declare_methods,
    get_method,
    register_generator,
    register_method,
)


@pytest.fixture(scope="module")
def registered(fresh: dict) -> dict:
    """Which module calls each register function, noted in a fresh interpreter from before
    any provider module loads, then every module of the three provider packages imported
    (tests/fresh_interpreter.py, whose one run serves four other files too)."""
    return fresh["registered"]


@pytest.mark.parametrize("kind", ["method", "generator"])
def test_each_table_names_the_module_that_registers(registered, kind):
    declared, actual = registered["declared"][kind], registered[kind]
    assert {k: v for k, v in actual.items() if declared.get(k) != v} == {}, (
        "registered but not in the table (add them to METHOD_MODULES / GENERATOR_MODULES "
        "of the module's package)")
    assert {k: v for k, v in declared.items() if actual.get(k) != v} == {}, (
        "in a table, but that module does not register it")


def test_a_fast_form_lives_in_the_module_of_its_method(registered):
    # the simulator looks a view policy up after get_method imported the method's module
    assert registered["view"]
    for key, module in registered["view"].items():
        assert registered["method"][key] == module


@pytest.fixture
def empty_registry(monkeypatch):
    for name in ("_METHODS", "_GENERATORS", "_METHOD_MODULES", "_GENERATOR_MODULES"):
        monkeypatch.setattr(registry, name, {})
    monkeypatch.setattr(registry, "_loaded", True)  # no plugins


def _spec(problem: str, name: str) -> MethodSpec:
    return MethodSpec(problem, name, "heuristic", lambda instance, **kw: None)


def test_a_name_is_registered_once(empty_registry):
    register_method(_spec("horus", "mine"))
    with pytest.raises(InputError, match="method horus/mine is registered twice"):
        register_method(_spec("horus", "mine"))
    gen = GeneratorSpec("horus", lambda seed: None, lambda parser: None, name="mine")
    register_generator(gen)
    with pytest.raises(InputError, match="generator mine is registered twice"):
        register_generator(gen)


def test_a_declared_name_belongs_to_its_module(empty_registry):
    declare_methods("no_such_package", {("horus", "taken"): "module"})
    with pytest.raises(InputError, match=r"horus/taken .*no_such_package\.module's"):
        register_method(_spec("horus", "taken"))
    with pytest.raises(ValueError, match="declared by both"):
        declare_methods("other_package", {("horus", "taken"): "module"})


def test_get_method_imports_the_declared_module(empty_registry, monkeypatch):
    imported = []

    def fake_import(module):  # a module registers when first imported
        if module not in imported:
            register_method(_spec("horus", "lazy"))
        imported.append(module)

    monkeypatch.setattr(registry, "import_module", fake_import)
    monkeypatch.setitem(sys.modules, "pkg.lazy_module", sys.modules[__name__])
    declare_methods("pkg", {("horus", "lazy"): "lazy_module"})
    assert get_method("horus", "lazy").name == "lazy"
    assert get_method("horus", "lazy").name == "lazy"
    assert imported == ["pkg.lazy_module"]
    with pytest.raises(InputError, match="no method 'other' .*use one of: lazy"):
        get_method("horus", "other")  # listing the choices imports the problem's modules
    assert imported == ["pkg.lazy_module"] * 2
