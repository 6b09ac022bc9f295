"""Fang et al. (CIKM'17) Tables 2-5: mean Q and tiny-model share of fixed, heuristic and
the learned policy.

For each setting (one p2 GPU, Tables 2-3; 5 g2 + 5 p2 with arrivals × 8, Tables 4-5) and
each test slot (12-15, 15-18, 18-21, 21-24 h) a generated workload of ``--hours`` hours
from the slot's start (``dlsched.instances.inference_gen`` defaults: the calibrated
diurnal, bursty stream, delay CV 0.1), run under every policy (seed 0). Per row: the
paper's number (cited), ours, the ratio ours / paper; per slot the gaps heuristic − fixed
and pg − heuristic, paper vs ours, the ratio, and whether the paper's direction holds.

Optionally (``--exact-windows K``) the K windows of ``--window`` queries (one p2, 15 h,
where the heuristic loses most) are solved by the exact CP-SAT model (``--time-limit`` s
each), and (``--edf-windows K``) K windows of ``--edf-window`` queries on ``--edf-gpus``
by the EDF-contiguous DP (``--window-method edf-dp``, the default) or by the Lagrangian
bound and schedule (``--window-method lagrange``, ``--time-limit`` s each); each policy's
Σ Q is compared with them.

``--cluster-load calibrated`` (or ``both``) also runs 5 g2 + 5 p2 at arrivals ×
``CLUSTER_SCALE_CALIBRATED`` (12.5: where our ``fixed`` reaches Table 4's mean quality, a
named preset documented in ``dlsched.instances.inference_gen``), without ``pg`` (its
cluster episodes are at × 8). Every gap outside 2× of the paper's gets a "measured
reason" built from the measured figures (fixed's Q, P_tiny, mean batch and GPU
utilization against the paper's).

    python -m dlsched.benchmarks.inference_paper --hours 0.5 > inference_paper.md
    python -m dlsched.benchmarks.inference_paper --hours 0.5 --tune --cluster-load both

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from dlsched.gaps import relative_gap
from dlsched.instances.inference_gen import CLUSTER_SCALE_CALIBRATED
from dlsched.markdown import markdown_head, markdown_row

from .paper_claims import claim

LEARNED = "learned-batching"
"""The learned serving policy (the method of :mod:`dlsched.heuristics.inference_pg`)."""

# the paper's tables (benchmarks/claims/inference.toml): per setting, the mean-quality
# table (2: one p2, 4: 5 g2 + 5 p2) and the P_tiny (%) table (3, 5); the RL scheduler is pg
_TABLES = {"p2:1": ("table2", "table3"), "g2:5,p2:5": ("table4", "table5")}
PAPER_Q = {gpus: {"fixed": tuple(claim(f"inference.{q}.heuristic-fixed").baseline),
                  "heuristic": tuple(claim(f"inference.{q}.heuristic-fixed").value),
                  LEARNED: tuple(claim(f"inference.{q}.rl-heuristic").value)}
           for gpus, (q, _) in _TABLES.items()}
PAPER_TINY = {gpus: {pol: tuple(claim(f"inference.{t}.{name}").value)
                     for pol, name in (("fixed", "fixed"), ("heuristic", "heuristic"),
                                       (LEARNED, "rl"))}
              for gpus, (_, t) in _TABLES.items()}
SLOTS = (12.0, 15.0, 18.0, 21.0)
SETTINGS = (("p2:1", 1.0, "Table 2/3"), ("g2:5,p2:5", 8.0, "Table 4/5"))
CLUSTER_LOADS = ("paper", "calibrated", "both")
"""``--cluster-load``: the paper's stated arrivals × 8 (default), the load at which our
``fixed`` reaches Table 4's mean quality (:data:`CLUSTER_SCALE_CALIBRATED`), or both."""


def _policies(with_pg: bool) -> list[str]:
    return ["fixed", "heuristic"] + ([LEARNED] if with_pg else [])


def heuristic_params(gpus: str, scale: float, tune: bool, out: list[str],
                     episode_minutes: float = 10.0) -> dict:
    """α, β of the heuristic: the paper's 0.5, 0.5, or (``tune``) the best of a grid on
    the training span 9-12 h (the RL training episodes, 3 of ``episode_minutes``), as the
    paper did."""
    if not tune:
        return {"alpha": 0.5, "beta": 0.5}
    from dlsched.rl.inference_train import TrainConfig, training_episodes
    from dlsched.serve.tune import tune_heuristic

    eps = training_episodes(TrainConfig(gpus=gpus, scale=scale, episodes=3,
                                        episode_minutes=episode_minutes))
    best, _grid = tune_heuristic(eps)
    out.append(f"\nheuristic tuned on 3 × {episode_minutes:g} min of 9-12 h: α = {best['alpha']}, "
               f"β = {best['beta']}")
    return best


def settings(cluster_load: str = "paper") -> list[tuple[str, float, str, str]]:
    """(GPUs, arrival scale, paper table, figures key) of each setting to run."""
    if cluster_load not in CLUSTER_LOADS:
        raise ValueError(f"cluster_load {cluster_load!r}: use one of {CLUSTER_LOADS}")
    out = [(g, sc, t, g) for g, sc, t in SETTINGS
           if g == "p2:1" or cluster_load in ("paper", "both")]
    if cluster_load in ("calibrated", "both"):
        out.append(("g2:5,p2:5", CLUSTER_SCALE_CALIBRATED,
                    "Table 4/5 at the calibrated load", f"g2:5,p2:5@x{CLUSTER_SCALE_CALIBRATED:g}"))
    return out


def measured_reason(gap: str, ours: dict[str, dict], paper_q: dict[str, float],
                    paper_tiny: dict[str, float], within: bool,
                    ceiling: float | None = None) -> str:
    """The measured figures behind a gap outside 2× of the paper's ('' when within).

    ``ours``: policy → its summary on the slot; ``paper_q`` / ``paper_tiny``: policy → the
    paper's mean Q / P_tiny (%) on the slot; ``ceiling``: the slot's capacity ceiling on
    mean Q (:func:`dlsched.serve.ceiling.quality_ceiling`), when computed."""
    if within:
        return ""
    if gap == f"{LEARNED}-heuristic":
        pg, heur = ours[LEARNED]["mean_q"], ours["heuristic"]["mean_q"]
        if pg < heur:
            return (f"{LEARNED} Q {pg:.4f} < heuristic {heur:.4f}: the shipped learned "
                    "policy is weaker than the heuristic on this slot")
        return (f"{LEARNED} Q {pg:.4f} >= heuristic {heur:.4f}, by a different margin than "
                "the paper's: the learned policy is cloned from Eq. 2 heuristics tuned per "
                "training episode (load-adaptive); its policy-gradient stage adds no measured "
                "margin (docs/inference.md)")
    f, h = ours["fixed"], ours["heuristic"]
    text = (f"fixed Q {f['mean_q']:.3f} (paper {paper_q['fixed']:.3f}), P_tiny "
            f"{100 * f['share_tiny']:.0f} % (paper {paper_tiny['fixed']:.0f} %), mean batch "
            f"{f['mean_batch']:.1f}, GPU util {f['gpu_utilization']:.2f}; heuristic Q "
            f"{h['mean_q']:.3f} (paper {paper_q['heuristic']:.3f})")
    if ceiling is not None:
        text += f"; capacity ceiling {ceiling:.3f}"
    if f["mean_q"] > paper_q["fixed"] + 0.03:
        return text + ": fixed is under less load than the paper's (docs/inference.md)"
    if ceiling is not None and ceiling < paper_q["heuristic"]:
        return text + (": the paper's heuristic Q is above what any schedule reaches on our "
                       "stream at this load")
    return text + ": at fixed's quality, our heuristic stays below the paper's"


def run_tables(hours: float, seed: int, with_pg: bool, out: list[str],
               tune: bool = False, cluster_load: str = "paper") -> dict:
    """Tables 2-5 per setting and slot (see the module docstring); figures per setting.

    ``cluster_load``: ``paper`` (arrivals × 8, as stated), ``calibrated`` (×
    :data:`CLUSTER_SCALE_CALIBRATED`, where our ``fixed`` reaches Table 4's mean quality;
    no ``pg``: the shipped policy's cluster episodes are at × 8) or ``both``."""
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.ceiling import quality_ceiling
    from dlsched.serve.metrics import summary
    from dlsched.serve.run import run_policy

    figures: dict = {}
    for gpus, scale, table, key in settings(cluster_load):
        params = heuristic_params(gpus, scale, tune, out)
        pols = _policies(with_pg and key == gpus)
        out.append(f"\n## {table}: {gpus}, arrivals × {scale:g}, {hours:g} h per slot, "
                   f"heuristic α = {params['alpha']}, β = {params['beta']}\n")
        out.append(markdown_head(["slot", "policy", "paper Q", "ours Q", "ratio",
                                  "paper P_tiny %", "ours P_tiny %", "queries", "q/CPU-s"]))
        res: dict = {}
        ceilings: list[float] = []
        for i, h in enumerate(SLOTS):
            inst = generate_inference(seed=seed + i, gpus=gpus, start_hour=h, hours=hours,
                                      scale=scale)
            ceilings.append(quality_ceiling(inst))
            for pol in pols:
                run, _ = run_policy(inst, pol, params if pol == "heuristic" else {},
                                    seed=seed)
                s = summary(run)
                p_q, p_t = PAPER_Q[gpus][pol][i], PAPER_TINY[gpus][pol][i]
                res.setdefault(pol, []).append(s)
                out.append(markdown_row([
                    f"{h:g}-{h + 3:g} h", pol, f"{p_q:.3f}", f"{s['mean_q']:.3f}",
                    f"{s['mean_q'] / p_q:.3f}", f"{p_t:.1f}", f"{100 * s['share_tiny']:.1f}",
                    int(s["queries"]), f"{s['queries_per_cpu_second']:.0f}"]))
                print(out[-1], file=sys.stderr, flush=True)
        out.append("\n" + markdown_head(["slot", "gap", "paper", "ours", "ratio",
                                         "paper direction holds", "within 2×",
                                         "measured reason"]))
        gaps = []
        pairs = [("heuristic", "fixed")] + ([(LEARNED, "heuristic")] if LEARNED in pols else [])
        for i, h in enumerate(SLOTS):
            for a, b in pairs:
                paper = PAPER_Q[gpus][a][i] - PAPER_Q[gpus][b][i]
                ours = res[a][i]["mean_q"] - res[b][i]["mean_q"]
                holds = (ours >= 0) if a == LEARNED else (ours > 0)
                within = bool(holds and abs(paper) / 2 <= abs(ours) <= 2 * abs(paper))
                reason = measured_reason(
                    f"{a}-{b}", {p: res[p][i] for p in pols},
                    {p: PAPER_Q[gpus][p][i] for p in pols},
                    {p: PAPER_TINY[gpus][p][i] for p in pols}, within, ceilings[i])
                gaps.append({"slot": h, "gap": f"{a}-{b}", "paper": paper, "ours": ours,
                             "ratio": ours / paper, "direction_holds": bool(holds),
                             "within_2x": within, "measured_reason": reason})
                out.append(markdown_row([
                    f"{h:g}-{h + 3:g} h", f"{a} − {b}", f"{paper:+.3f}", f"{ours:+.4f}",
                    f"{ours / paper:.2f}", "yes" if holds else "NO", "yes" if within else "no",
                    reason]))
        rows = {p: [{k: s[k] for k in ("mean_q", "sd_q", "share_tiny", "queries",
                                       "queries_per_cpu_second", "mean_batch",
                                       "gpu_utilization")} for s in v]
                for p, v in res.items()}
        out.append("\nCapacity ceiling per slot (an upper bound on any schedule's mean Q at "
                   "the table's delays, `dlsched.serve.ceiling`): " + ", ".join(
                       f"{h:g} h {c:.3f}" for h, c in zip(SLOTS, ceilings, strict=True)))
        figures[key] = {"arrival_scale": scale, "heuristic_params": params, "rows": rows,
                        "gaps": gaps, "capacity_ceiling": ceilings}
    return figures


def run_exact(windows: int, size: int, time_limit: float, seed: int, with_pg: bool,
              out: list[str], gpus: str = "p2:1", scale: float = 1.0,
              method: str = "exact") -> list[dict]:
    """Policies' Σ Q on windows vs ``exact`` (CP-SAT), ``lagrange`` (both with a proven
    bound) or ``edf-dp`` (class optimum)."""
    from dlsched import solve
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.problems import get_problem
    from dlsched.problems.inference import window
    from dlsched.serve.run import run_policy

    problem = get_problem("inference")
    inst = generate_inference(seed=seed, gpus=gpus, start_hour=15.0, hours=0.25, scale=scale,
                              delay_cv=0.0)
    n = len(inst.params["queries"]["arrival_ms"])
    # the windows where the heuristic loses most (the interesting ones), deterministic
    cands = []
    for lo in range(0, n - size, size):
        sub = window(inst, lo, lo + size)
        cands.append((problem.evaluate(sub, run_policy(sub, "heuristic", {})[0].decision()),
                      lo))
    picks = sorted(cands)[:windows]
    pols = _policies(with_pg)
    out.append(f"\n## {method} on {windows} windows × {size} queries, {gpus}, 15-15.25 h "
               f"(the heuristic's worst windows), delay CV 0\n")
    out.append(markdown_head(["window", "status", "ref ΣQ", "bound",
                              *(f"{p} {x}" for p in pols for x in ("ΣQ", "gap")), "solve s"]))
    rows = []
    for _h, lo in sorted(picks, key=lambda t: t[1]):
        sub = window(inst, lo, lo + size)
        t0 = time.perf_counter()
        ex = solve(sub, method,
                   time_limit=time_limit if method in ("exact", "lagrange") else None)
        wall = time.perf_counter() - t0
        ref = ex.objective
        row = {"window": [lo, lo + size], "method": method, "status": ex.status.value,
               "reference": ref, "bound": ex.bound, "seconds": wall}
        cells = []
        for p in pols:
            q = problem.evaluate(sub, run_policy(sub, p, {})[0].decision())
            row[p] = q
            row[f"{p}_gap"] = relative_gap(q, ref, "max")
            gap = row[f"{p}_gap"]
            cells += [f"{q:.3f}", "—" if gap is None else f"{100 * gap:.2f} %"]
        rows.append(row)
        out.append(markdown_row([f"{lo}-{lo + size}", ex.status.value, f"{ref:.3f}",
                                 "—" if ex.bound is None else f"{ex.bound:.3f}", *cells,
                                 f"{wall:.1f}"]))
        print(out[-1], file=sys.stderr, flush=True)
    out.append("\nGap = (reference − policy) / max(|policy|, |reference|) "
               "(dlsched.relative_gap); the reference is proven optimal only "
               "where the status says optimal (`edf-dp` is the optimum of a restricted class, "
               "so a policy may beat it: negative gap).")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=0.5, help="hours per slot (0.5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-pg", action="store_true", help="skip the learned policy")
    ap.add_argument("--tune", action="store_true",
                    help="tune the heuristic's α, β on the training span first")
    ap.add_argument("--exact-windows", type=int, default=0)
    ap.add_argument("--window", type=int, default=30, help="queries per exact window (30)")
    ap.add_argument("--edf-windows", type=int, default=0,
                    help="windows for the EDF-contiguous DP, on 1 and 2 p2 GPUs")
    ap.add_argument("--edf-window", type=int, default=200, help="queries per DP window")
    ap.add_argument("--edf-gpus", default="p2:1",
                    help="clusters for the DP windows, ';'-separated (p2:1; e.g. 'p2:1;p2:2')")
    ap.add_argument("--window-method", default="edf-dp", choices=("edf-dp", "lagrange"),
                    help="method for the --edf-windows windows: the EDF-contiguous DP "
                         "(class optimum) or the Lagrangian bound + schedule (proven bound)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--cluster-load", choices=CLUSTER_LOADS, default="paper",
                    help="5 g2 + 5 p2 at the paper's arrivals × 8 (paper), at × "
                         f"{CLUSTER_SCALE_CALIBRATED:g} where our fixed reaches Table 4's mean "
                         "quality (calibrated; no learned policy), or both")
    args = ap.parse_args(argv)
    from dlsched.instances.inference_gen import parse_gpus
    t0 = time.process_time()
    out = ["# Fang et al. CIKM'17, Tables 2-5: paper vs dlsched"]
    figures = {"tables": run_tables(args.hours, args.seed, not args.no_pg, out, args.tune,
                                    args.cluster_load)}
    if args.exact_windows:
        figures["exact_windows"] = run_exact(args.exact_windows, args.window, args.time_limit,
                                             args.seed, not args.no_pg, out)
    if args.edf_windows:
        figures["edf_windows"] = [
            run_exact(args.edf_windows, args.edf_window, args.time_limit, args.seed,
                      not args.no_pg, out, gpus=g, scale=sc, method=args.window_method)
            for g in args.edf_gpus.split(";") for sc in [float(len(parse_gpus(g)))]]
    figures["cpu_seconds"] = time.process_time() - t0
    figures["load_average"] = list(os.getloadavg())
    figures["arguments"] = vars(args)
    print("\n".join(out))
    print(json.dumps(figures, default=lambda o: float(o) if isinstance(o, np.floating)
                     else str(o)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
