"""The learned serving policy against the Eq. 2 heuristic tuned on its training span.

Target (issue 29): ``pg`` ≥ the heuristic tuned on the training span (α, β from the grid
on 3 × 10 min of 9-12 h, as ``inference_paper --tune``) in all four paper slots (12-15,
15-18, 18-21, 21-24 h; ``--hours`` from each slot's start) on one p2 and on 5 g2 + 5 p2
(arrivals × 8), for ``--seeds`` serve seeds s = 0, 1, ... (workload of slot i generated with
seed s + i, delay noise seeded by s, as ``inference_paper --seed s``). One weights file acts
on both clusters; two p2 GPUs (arrivals × 2, a cluster the policy never trained on) are
reported beside them.

Also the Azure code stream (``instances/workloads/inference-azure-code-x8-p2x1``) re-timed
to compressions × 6, 8, 10, 12 (arrival_f = floor(arrival_8 · 8 / f): within 8 / f ms of
compressing the raw trace by f), one p2: pg, the tuned heuristic, the paper's α = β = 0.5,
and (an oracle, no runnable policy) the heuristic tuned on that stream itself.

``--ablation DIR ...``: directories written by ``dlsched rl train inference`` (each with
``clone.safetensors``, where policy gradient started, and ``policy.safetensors``, the
selected network); both run on the same target workloads and Azure streams.

    python -m dlsched.benchmarks.inference_pg --hours 0.5 --seeds 3

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from dlsched.markdown import markdown_head, markdown_row

from .inference_paper import LEARNED, SLOTS, heuristic_params

TARGET = (("p2:1", 1.0), ("g2:5,p2:5", 8.0))
UNSEEN = (("p2:2", 2.0),)
AZURE_FACTORS = (6.0, 8.0, 10.0, 12.0)
AZURE_CODE = "inference-azure-code-x8-p2x1.json.gz"


def _mean_q(inst, policy, seed: int) -> float:
    from dlsched.serve.engine import serve
    from dlsched.serve.metrics import summary

    return float(summary(serve(inst, policy, seed=seed))["mean_q"])


def _pg(weights: str | None):
    from dlsched.heuristics.inference_pg import load_pg_policy

    return load_pg_policy(weights)


def _heuristic(params: dict):
    from dlsched.problems.inference.policies import HeuristicPolicy

    return HeuristicPolicy(alpha=params["alpha"], beta=params["beta"])


def azure_code(factor: float):
    """The committed Azure code stream (× 8) re-timed to compression ``factor``."""
    from importlib import resources

    from dlsched.instance_io import load_instance
    from dlsched.instances.inference_gen import HARD_MS, SOFT_MS, inference_instance

    path = resources.files("dlsched.instances").joinpath("workloads", AZURE_CODE)
    base = load_instance(str(path))
    q = base.params["queries"]
    arrival = np.floor(np.asarray(q["arrival_ms"], dtype=np.int64) * 8.0 / factor)
    arrival = arrival.astype(np.int64)
    return inference_instance(arrival=arrival, soft=arrival + SOFT_MS, hard=arrival + HARD_MS,
                              size=q.get("size"), gpu_types=["p2"], delay_cv=0.0,
                              name=f"inference-azure-code-x{factor:g}-p2x1",
                              provenance={**base.provenance, "retimed_to": factor})


def _tuned(cluster: tuple[str, float]) -> dict:
    return heuristic_params(cluster[0], cluster[1], True, [])


def _target_run(task: tuple) -> dict:
    """One target workload: pg and the tuned heuristic, same workload and serve seed."""
    from dlsched.instances.inference_gen import generate_inference

    gpus, scale, i, h, s, hours, weights, params = task
    inst = generate_inference(seed=s + i, gpus=gpus, start_hour=h, hours=hours, scale=scale)
    pg = _mean_q(inst, _pg(weights), s)
    heur = _mean_q(inst, _heuristic(params), s)
    return {"seed": s, "slot": h, LEARNED: pg, "heuristic": heur, "diff": pg - heur}


def _map(fn, tasks: list, jobs: int) -> list:
    """``fn`` over ``tasks`` in order, on ``jobs`` processes (results do not depend on it)."""
    if jobs <= 1:
        return [fn(t) for t in tasks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(fn, tasks))


def run_target(weights: str | None, hours: float, seeds: int, out: list[str],
               jobs: int = 1) -> dict:
    """The learned policy − tuned heuristic per cluster, slot and seed."""
    figures: dict = {}
    out.append(markdown_head(["cluster", "seed", "slot", "learned Q", "tuned heuristic Q",
                              "learned − heuristic"]))
    where = TARGET + UNSEEN
    tuned = _map(_tuned, list(where), jobs)
    tasks = [(gpus, scale, i, h, s, hours, weights, params)
             for (gpus, scale), params in zip(where, tuned, strict=True)
             for s in range(seeds) for i, h in enumerate(SLOTS)]
    results = _map(_target_run, tasks, jobs)
    for (gpus, scale), params in zip(where, tuned, strict=True):
        rows = [r for t, r in zip(tasks, results, strict=True) if t[:2] == (gpus, scale)]
        for r in rows:
            out.append(markdown_row([f"{gpus} × {scale:g}", r["seed"],
                                     f"{r['slot']:g}-{r['slot'] + 3:g} h", f"{r[LEARNED]:.4f}",
                                     f"{r['heuristic']:.4f}", f"{r['diff']:+.4f}"]))
        diffs = [r["diff"] for r in rows]
        figures[gpus] = {"arrival_scale": scale, "heuristic_params": params, "rows": rows,
                         "min_diff": min(diffs), "mean_diff": float(np.mean(diffs)),
                         "learned_ge_heuristic": sum(d >= 0 for d in diffs), "runs": len(diffs),
                         "in_target": (gpus, scale) in TARGET}
    return figures


def run_azure(weights: str | None, out: list[str]) -> list[dict]:
    """The learned policy and three Eq. 2 variants on the Azure code stream at each compression."""
    from dlsched.serve.tune import tune_heuristic

    params = heuristic_params("p2:1", 1.0, True, [])
    out.append("\n" + markdown_head(["Azure code ×", "learned Q", "tuned on 9-12 h",
                                     "α = β = 0.5", "tuned on this stream (oracle)",
                                     "learned − tuned", "learned − 0.5/0.5", "learned − oracle"]))
    rows = []
    for f in AZURE_FACTORS:
        inst = azure_code(f)
        pg = _mean_q(inst, _pg(weights), 0)
        tuned = _mean_q(inst, _heuristic(params), 0)
        paper = _mean_q(inst, _heuristic({"alpha": 0.5, "beta": 0.5}), 0)
        best, grid = tune_heuristic([inst])
        oracle = max(g["mean_q"] for g in grid)
        rows.append({"factor": f, "queries": len(inst.params["queries"]["arrival_ms"]),
                     LEARNED: pg, "heuristic_tuned": tuned,
            "heuristic_paper": paper, "heuristic_oracle": oracle, "oracle_params": best})
        out.append(markdown_row([f"{f:g}", f"{pg:.4f}", f"{tuned:.4f}", f"{paper:.4f}",
                                 f"{oracle:.4f} (α {best['alpha']}, β {best['beta']})",
                                 f"{pg - tuned:+.4f}", f"{pg - paper:+.4f}",
                                 f"{pg - oracle:+.4f}"]))
        print(out[-1], file=sys.stderr, flush=True)
    return rows


def _ablation_run(task: tuple) -> float:
    """Mean Q of one weights file on one workload (generated slot or Azure stream)."""
    from dlsched.instances.inference_gen import generate_inference

    weights, spec = task
    if spec[0] == "azure":
        return _mean_q(azure_code(spec[1]), _pg(weights), 0)
    _kind, gpus, scale, i, h, s, hours = spec
    inst = generate_inference(seed=s + i, gpus=gpus, start_hour=h, hours=hours, scale=scale)
    return _mean_q(inst, _pg(weights), s)


def run_ablation(dirs: list[str], hours: float, seeds: int, out: list[str],
                 azure: bool = True, jobs: int = 1) -> list[dict]:
    """Clone only vs the selected network (clone + policy gradient), on the target
    workloads (and the Azure code streams with ``azure``)."""
    from safetensors import safe_open

    out.append("\n" + markdown_head(["run", "selected", "workloads", "clone mean Q",
                                     "selected mean Q", "selected − clone", "min", "max"]))
    specs: list[tuple] = [("gen", gpus, scale, i, h, s, hours) for gpus, scale in TARGET + UNSEEN
                          for s in range(seeds) for i, h in enumerate(SLOTS)]
    if azure:
        specs += [("azure", f) for f in AZURE_FACTORS]
    tasks = [(str(Path(d) / f"{name}.safetensors"), spec) for d in dirs
             for name in ("clone", "policy") for spec in specs]
    results = iter(_map(_ablation_run, tasks, jobs))
    rows = []
    for d in dirs:
        with safe_open(str(Path(d) / "policy.safetensors"), framework="numpy") as fh:
            meta = fh.metadata()
        q = {name: [next(results) for _ in specs] for name in ("clone", "policy")}
        diff = np.asarray(q["policy"]) - np.asarray(q["clone"])
        rows.append({"dir": d, "seed": int(meta["seed"]), "selected": meta["selected"],
                     "clone": json.loads(meta.get("clone", "{}")),
                     "clone_mean_q": float(np.mean(q["clone"])),
                     "selected_mean_q": float(np.mean(q["policy"])),
                     "diff_mean": float(diff.mean()), "diff_min": float(diff.min()),
                     "diff_max": float(diff.max()), "workloads": int(diff.size)})
        r = rows[-1]
        out.append(markdown_row([d, r["selected"], r["workloads"], f"{r['clone_mean_q']:.4f}",
                                 f"{r['selected_mean_q']:.4f}", f"{r['diff_mean']:+.4f}",
                                 f"{r['diff_min']:+.4f}", f"{r['diff_max']:+.4f}"]))
    return rows


def _cpu() -> float:
    """CPU seconds of this process and its finished child processes (the workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=0.5, help="hours per slot (0.5)")
    ap.add_argument("--seeds", type=int, default=3, help="serve seeds 0..N-1 (3)")
    ap.add_argument("--weights", default=None, help="policy.safetensors (default: shipped)")
    ap.add_argument("--no-azure", action="store_true", help="skip the Azure code stream")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes for the target and ablation runs (figures do not depend on it)")
    ap.add_argument("--ablation", nargs="*", default=[],
                    help="training output directories: clone vs selected network")
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.hours <= 0:
        ap.error("--seeds >= 1 and --hours > 0 are required")
    t0 = _cpu()
    out = ["# pg vs the Eq. 2 heuristic tuned on the training span (issue 29, item 8)\n"]
    figures: dict = {"benchmark": "inference_pg",
                     "target": run_target(args.weights, args.hours, args.seeds, out,
                                          args.jobs)}
    met = [f for f in figures["target"].values() if f["in_target"]]
    figures["target_met"] = all(f["min_diff"] >= 0 for f in met)
    out.append(f"\npg ≥ tuned heuristic on every slot and seed of one p2 and 5 g2 + 5 p2: "
               f"{'yes' if figures['target_met'] else 'NO'} (min pg − heuristic "
               + ", ".join(f"{g} {f['min_diff']:+.4f}" for g, f in figures["target"].items())
               + ")")
    if not args.no_azure:
        figures["azure_code"] = run_azure(args.weights, out)
    if args.ablation:
        figures["ablation"] = run_ablation(args.ablation, args.hours, args.seeds, out,
                                           azure=not args.no_azure, jobs=args.jobs)
    figures["cpu_seconds"] = _cpu() - t0  # this process and its --jobs workers
    figures["load_average"] = list(os.getloadavg())
    figures["arguments"] = vars(args)
    print("\n".join(out))
    print(json.dumps(figures, default=lambda o: float(o) if isinstance(o, np.floating)
                     else str(o)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
