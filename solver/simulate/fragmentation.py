"""The mean server fragmentation series of a run (SCHED² Eq. 1), from a log of changes.

Per server with k busy GPUs out of n whose latest jobs end at e_i (mean m, variance q), at
time t the remaining times x_i = e_i - t give Σx = k (m - t) and Σx² = k (q + (m - t)²),
so its value 1 - (Σx)² / (n Σx²) = 1 - (k / n) d² / (q + d²) with d = m - t needs only
(k / n, m, q). These change only when one of the server's GPUs does; the live state
(``dlsched.simulate.live``) logs them for the changed servers at each sample time, and
:meth:`FragmentationLog.series` rebuilds every server's values at every sample in one
vector pass when the run ends.
"""

from __future__ import annotations

from itertools import chain

import numpy as np


class FragmentationLog:
    """Sample times and, per sample, the (k / n, mean end, variance) of changed servers.

    Parameters
    ----------
    servers
        Number of servers in the cluster.
    """

    def __init__(self, servers: int) -> None:
        self.servers = servers
        self._times: list[float] = []
        self.log: list[tuple[int, int, float, float, float]] = []
        """Entries (sample number, server, k / n, mean end, variance), in sample order."""

    def sample_time(self, t: float) -> int:
        """Open a sample at ``t`` (or reopen the last one, at the same ``t``: a later
        entry wins) and return its number; the caller appends the changed servers'
        entries to :attr:`log`."""
        times = self._times
        if not times or times[-1] != t:
            times.append(t)
        return len(times) - 1

    def sample(self, t: float, changed: list[tuple[int, float, float, float]]) -> None:
        """A sample at ``t``; ``changed``: (server, k / n, mean end, variance) of the
        servers changed since the last sample (a later sample at the same ``t`` wins)."""
        at = self.sample_time(t)
        log = self.log
        for s, w, m, q in changed:
            log.append((at, s, w, m, q))

    def series(self, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
        """(sample times, mean server fragmentation at each).

        Forward-fills each server's values from the log, ``chunk`` samples at a time.
        """
        times = np.array(self._times, dtype=float)
        if not len(times):
            return times, np.zeros(0)
        log = self.log
        # one conversion of the log (sample and server numbers are exact as floats)
        table = np.fromiter(chain.from_iterable(log), dtype=float,
                            count=5 * len(log)).reshape(-1, 5)
        idx = table[:, 0].astype(np.int64)
        srv = table[:, 1].astype(np.int64)
        vals = table[:, 2:]
        n = self.servers
        state = np.zeros((3, n))
        state[2] = 1.0  # (w, m, q) of an idle server
        out = np.empty(len(times))
        lo = 0
        for a in range(0, len(times), chunk):
            b = min(a + chunk, len(times))
            hi = int(np.searchsorted(idx, b, side="left"))
            rows = b - a + 1  # row 0: the state before this chunk
            have = np.zeros((rows, n), dtype=bool)
            have[0] = True
            block = np.empty((3, rows, n))
            block[:, 0, :] = state
            r, c = idx[lo:hi] - a + 1, srv[lo:hi]
            for f in range(3):  # later log entries of one (sample, server) win
                block[f, r, c] = vals[lo:hi, f]
            have[r, c] = True
            pick = np.where(have, np.arange(rows)[:, None], 0)
            np.maximum.accumulate(pick, axis=0, out=pick)
            cols = np.arange(n)[None, :]
            w, m, q = (block[f][pick, cols][1:] for f in range(3))
            out[a:b] = mean_fragmentation(w, m, q, times[a:b])
            state = np.stack([w[-1], m[-1], q[-1]])
            lo = hi
        return times, out


def mean_fragmentation(w: np.ndarray, m: np.ndarray, q: np.ndarray,
                       t: np.ndarray) -> np.ndarray:
    """Per row: mean over servers of [w > 0] (1 - w d² / (q + d²)), d = m - t.

    ``w`` = k / n (busy share), ``m`` mean predicted end, ``q`` variance of the ends; a
    busy server whose GPUs all end exactly at ``t`` (0/0) counts 0, like an idle one.
    """
    d = m - t[:, None]
    d *= d
    den = q + d
    with np.errstate(invalid="ignore", divide="ignore"):
        frag = np.where((w > 0) & (den > 0), 1.0 - w * (d / den), 0.0)
    return frag.mean(axis=1) if frag.shape[1] else np.zeros(len(t))
