"""The package's ``quick`` suite cut to a few instances (files, sha256 and best known as
shipped), for tests that run a command on the suite but need not run all 16 instances."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

# a Horus snapshot, which greedy answers, and one of a problem without greedy
QUICK_TWO = ("horus-16x8-busy0.5-s0", "sched2-15x8-snap-s0")


def quick_cut(library: Path, names: tuple[str, ...] = QUICK_TWO) -> Path:
    """Write a library at ``library`` whose suite ``quick`` is the package's cut to
    ``names``; returns ``library`` (for ``--library``)."""
    from dlsched.benchmarks.suites import LIBRARY_ROOT

    source, target = LIBRARY_ROOT / "quick", library / "quick"
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["instances"] = [e for e in manifest["instances"] if e["name"] in names]
    assert sorted(e["name"] for e in manifest["instances"]) == sorted(names)
    (target / "instances").mkdir(parents=True)
    (target / "best").mkdir()
    for entry in manifest["instances"]:
        for rel in (entry["file"], entry["best"]["solution"]):
            shutil.copyfile(source / rel, target / rel)
    shutil.copyfile(source / "suite.json", target / "suite.json")
    (target / "manifest.json").write_text(json.dumps(manifest))
    return library
