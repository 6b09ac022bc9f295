"""One fresh interpreter that several test files question in turn (test_lean_import,
test_interrupt, test_backend_exact, test_registry_tables, test_cli): each needs a process that has
not imported the package yet, and each such process paid Python's start-up and the same
imports again (~0.4-1.9 CPU-s apiece). The steps run in an order where none spoils a later
one's question:

1. ``import dlsched`` alone: which heavy libraries it loaded (none), and whether it left
   SIGINT's handler alone;
2. the registry's register functions wrapped to note which module calls each (they pass
   the call on unchanged, and import nothing), before any provider module loads;
3. resolving one method (only its own module loads), solving with greedy and the exact
   model on CP-SAT and HiGHS (the solver libraries load on demand), the face's names;
   ``dlsched generate --help`` through the command's main(), the command line's modules
   imported by it as by ``python -m dlsched.cli`` (no generator module loaded before);
4. ortools, highspy and pyscipopt used side by side, in that order of first import;
5. every module of the three provider packages imported: the registrations noted.

:func:`run` runs it and returns what each step saw; the ``fresh`` fixture
(tests/conftest.py) runs it once per test session and hands its answer to every test.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("ortools", "pulp", "highspy", "pyscipopt", "torch", "pandas", "matplotlib", "scipy",
         "pyarrow")
FACE = ("solve", "simulate", "load_instance", "validate", "evaluate", "Result", "Status",
        "results_frame", "relative_gap", "is_proven_optimal", "MethodError", "MethodOutput",
        "InputError", "Decision", "Instance", "Cluster")

CODE = f"""
import json, pkgutil, signal, sys
from importlib import import_module
out = {{}}
import dlsched
out["heavy_after_import"] = sorted(m for m in {HEAVY!r} if m in sys.modules)
out["sigint_default"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler

import dlsched.registry as registry, dlsched.state as state
seen = {{"method": {{}}, "generator": {{}}, "view": {{}}}}

def recorder(kind, key, original):
    def record(spec):
        seen[kind][json.dumps(key(spec))] = sys._getframe(1).f_globals["__name__"]
        return original(spec)
    return record

registry.register_method = recorder("method", lambda s: [s.problem, s.name],
                                    registry.register_method)
registry.register_generator = recorder("generator", lambda s: s.key,
                                       registry.register_generator)
state.register_view_policy = recorder("view", lambda p: [p.problem, p.method],
                                      state.register_view_policy)
out["heavy_after_recorders"] = sorted(m for m in {HEAVY!r} if m in sys.modules)

registry.get_method("horus", "greedy")
out["after_get_method"] = [m in sys.modules for m in (
    "dlsched.heuristics.horus", "dlsched.heuristics.liquid", "dlsched.formulations.horus")]
from dlsched import Instance, Job, homogeneous_cluster
inst = Instance(problem="horus", cluster=homogeneous_cluster(1, 2, gpu_mem_gb=8.0),
                jobs=(Job(id="a", num_gpus=1, gpu_util=10.0, gpu_mem_gb=1.0),), params={{}})
out["solved"] = []
for method, backend in (("greedy", None), ("exact", "cpsat"), ("exact", "highs")):
    r = dlsched.solve(inst, method, backend=backend)
    out["solved"].append([r.status.value, len(r.decision.placements)])
out["solvers_loaded"] = ["pulp" in sys.modules, "ortools" in sys.modules]
out["face"] = {{name: getattr(dlsched, name).__module__ for name in {FACE!r}}}

import contextlib, io
out["generators_loaded_before_cli"] = sorted(
    m for m in sys.modules if m.startswith("dlsched.instances.") and m.endswith("_gen"))
import dlsched.cli
text = io.StringIO()
try:
    with contextlib.redirect_stdout(text):
        dlsched.cli.main(["generate", "--help"])
except SystemExit as stop:
    out["generate_help"] = [stop.code, text.getvalue()]

import ortools.sat.python.cp_model as cp, highspy, pyscipopt
m = cp.CpModel(); x = m.new_bool_var('x'); m.maximize(x)
s = cp.CpSolver(); assert s.solve(m) == cp.OPTIMAL
h = highspy.Highs(); h.setOptionValue('output_flag', False)
h.addVar(0, 1); h.changeColCost(0, -1); h.run()
assert abs(h.getInfo().objective_function_value + 1) < 1e-9
p = pyscipopt.Model(); p.hideOutput(); v = p.addVar(vtype='B', obj=-1); p.optimize()
assert p.getStatus() == 'optimal' and abs(p.getObjVal() + 1) < 1e-9
out["solver_versions"] = [pyscipopt.__version__, highspy.Highs().version()]

for package in ("dlsched.formulations", "dlsched.heuristics", "dlsched.instances"):
    for info in pkgutil.walk_packages(import_module(package).__path__, package + "."):
        import_module(info.name)
seen["declared"] = {{
    "method": {{json.dumps(list(k)): m for k, m in registry._METHOD_MODULES.items()}},
    "generator": {{json.dumps(k): m for k, m in registry._GENERATOR_MODULES.items()}}}}
out["registered"] = seen
print(json.dumps(out))
"""


def run() -> dict:
    """What a fresh interpreter saw at each step of :data:`CODE`."""
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)
