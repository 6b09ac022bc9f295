"""Weights of the learned policies: safetensors files read as numpy, never unpickled."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dlsched.errors import InputError


def read_safetensors(path: str | Path, train: str
                     ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The tensors and the metadata of a weights file.

    Parameters
    ----------
    path
        A ``.safetensors`` file.
    train
        The command that writes such files (named in the errors' fix).

    Raises
    ------
    InputError
        No such file, or not a safetensors file (one line naming the file).
    """
    from safetensors import SafetensorError, safe_open
    from safetensors.numpy import load_file

    p = Path(path)
    if not p.is_file():
        raise InputError("no such weights file", field="weights", source=str(p),
                         fix=f"train with `{train}`, or omit it for the shipped weights")
    try:
        with safe_open(str(p), framework="numpy") as handle:
            meta = dict(handle.metadata() or {})
        return load_file(str(p)), meta
    except (OSError, SafetensorError) as exc:
        raise InputError(f"cannot read weights: {type(exc).__name__}: {exc}",
                         field="weights", source=str(p),
                         fix=f"pass a .safetensors file written by `{train}`") from None
