"""Generator files written by another interpreter whose string hashing is seeded otherwise
than this one's: the Horus and Liquid generators' tests compare them with this process's
bytes. One child writes both (each child costs ~0.45 CPU-s, almost all of it imports)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

SCRIPT = """\
import sys
from pathlib import Path
from dlsched import save_instance
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.liquid_gen import generate_liquid
out = Path(sys.argv[1])
save_instance(generate_horus(seed=11, nodes=8, gpus_per_node=4, beta=9), out / "horus.json")
save_instance(generate_liquid(seed=11, nodes=10, busy=0.1), out / "liquid.json")
"""
"""What the child writes; the tests build the same instances here."""


@cache
def written_by_another_hash_seed() -> Path:
    """The folder holding ``horus.json`` and ``liquid.json`` from the child (once per
    process; the files are only read)."""
    mine = os.environ.get("PYTHONHASHSEED")  # unset or "random": a random one, not 0
    other = "4242" if mine == "0" else "0"
    out = Path(tempfile.mkdtemp(prefix="dlsched-test-hash-seed-"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    subprocess.run([sys.executable, "-c", SCRIPT, str(out)], check=True,
                   env={**os.environ, "PYTHONHASHSEED": other})
    return out
