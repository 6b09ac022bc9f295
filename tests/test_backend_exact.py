"""The backend layer: one model on every backend, status/bound semantics, parameters,
warm starts, end-to-end time limits and model export."""

from __future__ import annotations

import functools
import os
import time

import pulp
import pytest
from fake_clock import FakeClock, install

from dlsched import Status, solve, validate
from dlsched.formulations.backend import BACKENDS, Deadline, SolverParams, TimeUp
from dlsched.formulations.backends import new_model
from dlsched.formulations.pulp_backend import STOPPED
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.registry import get_method


def test_solvers_import_side_by_side(fresh):
    """ortools 9.15, highspy 1.14 and pyscipopt 6.3 load (in that order) and solve in one
    process: a fresh interpreter's (tests/fresh_interpreter.py, shared with four other
    files; the three tiny models are solved there, it fails on any wrong answer)."""
    assert fresh["solver_versions"] == ["6.3.0", "1.14.0"]


def _knapsack(backend: str):
    """min 1 - (3a + 2.5b + 2c) s.t. 1.5a + 1.2b + 0.9c <= 2.4: a + c (exactly full), -4."""
    m = new_model(backend, "knapsack")
    a, b, c = (m.binary(n) for n in "abc")
    m.add([(1.5, a), (1.2, b), (0.9, c)], "<=", 2.4, "cap")
    m.minimize([(-3, a), (-2.5, b), (-2, c)], constant=1.0, rounding_slack=1.5)
    return m, (a, b, c)


def test_one_model_every_backend(backend):
    m, (a, b, c) = _knapsack(backend)
    run = m.solve(SolverParams(time_limit=10))
    assert run.status is Status.OPTIMAL
    assert run.objective == pytest.approx(-4.0, abs=1e-6)
    assert run.bound <= run.objective + 1e-9
    assert run.bound == pytest.approx(-4.0, abs=1e-5)
    assert [m.is_one(v) for v in (a, b, c)] == [True, False, True]
    size = m.size()
    assert (size.variables, size.constraints) == (3, 1)


def test_a_model_without_variables_is_its_constant(backend):
    """Nothing to decide (e.g. no idle GPU): the constant, proven, on every backend (CBC's
    PuLP read of an empty model used to raise a TypeError)."""
    m = new_model(backend, "empty")
    m.minimize([], constant=2.5)
    run = m.solve(SolverParams(time_limit=10))
    assert run.status is Status.OPTIMAL
    assert run.objective == pytest.approx(2.5) and run.bound == pytest.approx(2.5)


def test_no_time_limit_on_every_backend(backend):
    """``time_limit=None`` is documented as "no limit" (SCIP's adapter used to pass None on
    as its time limit and crash)."""
    inst = generate_horus(seed=3, nodes=2, beta=3, busy=0.5)
    unlimited = solve(inst, "exact", backend=backend, time_limit=None)
    limited = solve(inst, "exact", backend=backend, time_limit=30)
    assert unlimited.status is limited.status is Status.OPTIMAL, unlimited.message
    assert unlimited.objective == pytest.approx(limited.objective, abs=1e-6)


def test_cpsat_rounds_capacities_conservatively():
    """A capacity the real coefficients just meet stays feasible; one they exceed by less
    than 1e-6 is never crossed."""
    m = new_model("cpsat", "tight")
    a, b = m.binary("a"), m.binary("b")
    m.add([(0.3333334, a), (0.6666667, b)], "<=", 1.0)
    m.minimize([(-1, a), (-1, b)])
    run = m.solve(SolverParams())
    assert run.status is Status.OPTIMAL and run.objective == pytest.approx(-1.0)


def test_infeasible_is_reported(backend):
    m = new_model(backend, "infeasible")
    a = m.binary("a")
    m.add([(1, a)], ">=", 2)
    m.minimize([(1, a)])
    assert m.solve(SolverParams(time_limit=10)).status is Status.INFEASIBLE


def test_deadline_stops_building():
    deadline = Deadline(0.001)
    time.sleep(0.01)
    with pytest.raises(TimeUp, match="building"):
        deadline.check("building a model")
    assert Deadline(None).remaining() is None


def test_solver_parameters_and_warm_start_pass_through(backend):
    """num_workers, solver options and a warm start (the greedy's decision) reach every
    backend, and the optimum does not change."""
    inst = generate_horus(seed=3, nodes=3, beta=6, busy=0.5)
    greedy = solve(inst, "greedy")
    plain = solve(inst, "exact", backend=backend, time_limit=30)
    options = {"cbc": {"presolve": "on"}, "highs": {"presolve": "on"},
               "scip": {"presolving/maxrounds": 2}, "cpsat": {"cp_model_presolve": True}}
    warm = solve(inst, "exact", backend=backend, time_limit=30, num_workers=2,
                 solver_options=options[backend], initial_solution=greedy.decision)
    assert plain.status is warm.status is Status.OPTIMAL
    assert warm.objective == pytest.approx(plain.objective, abs=1e-6)
    assert validate(inst, warm.decision).ok


def test_one_cbc_worker_is_cbc_serial_search():
    """CBC's "-threads 1" is a worker thread beside the main one whose hand-over can sleep
    out a 10-s timed wait; one worker must run CBC's serial search (no "-threads")."""
    inst = generate_horus(seed=3, nodes=2, beta=3, busy=0.5)
    one = solve(inst, "exact", backend="cbc", time_limit=30)
    two = solve(inst, "exact", backend="cbc", time_limit=30, num_workers=2)
    command_lines = [next(line for line in r.log.splitlines() if line.startswith("command line"))
                     for r in (one, two)]
    assert "-threads" not in command_lines[0]
    assert "-threads 2" in command_lines[1]
    assert one.status is two.status is Status.OPTIMAL


def test_bad_solver_parameters_are_input_errors():
    inst = generate_horus(seed=3, nodes=2, beta=3, busy=0.5)
    r = solve(inst, "exact", backend="cbc", num_workers=0)
    assert r.status is Status.INVALID_INPUT and "num_workers" in r.message
    r = solve(inst, "exact", backend="cbc", initial_solution="greedy")
    assert r.status is Status.INVALID_INPUT and "initial_solution" in r.message


@functools.cache
def _hard_liquid():
    """A Liquid batch of 20 servers: HiGHS, the fastest here, proves it in 0.5 CPU-s, 25x
    the 0.02 s the budget tests give a solver (28 servers before: none in 3 s, for ~0.2
    CPU-s more of building per test). Generated once (an Instance is immutable) for the
    eight tests that read it."""
    return generate_liquid(seed=0, nodes=20)


def _fake_budget(monkeypatch, per_check: float) -> dict:
    """A fake clock for the exact Liquid method's budget: each deadline check of the build
    costs ``per_check`` s; the solver is told what is left (recorded) but runs on a short
    real limit of its own (0.02 s; 0.1 before, for 0.1-0.3 CPU-s more per backend: its
status is the only thing that depends on it, and less time never proves more)."""
    from dlsched.formulations import backend as layer
    from dlsched.formulations import cpsat_backend, liquid, pulp_backend

    clock = FakeClock()
    install(monkeypatch, clock, layer, pulp_backend, cpsat_backend, liquid)
    seen: dict = {"checks": 0, "told": []}
    check, left = Deadline.check, SolverParams.seconds_left

    def costly_check(self, stage):
        seen["checks"] += 1
        clock.advance(per_check)
        check(self, stage)

    def told(self):
        seen["told"].append(left(self))
        return 0.02

    monkeypatch.setattr(Deadline, "check", costly_check)
    monkeypatch.setattr(SolverParams, "seconds_left", told)
    return seen


def test_a_build_that_outlives_the_limit_never_reaches_the_solver(backend, monkeypatch):
    seen = _fake_budget(monkeypatch, per_check=0.5)
    r = solve(_hard_liquid(), "exact", backend=backend, time_limit=3.0)
    assert seen["checks"] == 6 and seen["told"] == []  # the 6th check ends at 3 s
    assert r.status is Status.NO_SOLUTION and r.decision is None
    assert "time limit reached while building" in r.message


def test_the_solver_is_told_what_the_build_left(backend, monkeypatch):
    """Building and solving share one budget (a fake clock: load-free); no false proof."""
    inst = _hard_liquid()
    seen = _fake_budget(monkeypatch, per_check=0.25 / 1024)
    r = solve(inst, "exact", backend=backend, time_limit=3.0)
    assert seen["checks"] > 10 and seen["told"]
    assert seen["told"] == [pytest.approx(3.0 - seen["checks"] * 0.25 / 1024)] * len(
        seen["told"])
    assert r.status is not Status.OPTIMAL  # 0.02 s on 20 servers
    if r.decision is not None:
        assert validate(inst, r.decision).ok


@pytest.mark.parametrize("problem", ["horus", "genie", "liquid"])
def test_export_every_format(tmp_path, problem):
    """MPS and LP for the PuLP model, the CP-SAT proto as text."""
    if problem == "horus":
        inst = generate_horus(seed=1, nodes=2, beta=4, busy=0.5)
    elif problem == "liquid":
        inst = generate_liquid(seed=1, nodes=5)
    else:
        from dlsched.instances.genie_gen import generate_genie_workload, genie_snapshot
        base = generate_genie_workload(seed=3, nodes=2, gpus_per_node=2, density=20.0,
                                       duration=2.0)
        inst = genie_snapshot(base, seed=0, waiting=3, busy=0.25)
    export = get_method(problem, "exact").export
    for fmt, marker in (("mps", "ROWS"), ("lp", "Subject To"), ("proto", "variables")):
        path = tmp_path / f"{problem}.{fmt}"
        export(inst, path, fmt)
        assert marker in path.read_text(), fmt


def test_backends_listed():
    assert BACKENDS == ("cbc", "highs", "scip", "cpsat")
    for problem in ("horus", "genie", "liquid"):
        assert get_method(problem, "exact").backends == BACKENDS


def _cut_solution_file(stopped: bool):
    """PuLP's CBC reader as it fails on a solution file cut short; with ``stopped`` the
    time-limit wrapper has left its mark first (as it does when it stopped CBC)."""
    def read(self, filename, *args, **kwargs):
        if stopped:
            open(os.path.join(self.tmpDir, STOPPED), "w").close()
        raise IndexError("list index out of range")
    return read


def test_cbc_stopped_while_writing_its_solution_is_no_solution(monkeypatch):
    monkeypatch.setattr(pulp.COIN_CMD, "readsol_MPS", _cut_solution_file(stopped=True))
    r = solve(generate_liquid(seed=1, nodes=5), "exact", backend="cbc", time_limit=20)
    assert r.status is Status.NO_SOLUTION and r.decision is None


def test_a_broken_solution_file_without_a_stop_is_not_hidden(monkeypatch):
    monkeypatch.setattr(pulp.COIN_CMD, "readsol_MPS", _cut_solution_file(stopped=False))
    with pytest.raises(IndexError):
        solve(generate_liquid(seed=1, nodes=5), "exact", backend="cbc", time_limit=20)
