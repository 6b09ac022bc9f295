"""Seeded k-means under the L1 metric (assignment by L1 distance, centres at medians)."""

from __future__ import annotations

import numpy as np


def normalize_columns(features: np.ndarray) -> np.ndarray:
    """Scale each column to [0, 1]; constant columns become 0."""
    lo = features.min(axis=0)
    span = features.max(axis=0) - lo
    return np.where(span > 0, (features - lo) / np.where(span > 0, span, 1.0), 0.0)


def kmeans_l1(points: np.ndarray, k: int, seed: int, max_iter: int = 100) -> np.ndarray:
    """Cluster labels 0..k'-1 (k' ≤ k distinct points), deterministic for a seed.

    Initial centres by k-means++ seeding on L1 distances, then Lloyd iterations with
    coordinate-wise medians (the L1 minimizer). Ties go to the lowest centre index.
    Labels are renumbered by first appearance so they do not depend on the seeding order.
    """
    n = len(points)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(np.unique(points, axis=0)))
    rng = np.random.default_rng(seed)
    centres = [points[rng.integers(n)]]
    while len(centres) < k:
        dist = np.min([np.abs(points - c).sum(axis=1) for c in centres], axis=0)
        if dist.sum() == 0:
            break
        centres.append(points[rng.choice(n, p=dist / dist.sum())])
    centres_arr = np.array(centres)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        dist = np.abs(points[:, None, :] - centres_arr[None, :, :]).sum(axis=2)
        new = np.argmin(dist, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for c in range(len(centres_arr)):
            members = points[labels == c]
            if len(members):
                centres_arr[c] = np.median(members, axis=0)
    _, first = np.unique(labels, return_index=True)
    remap = {int(labels[i]): r for r, i in enumerate(sorted(first))}
    return np.array([remap[int(v)] for v in labels], dtype=np.int64)
