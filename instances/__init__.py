"""Seeded instance generators, trace importers and the pinned instance library.

``GENERATOR_MODULES`` names the module that registers each ``dlsched generate`` word; the
registry imports it the first time generators are listed (``dlsched.registry.generators``).
"""

from dlsched.registry import declare_generators

GENERATOR_MODULES: dict[str, str] = {
    "genie": "genie_gen",
    "horus": "horus_gen",
    "horus-workload": "horus_gen",
    "inference": "inference_gen",
    "liquid": "liquid_gen",
    "liquid-workload": "liquid_gen",
    "sched2": "sched2_gen",
}
"""Generator name → module of this package whose import registers it."""

declare_generators(__name__, GENERATOR_MODULES)
