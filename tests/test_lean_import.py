"""``import dlsched`` stays lean: solver libraries, torch and the data stack load on first
use, in a fresh interpreter each time (this process has long imported them)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("ortools", "pulp", "highspy", "pyscipopt", "torch", "pandas", "matplotlib", "scipy",
         "pyarrow")


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_import_leaves_the_heavy_libraries_out_and_solve_imports_them_on_demand():
    code = f"""
import sys
import dlsched
print(*sorted(m for m in {HEAVY!r} if m in sys.modules) or ["none"])
from dlsched import Instance, Job, homogeneous_cluster
inst = Instance(problem="horus", cluster=homogeneous_cluster(1, 2, gpu_mem_gb=8.0),
                jobs=(Job(id="a", num_gpus=1, gpu_util=10.0, gpu_mem_gb=1.0),), params={{}})
for method, backend in (("greedy", None), ("exact", "highs"), ("exact", "cpsat")):
    r = dlsched.solve(inst, method, backend=backend)
    print(r.status.value, len(r.decision.placements))
print("pulp" in sys.modules, "ortools" in sys.modules)
"""
    # one job, two idle GPUs: placing it is optimal (a waiting job pays its penalty)
    assert _run(code) == ["none", "feasible", "1", "optimal", "1", "optimal", "1",
                          "True", "True"]


def test_a_method_imports_only_its_own_module():
    code = """
import sys
from dlsched.registry import get_method
get_method("horus", "greedy")
print(*(m in sys.modules for m in ("dlsched.heuristics.horus", "dlsched.heuristics.liquid",
                                   "dlsched.formulations.horus")))
"""
    assert _run(code) == ["True", "False", "False"]


def test_the_face_exports_the_documented_api():
    code = """
import dlsched
for name in ("solve", "simulate", "load_instance", "validate", "evaluate", "Result",
             "Status", "results_frame", "relative_gap", "is_proven_optimal", "MethodError",
             "MethodOutput", "InputError", "Decision", "Instance", "Cluster"):
    print(name, getattr(dlsched, name).__module__)
"""
    got = dict(zip(*[iter(_run(code))] * 2, strict=True))
    assert got["MethodError"] == "dlsched.errors"
    assert got["MethodOutput"] == got["Result"] == "dlsched.result"
    assert got["solve"] == "dlsched.solve"
    assert got["simulate"] == "dlsched.simulate.engine"
