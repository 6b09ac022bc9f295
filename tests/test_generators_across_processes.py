"""Every seeded generator writes the same bytes in another interpreter whose string
hashing is seeded otherwise than this one's (set iteration or ``hash()`` order must never
reach a file). One child writes them all: a child costs ~0.45 CPU-s, almost all imports,
and the Horus and Liquid generator tests each spawned one for one file."""

from __future__ import annotations

import os
import subprocess
import sys

from dlsched import load_instance, save_instance
from dlsched.instances.genie_gen import generate_genie
from dlsched.instances.horus_gen import generate_horus
from dlsched.instances.inference_gen import generate_inference
from dlsched.instances.liquid_gen import generate_liquid
from dlsched.instances.sched2_gen import generate_sched2

CASES = {  # file -> (module of dlsched.instances, generator, its arguments)
    "horus.json": ("horus_gen", generate_horus, {"seed": 11, "nodes": 8, "gpus_per_node": 4,
                                                 "beta": 9}),
    "liquid.json": ("liquid_gen", generate_liquid, {"seed": 11, "nodes": 10, "busy": 0.1}),
    "genie.json": ("genie_gen", generate_genie, {"seed": 7, "duration": 6.0}),
    "sched2.json": ("sched2_gen", generate_sched2, {"seed": 3, "jobs": 60, "servers": 3,
                                                    "gpus_per_server": 4}),
    "inference.json": ("inference_gen", generate_inference, {"seed": 2, "gpus": "g2:1,p2:1",
                                                             "hours": 0.002}),
}


def _child_script() -> str:
    """The script the child runs: each generator's call, its file written to argv[1]."""
    lines = ["import sys", "from dlsched import save_instance"]
    for name, (module, gen, kwargs) in CASES.items():
        lines.append(f"from dlsched.instances.{module} import {gen.__name__}")
        lines.append(f"save_instance({gen.__name__}(**{kwargs!r}), sys.argv[1] + '/{name}')")
    return "\n".join(lines) + "\n"


def test_same_arguments_same_bytes_across_processes(tmp_path):
    mine = os.environ.get("PYTHONHASHSEED")  # unset or "random": a random one, not 0
    other = "4242" if mine == "0" else "0"
    there = tmp_path / "child"
    there.mkdir()
    subprocess.run([sys.executable, "-c", _child_script(), str(there)], check=True,
                   env={**os.environ, "PYTHONHASHSEED": other})
    for name, (_module, gen, kwargs) in CASES.items():
        here = gen(**kwargs)
        save_instance(here, tmp_path / name)
        assert (tmp_path / name).read_bytes() == (there / name).read_bytes(), name
        assert load_instance(there / name).sha256 == here.sha256, name
