"""The public API carries numpydoc ``Parameters`` and ``Returns`` sections."""

import inspect

import pytest

import dlsched
from dlsched.problems import get_problem
from dlsched.problems.base import Problem

PUBLIC = [dlsched.solve, dlsched.simulate, dlsched.load_instance, dlsched.validate,
          dlsched.evaluate, dlsched.results_frame, dlsched.relative_gap,
          dlsched.is_proven_optimal, dlsched.Result.to_dict]
HOOKS = ("parse_params", "check_instance", "check_decision", "evaluate", "report_metrics",
         "schedule_duration", "evaluate_schedule")
PAPER_PROBLEMS = ("genie", "horus", "liquid", "sched2")


def _sections(doc: str | None) -> set[str]:
    lines = inspect.cleandoc(doc or "").splitlines()
    return {a.strip() for a, b in zip(lines, lines[1:], strict=False)
            if b.strip() and set(b.strip()) == {"-"} and len(b.strip()) == len(a.strip())}


@pytest.mark.parametrize("fn", PUBLIC, ids=lambda f: f.__qualname__)
def test_public_function_has_parameters_and_returns(fn):
    assert {"Parameters", "Returns"} <= _sections(fn.__doc__)


def test_result_documents_its_fields():
    doc = dlsched.Result.__doc__
    assert "Parameters" in _sections(doc)
    for name in dlsched.Result.__dataclass_fields__:
        assert f"\n    {name}\n" in doc, name


@pytest.mark.parametrize("cls", [Problem, *(type(get_problem(p)) for p in PAPER_PROBLEMS)],
                         ids=lambda c: c.__name__)
def test_problem_class_and_its_hooks_are_documented(cls):
    assert cls.__doc__ and len(inspect.cleandoc(cls.__doc__).splitlines()) > 1
    for hook in HOOKS:
        if hook in cls.__dict__:
            assert {"Parameters", "Returns"} <= _sections(cls.__dict__[hook].__doc__), hook
