"""Open rate models: problems register them, the simulator binds them by name, a new one
needs no edit of the simulator, and dlsched.simulate names no problem."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.errors import InputError
from dlsched.problems import get_problem, rates
from dlsched.problems.rates import (
    GroupLocality,
    Interference,
    SpeedModel,
    register_interference,
    register_locality,
)
from dlsched.simulate import job_table, simulate

SIMULATE = Path(__file__).resolve().parents[1] / "solver" / "simulate"
FORMULATIONS = Path(__file__).resolve().parents[1] / "formulations"


class HalfOffServer(GroupLocality):
    """A new paper's locality: 1.5x slower when the job spans several servers."""

    group = "gpu_node"

    def counts_slowdown(self, job, counts):
        return 1.0 if len(counts) == 1 else 1.5


class HalveShared(Interference):
    """A new paper's interference: a job on a GPU holding more than 100 % runs at half rate."""

    def factor(self, own_util, gpus, cum_util):
        return 0.5 if max(cum_util[g] for g in gpus) > 100.0 else 1.0


@pytest.fixture
def fresh_registry(monkeypatch):
    """Registrations made by a test are undone after it."""
    monkeypatch.setattr(rates, "_LOCALITY", dict(rates._LOCALITY))
    monkeypatch.setattr(rates, "_INTERFERENCE", dict(rates._INTERFERENCE))


def _spread_workload() -> Instance:
    # 2 servers x 1 GPU: the 2-GPU job must span both, the 1-GPU job runs on one
    jobs = (Job(id="wide", submit_time=0.0, num_gpus=2, duration=10.0, model="vgg16"),
            Job(id="one", submit_time=20.0, num_gpus=1, duration=10.0, model="vgg16"))
    return Instance(problem="sched2", cluster=homogeneous_cluster(2, 1), jobs=jobs, params={})


def test_a_new_locality_model_runs_without_editing_the_simulator(fresh_registry, monkeypatch):
    register_locality("half-off-server", HalfOffServer)
    assert "half-off-server" in rates.locality_names()
    w = _spread_workload()
    table = job_table(simulate(w, "fifo", SpeedModel(locality="half-off-server")))
    table = table.set_index("job")
    assert table.loc["wide", "end"] == 15.0  # 10 s x 1.5
    assert table.loc["one", "end"] == 30.0  # 20 + 10: one server, no slowdown
    # the problem names it as its default: the simulator's default run uses it
    monkeypatch.setattr(type(get_problem("sched2")), "default_locality", "half-off-server")
    assert SpeedModel.for_workload(w).locality == "half-off-server"
    assert job_table(simulate(w, "fifo")).set_index("job").loc["wide", "end"] == 15.0


def test_a_new_interference_model_runs_without_editing_the_simulator(fresh_registry):
    register_interference("halve-shared", HalveShared)
    jobs = tuple(Job(id=f"h{k}", submit_time=0.0, num_gpus=1, duration=10.0, gpu_util=60.0,
                     gpu_mem_gb=2.0) for k in range(2))
    w = Instance(problem="horus", cluster=homogeneous_cluster(1, 1, gpu_mem_gb=8.0), jobs=jobs,
                 params={})
    run = simulate(w, "obp", SpeedModel(interference="halve-shared"))
    # both share the one GPU (U = 120 %): half rate each, 10 s of work end at 20 s
    assert [r.end for r in run.records] == [20.0, 20.0]


@pytest.mark.parametrize("problem, locality, interference", [
    ("sched2", "sched2", None), ("horus", None, "horus"), ("genie", "genie", None),
    ("liquid", "liquid", None), ("inference", None, None)])
def test_each_problem_names_its_own_rate_models(problem, locality, interference):
    model = SpeedModel.default_for(problem)
    assert (model.locality, model.interference) == (locality, interference)


def test_the_registered_models():
    assert rates.locality_names() == ("gavel", "genie", "liquid", "liquid_distance", "sched2")
    assert rates.interference_names() == ("horus", "horus-linear")


@pytest.mark.parametrize("kwargs, field", [
    ({"locality": "nope"}, "speed.locality"),
    ({"interference": "nope"}, "speed.interference"),
    ({"reference": "nope"}, "speed.reference"),
    ({"locality": "genie", "reference": "packed"}, "speed.reference"),
    ({"locality": "liquid", "reference": "packed"}, "speed.reference")])
def test_bad_speed_models_are_input_errors(kwargs, field):
    with pytest.raises(InputError) as err:
        SpeedModel(**kwargs)
    assert err.value.field == field


def test_packed_reference_only_where_the_model_counts_groups():
    assert SpeedModel(locality="sched2", reference="packed").reference == "packed"
    assert SpeedModel(locality="gavel", reference="packed").reference == "packed"
    assert SpeedModel(locality=None, reference="packed").reference == "packed"


def test_interference_factor_is_one_without_a_model():
    bound = SpeedModel().bind(_spread_workload())
    assert not bound.interference
    assert bound.interference_factor(50.0, np.array([0]), np.array([150.0, 0.0])) == 1.0


def _imports_and_strings(path: Path) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    imports, strings = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            imports |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imports |= {a.name for a in node.names}
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in docstrings):
            strings.add(node.value)
    return imports, strings


def test_the_simulator_names_no_problem_and_no_rate_model():
    papers = {"sched2", "horus", "genie", "liquid"}
    names = papers | set(rates.locality_names()) | set(rates.interference_names())
    for path in sorted(SIMULATE.glob("*.py")):
        imports, strings = _imports_and_strings(path)
        assert not names & strings, f"{path.name} names {sorted(names & strings)}"
        paper_imports = {i for i in imports for p in papers if f"problems.{p}" in i}
        assert not paper_imports, f"{path.name} imports {sorted(paper_imports)}"


def test_formulations_import_no_simulator_and_no_generator():
    for path in sorted(FORMULATIONS.rglob("*.py")):
        imports, _ = _imports_and_strings(path)
        bad = {i for i in imports if i.startswith(("dlsched.simulate", "dlsched.instances"))}
        assert not bad, f"{path.relative_to(FORMULATIONS)} imports {sorted(bad)}"
