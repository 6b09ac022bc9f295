"""The DQN parts of :mod:`dlsched.benchmarks.sched2_rl`: training the ``dqn`` agent like the
shipped one (seed 0 must give the shipped weights bit for bit), its rows beside the rules,
and its ablation (part ``dqn-ablation``).

The ablation trains one agent (seed 0) per variant on the shipped training episodes and
plays it greedily on the test episodes at 68 % one-GPU jobs in the fast episode loop
(:mod:`dlsched.rl.sched2_fast_env`, which gives the simulator's schedule: a test compares
the start times), in both regimes: the 120 s regime and the heavy one (median ideal time
5270 s). Variants: the warm start alone (demonstrations of SPF over the whole queue, no
DQN episodes), the shipped settings, no warm start with as many more DQN episodes as the
warm start's CPU time buys, windows J = 10 and 30 (the shipped agent sees the whole
queue), 1-step targets, one environment at a time, and learned-priority as the teacher.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from dlsched.heuristics.sched2_dqn_policy import shipped_weights
from dlsched.instance import Instance
from dlsched.markdown import markdown_table
from dlsched.rl.dqn_settings import DqnSettings
from dlsched.rl.sched2_search import Episode
from dlsched.rl.sched2_train import VALIDATION_SEEDS, EpisodeSpec, train
from dlsched.simulate import Policy

SHARES = (0.60, 0.68, 0.75)
WARM_START_EPISODES = 12
"""DQN episodes that cost about the warm start's CPU time (2000 updates on 4 teacher
episodes ≈ 12 episodes of 1000 jobs): the no-warm-start variant plays that many more."""


VALIDATION = list(VALIDATION_SEEDS)[:5]
"""The shipped training's validation seeds per one-GPU share (``--valid-episodes 5``)."""


def episode_sets(spec: EpisodeSpec, training_seeds: list[int]) -> dict[str, list[Instance]]:
    """The shipped training's episodes: 4 training and 5 validation seeds per share."""
    return {name: [w for share in SHARES
                   for w in replace(spec, single_share=share).workloads(seeds)]
            for name, seeds in (("train", training_seeds), ("valid", VALIDATION))}


def train_dqn_agents(folder: Path, spec: EpisodeSpec, seeds: int, training_seeds: list[int],
                     settings: DqnSettings | None = None) -> tuple[list[str], float]:
    """Weights files of ``seeds`` DQN agents trained like the shipped one; CPU-s per seed."""
    sets = episode_sets(spec, training_seeds)
    files, cpu = [], 0.0
    for seed in range(seeds):
        out = folder / f"dqn-{spec.median_duration:g}-{seed}"
        cpu += train(out, train_set=sets["train"], valid_set=sets["valid"], seed=seed,
                     settings=settings or DqnSettings())["cpu_s"]
        files.append(str(out / "sched2_dqn.safetensors"))
    return files, cpu / max(1, seeds)


def reproduces_shipped(path: str) -> bool:
    """Whether a weights file holds the shipped ``dqn`` tensors bit for bit."""
    a, b = load_file(path), load_file(shipped_weights())
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def dqn_policies(files: list[str]) -> dict[str, Policy]:
    return {f"dqn{k}": Policy("dqn", options={"weights": f}) for k, f in enumerate(files)}


def dqn_row(per: dict[str, dict], names: list[str], best: str) -> dict:
    """The DQN agents' metrics (mean over training seeds, E per seed, paired with the best
    rule per episode)."""
    row = {"dqn_E": statistics.fmean(per[n]["effectiveness_mean"] for n in names),
           "dqn_E_by_seed": [per[n]["effectiveness_mean"] for n in names],
           "dqn_jct_mean_s": statistics.fmean(per[n]["jct_mean"] for n in names),
           "dqn_makespan_s": statistics.fmean(per[n]["makespan"] for n in names),
           "dqn_wait_mean_s": statistics.fmean(per[n]["wait_mean"] for n in names)}
    diffs = (np.mean([per[n]["E_per_episode"] for n in names], axis=0)
             - np.array(per[best]["E_per_episode"]))
    row["dqn_minus_best_rule_E_paired"] = {"mean": float(diffs.mean()),
                                           "min": float(diffs.min()),
                                           "episodes_won": int((diffs > 0).sum()),
                                           "episodes": len(diffs)}
    return row


def dqn_ablation(spec: EpisodeSpec, heavy: EpisodeSpec, test_seeds: list[int],
             training_seeds: list[int]) -> dict:
    """Mean test E at 68 % per variant and regime, one training seed (module docstring)."""
    from dlsched.rl.dqn import greedy_effectiveness, train_dqn

    base = DqnSettings()
    variants = {
        "warm start only": replace(base, episodes=0),
        "shipped": base,
        "no warm start (equal CPU)": replace(base, teacher=None,
                                             episodes=base.episodes + WARM_START_EPISODES),
        "window J = 10": replace(base, window=10),
        "window J = 30": replace(base, window=30),
        "1-step targets": replace(base, n_step=1),
        "1 environment": replace(base, envs=1),
        "teacher learned-priority": replace(base, teacher="priority"),
    }
    out: dict = {}
    for regime, episodes_spec in (("120 s", spec), ("heavy", heavy)):
        sets = {k: [Episode.of(w) for w in v]
                for k, v in episode_sets(episodes_spec, training_seeds).items()}
        test = [Episode.of(w) for w in episodes_spec.workloads(test_seeds)]
        rows = {}
        for name, settings in variants.items():
            if regime == "heavy" and name not in ("warm start only", "shipped",
                                                  "no warm start (equal CPU)"):
                continue
            result = train_dqn(sets["train"], sets["valid"], settings, seed=0)
            rows[name] = {"E": greedy_effectiveness(result.net, test, settings.window),
                          "valid_E": result.best_valid, "cpu_s": round(result.cpu_s, 1)}
        out[regime] = rows
        print(f"\n### dqn ablation ({regime} regime, 68 %, seed 0, "
              f"{len(test_seeds)} test episodes)\n")
        print(markdown_table(["variant", "test E", "validation E", "training CPU-s"],
                             [[k, f"{v['E']:.4f}", f"{v['valid_E']:.4f}", f"{v['cpu_s']:.0f}"]
                              for k, v in rows.items()]))
    return out
