"""``dlsched rl train sched2`` and ``dlsched rl evaluate sched2`` (torch is imported only
when training runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..cli_support import EXIT_OK, seed_value
from ..errors import InputError
from ..files import check_output


def _episode_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=1000, help="jobs per episode (1000)")
    p.add_argument("--single-share", type=float, default=0.68,
                   help="share of one-GPU jobs (0.68; the paper also uses 0.60 and 0.75)")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--episodes", type=int, default=300, help="training episodes (300)")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of everything (0)")
    p.add_argument("--out", required=True, help="directory for weights, curve, settings")
    p.add_argument("--train-episodes", type=int, default=30,
                   help="distinct training workloads, seeds 0.. (30)")
    p.add_argument("--eval-every", type=int, default=10,
                   help="evaluate on held-out episodes every N episodes (10)")
    p.add_argument("--eval-episodes", type=int, default=5,
                   help="validation episodes per evaluation, seeds 2000.. (5)")
    p.add_argument("--window", type=int, default=30,
                   help="J, the queued jobs the agent sees (30; the paper's 10 starves it "
                   "in the congested regime: docs/rl.md)")
    p.add_argument("--pretrain-episodes", type=int, default=5,
                   help="episodes of SIF demonstrations for the warm start (5; 0: none)")
    p.add_argument("--pretrain-updates", type=int, default=3000,
                   help="gradient steps of the warm start (3000)")
    _episode_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", help="weights file (default: the shipped agent)")
    p.add_argument("--episodes", type=int, default=30, help="test episodes, seeds 1000.. (30)")
    _episode_arguments(p)
    p.add_argument("--csv", help="also write the per-episode table to this CSV file")


def _spec(args: argparse.Namespace):
    from .sched2_train import EpisodeSpec

    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}", field="--jobs", fix="use 1 or more")
    if not 0.0 <= args.single_share <= 1.0:
        raise InputError(f"--single-share {args.single_share}", field="--single-share",
                         fix="a share in [0, 1]")
    return EpisodeSpec(jobs=args.jobs, single_share=args.single_share)


def train_command(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .sched2_train import train

    if args.episodes < 1 or args.eval_every < 1 or args.eval_episodes < 1:
        raise InputError("episode counts must be >= 1", field="--episodes/--eval-*",
                         fix="use positive counts")
    if not 1 <= args.train_episodes <= 30:
        raise InputError(f"--train-episodes {args.train_episodes}", field="--train-episodes",
                         fix="use 1 to 30 (the paper's 30 training traces)")
    bar = tqdm(total=args.episodes, disable=args.no_progress, unit="episode")

    def progress(row: dict) -> None:
        bar.update(1)
        text = f"E {row.get('train_effectiveness', float('nan')):.3f}"
        if "valid_effectiveness_mean" in row:
            text += f" validation {row['valid_effectiveness_mean']:.3f}"
        bar.set_postfix_str(text)

    if args.window < 1 or args.pretrain_episodes < 0 or args.pretrain_updates < 0:
        raise InputError("--window must be >= 1 and the warm-start counts >= 0",
                         field="--window/--pretrain-*", fix="use positive counts")
    summary = train(args.out, episodes=args.episodes, seed=args.seed, spec=_spec(args),
                    window=args.window, train_episodes=args.train_episodes,
                    eval_every=args.eval_every, eval_episodes=args.eval_episodes,
                    pretrain_episodes=args.pretrain_episodes,
                    pretrain_updates=args.pretrain_updates, progress=progress)
    bar.close()
    print(json.dumps(summary))
    print(f"wrote {Path(args.out) / 'sched2_dqn.safetensors'} ({summary['cpu_s']} CPU-s)")
    return EXIT_OK


def evaluate_command(args: argparse.Namespace) -> int:
    from .sched2_train import TEST_SEEDS, compare

    if not 1 <= args.episodes <= len(TEST_SEEDS):
        raise InputError(f"--episodes {args.episodes}", field="--episodes",
                         fix=f"use 1 to {len(TEST_SEEDS)}")
    if args.csv:
        check_output(args.csv, "--csv")
    workloads = _spec(args).workloads(list(TEST_SEEDS)[: args.episodes])
    table = compare(args.weights, workloads)
    if args.csv:
        table.to_csv(args.csv, index=False)
    stats = table.groupby("policy", sort=False).agg(["mean", "std"])
    print("| policy | mean E | E std | makespan h | mean JCT h | mean wait h |")
    print("|---|---|---|---|---|---|")
    for name, row in stats.iterrows():
        print(f"| {name} | {row[('effectiveness_mean', 'mean')]:.3f}"
              f" | {row[('effectiveness_mean', 'std')]:.3f}"
              f" | {row[('makespan', 'mean')] / 3600:.1f} | {row[('jct_mean', 'mean')] / 3600:.2f}"
              f" | {row[('wait_mean', 'mean')] / 3600:.2f} |")
    return EXIT_OK
