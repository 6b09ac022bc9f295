"""The coefficients of GENIE's performance model (:mod:`dlsched.problems.genie.model`):
one :class:`ModelCoefficients` record per task type, checked on construction, and the
shipped values (``solver/data/genie_coefficients.json``, derived by
``instances/derive/genie_coefficients.py``; docs/genie-model.md)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

_COEFFICIENT_FILE = "genie_coefficients.json"


def check_finite(name: str, value: float) -> None:
    """Raise ValueError when ``value`` (called ``name``) is not a finite number."""
    if not math.isfinite(value):
        raise ValueError(f"{name} = {value!r}: must be a finite number")


@dataclass(frozen=True)
class ModelCoefficients:
    """Prediction-model coefficients of one task type on one platform.

    Parameters
    ----------
    k0, k1, k2 : float
        Coefficients of the quadratic single-GPU training rate of Eq. 7,
        ``q(b) = k0 + k1*b + k2*b**2`` (samples/s, ``b`` the local batch size).
    gamma : float
        Communication coefficient gamma of Eq. 8, in GPU-equivalents lost to
        synchronization (0 = no communication cost).
    lam : float
        Balance factor lambda of Eq. 8: the weight of a same-node peer relative to a
        peer on another node (``lam <= 1`` means intra-node links are cheaper).
    nu : float
        Constant start-up overhead of Eq. 4, in seconds.
    b_min : float
        Smallest local batch at which the quadratic is trusted (usually the smallest
        profiled batch). Below it the rate is taken proportional to the batch,
        ``q(b_min) * b / b_min``: an iteration never gets shorter than at ``b_min``.
        0 means the quadratic is used down to every positive batch.
    b_sat : float
        Largest local batch at which the quadratic is trusted (usually the largest
        profiled batch). The rate plateaus at ``min(b_sat, vertex)``, where ``vertex``
        is the batch of the quadratic's maximum when ``k2 < 0``.
    infer_speedup : float
        Ratio of the inference rate to the training rate at the same local batch.

    Raises
    ------
    ValueError
        If a coefficient is not finite, a parameter is out of range, or
        ``gamma * max(1, lam) >= 2`` (then some multi-GPU placement would have a
        non-positive processing rate in Eq. 5).
    """

    k0: float
    k1: float
    k2: float
    gamma: float = 0.0
    lam: float = 1.0
    nu: float = 0.0
    b_min: float = 0.0
    b_sat: float = math.inf
    infer_speedup: float = 1.0

    def __post_init__(self) -> None:
        for name in ("k0", "k1", "k2", "gamma", "lam", "nu", "b_min", "infer_speedup"):
            check_finite(name, getattr(self, name))
        if self.gamma < 0:
            raise ValueError(f"gamma = {self.gamma}: must be >= 0")
        if self.lam < 0:
            raise ValueError(f"lam = {self.lam}: must be >= 0")
        if self.gamma * max(1.0, self.lam) >= 2.0:
            raise ValueError(
                f"gamma = {self.gamma}, lam = {self.lam}: gamma * max(1, lam) must be < 2, "
                "otherwise a 2-GPU placement has a non-positive processing rate (Eq. 5)"
            )
        if self.nu < 0:
            raise ValueError(f"nu = {self.nu}: must be >= 0")
        if self.b_min < 0:
            raise ValueError(f"b_min = {self.b_min}: must be >= 0")
        if not self.b_sat > self.b_min:
            raise ValueError(f"b_sat = {self.b_sat}: must be > b_min = {self.b_min}")
        if self.infer_speedup <= 0:
            raise ValueError(f"infer_speedup = {self.infer_speedup}: must be > 0")
        if not self._positive_on_trusted_range():
            raise ValueError(
                f"k0 = {self.k0}, k1 = {self.k1}, k2 = {self.k2}: the single-GPU rate must be "
                f"positive for every local batch in ({self.b_min}, {self.saturation_batch}]"
            )

    def _positive_on_trusted_range(self) -> bool:
        lo, hi = self.b_min, self.saturation_batch
        # Just above lo (the ramp below b_min is positive iff q(b_min) is).
        if lo > 0:
            if self.quadratic(lo) <= 0:
                return False
        elif self.k0 < 0 or (self.k0 == 0 and self.k1 <= 0):
            return False
        if math.isfinite(hi) and self.quadratic(hi) <= 0:
            return False
        if self.k2 > 0:  # convex: the minimum may sit at the vertex
            vertex = -self.k1 / (2.0 * self.k2)
            if lo < vertex < hi and self.quadratic(vertex) <= 0:
                return False
        elif not math.isfinite(hi) and self.k2 == 0 and self.k1 < 0:
            return False
        return True

    @property
    def saturation_batch(self) -> float:
        """Local batch beyond which the single-GPU rate stays flat (``inf`` if never)."""
        vertex = -self.k1 / (2.0 * self.k2) if self.k2 < 0 else math.inf
        return max(min(self.b_sat, vertex), self.b_min)

    def quadratic(self, b: float) -> float:
        """The bare polynomial of Eq. 7 at ``b``, without the plateau and ramp."""
        return self.k0 + self.k1 * b + self.k2 * b * b

    def replace(self, **changes: Any) -> ModelCoefficients:
        """Return a copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, float]:
        """Field values as a JSON-ready mapping (``inf`` written as ``None``)."""
        out: dict[str, Any] = dataclasses.asdict(self)
        if math.isinf(out["b_sat"]):
            out["b_sat"] = None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCoefficients:
        """Build from :meth:`to_dict` output; unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown coefficient field(s) {sorted(unknown)}: expected {sorted(known)}"
            )
        values = dict(data)
        if values.get("b_sat", math.inf) is None:
            values["b_sat"] = math.inf
        return cls(**{k: float(v) for k, v in values.items()})


def _iter_models(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    models = data.get("models")
    if not isinstance(models, Mapping):
        raise ValueError(f"{_COEFFICIENT_FILE}: missing object 'models'")
    yield from models.items()


def load_default_coefficients() -> dict[str, ModelCoefficients]:
    """Shipped coefficients of the six Table-3 models (``solver/data/genie_coefficients.json``).

    Returns
    -------
    dict[str, ModelCoefficients]
        Keyed by :data:`TABLE3_MODELS` names. Where each number comes from is recorded
        in the JSON file and in ``docs/genie-model.md``.
    """
    text = (resources.files("dlsched") / "data" / _COEFFICIENT_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    out: dict[str, ModelCoefficients] = {}
    for name, entry in _iter_models(data):
        try:
            out[name] = ModelCoefficients.from_dict(entry["coefficients"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{_COEFFICIENT_FILE}: model {name!r}: {exc}") from exc
    return out
