"""``import dlsched`` stays lean: solver libraries, torch and the data stack load on first
use, in a fresh interpreter (this process has long imported them). One interpreter runs
every check below in turn, each before anything that could spoil it: importing the
package, then resolving one method, then solving, then the face's names; each test
asserts on its own part of that run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("ortools", "pulp", "highspy", "pyscipopt", "torch", "pandas", "matplotlib", "scipy",
         "pyarrow")
FACE = ("solve", "simulate", "load_instance", "validate", "evaluate", "Result", "Status",
        "results_frame", "relative_gap", "is_proven_optimal", "MethodError", "MethodOutput",
        "InputError", "Decision", "Instance", "Cluster")

CODE = f"""
import json, sys
out = {{}}
import dlsched
out["heavy_after_import"] = sorted(m for m in {HEAVY!r} if m in sys.modules)
from dlsched.registry import get_method
get_method("horus", "greedy")
out["after_get_method"] = [m in sys.modules for m in (
    "dlsched.heuristics.horus", "dlsched.heuristics.liquid", "dlsched.formulations.horus")]
from dlsched import Instance, Job, homogeneous_cluster
inst = Instance(problem="horus", cluster=homogeneous_cluster(1, 2, gpu_mem_gb=8.0),
                jobs=(Job(id="a", num_gpus=1, gpu_util=10.0, gpu_mem_gb=1.0),), params={{}})
out["solved"] = []
for method, backend in (("greedy", None), ("exact", "highs"), ("exact", "cpsat")):
    r = dlsched.solve(inst, method, backend=backend)
    out["solved"].append([r.status.value, len(r.decision.placements)])
out["solvers_loaded"] = ["pulp" in sys.modules, "ortools" in sys.modules]
out["face"] = {{name: getattr(dlsched, name).__module__ for name in {FACE!r}}}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def fresh() -> dict:
    """What the fresh interpreter saw at each step (:data:`CODE`)."""
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_import_leaves_the_heavy_libraries_out_and_solve_imports_them_on_demand(fresh):
    assert fresh["heavy_after_import"] == []
    # one job, two idle GPUs: placing it is optimal (a waiting job pays its penalty)
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
