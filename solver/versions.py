"""``dlsched show-versions``: the versions a bug report needs (package, solvers, Python,
platform)."""

from __future__ import annotations

import argparse
import platform
import sys
import warnings
from importlib import metadata

PACKAGES = ("dlsched", "pulp", "highspy", "ortools", "pyscipopt", "numpy", "scipy", "pandas",
            "networkx", "fastjsonschema", "matplotlib", "pyarrow", "torch", "gymnasium")
"""Distributions reported: this package, the solver back ends, then the libraries."""


def versions() -> dict[str, str]:
    """Name → version of Python, the platform and each of :data:`PACKAGES`.

    Returns
    -------
    dict of str to str
        ``"not installed"`` for a distribution that is missing.
    """
    out = {"python": f"{platform.python_version()} ({sys.executable})",
           "platform": platform.platform(), "machine": platform.machine()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    try:
        import pulp

        with warnings.catch_warnings():
            # PuLP 3.3 deprecates its bundled CBC for 4.0; 3.3 is pinned (Python 3.11)
            warnings.simplefilter("ignore", DeprecationWarning)
            cbc = pulp.PULP_CBC_CMD(msg=False).available()
        out["cbc (pulp)"] = "available" if cbc else "not available"
    except Exception as exc:  # noqa: BLE001 - a broken solver install is worth reporting
        out["cbc (pulp)"] = f"error: {exc}"
    return out


def add_commands(subparsers) -> None:
    """Add the ``show-versions`` subcommand.

    Parameters
    ----------
    subparsers
        The ``add_subparsers()`` object of the ``dlsched`` parser.
    """
    p = subparsers.add_parser("show-versions", help="print versions for a bug report",
                              description="Print the versions of dlsched, its solvers, "
                              "Python and the platform (paste them into a bug report).")
    p.set_defaults(func=_cmd_show_versions)


def _cmd_show_versions(args: argparse.Namespace) -> int:
    info = versions()
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key:<{width}}  {value}")
    return 0  # EXIT_OK (not imported: this is a library module)
