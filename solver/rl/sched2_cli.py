"""``dlsched rl train sched2`` and ``dlsched rl evaluate sched2``.

Two learners: ``search`` (the default, the shipped agent ``learned-priority``: the
cross-entropy method over the weights of a job-priority scorer, numpy only) and ``dqn``
(the paper's deep-Q learner with a per-job Q-network, any cluster; torch is imported only
when it trains).
Episodes come from the seeded generator (cluster, load and job mix as options) or from a
workload file cut into training, validation and test episodes by time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli_support import EXIT_OK, seed_value
from ..errors import InputError
from ..files import atomic_path, check_output
from ..markdown import markdown_table
from .dqn_settings import DqnSettings

SHARES = (0.6, 0.68, 0.75)
"""The one-GPU shares of the paper's three job mixes (Fig. 7); both learners train on all."""

DQN = DqnSettings()


def _shares(text: str) -> tuple[float, ...]:
    try:
        shares = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use shares in [0, 1], comma-separated"
                                         ) from None
    if not shares or not all(0.0 <= x <= 1.0 for x in shares):
        raise argparse.ArgumentTypeError(f"{text!r}: use shares in [0, 1], comma-separated")
    return shares


def _episode_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("episodes (generated unless --workload is given)")
    g.add_argument("--servers", type=int, default=15, help="servers (15, the paper's)")
    g.add_argument("--gpus-per-server", type=int, default=8, help="GPUs per server (8)")
    g.add_argument("--jobs", type=int, default=1000, help="jobs per episode (1000)")
    g.add_argument("--interarrival", type=float, default=120.0,
                   help="mean inter-arrival time in seconds (120, the congested regime)")
    g.add_argument("--median-duration", type=float, default=1800.0,
                   help="median ideal run time in seconds (1800)")
    g.add_argument("--single-share", type=_shares, default=None,
                   help="shares of one-GPU jobs, comma-separated (train: 0.6,0.68,0.75, "
                   "the paper's three mixes; evaluate: 0.68, and only the first)")
    g.add_argument("--workload", help="a sched2 workload or imported trace, cut into "
                   "episodes of --jobs jobs by time: 60 %% train, 20 %% validate, 20 %% test")


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--learner", choices=("search", "dqn"), default="search",
                   help="search: cross-entropy policy search of the job-priority scorer "
                   "(the shipped learned-priority); dqn: the paper's deep-Q learner, "
                   "shipped as `dqn` (search)")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of everything (0)")
    p.add_argument("--out", required=True, help="directory for weights, curve, settings")
    p.add_argument("--window", type=int, default=None,
                   help="J, the oldest queued jobs the agent sees (the whole queue; the "
                   "paper's 10 starves it: docs/rl.md)")
    p.add_argument("--train-episodes", type=int, default=4,
                   help="generated training workloads per share, seeds 0.. (4)")
    p.add_argument("--valid-episodes", type=int, default=5,
                   help="validation workloads per share, seeds 2000.. (5)")
    s = p.add_argument_group("search learner")
    s.add_argument("--generations", type=int, default=20, help="CEM generations (20)")
    s.add_argument("--population", type=int, default=24, help="weight vectors per generation (24)")
    s.add_argument("--elites", type=int, default=6, help="best draws refitted (6)")
    s.add_argument("--no-warm-start", action="store_true",
                   help="start from zero weights instead of SPF's order")
    d = p.add_argument_group("dqn learner")
    d.add_argument("--episodes", type=int, default=DQN.episodes,
                   help=f"training episodes played ({DQN.episodes})")
    d.add_argument("--envs", type=int, default=DQN.envs,
                   help=f"episodes stepped together ({DQN.envs})")
    d.add_argument("--n-step", type=int, default=DQN.n_step,
                   help=f"steps of the n-step return ({DQN.n_step})")
    d.add_argument("--teacher", choices=("spf", "priority", "none"), default=DQN.teacher,
                   help="demonstrations: SPF's order over the whole queue, learned-priority's "
                   f"shipped weights, or none ({DQN.teacher})")
    d.add_argument("--demo-episodes", type=int, default=DQN.demo_episodes,
                   help=f"training episodes the teacher plays ({DQN.demo_episodes})")
    d.add_argument("--pretrain-updates", type=int, default=DQN.pretrain_updates,
                   help=f"gradient steps on the demonstrations first ({DQN.pretrain_updates})")
    d.add_argument("--eval-every", type=int, default=DQN.eval_every,
                   help=f"play the validation episodes every N episodes ({DQN.eval_every})")
    _episode_arguments(p)
    p.add_argument("--no-progress", action="store_true", help="no progress output")


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=("learned-priority", "dqn"), default="learned-priority",
                   help="the learned method to compare with the rules (learned-priority)")
    p.add_argument("--weights", help="weights file (default: the shipped one)")
    p.add_argument("--episodes", type=int, default=30,
                   help="test episodes, seeds 1000.. (30; with --workload: its test part)")
    _episode_arguments(p)
    p.add_argument("--csv", help="also write the per-episode table to this CSV file")


def _spec(args: argparse.Namespace, share: float):
    from .sched2_train import EpisodeSpec

    for name in ("jobs", "servers", "gpus_per_server"):
        if getattr(args, name) < 1:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {getattr(args, name)}", field=flag, fix="use 1 or more")
    for name in ("interarrival", "median_duration"):
        if not getattr(args, name) > 0:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {getattr(args, name)}", field=flag,
                             fix="use a positive number of seconds")
    return EpisodeSpec(jobs=args.jobs, single_share=share, interarrival=args.interarrival,
                       servers=args.servers, gpus_per_server=args.gpus_per_server,
                       median_duration=args.median_duration)


def episode_sets(args: argparse.Namespace, shares: tuple[float, ...], train_per_share: int,
                 valid_per_share: int, test: int = 0) -> dict[str, list]:
    """Training, validation and test workloads from the options (module docstring)."""
    from ..instance_io import load_instance
    from .sched2_train import TEST_SEEDS, TRAIN_SEEDS, VALIDATION_SEEDS, episodes_from_workload

    if args.workload:
        return episodes_from_workload(load_instance(args.workload), args.jobs)
    out: dict[str, list] = {"train": [], "valid": [], "test": []}
    for share in shares:
        spec = _spec(args, share)
        out["train"] += spec.workloads(list(TRAIN_SEEDS)[:train_per_share])
        out["valid"] += spec.workloads(list(VALIDATION_SEEDS)[:valid_per_share])
        out["test"] += spec.workloads(list(TEST_SEEDS)[:test])
    return out


def _check_counts(**counts: int | None) -> None:
    for name, value in counts.items():
        if value is not None and value < 1:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} {value}", field=flag, fix="use 1 or more")


def train_command(args: argparse.Namespace) -> int:
    _check_counts(window=args.window, train_episodes=args.train_episodes,
                  valid_episodes=args.valid_episodes, generations=args.generations,
                  population=args.population, elites=args.elites, episodes=args.episodes,
                  eval_every=args.eval_every)
    if args.elites > args.population:
        raise InputError(f"--elites {args.elites} > --population {args.population}",
                         field="--elites", fix="keep at most --population draws")
    check_output(args.out, "--out")  # its parent must exist; train creates the folder
    command = args.command_line
    if args.learner == "search":
        summary = _train_search(args, command)
        written = "sched2_priority.safetensors"
    else:
        summary = _train_dqn(args, command)
        written = "sched2_dqn.safetensors"
    print(json.dumps(summary))
    print(f"wrote {Path(args.out) / written} ({summary['cpu_s']} CPU-s)")
    return EXIT_OK


def _train_search(args: argparse.Namespace, command: str) -> dict:
    from .sched2_search import SearchSettings, train_priority

    sets = episode_sets(args, args.single_share or SHARES, args.train_episodes,
                        args.valid_episodes)
    settings = SearchSettings(generations=args.generations, population=args.population,
                              elites=args.elites, warm_start=not args.no_warm_start,
                              window=args.window)

    def progress(row: dict) -> None:
        if not args.no_progress:
            print(f"generation {row['generation']}: best training E "
                  f"{row['train_best_E']:.4f}, validation E {row['valid_E']:.4f}, "
                  f"{row['cpu_s']:.0f} CPU-s", file=sys.stderr)

    return train_priority(args.out, train=sets["train"], valid=sets["valid"],
                          seed=args.seed, settings=settings, command=command,
                          progress=progress)


def dqn_settings(args: argparse.Namespace) -> DqnSettings:
    """The DQN learner's settings from the options (the defaults are the shipped agent's)."""
    from dataclasses import replace

    _check_counts(envs=args.envs, n_step=args.n_step)
    if args.demo_episodes < 0 or args.pretrain_updates < 0:
        raise InputError("--demo-episodes and --pretrain-updates must be >= 0",
                         field="--demo-episodes", fix="use 0 or more")
    return replace(DQN, episodes=args.episodes, envs=args.envs, n_step=args.n_step,
                   teacher=None if args.teacher == "none" else args.teacher,
                   demo_episodes=args.demo_episodes, window=args.window,
                   pretrain_updates=args.pretrain_updates, eval_every=args.eval_every)


def _train_dqn(args: argparse.Namespace, command: str) -> dict:
    from .sched2_train import train

    settings = dqn_settings(args)
    sets = episode_sets(args, args.single_share or SHARES, args.train_episodes,
                        args.valid_episodes)

    def progress(row: dict) -> None:
        if not args.no_progress:
            print(f"episode {row['episode']}: validation E {row['valid_E']:.4f}, "
                  f"{row['cpu_s']:.0f} CPU-s", file=sys.stderr)

    return train(args.out, train_set=sets["train"], valid_set=sets["valid"], seed=args.seed,
                 settings=settings, command=command, progress=progress)


def evaluate_command(args: argparse.Namespace) -> int:
    from .sched2_train import TEST_SEEDS, compare

    if not 1 <= args.episodes <= len(TEST_SEEDS):
        raise InputError(f"--episodes {args.episodes}", field="--episodes",
                         fix=f"use 1 to {len(TEST_SEEDS)}")
    if args.csv:
        check_output(args.csv, "--csv")
    workloads = episode_sets(args, (args.single_share or (0.68,))[:1], 0, 0,
                             test=args.episodes)["test"][: args.episodes]
    table = compare(args.policy, args.weights, workloads)
    if args.csv:
        with atomic_path(args.csv, "--csv") as tmp:
            table.to_csv(tmp, index=False)
    stats = table.groupby("policy", sort=False).agg(["mean", "std"])
    print(markdown_table(
        ["policy", "mean E", "E std", "makespan h", "mean JCT h", "mean wait h"],
        [[name, f"{row[('effectiveness_mean', 'mean')]:.3f}",
          f"{row[('effectiveness_mean', 'std')]:.3f}", f"{row[('makespan', 'mean')] / 3600:.1f}",
          f"{row[('jct_mean', 'mean')] / 3600:.2f}", f"{row[('wait_mean', 'mean')] / 3600:.2f}"]
         for name, row in stats.iterrows()]))
    return EXIT_OK
