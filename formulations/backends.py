"""Which adapter serves which backend: :func:`new_model` (the interface lives in
``backend.py``; each adapter imports it, so the choice lives here, above all three).

An adapter, and its solver library, is imported the first time a model asks for it.
"""

from __future__ import annotations

from dlsched.errors import InputError

from .backend import BACKENDS, PULP_BACKENDS, Deadline, LinearModel


def new_model(backend: str, name: str, deadline: Deadline | None = None) -> LinearModel:
    """An empty model on ``backend`` (one of :data:`BACKENDS`), built within ``deadline``."""
    model: LinearModel
    if backend in PULP_BACKENDS:
        from .pulp_backend import PulpModel

        model = PulpModel(name, backend)
    elif backend == "cpsat":
        from .cpsat_backend import CpSatModel

        model = CpSatModel(name)
    else:
        raise InputError(f"unknown backend {backend!r}", field="backend",
                         fix=f"use one of: {', '.join(BACKENDS)}")
    model.deadline = deadline or Deadline(None)
    return model
