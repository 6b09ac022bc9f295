"""SCHED²'s learned schedulers against the six selection rules and a tuned composite rule.

The shipped agent is ``learned-priority`` (one weight vector scores every queued job; the
weights are trained by the cross-entropy method, :mod:`dlsched.rl.sched2_search`). This
benchmark trains it ``--train-seeds`` times with the shipped command's settings (seed 0
must give the shipped weights bit for bit), then runs every policy through the simulator:

* **by share**: the 30 test episodes (1000 jobs, seeds 1000-1029, 15 × 8 GPUs, the
  congested regime, 120 s mean inter-arrival) at 60, 68 and 75 % one-GPU jobs: mean
  execution effectiveness E (Eq. 2), mean JCT, makespan and mean wait of the agent (mean
  over training seeds, and their spread), of the deep-Q agent ``dqn`` (trained
  ``--train-seeds`` times with the shipped settings, :mod:`.sched2_rl_dqn`; seed 0 must
  give the shipped ``dqn`` weights bit for bit), of FIFO, SIF, DSIF, SAF, LRF, SPF, and of
  the composite rule ``num_gpus × duration^a`` with ``a`` tuned on a grid over the
  training episodes;
* **generalization**: the same agents, without retraining, on 10 × 8, 30 × 8 and
  101 × 8 GPUs at the same load per GPU (inter-arrival 120 s × 15 / servers), 68 %;
* **heavy regime** (part ``heavy``): episodes whose median ideal time is 5270 s instead of
  1800 s, calibrated so that SPF's mean wait on training seeds 0-4 is Fig. 10b's
  baseline wait (19,075 s), with an agent trained there;
* **ablation** (part ``ablation``): warm start only (SPF's order), the agent, no warm start
  (zero weights, the same generations), and windows J = 10 and 30; part ``dqn-ablation``:
  the DQN learner's (:func:`.sched2_rl_dqn.dqn_ablation`), in both regimes;
* **small workloads**: on 2 × 4 GPUs with ``--small-jobs`` jobs, the shipped agent's and
  the rules' makespan and total completion time beside the exact offline optima
  (every ``offline-*`` method of ``sched2``);
* **optimum** (part ``optimum``, :mod:`.sched2_optimum`): the gaps of the shipped agent,
  ``dqn``, the best rule and the tuned composite rule to the proven optimum of their own
  objective, mean E (``offline-effectiveness``), on unseen 2 × 4 GPU workloads (a
  clairvoyant optimum: the policies decide online).

    python -m dlsched.benchmarks.sched2_rl [--episodes 30] [--train-seeds 3]
                                           [--parts main,heavy,ablation,dqn-ablation,small,optimum]

The default parts are ``main`` (by share and generalization), ``small`` and ``optimum``;
each part can run in its own process.

The last line is one JSON object with every number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from dlsched.heuristics.sched2 import RULES
from dlsched.heuristics.sched2_priority import FEATURES, shipped_weights
from dlsched.instance import Instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.markdown import markdown_table
from dlsched.registry import methods_for
from dlsched.rl.dqn_settings import DqnSettings
from dlsched.rl.sched2_search import (
    SPF_WEIGHTS,
    Episode,
    PriorityScorer,
    SearchSettings,
    effectiveness,
    train_priority,
)
from dlsched.rl.sched2_train import TEST_SEEDS, TRAIN_SEEDS, EpisodeSpec
from dlsched.simulate import Policy, job_table, simulate, summary
from dlsched.solve import solve

from .paper_claims import claim
from .sched2_optimum import composite_weights, optimum_gaps
from .sched2_rl_dqn import (
    VALIDATION,
    dqn_ablation,
    dqn_policies,
    dqn_row,
    reproduces_shipped,
    train_dqn_agents,
)

SHARES = (0.60, 0.68, 0.75)
HEAVY_MEDIAN_S = 5270.0
TRAINING_SEEDS = list(TRAIN_SEEDS)[:4]
"""The shipped training's episodes per one-GPU share (``--train-episodes 4``)."""
COMPOSITE_GRID = tuple(round(a, 2) for a in np.arange(0.1, 1.01, 0.1))
METRICS = ("effectiveness_mean", "jct_mean", "makespan", "wait_mean")
PARTS = {"main", "heavy", "ablation", "dqn-ablation", "small", "optimum"}


def _weights_file(folder: Path, name: str, weights: np.ndarray) -> str:
    path = folder / f"{name}.safetensors"
    save_file({"weights": np.asarray(weights, dtype=np.float64)}, str(path),
              metadata={"features": json.dumps(list(FEATURES))})
    return str(path)


def train_agents(folder: Path, spec: EpisodeSpec, seeds: int,
                 settings: SearchSettings) -> tuple[list[str], float]:
    """Weights files of ``seeds`` agents trained like the shipped one; their CPU seconds."""
    files, cpu = [], 0.0
    for seed in range(seeds):
        out = folder / f"{spec.median_duration:g}-{settings.window}-{settings.warm_start}-{seed}"
        episodes = {name: [w for share in SHARES
                           for w in replace(spec, single_share=share).workloads(seeds_)]
                    for name, seeds_ in (("train", TRAINING_SEEDS),
                                         ("valid", VALIDATION))}
        summary_ = train_priority(out, train=episodes["train"], valid=episodes["valid"],
                                  seed=seed, settings=settings)
        cpu += summary_["cpu_s"]
        files.append(str(out / "sched2_priority.safetensors"))
    return files, cpu


def tune_composite(spec: EpisodeSpec) -> float:
    """The exponent a of ``num_gpus × duration^a`` best on the training episodes."""
    episodes = [Episode.of(w) for share in SHARES
                for w in replace(spec, single_share=share).workloads(TRAINING_SEEDS)]

    def score(a: float) -> float:
        weights = np.zeros(len(FEATURES))
        weights[:2] = (np.log(2.0), a)
        return statistics.fmean(effectiveness(e, PriorityScorer(weights)) for e in episodes)

    return max(COMPOSITE_GRID, key=score)


def run_all(workloads: list[Instance], policies: dict[str, Policy]) -> dict[str, dict]:
    """Per policy: the mean and spread over episodes of each metric, every run simulated."""
    out = {}
    for name, policy in policies.items():
        rows = [summary(simulate(w, policy, record_events=False)) for w in workloads]
        out[name] = {k: statistics.fmean(r[k] for r in rows) for k in METRICS}
        out[name]["E_per_episode"] = [r["effectiveness_mean"] for r in rows]
    return out


def agent_stats(per: dict[str, dict], agents: list[str]) -> dict:
    """The agent's metrics as the mean over training seeds, with the per-seed values."""
    out = {k: statistics.fmean(per[a][k] for a in agents) for k in METRICS}
    out["E_by_seed"] = [per[a]["effectiveness_mean"] for a in agents]
    return out


def compare_on(workloads: list[Instance], agents: list[str], composite: str,
               dqn_agents: list[str] | None = None) -> dict:
    policies = {f"agent{k}": Policy("learned-priority", options={"weights": w})
                for k, w in enumerate(agents)}
    policies.update({r: Policy(r) for r in RULES})
    policies["composite"] = Policy("learned-priority", options={"weights": composite})
    extra = dqn_policies(dqn_agents or [])
    policies.update(extra)
    per = run_all(workloads, policies)
    best = max(RULES, key=lambda r: per[r]["effectiveness_mean"])
    agent = agent_stats(per, list(policies)[: len(agents)])
    row = {"agent_E": agent["effectiveness_mean"], "agent_E_by_seed": agent["E_by_seed"],
           "agent_jct_mean_s": agent["jct_mean"], "agent_makespan_s": agent["makespan"],
           "agent_wait_mean_s": agent["wait_mean"], "best_rule": best,
           "best_rule_E": per[best]["effectiveness_mean"],
           "best_rule_jct_mean_s": per[best]["jct_mean"],
           "best_rule_makespan_s": per[best]["makespan"],
           "best_rule_wait_mean_s": per[best]["wait_mean"],
           "composite_E": per["composite"]["effectiveness_mean"],
           "composite_jct_mean_s": per["composite"]["jct_mean"],
           "rules": {r: {k: per[r][k] for k in METRICS} for r in RULES}}
    diffs = np.mean([per[f"agent{k}"]["E_per_episode"] for k in range(len(agents))], axis=0) \
        - np.array(per[best]["E_per_episode"])
    row["agent_minus_best_rule_E_paired"] = {"mean": float(diffs.mean()),
                                             "min": float(diffs.min()),
                                             "episodes_won": int((diffs > 0).sum()),
                                             "episodes": len(diffs)}
    if extra:
        row.update(dqn_row(per, list(extra), best))
    return row


def print_share(title: str, row: dict) -> None:
    seeds = len(row["agent_E_by_seed"])
    lines = [[f"learned-priority (mean of {seeds} seeds)", f"{row['agent_E']:.4f}",
              f"{row['agent_jct_mean_s'] / 3600:.3f}", f"{row['agent_makespan_s'] / 3600:.1f}",
              f"{row['agent_wait_mean_s'] / 3600:.3f}"],
             ["composite (tuned)", f"{row['composite_E']:.4f}",
              f"{row['composite_jct_mean_s'] / 3600:.3f}", "", ""]]
    if "dqn_E" in row:
        lines.append([f"dqn (mean of {len(row['dqn_E_by_seed'])} seeds)", f"{row['dqn_E']:.4f}",
                      f"{row['dqn_jct_mean_s'] / 3600:.3f}",
                      f"{row['dqn_makespan_s'] / 3600:.1f}",
                      f"{row['dqn_wait_mean_s'] / 3600:.3f}"])
    lines += [[r, f"{m['effectiveness_mean']:.4f}", f"{m['jct_mean'] / 3600:.3f}",
               f"{m['makespan'] / 3600:.1f}", f"{m['wait_mean'] / 3600:.3f}"]
              for r, m in row["rules"].items()]
    print(f"\n### {title}\n")
    print(markdown_table(["policy", "mean E", "mean JCT h", "makespan h", "mean wait h"], lines))
    paired = row["agent_minus_best_rule_E_paired"]
    print(f"\nagent − {row['best_rule']} per episode: mean {paired['mean']:+.4f}, "
          f"worst {paired['min']:+.4f}, won {paired['episodes_won']}/{paired['episodes']}")


def small_workloads(workloads: int, jobs: int, time_limit: float) -> dict:
    """Makespan and total completion time of the agent and the rules beside the exact
    offline optima, on 2 × 4 GPUs."""
    offline = sorted(m for m in methods_for("sched2") if m.startswith("offline"))
    rows = []
    for s in range(workloads):
        w = generate_sched2(seed=s, jobs=jobs, servers=2, gpus_per_server=4, interarrival=60.0)
        row: dict = {"seed": s}
        for name in ("learned-priority", *RULES):
            t = job_table(simulate(w, Policy(name), record_events=False))
            row[name] = {"makespan": float(t["end"].max() - t["submit"].min()),
                         "total_completion": float((t["end"] - t["submit"]).sum()),
                         "effectiveness_mean": float(t["effectiveness"].mean())}
        for m in offline:
            r = solve(w, m, time_limit=time_limit)
            row[m] = {"status": r.status.value, "objective": r.objective, "bound": r.bound}
        rows.append(row)
    print(f"\n### small workloads: 2 x 4 GPUs, {jobs} jobs\n")
    names = ("learned-priority", *RULES)
    print(markdown_table(
        ["seed", *(f"{p} makespan" for p in names), "offline"],
        [[row["seed"], *(f"{row[p]['makespan']:.0f}" for p in names),
          "; ".join(f"{m}: {row[m]['status']} {row[m]['objective']}" for m in offline)
          or "no offline method registered"] for row in rows]))
    return {"offline_methods": offline, "workloads": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30, help="test episodes (30)")
    parser.add_argument("--train-seeds", type=int, default=3, help="training seeds (3)")
    parser.add_argument("--generalization-episodes", type=int, default=10,
                        help="test episodes per other cluster (10)")
    parser.add_argument("--parts", default="main,small,optimum",
                        help="comma-separated: main, heavy, ablation, dqn-ablation, small, "
                             "optimum (main,small,optimum)")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs per episode (1000)")
    parser.add_argument("--generations", type=int, default=SearchSettings.generations,
                        help="CEM generations per training (the shipped 20)")
    parser.add_argument("--population", type=int, default=SearchSettings.population,
                        help="CEM draws per generation (the shipped 24)")
    parser.add_argument("--dqn-episodes", type=int, default=DqnSettings.episodes,
                        help=f"DQN training episodes (the shipped {DqnSettings.episodes})")
    parser.add_argument("--small-workloads", type=int, default=5,
                        help="small workloads beside the offline optima (5)")
    parser.add_argument("--small-jobs", type=int, default=8, help="jobs per small workload (8)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per offline solve (60)")
    parser.add_argument("--optimum-workloads", type=int, default=20,
                        help="workloads of the optimum part (20)")
    parser.add_argument("--optimum-jobs", type=int, default=10,
                        help="jobs per workload of the optimum part (10)")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if not parts <= PARTS:
        parser.error(f"--parts: use some of {sorted(PARTS)}")
    start = time.process_time()
    spec = EpisodeSpec(jobs=args.jobs)
    settings = SearchSettings(generations=args.generations, population=args.population,
                              elites=min(SearchSettings.elites, args.population))
    shipped_settings = settings == SearchSettings() and spec == EpisodeSpec()
    test_seeds = list(TEST_SEEDS)[: args.episodes]
    result: dict = {"benchmark": "sched2_rl", "agent": "learned-priority",
                    "learner": "cross-entropy method", "parts": sorted(parts)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "main" in parts:
            agents, train_cpu = train_agents(folder, spec, args.train_seeds, settings)
            reproduced = all(np.array_equal(a, b) for a, b in zip(
                load_file(agents[0]).values(), load_file(shipped_weights()).values(),
                strict=True)) if shipped_settings else None
            a = tune_composite(spec)
            composite = _weights_file(folder, "composite", composite_weights(a))
            dqn_settings = replace(DqnSettings(), episodes=args.dqn_episodes)
            dqn_agents, dqn_cpu = train_dqn_agents(folder, spec, args.train_seeds,
                                                   TRAINING_SEEDS, dqn_settings)
            result.update({"dqn_train_cpu_s": round(dqn_cpu, 1),
                           "dqn_seed0_reproduces_shipped_weights": reproduces_shipped(
                               dqn_agents[0]) if (spec == EpisodeSpec()
                                                  and dqn_settings == DqnSettings()) else None})
            result.update({"train_seeds": args.train_seeds,
                           "train_cpu_s": round(train_cpu / args.train_seeds, 1),
                           "seed0_reproduces_shipped_weights": reproduced,
                           "composite_exponent": a, "episodes": args.episodes,
                           "by_share": {}, "generalization": {}})
            for share in SHARES:
                workloads = replace(spec, single_share=share).workloads(test_seeds)
                row = compare_on(workloads, agents, composite, dqn_agents)
                result["by_share"][f"{share:g}"] = row
                print_share(f"{share:.0%} one-GPU jobs, {args.episodes} test episodes", row)
            for servers in (10, 30, 101):
                other = replace(spec, servers=servers, interarrival=120.0 * 15 / servers)
                workloads = other.workloads(test_seeds[: args.generalization_episodes])
                row = compare_on(workloads, agents, composite, dqn_agents)
                result["generalization"][f"{servers}x8"] = {
                    "agent_E": row["agent_E"], "dqn_E": row["dqn_E"],
                    "dqn_E_by_seed": row["dqn_E_by_seed"], "best_rule": row["best_rule"],
                    "best_rule_E": row["best_rule_E"], "sif_E": row["rules"]["sif"][
                        "effectiveness_mean"], "composite_E": row["composite_E"]}
                print_share(f"{servers} x 8 GPUs (not trained on), 68 %", row)
        if "heavy" in parts:
            heavy = replace(spec, median_duration=HEAVY_MEDIAN_S)
            heavy_agents, _ = train_agents(folder, heavy, args.train_seeds, settings)
            heavy_composite = _weights_file(folder, "heavy-composite",
                                            composite_weights(tune_composite(heavy)))
            row = compare_on(heavy.workloads(test_seeds), heavy_agents, heavy_composite)
            result["heavy"] = row
            print_share("heavy regime (median ideal time 5270 s), 68 %", row)
        if "ablation" in parts:
            result["ablation"] = ablation(folder, spec, test_seeds, settings)
        if "dqn-ablation" in parts:
            result["dqn_ablation"] = dqn_ablation(
                spec, replace(spec, median_duration=HEAVY_MEDIAN_S), test_seeds, TRAINING_SEEDS)
        if "small" in parts:
            result["small"] = small_workloads(args.small_workloads, args.small_jobs,
                                              args.time_limit)
        result["optimum"] = None
        if "optimum" in parts:
            a = result.get("composite_exponent")
            a = tune_composite(spec) if a is None else a
            result["optimum"] = optimum_gaps(
                _weights_file(folder, "optimum-composite", composite_weights(a)), a,
                args.optimum_workloads, args.optimum_jobs)
    result["paper_E_gain_68"] = claim("sched2.fig7.E-68").value
    result["cpu_s"] = round(time.process_time() - start, 1)
    print(json.dumps(result, sort_keys=True))
    return 0


def ablation(folder: Path, spec: EpisodeSpec, test_seeds: list[int],
             base: SearchSettings) -> dict:
    """Mean E at 68 % of one agent (seed 0) per variant, on the test episodes."""
    workloads = spec.workloads(test_seeds)
    variants = {"warm start only (SPF order)": _weights_file(folder, "spf", SPF_WEIGHTS)}
    for name, settings in (("shipped", base), ("no warm start", replace(base, warm_start=False)),
                           ("window 10", replace(base, window=10)),
                           ("window 30", replace(base, window=30))):
        variants[name] = train_agents(folder, spec, 1, settings)[0][0]
    out = {}
    for name, weights in variants.items():
        window = 10 if name == "window 10" else 30 if name == "window 30" else None
        options = {"weights": weights, **({"window": window} if window else {})}
        per = run_all(workloads, {name: Policy("learned-priority", options=options)})
        out[name] = per[name]["effectiveness_mean"]
    print("\n### ablation (68 %, seed 0)\n")
    print(markdown_table(["variant", "mean E"], [[k, f"{v:.4f}"] for k, v in out.items()]))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
