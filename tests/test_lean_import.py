"""``import dlsched`` stays lean: solver libraries, torch and the data stack load on first
use, in a fresh interpreter (this process has long imported them). One interpreter
(tests/fresh_interpreter.py, shared with four other files) runs every check below in
turn, each before anything that could spoil it: importing the package, then resolving one
method, then solving, then the face's names; each test asserts on its own part of that
run."""

from __future__ import annotations

from fresh_interpreter import FACE


def test_import_leaves_the_heavy_libraries_out_and_solve_imports_them_on_demand(fresh):
    assert fresh["heavy_after_import"] == []
    assert fresh["heavy_after_recorders"] == []  # the registry test's wrapping loads none
    # one job, two idle GPUs: placing it is optimal (a waiting job pays its penalty);
    # greedy, then the exact model on CP-SAT and on HiGHS
    assert fresh["solved"] == [["feasible", 1], ["optimal", 1], ["optimal", 1]]
    assert fresh["solvers_loaded"] == [True, True]


def test_a_method_imports_only_its_own_module(fresh):
    assert fresh["after_get_method"] == [True, False, False]


def test_the_face_exports_the_documented_api(fresh):
    got = fresh["face"]
    assert set(got) == set(FACE)
    assert got["MethodError"] == "dlsched.errors"
    assert got["MethodOutput"] == got["Result"] == "dlsched.result"
    assert got["solve"] == "dlsched.solve"
    assert got["simulate"] == "dlsched.simulate.engine"
