"""Heuristics and the papers' baselines, one module per problem.

``METHOD_MODULES`` names the module that registers each method; the registry imports it
the first time the method is asked for or listed (``dlsched.registry.get_method``).
"""

from dlsched.registry import declare_methods

METHOD_MODULES: dict[tuple[str, str], str] = {
    ("genie", "capacity"): "genie",
    ("genie", "fifo"): "genie",
    ("genie", "minmin"): "genie",
    ("genie", "swaf"): "genie",
    ("genie", "tetris-cer"): "genie",
    ("genie", "tetris-perf"): "genie",
    ("genie", "wfair"): "genie",
    ("horus", "fifo"): "horus",
    ("horus", "greedy"): "horus",
    ("horus", "obp"): "horus",
    ("horus", "pab"): "horus_pab",
    ("inference", "fixed"): "inference",
    ("inference", "heuristic"): "inference",
    ("inference", "learned-batching"): "inference_pg",
    ("liquid", "bestfit"): "liquid_bestfit",
    ("liquid", "firstfit"): "liquid",
    ("liquid", "gga"): "liquid",
    ("liquid", "gga-ls"): "liquid_jobwise",
    ("liquid", "pack"): "liquid",
    ("liquid", "random"): "liquid",
    ("liquid", "spread"): "liquid",
    ("sched2", "dqn"): "sched2_dqn",
    ("sched2", "dsif"): "sched2",
    ("sched2", "fifo"): "sched2",
    ("sched2", "learned-priority"): "sched2_priority",
    ("sched2", "lrf"): "sched2",
    ("sched2", "saf"): "sched2",
    ("sched2", "sif"): "sched2",
    ("sched2", "spf"): "sched2",
}
"""(problem, method) → module of this package whose import registers it."""

declare_methods(__name__, METHOD_MODULES)
