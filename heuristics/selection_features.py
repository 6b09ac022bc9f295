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


OBS_HIGH = 1000.0  # a loose bound of the observation space; every feature is clipped to it
PROFILE_PLACEMENTS = 4  # k of SCHED²'s Table I


def sched2_slot_features(sensitivity: float, demand: int, duration: float,
                         gpus_per_server: int) -> np.ndarray:
    """A SCHED² job slot without its waiting time: the run times under the k placements
    from packed to scattered (``time_feature``) and the demand / M."""
    from dlsched.problems.sched2 import locality_profile

    profile = locality_profile(sensitivity, demand, gpus_per_server, PROFILE_PLACEMENTS)
    return np.concatenate([time_feature(duration * np.array(profile)),
                           [demand / gpus_per_server]])


def selection_observation(gpu_remaining_s: np.ndarray, slots: list[np.ndarray],
                          slot_waits_s: list[float], rest: list[tuple[int, float, float]],
                          window: int, job_features: int, gpus_per_server: int) -> np.ndarray:
    """The job-selection observation (Table I layout).

    Parameters
    ----------
    gpu_remaining_s
        Remaining run time of the job on each GPU (0 when idle).
    slots, slot_waits_s
        For the first ``window`` queued jobs: their features without the waiting time,
        and their waiting times.
    rest
        ``(demand, solo duration, wait)`` of every other queued job.
    window, job_features
        J and the numbers per slot (the last one is the waiting time).
    gpus_per_server
        M, the demand's scale.

    Returns
    -------
    numpy.ndarray
        ``float32``, clipped to [0, ``OBS_HIGH``]; empty slots are zeros.
    """
    table = np.zeros((window, job_features))
    for k, (features, wait) in enumerate(zip(slots, slot_waits_s, strict=True)):
        table[k, :-1] = features
        table[k, -1] = time_feature(np.array([wait]))[0]
    stats = np.zeros(4)
    if rest:
        demand, duration, wait = (np.array(x, dtype=float) for x in zip(*rest, strict=True))
        stats[:] = (len(rest) / 100.0, demand.mean() / gpus_per_server,
                    time_feature(np.array([duration.mean()]))[0],
                    time_feature(np.array([wait.mean()]))[0])
    parts = [time_feature(np.maximum(gpu_remaining_s, 0.0)), table.ravel(), stats]
    return np.clip(np.concatenate(parts), 0.0, OBS_HIGH).astype(np.float32)
