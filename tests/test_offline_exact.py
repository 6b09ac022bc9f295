"""Offline exact schedules (CP-SAT methods through ``solve``) against brute force.

Brute force on 3-5 job workloads: every mode choice and every order, each job placed by a
serial schedule-generation scheme at its earliest feasible time. Every schedule returned is
checked by the one validator (``dlsched.validate``), and its objective comes from the
problem's schedule evaluator.
"""

from __future__ import annotations

import numpy as np
import pytest
from fake_clock import FakeClock, install
from google.protobuf import text_format
from ortools.sat import cp_model_pb2

from dlsched import Instance, Job, Status, evaluate, homogeneous_cluster, solve, validate
from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.formulations.offline import job_modes, solve_schedule
from dlsched.instances.genie_gen import generate_genie_workload
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.registry import get_method, methods_for

METHOD = {"makespan": "offline-makespan", "weighted_jct": "offline-wct", "qos": "offline-qos",
          "effectiveness": "offline-effectiveness"}


OBJECTIVES = ("makespan", "weighted_jct", "qos", "effectiveness")
_optima: dict[str, dict[str, float]] = {}


def brute_force(workload: Instance, objective: str) -> float:
    """Best value over every mode choice and every order, each job placed by a serial
    schedule-generation scheme at its earliest feasible time (optimal for regular
    objectives: some order generates an optimal active schedule).

    One enumeration scores every objective (the schedules do not depend on it); the
    optima are kept per workload (by its sha256) for the tests that ask again."""
    key = workload.sha256
    if key not in _optima:
        _optima[key] = _enumerate(workload)
    return _optima[key][objective]


def _enumerate(workload: Instance) -> dict[str, float]:
    """:func:`brute_force`'s optimum of each objective (all of them minimized here).

    Every mode choice and every order, as nested loops over both would give, but walked
    depth first: the jobs placed so far (an order's prefix, with their modes) are placed
    once for all the schedules that share them, as the serial scheme places a prefix the
    same way whatever comes after it."""
    modes = job_modes(workload)
    caps = workload.cluster.node_gpu_count.tolist()
    jobs = workload.jobs
    first = min(j.submit_time for j in jobs)
    rigid = all(job.duration is not None for job in jobs)  # GENIE's elastic jobs: no E
    best = dict.fromkeys(OBJECTIVES if rigid else OBJECTIVES[:3], float("inf"))
    placed: list[tuple[float, float, tuple[int, ...]]] = []
    ends = [0.0] * len(jobs)
    left = set(range(len(jobs)))

    def place(j: int, mode) -> None:
        """Job ``j`` in ``mode`` at its earliest feasible time after ``placed``."""
        cands = sorted({jobs[j].submit_time} | {e for _, e, _ in placed
                                                if e > jobs[j].submit_time})
        for t in cands:
            d = mode.duration
            checks = [t] + [s for s, _, _ in placed if t < s < t + d]
            ok = all(
                sum(c[srv] for s, e, c in placed if s <= x < e) + k <= caps[srv]
                for x in checks for srv, k in enumerate(mode.counts) if k)
            if ok:
                placed.append((t, t + d, mode.counts))
                ends[j] = t + d
                return
        raise AssertionError("the last candidate start always fits")  # pragma: no cover

    def score() -> None:
        values = {
            "makespan": max(ends) - first,
            "weighted_jct": sum(job.weight * (ends[i] - job.submit_time)
                                for i, job in enumerate(jobs)),
            "qos": -100.0 * sum(
                job.deadline is not None and job.deadline > job.submit_time
                and ends[i] <= job.deadline + 1e-9 for i, job in enumerate(jobs)) / len(jobs),
        }
        if rigid:  # SCHED² Eq. 2: ideal time / time in system
            values["effectiveness"] = -sum(job.duration / (ends[i] - job.submit_time)
                                           for i, job in enumerate(jobs)) / len(jobs)
        for name, value in values.items():
            best[name] = min(best[name], value)

    def walk() -> None:
        if not left:
            score()
            return
        for j in sorted(left):
            left.remove(j)
            for mode in modes[j]:
                place(j, mode)
                walk()
                placed.pop()
            left.add(j)

    walk()
    return {name: -value if name in ("qos", "effectiveness") else value
            for name, value in best.items()}


def workload(specs, sens=2.0) -> Instance:
    """2 servers x 2 GPUs; specs = (submit, gpus, duration[, weight, deadline])."""
    jobs = []
    for i, (submit, gpus, dur, *rest) in enumerate(specs):
        weight, deadline = (*rest, 1.0, None)[:2] if rest else (1.0, None)
        jobs.append(Job(id=f"j{i}", submit_time=submit, num_gpus=gpus, duration=dur, model="m",
                        weight=weight, deadline=deadline))
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 2, gpu_type="g"),
                    jobs=tuple(jobs), params={"locality": {"m": sens}})


# S = 2: 2 GPUs on 1 + 1 -> c = 1 -> slowdown 2.5; 3 GPUs on 2 + 1 -> c = 2/3 -> 2;
# 4 GPUs on 2 + 2 -> 2. Durations below are multiples of 2 so every mode is whole seconds.
CASES = [
    [(0, 2, 10), (0, 2, 20), (0, 1, 10)],
    [(0, 3, 10), (5, 2, 20), (6, 1, 4), (8, 1, 30)],
    [(0, 1, 40), (0, 1, 40), (0, 1, 40), (2, 2, 10), (3, 4, 10)],
    [(0, 2, 10, 3.0, 30), (1, 2, 10, 1.0, 12), (2, 1, 20, 2.0, 25), (2, 3, 6, 1.0, 40)],
]


def check(w: Instance, result, objective: str) -> None:
    """The one validator accepts the schedule; the evaluator gives the reported objective."""
    assert result.decision is not None
    report = validate(w, result.decision)
    assert report.ok, str(report)
    assert all(p.start is not None and p.end is not None for p in result.decision.placements)
    assert evaluate(w, result.decision, objective) == pytest.approx(result.objective)


def test_mode_durations_by_hand():
    modes = job_modes(workload([(0, 2, 10), (0, 3, 10)]))
    assert {m.counts: m.duration for m in modes[0]} == pytest.approx(
        {(2, 0): 10.0, (1, 1): 25.0, (0, 2): 10.0})  # 10 * (1 + 1 * 1.5) on 1 + 1
    assert {m.counts: m.duration for m in modes[1]} == pytest.approx(
        {(2, 1): 20.0, (1, 2): 20.0})  # c = 1 - 2/6 = 2/3 -> slowdown 2


def test_methods_are_registered_exact_cpsat_methods():
    for problem in ("sched2", "genie"):
        names = methods_for(problem)
        for name, objective in METHOD.items():
            if problem == "genie" and name == "effectiveness":
                assert objective not in names  # SCHED²'s Eq. 2: a sched2 objective only
                continue
            spec = names[objective]
            assert spec.kind == "exact" and spec.backends == ("cpsat",)
            assert spec.objective == name


@pytest.mark.parametrize("objective", ["makespan", "weighted_jct", "qos", "effectiveness"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_offline_matches_brute_force(case, objective):
    w = workload(CASES[case])
    if objective == "qos" and all(len(s) < 5 for s in CASES[case]):
        # deadlines: twice the solo duration after arrival
        w = w.replace(jobs=tuple(j.replace(deadline=j.submit_time + 2 * j.duration)
                                 for j in w.jobs))
    result = solve(w, METHOD[objective], time_limit=20)
    assert result.status is Status.OPTIMAL, result.message
    assert result.extra["exact_grid"]
    check(w, result, objective)
    expected = brute_force(w, objective)
    assert result.objective == pytest.approx(expected)
    assert result.bound == pytest.approx(expected)


@pytest.mark.parametrize("objective", ["makespan", "weighted_jct", "effectiveness"])
def test_fractional_durations_fine_grid_proves_the_optimum(objective):
    # S = 1.7: 2 GPUs on 1 + 1 -> 1 + 0.7 * 1.5 = 2.05 -> 10 s become 20.5 s; 3 sqrt(2) s is
    # no small fraction: no exact grid, the grid is chosen fine enough for the proof
    w = workload([(0, 2, 10), (0.5, 2, 10), (1, 1, 7.3), (1, 3, 3 * 2**0.5)], sens=1.7)
    expected = brute_force(w, objective)
    coarse = solve(w, METHOD[objective], time_limit=20, time_unit=1.0)
    check(w, coarse, objective)
    sign = -1 if objective == "effectiveness" else 1  # max: bound above, schedule below
    assert sign * coarse.bound <= sign * expected + 1e-9 <= sign * coarse.objective + 2e-9
    fine = solve(w, METHOD[objective], time_limit=20)  # grid chosen for the proof
    assert not fine.extra["exact_grid"]
    assert fine.status is Status.OPTIMAL, fine.message
    check(w, fine, objective)
    if objective == "effectiveness":  # the grid keeps the loss below OPTIMALITY_ABS / 2
        assert fine.objective == pytest.approx(expected, abs=5e-5)
    else:
        assert fine.objective == pytest.approx(expected, rel=1e-6)
    assert sign * fine.bound <= sign * expected + 1e-9


@pytest.mark.parametrize("objective", ["makespan", "weighted_jct", "effectiveness"])
def test_rational_durations_get_an_exact_grid(objective):
    # S = 1.3: 2 GPUs on 1 + 1 -> 1.45; 10/7 s -> 29/14 s; releases in tenths -> 1/70 s
    w = workload([(0, 2, 10 / 7), (0.1, 2, 20 / 7), (0.3, 1, 1.5), (0.2, 3, 5 / 7)], sens=1.3)
    result = solve(w, METHOD[objective], time_limit=20)
    assert result.extra["exact_grid"]
    assert result.extra["time_unit"] == pytest.approx(1 / 70)
    assert result.status is Status.OPTIMAL, result.message
    check(w, result, objective)
    expected = brute_force(w, objective)
    assert result.objective == pytest.approx(expected, rel=1e-9)
    # effectiveness: E scaled to integers, the bound is above by at most SLACK / SCALE
    assert result.bound == pytest.approx(expected, rel=1e-9, abs=4e-8)


def test_qos_fractional_relaxation_bounds_the_optimum():
    w = workload([(0, 2, 10, 1.0, 22), (0.5, 2, 10, 1.0, 21.3), (1, 1, 7.3, 1.0, 9.1),
                  (1, 3, 10 / 3, 1.0, 40)], sens=1.7)
    expected = brute_force(w, "qos")
    result = solve(w, "offline-qos", time_limit=20)
    check(w, result, "qos")
    assert result.objective <= expected + 1e-9 <= result.bound + 1e-9
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(expected)


def test_genie_workload_matches_brute_force():
    # three elastic jobs (six modes each; the optimum gives two of them one GPU and misses
    # one deadline): the brute force of four took 1 CPU-s for the same rule
    w = generate_genie_workload(seed=3, nodes=2, gpus_per_node=2, density=20.0, duration=0.5)
    w = w.replace(jobs=w.jobs[:3])
    for objective in ("makespan", "qos"):
        expected = brute_force(w, objective)
        result = solve(w, METHOD[objective], time_limit=30)
        check(w, result, objective)
        assert result.status is Status.OPTIMAL, result.message
        assert result.objective == pytest.approx(expected, rel=1e-6)


def test_offline_respects_releases_and_capacity_on_random():
    rng = np.random.default_rng(3)
    specs = [(float(rng.integers(0, 20)), int(rng.choice([1, 2, 4])), float(rng.integers(1, 9) * 2))
             for _ in range(10)]
    w = workload(specs)
    result = solve(w, "offline-wct", time_limit=20)
    assert result.status.has_solution
    check(w, result, "weighted_jct")
    assert result.bound <= result.objective + 1e-9


def test_validator_schedule_rules_catch_broken_schedules():
    w = workload(CASES[1])
    good = solve(w, "offline-makespan", time_limit=20).decision
    assert validate(w, good).ok
    first, second, *rest = good.placements

    def kinds(*placements):
        return validate(w, Decision(tuple(placements))).kinds

    early = Placement(second.job, second.gpus, start=0.0, end=second.end - second.start)
    assert "release" in kinds(first, early, *rest)  # j1 arrives at 5
    stretched = Placement(first.job, first.gpus, start=first.start, end=first.end + 1)
    assert "duration" in kinds(stretched, second, *rest)
    assert "schedule" in kinds(first, *rest)  # a job missing
    assert "duplicate" in kinds(first, first, second, *rest)
    untimed = Placement(first.job, first.gpus, start=first.start)
    assert "schedule" in kinds(untimed, second, *rest)
    # every job at time 0 on the same GPUs: GPUs shared while both run
    clash = [Placement(p.job, first.gpus[: len(p.gpus)] + p.gpus[len(first.gpus):],
                       start=max(p.start, 8.0), end=max(p.start, 8.0) + p.end - p.start)
             for p in good.placements]
    assert kinds(*clash) & {"exclusive", "demand", "duration"}


def test_export_writes_the_cpsat_model_as_proto_text(tmp_path):
    w = workload(CASES[0])
    spec = get_method("sched2", "offline-wct")
    path = tmp_path / "model.txt"
    spec.export(w, path, "proto")
    proto = text_format.Parse(path.read_text(encoding="utf-8"), cp_model_pb2.CpModelProto())
    assert len(proto.variables) > 0 and proto.HasField("objective")
    with pytest.raises(InputError):
        spec.export(w, tmp_path / "model.mps", "mps")


def test_weight_with_four_decimals_is_a_one_line_input_error():
    w = generate_sched2(seed=0, jobs=3, servers=2, gpus_per_server=4)
    bad = w.replace(jobs=(w.jobs[0].replace(weight=0.12345),) + w.jobs[1:])
    result = solve(bad, "offline-wct", time_limit=5)
    assert result.status is Status.INVALID_INPUT and "weight" in result.message


def _fake_budget(monkeypatch, per_check: float) -> dict:
    """A fake clock for ``offline-wct``'s budget: each deadline check of the build costs
    ``per_check`` s, and CP-SAT, the LP bound and the branch and bound each use all the
    time they are told (recorded); they run on short real limits of their own."""
    from dlsched.formulations import backend
    from dlsched.formulations.offline import methods

    clock = FakeClock()
    install(monkeypatch, clock, backend, methods)
    seen: dict = {"checks": 0, "built_at": None}
    check = backend.Deadline.check

    def costly_check(self, stage):
        seen["checks"] += 1
        clock.advance(per_check)
        check(self, stage)

    def told(name, limit):
        if seen["built_at"] is None:
            seen["built_at"] = clock.now - 1000.0
        seen[name] = limit
        return min(limit, 0.02)  # real seconds (0.05 and 0.2 before: more CPU, the same checks)

    cpsat, lp, bnb = methods.run_cpsat, methods.lp_bound, methods.branch_and_bound

    def fake_cpsat(model, limit, *args, **kw):
        out = cpsat(model, told("cpsat", limit), *args, **kw)
        clock.advance(limit)
        return out

    def fake_lp(*args, time_limit, **kw):
        out = lp(*args, time_limit=told("lp", time_limit), **kw)
        clock.advance(time_limit)
        return out

    def fake_bnb(data, cutoff, limit):
        out = bnb(data, cutoff, told("bnb", limit))
        clock.advance(limit)
        return out

    monkeypatch.setattr(backend.Deadline, "check", costly_check)
    monkeypatch.setattr(methods, "run_cpsat", fake_cpsat)
    monkeypatch.setattr(methods, "lp_bound", fake_lp)
    monkeypatch.setattr(methods, "branch_and_bound", fake_bnb)
    return seen


def test_time_limit_covers_build_and_solve(monkeypatch):
    # 20 jobs on 2 x 4 GPUs, weighted JCT: not provable in the short real limits. A fake
    # clock (load-free): the stages after the build share what it left of the 2 s
    w = generate_sched2(seed=0, jobs=20, servers=2, gpus_per_server=4, interarrival=60.0,
                        median_duration=300.0)
    seen = _fake_budget(monkeypatch, per_check=1 / 1024)
    result = solve(w, "offline-wct", time_limit=2.0)
    left = 2.0 - seen["checks"] / 1024
    assert seen["checks"] > 0 and seen["built_at"] == pytest.approx(seen["checks"] / 1024)
    assert 0 < seen["cpsat"] < left
    if "lp" in seen:  # CP-SAT did not prove it in its real 0.02 s
        assert seen["lp"] == pytest.approx(0.1 * (left - seen["cpsat"]))
        assert seen["bnb"] == pytest.approx(left - seen["cpsat"] - seen["lp"])
        assert result.status is not Status.OPTIMAL or result.extra["bnb_complete"]
    assert result.decision is None or validate(w, result.decision).ok


def test_a_build_that_outlives_the_limit_is_no_solution(monkeypatch):
    w = generate_sched2(seed=0, jobs=20, servers=2, gpus_per_server=4, interarrival=60.0,
                        median_duration=300.0)
    seen = _fake_budget(monkeypatch, per_check=1.0)
    result = solve(w, "offline-wct", time_limit=2.0)
    assert seen["checks"] == 2 and "cpsat" not in seen
    assert result.status is Status.NO_SOLUTION and "time limit" in result.message


def test_schedule_round_trips_through_a_solution_file(tmp_path):
    from dlsched.solution_io import load_solution, save_solution

    w = workload(CASES[2])
    result = solve(w, "offline-makespan", time_limit=20)
    save_solution(w, result.decision, tmp_path / "s.json", method="offline-makespan")
    back = load_solution(tmp_path / "s.json", w)
    assert back == result.decision
    assert validate(w, back).ok


def test_a_workload_too_large_for_the_offline_model_is_refused_at_once():
    from dlsched.instances.sched2_gen import generate_sched2

    workload = generate_sched2(seed=0, jobs=200)  # 15 x 8 GPUs: billions of shapes
    result = solve(workload, "offline-makespan", time_limit=5)
    assert result.status.value == "invalid_input"
    assert "placement shapes" in result.message and result.wall_time < 5


# --------------------------------------------------------------------- branch and bound
def bnb_data(w: Instance):
    """The primal integer data of ``offline-wct`` (asserting an exact grid)."""
    from dlsched.formulations.offline.data import choose_grid, offline_data

    modes = job_modes(w)
    grid = choose_grid(w, modes, "weighted_jct")
    assert grid.exact
    return offline_data(w, "weighted_jct", grid, modes, True)


def real_value(data, raw: int) -> float:
    """Σ w_j (C_j − r_j) in seconds from the integer objective Σ W_j end_j (W = 1000 w)."""
    from dlsched.formulations.offline.data import WEIGHT_SCALE

    jobs = data.workload.jobs
    return raw * data.grid.unit / WEIGHT_SCALE - sum(j.weight * j.submit_time for j in jobs)


RANDOM_SPECS = [
    [(float(t), int(g), float(d)) for t, g, d in zip(rng.integers(0, 30, 5),
                                                     rng.choice([1, 2, 4], 5),
                                                     rng.integers(1, 12, 5) * 2, strict=True)]
    for rng in (np.random.default_rng(s) for s in range(6))]


@pytest.mark.parametrize("specs", CASES + RANDOM_SPECS)
def test_branch_and_bound_matches_brute_force(specs):
    from dlsched.formulations.offline.bnb import branch_and_bound

    w = workload(specs)
    data = bnb_data(w)
    expected = brute_force(w, "weighted_jct")
    found = branch_and_bound(data)
    assert found.complete and found.value is not None
    assert real_value(data, found.value) == pytest.approx(expected, rel=1e-9)
    # its bounds never cut the optimum off: a cutoff just above it finds it again ...
    again = branch_and_bound(data, cutoff=found.value + 1)
    assert again.complete and again.value == found.value
    # ... and a cutoff at it finds nothing better, by a finished search
    none = branch_and_bound(data, cutoff=found.value)
    assert none.complete and none.value is None
    # the schedule found is a real one: the validator accepts it
    from dlsched.formulations.offline.schedule import left_shift, timed_decision

    picks = [(s * data.grid.unit, j, data.modes[j][k]) for j, (s, k) in found.picks.items()]
    decision = timed_decision(w, left_shift(w, picks))
    assert validate(w, decision).ok
    assert evaluate(w, decision, "weighted_jct") == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("servers", "jobs", "seeds"), [(2, 10, (1, 2, 4)), (4, 8, (0, 2))])
def test_branch_and_bound_agrees_with_cpsat_proofs(servers, jobs, seeds):
    # SCHED² workloads on 2 x 4 GPUs with whole-cluster (8-GPU) jobs: the barrier bound is
    # in play (seed 2 holds none; on 4 x 4 the jobs of seeds 0 and 2 take 8 GPUs at most, half the
    # cluster: the search on four servers); CP-SAT proves these independently (one worker, no
    # wall-clock limit: the proof, not the machine's load, ends each run; at most ~0.5
    # CPU-s each; 2 x 10 seed 0, with one whole-cluster job, took CP-SAT 17 CPU-s: seeds 1
    # and 4 hold two each; 4 x 4 seed 1, whose search alone took 0.75 CPU-s, is left out)
    from dlsched.formulations.offline.bnb import branch_and_bound

    for seed in seeds:
        w = generate_sched2(seed=seed, jobs=jobs, servers=servers, gpus_per_server=4,
                            interarrival=60.0, median_duration=300.0)
        ref = solve(w, "offline-wct", time_limit=None, bnb_share=0.0)
        assert ref.status is Status.OPTIMAL, ref.message
        data = bnb_data(w)
        found = branch_and_bound(data, time_limit=None)
        assert found.complete
        assert real_value(data, found.value) == pytest.approx(ref.objective, rel=1e-9)
        assert branch_and_bound(data, cutoff=found.value + 1).value == found.value


def test_offline_wct_proves_by_branch_and_bound_when_cpsat_does_not():
    # CP-SAT may take one conflict and no presolve: it does not prove; the search does
    w = workload(CASES[2])
    expected = brute_force(w, "weighted_jct")
    weak = {"max_number_of_conflicts": 1, "cp_model_presolve": False}
    alone = solve(w, "offline-wct", time_limit=20, bnb_share=0.0, solver_options=weak)
    result = solve(w, "offline-wct", time_limit=20, bnb_share=0.5, solver_options=weak)
    check(w, result, "weighted_jct")
    assert result.status is Status.OPTIMAL and result.extra["bnb_complete"]
    assert result.objective == pytest.approx(expected, rel=1e-9)
    assert result.bound == pytest.approx(expected, rel=1e-9)
    assert alone.status is Status.FEASIBLE  # CP-SAT alone: no proof
    with pytest.raises(InputError):
        solve_schedule(w, "weighted_jct", time_limit=5, bnb_share=1.0)


def test_branch_and_bound_proves_genie_on_a_fine_grid():
    # elastic jobs (modes of different widths), no exact grid: the search proves the grid
    # model, and the bound keeps the rounding loss like CP-SAT's
    w = generate_genie_workload(seed=4, nodes=2, gpus_per_node=2, density=20.0, duration=0.5)
    w = w.replace(jobs=w.jobs[:4])
    expected = brute_force(w, "weighted_jct")
    weak = {"max_number_of_conflicts": 1, "cp_model_presolve": False}
    # 2 s: the LP bound on this fine grid runs to its share (a tenth) and returns nothing,
    # at 20 s that cost 2 CPU-s, at 5 s 0.5 (its bound is not asserted on); the search
    # proves in 51 nodes, a few ms of the ~1 s left to it
    result = solve(w, "offline-wct", time_limit=2, bnb_share=0.5, solver_options=weak)
    check(w, result, "weighted_jct")
    assert not result.extra["exact_grid"] and result.extra["bnb_complete"]
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(expected, rel=1e-6)
    assert result.bound <= expected + 1e-9


def test_lp_bound_by_hand():
    # two jobs that each need the whole 2 x 2 cluster for 10 s (5 s x slowdown 2 on 2 + 2),
    # both released at 0: one ends at 10, the other at 20, and the LP cannot do better
    # (half of each at 0 and half at 10 also costs 15 + 15)
    from dlsched.formulations.offline.lp_bound import lp_bound

    w = workload([(0, 4, 5), (0, 4, 5)])
    assert lp_bound(w, job_modes(w), period=1.0) == pytest.approx(30.0, abs=1e-6)
    assert lp_bound(w, job_modes(w), period=1.0) <= 30.0


@pytest.mark.parametrize("specs", CASES + RANDOM_SPECS)
def test_lp_bound_never_exceeds_the_brute_force_optimum(specs):
    from dlsched.formulations.offline.lp_bound import lp_bound

    w = workload(specs)
    optimum = brute_force(w, "weighted_jct")
    for period in (None, 1.0, 3.0, 7.0):
        bound = lp_bound(w, job_modes(w), period=period)
        assert bound is not None and bound <= optimum + 1e-9
    # and it is not the trivial bound Σ w (shortest duration) on every case
    trivial = sum(j.weight * min(m.duration for m in ms)
                  for j, ms in zip(w.jobs, job_modes(w), strict=True))
    assert lp_bound(w, job_modes(w), period=1.0) >= trivial - 1e-6


def test_offline_wct_lp_bound_proves_when_cpsat_stops_at_its_first_schedule():
    # eight whole-cluster jobs: CP-SAT told to stop at its first schedule (no presolve, no
    # symmetry or bound families) proves nothing; the LP bound meets that schedule
    specs = [(0, 4, d) for d in (5, 6, 7, 8, 9, 10, 11, 12)]
    w = workload(specs)
    stop = {"stop_after_first_solution": True, "cp_model_presolve": False}
    result = solve(w, "offline-wct", time_limit=20, bnb_share=0.0, symmetry=False,
                   bounds=False, solver_options=stop)
    check(w, result, "weighted_jct")
    # shortest first, one at a time (every job needs every GPU; durations doubled by the
    # 2 + 2 split): ends 10, 22, 36, ...; released together, so no order does better
    expected = float(np.cumsum([2 * d for d in range(5, 13)]).sum())
    assert result.objective == pytest.approx(expected)
    assert result.extra["lp_bound"] == pytest.approx(expected, abs=1e-4)
    assert result.status is Status.OPTIMAL
