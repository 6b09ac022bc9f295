"""A stand-alone solver for `dlsched compete`: Python standard library only, no dlsched.

Usage: python external_solver.py INSTANCE SOLUTION

It reads a Horus or SCHED² instance file (docs/formats.md), puts each pending job, in
queue order, on idle GPUs (no running job on them) of one server that still has the CPU
and RAM the job asks for, and writes the solution file. Jobs that fit nowhere wait.
Any language works the same way: read the instance JSON, write the solution JSON.
"""

from __future__ import annotations

import json
import sys


def place(instance: dict) -> list[dict]:
    """Placements ``[{"job": id, "gpus": [...]}, ...]`` of a first fit on idle GPUs."""
    busy = {g for r in instance.get("running", []) for g in r["gpus"]}
    nodes = []
    for node in instance["cluster"]["nodes"]:
        cpu, ram = node["cpu"], node["ram_gb"]
        for r in instance.get("running", []):
            here = [g for g in r["gpus"] if g.split("/")[0] == node["id"]]
            cpu -= r.get("cpu_per_gpu", 0.0) * len(here)
            ram -= r.get("ram_gb_per_gpu", 0.0) * len(here)
        idle = [g["id"] for g in node["gpus"] if g["id"] not in busy]
        mem = {g["id"]: g["mem_gb"] for g in node["gpus"]}
        nodes.append({"idle": idle, "cpu": cpu, "ram": ram, "mem": mem})
    out = []
    for job in instance["jobs"]:
        k = job.get("num_gpus") or 0
        for node in nodes:
            gpus = [g for g in node["idle"] if node["mem"][g] >= job.get("gpu_mem_gb", 0.0)][:k]
            cpu = job.get("cpu_per_gpu", 0.0) * k
            ram = job.get("ram_gb_per_gpu", 0.0) * k
            if k and len(gpus) == k and cpu <= node["cpu"] and ram <= node["ram"]:
                node["idle"] = [g for g in node["idle"] if g not in gpus]
                node["cpu"] -= cpu
                node["ram"] -= ram
                out.append({"job": job["id"], "gpus": gpus})
                break
    return out


def main() -> None:
    instance_path, solution_path = sys.argv[1], sys.argv[2]
    with open(instance_path, encoding="utf-8") as f:
        instance = json.load(f)
    solution = {"format_version": 1, "instance_sha256": instance["sha256"],
                "placements": place(instance)}
    with open(solution_path, "w", encoding="utf-8") as f:
        json.dump(solution, f)


if __name__ == "__main__":
    main()
