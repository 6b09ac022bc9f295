"""Inference decisions (lists of batches) in solution files, and the validator refusing
every corrupted batch.

1. ``dlsched solve W --method edf-dp -o S`` writes the batches; ``dlsched validate`` /
   ``evaluate`` read them back through the one solution loader (round trip: same batches,
   same objective); broken inference solution files are one-line errors naming the file
   and the field (exit 2).
2. 700 corruptions of valid inference decisions (NaN / inf / huge / bool / str / float
   times, unknown GPU, model or query ids, a query served twice, overlapping batches on one
   GPU, wrong durations, a start before a query's arrival, a batch bigger than the delay
   table allows, non-batch objects): every one is refused by :func:`dlsched.validate.validate`
   with one-line messages; none is accepted, none crashes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random

import pytest

from dlsched.cli import main
from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.instance_io import load_instance
from dlsched.instances.inference_gen import generate_inference
from dlsched.problems.inference import Batch, InferenceDecision, inference_data
from dlsched.serve.run import run_policy
from dlsched.solution_io import load_solution, save_solution
from dlsched.solve import solve
from dlsched.validate import validate

PER_PROBLEM = 700
"""Corruptions tried: each kind first in 50 of them (14 kinds), more as a second kind."""


# ------------------------------------------------------------------ solution files (CLI)
@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """(workload file, solution file, objective printed): one p2, exact delays."""
    tmp = tmp_path_factory.mktemp("inference-io")
    path, sol = tmp / "w.json", tmp / "s.json"
    # 21 queries, 12 batches (60 queries cost edf-dp 7x the CPU for the same file)
    assert main(["generate", "inference", "--gpus", "p2:1", "--hours", "0.001",
                 "--peak-qps", "5", "--delay-cv", "0", "--seed", "3", "-o", str(path)]) == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["solve", str(path), "--method", "edf-dp", "-o", str(sol)]) == 0
    return path, sol, _objective(buf.getvalue())


def _objective(out: str) -> float:
    return float(next(line.split()[1] for line in out.splitlines()
                      if line.startswith("objective")))


def test_solve_writes_batches_and_validate_reads_them(solved, capsys):
    workload, sol, objective = solved
    doc = json.loads(sol.read_text())
    assert doc["format_version"] == 1 and doc["problem"] == "inference"
    assert doc["placements"] == [] and doc["batches"]
    assert set(doc["batches"][0]) == {"gpu", "model", "start_ms", "end_ms", "queries"}
    assert main(["validate", str(workload), str(sol)]) == 0
    assert capsys.readouterr().out.strip() == "feasible"
    assert main(["evaluate", str(workload), str(sol)]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(objective, rel=1e-9)
    assert objective > 0


def test_round_trip_keeps_every_batch(tmp_path):
    # 15 queries, 9 batches (29 queries cost edf-dp 3x the CPU for the same round trip)
    inst = generate_inference(seed=4, gpus="g2:1,p2:1", hours=0.0005, peak_qps=8, delay_cv=0.0)
    result = solve(inst, "edf-dp")
    assert validate(inst, result.decision).ok
    for name in ("s.json", "s.json.gz"):
        save_solution(inst, result.decision, tmp_path / name, method="edf-dp")
        back = load_solution(tmp_path / name, inst)
        assert isinstance(back, InferenceDecision)
        assert back.batches == result.decision.batches
    # a simulated schedule (numpy-typed indices inside) round-trips too
    run, _ = run_policy(inst, "heuristic", {})
    save_solution(inst, run.decision(), tmp_path / "h.json")
    assert load_solution(tmp_path / "h.json", inst).batches == run.decision().batches


def _broken(solved, tmp_path, capsys, edit) -> str:
    workload, sol, _ = solved
    doc = json.loads(sol.read_text())
    edit(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["validate", str(workload), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and "Traceback" not in err
    return err


@pytest.mark.parametrize("edit,field", [
    (lambda d: d["batches"][0].__setitem__("start_ms", "10"), "batches[0].start_ms"),
    (lambda d: d["batches"][0].__setitem__("end_ms", 1.5), "batches[0].end_ms"),
    (lambda d: d["batches"][1]["queries"].append(-1), "batches[1].queries["),
    (lambda d: d["batches"][0].__setitem__("queries", "0"), "batches[0].queries"),
    (lambda d: d["batches"][0].pop("gpu"), "batches[0].gpu"),
    (lambda d: d["batches"][0].__setitem__("gpu", 3), "batches[0].gpu"),
    (lambda d: d["batches"][0].__setitem__("size", 8), "batches[0]"),
    (lambda d: d["batches"][0].__setitem__("start_ms", 10**13), "batches[0].start_ms"),
    (lambda d: d.__setitem__("batches", {"a": 1}), "batches"),
    (lambda d: d.pop("batches"), "batches"),
    (lambda d: d.__setitem__("placements", [{"job": "j", "gpus": ["gpu0"]}]), "placements"),
    (lambda d: d.__setitem__("problem", "horus"), "problem"),
])
def test_broken_inference_solution_is_one_line_naming_file_and_field(
        solved, tmp_path, capsys, edit, field):
    err = _broken(solved, tmp_path, capsys, edit)
    assert f": {field}" in err and str(solved[0]) not in err, err


def test_a_semantically_wrong_file_loads_and_is_infeasible(solved, tmp_path, capsys):
    """Well-typed but wrong (a query served twice): exit 1 with the validator's reason."""
    workload = solved[0]
    doc = json.loads(solved[1].read_text())
    sol = tmp_path / "s.json"
    doc["batches"][1]["queries"].append(doc["batches"][0]["queries"][0])
    sol.write_text(json.dumps(doc))
    assert main(["validate", str(workload), str(sol)]) == 1
    assert "[duplicate]" in capsys.readouterr().out
    with pytest.raises(InputError):
        load_solution(sol, generate_inference(seed=9, hours=0.002, peak_qps=5))


def test_batches_in_a_placement_problem_are_refused(tmp_path, capsys):
    inst = tmp_path / "h.json"
    assert main(["generate", "horus", "--nodes", "2", "--gpus-per-node", "2", "--beta", "2",
                 "--seed", "1", "-o", str(inst)]) == 0
    sol = tmp_path / "s.json"
    assert main(["solve", str(inst), "--method", "greedy", "-o", str(sol)]) == 0
    capsys.readouterr()
    doc = json.loads(sol.read_text())
    doc["batches"] = []
    sol.write_text(json.dumps(doc))
    assert main(["validate", str(inst), str(sol)]) == 2
    err = capsys.readouterr().err
    assert f"{sol}: batches:" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------ validator corruption fuzz
@pytest.fixture(scope="module")
def decisions():
    """[(instance, valid decision)] from several methods and clusters (a noisy instance's
    decisions, like every decision, last the delay table's durations)."""
    out = []
    for seed, gpus, peak, cv in ((1, "p2:1", 24, 0.0), (2, "g2:1,p2:1", 40, 0.0),
                                 (3, "g2:2,p2:1", 55, 0.1)):
        # 3.6 s of queries: 23-83 batches per decision (edf-dp's below: 24), each
        # corruption hits one of them (7.2 s, 39-141, cost the corruption test 1.4x the
        # CPU, 14.4 s twice that: the validator reads every batch each time)
        inst = generate_inference(seed=seed, gpus=gpus, hours=0.001, peak_qps=peak,
                                  delay_cv=cv)
        for pol in ("heuristic", "fixed"):
            out.append((inst, solve(inst, pol, seed=seed).decision))
    small = generate_inference(seed=4, gpus="p2:1", hours=0.001, peak_qps=10,
                               delay_cv=0.0)
    out.append((small, solve(small, "edf-dp").decision))
    for inst, decision in out:
        assert validate(inst, decision).ok
        assert len(decision.batches) >= 2
        # the corruption test checks only the batches it corrupted for broken fields
        assert not any(_bad_fields(b, inference_data(inst)) for b in decision.batches)
    return out


BAD_NUMBERS = [float("nan"), float("inf"), float("-inf"), 1e13, -1e13, 1e308, 10**400,
               2**70, -(10**13), True, False, "0", "12", [0], None, 1500.0, 0.5]


def _two_on_one_gpu(batches):
    by_gpu: dict[str, list[int]] = {}
    for k, b in enumerate(batches):
        if isinstance(b, Batch) and isinstance(b.gpu, str):
            by_gpu.setdefault(b.gpu, []).append(k)
    return [ks for ks in by_gpu.values() if len(ks) >= 2]


def _corrupt(kind, rng, inst, batches, touched):  # noqa: C901 - one branch per corruption
    """Apply one corruption of ``kind`` in place, adding the index of the batch it changes
    to ``touched`` (a superset is harmless); returns the violation kinds that must appear
    (any refusal is enough when empty)."""
    data = inference_data(inst)
    n_q = data.num_queries
    k = rng.randrange(len(batches))
    touched.add(k)
    b = batches[k]
    if not isinstance(b, Batch):  # an earlier corruption of this decision replaced it
        batches[k] = rng.choice([None, (0, 1), "batch"])
        return set()
    if kind in ("start", "end"):
        batches[k] = dataclasses.replace(b, **{kind: rng.choice(BAD_NUMBERS)})
        return {"number"}
    if kind == "gpu":
        batches[k] = dataclasses.replace(b, gpu=rng.choice(["gpu9", "", "GPU0", 0, None]))
        return set()
    if kind == "model":
        batches[k] = dataclasses.replace(b, model=rng.choice(["huge", "Full", "", 1, None]))
        return set()
    if kind == "unknown_query":
        q = rng.choice([n_q, n_q + 7, -1, -n_q - 1, 10**6])
        batches[k] = dataclasses.replace(b, queries=(*b.queries, q))
        return set()
    if kind == "query_type":
        qs = list(b.queries)
        qs[rng.randrange(len(qs))] = rng.choice([True, False, "0", 1.0, float("nan"), None])
        batches[k] = dataclasses.replace(b, queries=tuple(qs))
        return {"structure"}
    if kind == "queries_type":
        batches[k] = dataclasses.replace(b, queries=rng.choice(["01", None, 3, {0: 1}]))
        return {"structure"}
    if kind == "twice":
        other = batches[rng.randrange(len(batches))]
        q = rng.choice(other.queries)
        batches[k] = dataclasses.replace(b, queries=(*b.queries, q))
        return set()  # duplicate, or a batch size / duration change it causes
    if kind == "empty":
        batches[k] = dataclasses.replace(b, queries=())
        return {"empty_batch"}
    if kind == "overlap":
        groups = [ks for ks in _two_on_one_gpu(batches)
                  if not any(_broken_batch(batches, k, touched, data) for k in ks)]
        ks = rng.choice(groups)
        i, j = rng.sample(ks, 2)
        touched.add(j)
        a, c = batches[i], batches[j]
        shift = a.start - c.start + rng.randrange(0, max(1, a.end - a.start))
        batches[j] = dataclasses.replace(c, start=c.start + shift, end=c.end + shift)
        return {"overlap"}
    if kind == "duration":
        delta = rng.choice([-1, 1, 2, -5, 17, 1000, -(b.end - b.start)])
        batches[k] = dataclasses.replace(b, end=b.end + delta)
        return {"duration"}
    if kind == "release":
        latest = max(int(data.arrival[q]) for q in b.queries)
        shift = b.start - latest + 1 + rng.randrange(0, 50)
        batches[k] = dataclasses.replace(b, start=b.start - shift, end=b.end - shift)
        return {"release"}
    if kind == "too_big":
        # more queries than the model's largest batch on this GPU's type
        g = data.gpu_index[b.gpu]
        m = data.model_index[b.model]
        cap = data.max_batch(m, int(data.gpu_type[g]))
        qs = list(range(n_q)) * (cap // max(n_q, 1) + 2)
        batches[k] = dataclasses.replace(b, queries=tuple(qs[:cap + 1 + rng.randrange(5)]))
        return {"batch_size"}
    if kind == "not_a_batch":
        batches[k] = rng.choice([b.to_dict(), None, (b.gpu, b.model), "batch"])
        return {"structure"}
    raise AssertionError(kind)


KINDS = ["start", "end", "gpu", "model", "unknown_query", "query_type", "queries_type",
         "twice", "empty", "overlap", "duration", "release", "too_big", "not_a_batch"]


def test_corrupted_inference_decisions_are_never_accepted(decisions):
    rng = random.Random("inference")
    accepted, counts = [], dict.fromkeys(KINDS, 0)
    for i in range(PER_PROBLEM):
        inst, decision = decisions[i % len(decisions)]
        data = inference_data(inst)
        batches = list(decision.batches)
        touched: set[int] = set()  # the batches corrupted so far: only these can be broken
        need: set[str] = set()
        kinds = [KINDS[i % len(KINDS)]] + [rng.choice(KINDS) for _ in
                                           range(rng.choice([0, 0, 0, 1, 2]))]
        for kind in kinds:
            if kind == "overlap" and not any(
                    not any(_broken_batch(batches, k, touched, data) for k in ks)
                    for ks in _two_on_one_gpu(batches)):
                continue
            if any(not isinstance(batches[k], Batch) for k in touched) and kind not in (
                    "not_a_batch", "start", "end"):
                continue  # the helpers read fields of the batches
            if kind in ("twice", "release", "too_big", "duration") and any(
                    _broken_batch(batches, k, touched, data) for k in touched):
                continue
            counts[kind] += 1
            need |= _corrupt(kind, rng, inst, batches, touched)
        report = validate(inst, InferenceDecision(batches=tuple(batches)))
        if report.ok:
            accepted.append((kinds, batches))
            continue
        for v in report.violations:
            assert "\n" not in str(v)
        if len(kinds) == 1:
            assert need <= report.kinds, (kinds, [str(v) for v in report.violations])
    assert accepted == []
    assert min(counts.values()) >= 50, counts


def _broken_batch(batches, k, touched, data) -> bool:
    """:func:`_bad_fields` of batch ``k``, read only when a corruption touched it: the
    ``decisions`` fixture checks that no uncorrupted batch has bad fields, and scanning
    every batch of every decision after each corruption cost 1/4 of the test's CPU."""
    return k in touched and _bad_fields(batches[k], data)


def _bad_fields(b, data) -> bool:
    """A batch an earlier corruption broke (the field-reading corruptions skip those)."""
    if not isinstance(b, Batch) or not isinstance(b.queries, tuple) or not b.queries:
        return True
    if b.gpu not in data.gpu_index or b.model not in data.model_index:
        return True
    ints = (b.start, b.end, *b.queries)
    return any(not isinstance(v, int) or isinstance(v, bool) or abs(v) > 10**12
               for v in ints) or any(not 0 <= q < data.num_queries for q in b.queries)


def test_the_uncorrupted_decisions_pass_and_placements_are_refused(decisions):
    inst, decision = decisions[0]
    assert validate(inst, decision).ok
    mixed = InferenceDecision(placements=(Placement("j0", ("gpu0",)),),
                              batches=decision.batches)
    assert not validate(inst, mixed).ok
    assert not validate(inst, Decision((Placement("j0", ("gpu0",)),))).ok


def test_a_solution_claiming_1_ms_batches_is_refused_on_a_noisy_instance(tmp_path, capsys):
    # issue 32, item 5: with delay_cv > 0 every query alone in a 1-ms batch used to pass
    # and beat edf-dp; a batch lasts the instance's delay, whatever the solution claims
    workload = tmp_path / "w.json"
    # 29 queries (--hours 0.001): the honest schedule still has batches of 1, 2 and 4
    # (35 queries, the same sizes, took edf-dp 2x the CPU; 80 took 1.5 CPU-s)
    assert main(["generate", "inference", "--gpus", "g2:1,p2:1", "--hours", "0.001",
                 "--peak-qps", "8", "--seed", "1", "-o", str(workload)]) == 0
    inst = load_instance(workload)
    data = inference_data(inst)
    assert data.delay_cv == 0.1  # the generator's default
    rows, free = [], dict.fromkeys(data.gpu_ids, 0)
    for q in range(data.num_queries):
        gpu = min(free, key=free.get)
        start = max(free[gpu], int(data.arrival[q]))
        rows.append({"gpu": gpu, "model": "full", "start_ms": start, "end_ms": start + 1,
                     "queries": [q]})
        free[gpu] = start + 1
    lie = tmp_path / "lie.json"
    lie.write_text(json.dumps({"format_version": 1, "problem": "inference",
                               "instance_sha256": inst.sha256, "placements": [],
                               "batches": rows}))
    capsys.readouterr()
    assert main(["validate", str(workload), str(lie)]) != 0
    assert "duration" in capsys.readouterr().out
    assert main(["evaluate", str(workload), str(lie)]) != 0
    honest = solve(inst, "edf-dp")
    assert validate(inst, honest.decision).ok
    assert max(len(b.queries) for b in honest.decision.batches) > 1
    for b in honest.decision.batches:  # the honest schedule lasts the table's delays
        n = len(b.queries)
        assert b.end - b.start == data.duration(data.model_index[b.model],
                                                int(data.gpu_type[data.gpu_index[b.gpu]]), n)
