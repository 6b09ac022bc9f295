"""Exact models, one module per problem.

``METHOD_MODULES`` names the module that registers each method; the registry imports it
the first time the method is asked for or listed (``dlsched.registry.get_method``).
"""

from dlsched.registry import declare_methods

METHOD_MODULES: dict[tuple[str, str], str] = {
    ("genie", "exact"): "genie",
    ("genie", "offline-makespan"): "offline.methods",
    ("genie", "offline-qos"): "offline.methods",
    ("genie", "offline-wct"): "offline.methods",
    ("horus", "exact"): "horus",
    ("inference", "edf-dp"): "inference_edf",
    ("inference", "exact"): "inference",
    ("inference", "lagrange"): "inference_lagrange",
    ("liquid", "exact"): "liquid",
    ("sched2", "offline-effectiveness"): "offline.methods",
    ("sched2", "offline-makespan"): "offline.methods",
    ("sched2", "offline-qos"): "offline.methods",
    ("sched2", "offline-wct"): "offline.methods",
}
"""(problem, method) → module of this package whose import registers it."""

declare_methods(__name__, METHOD_MODULES)
