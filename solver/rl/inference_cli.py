"""Command-line glue of the inference ``pg`` policy (see :mod:`dlsched.rl.cli`)."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys

from ..cli_support import EXIT_OK, seed_value
from ..errors import InputError


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    from .inference_episodes import TrainConfig

    d = TrainConfig()
    p.add_argument("--gpus", default=d.gpus,
                   help=f"cluster, or clusters ';'-separated, cycled over the episodes "
                   f"({d.gpus}; the shipped policy: 'p2:1;g2:5,p2:5')")
    p.add_argument("--scale", default=str(d.scale),
                   help="arrival multiplier, one for all clusters or one per cluster "
                   "';'-separated (8 for the paper's cluster; the shipped policy: '1;8')")
    p.add_argument("--peak-qps", default=str(d.peak_qps),
                   help="queries/s at the daily peak of the training and validation episodes: "
                   "one value, or a comma list cycled over the episodes (e.g. 24,30,36)")
    p.add_argument("--episodes", type=int, default=d.episodes,
                   help="training episodes (generated workloads)")
    p.add_argument("--episode-minutes", type=float, default=d.episode_minutes,
                   help="length of each episode in minutes")
    p.add_argument("--val-episodes", type=int, default=d.val_episodes,
                   help="validation episodes for checkpoint selection (9-12 h, own seeds)")
    p.add_argument("--iterations", type=int, default=d.iterations,
                   help="policy-gradient iterations")
    p.add_argument("--rollouts", type=int, default=d.rollouts,
                   help="rollouts per iteration")
    p.add_argument("--bc-epochs", type=int, default=d.bc_epochs,
                   help="behaviour-cloning epochs (per fit) before policy gradient")
    p.add_argument("--dagger", type=int, default=d.dagger,
                   help="DAgger rounds after behaviour cloning")
    p.add_argument("--batch-size", type=int, default=d.batch_size,
                   help="minibatch size of behaviour cloning")
    p.add_argument("--eval-every", type=int, default=d.eval_every,
                   help="validate the policy-gradient iterate every N iterations")
    p.add_argument("--lr", type=float, default=d.lr,
                   help="learning rate of behaviour cloning")
    p.add_argument("--pg-lr", type=float, default=d.pg_lr,
                   help="learning rate of policy gradient")
    p.add_argument("--gamma", type=float, default=d.gamma, help="discount factor")
    p.add_argument("--entropy", type=float, default=d.entropy,
                   help="entropy bonus weight")
    p.add_argument("--reward", choices=["batch", "window"], default=d.reward,
                   help="reward: per batch or over a sliding window")
    p.add_argument("--max-cpu-seconds", type=float, default=d.max_cpu_seconds,
                   help="stop policy gradient after this much CPU time (1500)")
    p.add_argument("--teachers", default=d.teachers,
                   help="heuristics to clone, comma-separated: benchmark (α, β tuned as "
                   "inference_paper --tune does), train (tuned on these training episodes), "
                   f"given (--teacher-alpha/--teacher-beta), adaptive (tuned on each training "
                   f"episode itself); default {d.teachers}")
    p.add_argument("--teacher-alpha", type=float, default=d.teacher_alpha,
                   help="α of the 'given' teacher")
    p.add_argument("--teacher-beta", type=float, default=d.teacher_beta,
                   help="β of the 'given' teacher")
    p.add_argument("--seed", type=seed_value, default=d.seed, help="seed of everything")
    p.add_argument("--out", required=True, help="directory for policy.safetensors and "
                   "learning_curve.csv")


def train_command(args: argparse.Namespace) -> int:
    from .inference_episodes import TrainConfig, clusters, parse_peak_qps, parse_scale
    from .inference_train import train

    cfg = TrainConfig(gpus=args.gpus, scale=parse_scale(args.scale),
                      peak_qps=parse_peak_qps(args.peak_qps),
                      episodes=args.episodes, episode_minutes=args.episode_minutes,
                      val_episodes=args.val_episodes, iterations=args.iterations,
                      rollouts=args.rollouts, bc_epochs=args.bc_epochs, dagger=args.dagger,
                      batch_size=args.batch_size, lr=args.lr, pg_lr=args.pg_lr,
                      gamma=args.gamma, entropy=args.entropy, reward=args.reward,
                      eval_every=args.eval_every, teachers=args.teachers,
                      teacher_alpha=args.teacher_alpha, teacher_beta=args.teacher_beta,
                      max_cpu_seconds=args.max_cpu_seconds,
                      seed=args.seed)
    if (cfg.episodes < 1 or cfg.val_episodes < 1 or cfg.iterations < 0 or cfg.rollouts < 1
            or cfg.dagger < 0 or cfg.batch_size < 1 or cfg.eval_every < 1):
        raise InputError("episodes, val-episodes, rollouts, batch-size, eval-every >= 1 and "
                         "iterations, dagger >= 0 are required",
                         field="--episodes/--val-episodes/--rollouts/--iterations/--dagger",
                         fix="see --help")
    for option, value, ok, rule in (
            ("--lr", cfg.lr, cfg.lr > 0, "> 0"), ("--pg-lr", cfg.pg_lr, cfg.pg_lr > 0, "> 0"),
            ("--gamma", cfg.gamma, 0 < cfg.gamma <= 1, "in (0, 1]"),
            ("--entropy", cfg.entropy, cfg.entropy >= 0, ">= 0"),
            ("--episode-minutes", cfg.episode_minutes, cfg.episode_minutes > 0, "> 0"),
            ("--max-cpu-seconds", cfg.max_cpu_seconds, cfg.max_cpu_seconds > 0, "> 0"),
            ("--teacher-alpha", cfg.teacher_alpha, True, "finite"),
            ("--teacher-beta", cfg.teacher_beta, True, "finite")):
        if not (math.isfinite(value) and ok):
            raise InputError(f"{option} {value}", field=option, fix=f"use a finite number {rule}")
    clusters(cfg)  # one scale or one per cluster
    command = "dlsched rl train inference " + " ".join(shlex.quote(a) for a in sys.argv[4:])
    result = train(cfg, args.out, command=command)
    print(json.dumps(result))
    return EXIT_OK


def add_evaluate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workloads", nargs="+", help="inference workload files")
    p.add_argument("--weights", default=None, help="policy.safetensors (default: shipped)")
    p.add_argument("--seed", type=seed_value, default=0, help="seed of the evaluation")


def evaluate_command(args: argparse.Namespace) -> int:
    from ..heuristics.inference_pg import load_pg_policy
    from ..instance_io import load_instance
    from ..serve.engine import serve
    from ..serve.metrics import summary

    for path in args.workloads:
        inst = load_instance(path)
        if inst.problem != "inference":
            raise InputError(f"problem is {inst.problem!r}", field="problem",
                             source=path, fix="pass an inference workload")
        policy = load_pg_policy(args.weights, seed=args.seed)
        run = serve(inst, policy, seed=args.seed)
        s = summary(run)
        print(json.dumps({"workload": path, "mean_q": s["mean_q"],
                          "share_tiny": s.get("share_tiny"), "queries": s["queries"]}))
    return EXIT_OK
