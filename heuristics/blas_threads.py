"""One BLAS thread for the calling thread while a block runs (numpy's bundled OpenBLAS).

OpenBLAS splits a large matrix product over threads; on a loaded machine the waiting
threads spin, and a product of a few thousand rows costs several times the CPU of one
thread (measured: 3,000 × 12 through the ``dqn`` network, 15 ms CPU with two threads,
2 ms with one, load 20). The thread count does not change the result (each thread runs
the same kernel on its rows; ``tests/test_sched2_dqn_live.py`` compares the Q-values), so
this is a cost change only. Where numpy's BLAS is not the bundled OpenBLAS (no
``openblas_set_num_threads_local``), nothing is changed.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np


@cache
def local_thread_setter():
    """OpenBLAS's ``openblas_set_num_threads_local`` (returns the previous count), or None."""
    libs = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas*.so*"))):
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
        return fn
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with one OpenBLAS thread for this thread (then restore the count)."""
    fn = local_thread_setter()
    if fn is None:
        yield
        return
    previous = fn(1)
    try:
        yield
    finally:
        fn(previous)
