"""Derive the Liquid generator's bandwidth weight per model from the authors' measurements.

Source: the authors' public implementation (issue 4 of this project): seconds to train
with 1 PS + 2 workers under four placements (``:`` separates servers):
``[PS W W]`` (one server), ``[PS : W W]``, ``[PS : W : W]``, ``[PS W : W]``. Under the
implementation's network cost each placement has 0, 2, 2 and 1 PS-worker pairs on
different servers (within one rack: distance 1). We fit
    T = T0 + b · (separated pairs)
by least squares and take ``bandwidth = b / T(one server)``: the fraction of the job's
co-located run time one separated PS-worker pair adds, per unit of distance.

Run ``python instances/derive/liquid_bandwidth.py`` to print the values as JSON (the
``bandwidth`` values are ``dlsched.instances.liquid_gen.BANDWIDTH``).
"""

from __future__ import annotations

import json

import numpy as np

SEPARATED_PAIRS = np.array([0.0, 2.0, 2.0, 1.0])
SECONDS = {  # [PS W W], [PS : W W], [PS : W : W], [PS W : W]
    "vgg16": (510.0, 1190.0, 810.0, 767.0),
    "resnet50": (203.0, 255.0, 210.0, 204.0),
    "inception3": (289.0, 310.0, 290.0, 295.0),
}
ONE_WORKER_ONE_GPU = {"vgg16": 220.0, "resnet50": 146.0, "inception3": 253.0}


def fit(seconds: tuple[float, ...]) -> tuple[float, float]:
    """(T0, b) of the least-squares line T = T0 + b · separated pairs."""
    slope, intercept = np.polyfit(SEPARATED_PAIRS, np.array(seconds), 1)
    return float(intercept), float(slope)


def bandwidth_weights(decimals: int = 4) -> dict[str, float]:
    """The bandwidth weight per model, rounded to ``decimals``."""
    return {m: round(fit(s)[1] / s[0], decimals) for m, s in SECONDS.items()}


if __name__ == "__main__":
    out = {m: {"T0": round(fit(s)[0], 2), "seconds_per_pair": round(fit(s)[1], 2),
               "bandwidth": bandwidth_weights()[m]} for m, s in SECONDS.items()}
    print(json.dumps(out, indent=2, sort_keys=True))
