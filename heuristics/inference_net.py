"""The serving policy's network arithmetic, bit-identical on every machine (numpy only).

Training and acting of the learned serving policy (:mod:`.inference_pg`,
:mod:`dlsched.rl.inference_train`) compute with these functions only, so that a seed
gives the same weights, tensor for tensor, on any x86-64 or other IEEE-754 machine with
the same numpy version. What varies between machines, and is therefore avoided:

* BLAS (``@``, ``np.dot``; torch's MKL): the kernel, and with it the order in which a dot
  product is summed, is chosen at run time by CPU type (OpenBLAS ``DYNAMIC_ARCH``, MKL's
  dispatcher: AVX-512 on one machine, AVX2 on another), so the last bits differ. Products
  here go through ``np.einsum`` without ``optimize``, numpy's own loop, built for the
  baseline instruction set and never dispatched;
* ``np.exp``, ``np.tanh``, ``np.log``: numpy dispatches them to AVX-512 or AVX2 code
  when the CPU has it, and those differ from the C library's in the last bit. Here they are
  built from ``+ − × ÷``, ``np.rint``, ``np.ldexp`` and ``np.frexp``, which IEEE 754 fixes
  exactly (correctly rounded), and one elementwise operation per numpy call (no fused
  multiply-add).

Accuracy: :func:`exp` and :func:`log` agree with the C library to a few units in the last
place (tests), which is all a network needs; what matters is that they agree with
themselves everywhere.
"""

from __future__ import annotations

import numpy as np

_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k · LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
# Taylor coefficients 1/k! for exp(r), |r| <= ln2/2: degree 13 leaves < 1e-17
_EXP_COEF = tuple(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64)))
                  for k in range(13, -1, -1))


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a vector or matrix ``a`` and a matrix ``b``, summed in numpy's own
    fixed order (no BLAS)."""
    if a.ndim == 1:
        return np.einsum("i,ij->j", a, b)
    return np.einsum("ni,ij->nj", a, b)


def matmul_tn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a.T @ b`` (weight gradients), no BLAS."""
    return np.einsum("ni,nj->ij", a, b)


def matmul_nt(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` (back-propagation through a layer), no BLAS."""
    return np.einsum("nj,ij->ni", a, b)


def exp(x: np.ndarray) -> np.ndarray:
    """e^x from IEEE-exact operations: x = k ln 2 + r, Taylor series of e^r, times 2^k."""
    x = np.clip(np.asarray(x, dtype=np.float64), -740.0, 709.0)
    k = np.rint(x * _INV_LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = np.full_like(r, _EXP_COEF[0])
    for c in _EXP_COEF[1:]:
        p = p * r
        p = p + c
    return np.ldexp(p, k.astype(np.int64))


def log(x: np.ndarray) -> np.ndarray:
    """ln x for x > 0 from IEEE-exact operations: x = f · 2^e, ln f = 2 atanh((f−1)/(f+1))."""
    f, e = np.frexp(np.asarray(x, dtype=np.float64))
    small = f < 0.7071067811865476  # keep f in [1/√2, √2): |u| <= 0.172
    f = np.where(small, f * 2.0, f)
    e = np.where(small, e - 1, e)
    u = (f - 1.0) / (f + 1.0)
    u2 = u * u
    s = np.full_like(u, 1.0 / 29.0)
    for k in range(27, 0, -2):
        s = s * u2
        s = s + 1.0 / k
    lnf = 2.0 * (u * s)
    ef = e.astype(np.float64)
    return (ef * _LN2_HI + lnf) + ef * _LN2_LO


def tanh(x: np.ndarray) -> np.ndarray:
    """tanh x = sign(x) · (1 − 2 / (e^{2|x|} + 1))."""
    x = np.asarray(x, dtype=np.float64)
    t = 1.0 - 2.0 / (exp(2.0 * np.abs(x)) + 1.0)
    return np.where(x < 0, -t, t)


def hidden(x: np.ndarray, w1: np.ndarray, b1: np.ndarray) -> np.ndarray:
    """The hidden layer tanh(x W1 + b1)."""
    return tanh(matmul(x, w1) + b1)


def logits(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray,
           b2: np.ndarray) -> np.ndarray:
    """The network's action scores for a state (vector) or a batch of states (rows)."""
    return matmul(hidden(x, w1, b1), w2) + b2


def log_softmax(z: np.ndarray) -> np.ndarray:
    """log π over the last axis, stable (the maximum subtracted first)."""
    z = z - z.max(axis=-1, keepdims=True)
    return z - log(exp(z).sum(axis=-1, keepdims=True))


def softmax(z: np.ndarray) -> np.ndarray:
    """π over the last axis."""
    e = exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
