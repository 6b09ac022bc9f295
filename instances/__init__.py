"""Seeded instance generators, trace importers and the pinned instance library.

Importing the package registers every generator module listed below.
"""

from . import genie_gen, horus_gen, inference_gen, liquid_gen, sched2_gen  # noqa: F401  (registration)
