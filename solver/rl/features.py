"""Observation features shared by the environments and the policies acting in the simulator
(importing this needs neither gymnasium nor torch)."""

from __future__ import annotations

import numpy as np

TIME_SCALE_S = 60.0
TIME_CAP_S = 7 * 86400.0


def time_feature(seconds: np.ndarray) -> np.ndarray:
    """Seconds → [0, 1]: log(1 + t / 1 min) / log(1 + 1 week / 1 min) (clipped at a week)."""
    t = np.clip(np.asarray(seconds, dtype=float), 0.0, TIME_CAP_S)
    return np.log1p(t / TIME_SCALE_S) / np.log1p(TIME_CAP_S / TIME_SCALE_S)
