"""Training the ``pg`` serving policy: behaviour cloning of Eq. 2, then policy gradient.

Episodes (Sec. 4.1): 10-minute slices of the generated stream from 9 h to 12 h (the
paper's training span), one per seed (1000 + i), at the daily peak rate ``peak_qps`` —
one value, or (ours, stated) a tuple of values cycled over the episodes — on one cluster
or several (``gpus`` ``;``-separated, :mod:`.inference_episodes`), so that one policy
sees a range of loads and cluster sizes. Everything is seeded and the same bits on any
machine with the same numpy: the network's arithmetic is
:mod:`dlsched.heuristics.inference_net` and :mod:`.inference_fit` (no BLAS, no torch,
no CPU-dispatched exp/tanh; seeded numpy Generators for the initial network, the
minibatch order and each rollout). The phases, and what is ours rather than the paper's:

1. teachers (ours, stated): Eq. 2 heuristics, by ``teachers`` (comma-separated):
   ``benchmark`` — α, β tuned exactly as ``benchmarks/inference_paper.py --tune`` does
   (:func:`dlsched.serve.tune.tune_heuristic` on 3 × 10 min of 9-12 h at the generator's
   default rate, :func:`.inference_episodes.tuning_episodes`), i.e. the heuristic the
   benchmark compares against; ``train`` — the same grid tuned on this run's own training
   episodes (the paper: "the training data is also used to optimize the parameters of the heuristic
   scheduler"; it differs from ``benchmark`` when ``peak_qps`` differs); ``given`` —
   ``teacher_alpha``, ``teacher_beta``; ``adaptive`` (ours) — per training episode, the
   same grid tuned on THAT episode alone, so each episode's states are labelled by the
   Eq. 2 parameters best for its load (a fixed-parameter heuristic cannot adapt to the
   load; the network sees R_t and the queue and can). Teachers with equal (α, β) on every
   episode are cloned once;
2. behaviour cloning (ours, stated; the paper starts from scratch), per teacher from the
   same seeded initial network: cross-entropy fit to the teacher's (B, M) choices on the
   training episodes (``bc_epochs`` minibatch epochs of Adam, inputs standardized by the
   mean / SD of all teachers' states), then ``dagger`` rounds of DAgger (Ross et al.
   2011): the cloned policy runs greedily on the training episodes, the teacher labels the
   states it visits (its B, and its model for the queries the engine would take), and the
   network is refitted on all labels so far (an ``adaptive`` teacher labels each episode
   with that episode's own α, β). Every fit is a candidate (step 4); policy
   gradient starts from the best candidate;
3. REINFORCE (Sutton et al. [12], the paper's learner): per iteration, ``rollouts``
   sampled runs of one training episode; per decision the reward is, by ``reward``:
   ``window`` (the paper): the mean Q of the latest W = 1000 responses, batches after the
   decision excluded; ``batch`` (a stated variant): the Σ Q of the batch it dispatched (0
   for a wait). Returns are discounted by ``gamma`` per decision; the baseline is the mean
   return of the iteration's rollouts at the same decision index; entropy bonus
   ``entropy``; Adam with ``pg_lr``;
4. checkpoint selection (ours, stated): every cloned network and every ``eval_every``-th
   policy-gradient iterate are run greedily on ``val_episodes`` VALIDATION episodes
   (9-12 h, seeds 5000 + i: disjoint from the training episodes and from the 12-24 h test
   slots of the benchmark) and the one with the highest mean Q is written. The learning
   curve's reference is the first teacher's validation mean Q (put ``benchmark`` first to
   compare with the benchmark's heuristic); an ``adaptive`` teacher's validation figure
   (metadata ``val_teachers_mean_q``) is the grid tuned on each validation episode
   itself: an oracle for comparison, not a runnable policy.

Training stops after ``iterations`` or once ``max_cpu_seconds`` of CPU time are spent
(default 1500 s, within the 30-minute budget).

The weights are written with safetensors (numpy arrays ``w1 b1 w2 b2``, standardization
folded into ``w1 b1``; metadata: the command, configuration, seed, teacher α/β, feature
and action layout, the selected checkpoint) as ``policy.safetensors``, the best clone
(where policy gradient started; the ablation's "clone only") as ``clone.safetensors``,
the learning curve as CSV.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..files import atomic_path
from ..heuristics.inference_pg import HIDDEN, PGPolicy, action_table, feature_size
from ..instance import Instance
from ..problems.inference import inference_data
from ..problems.inference.policies import HeuristicPolicy
from ..serve.engine import serve
from .inference_episodes import TrainConfig, training_episodes, validation_episodes
from .inference_fit import Adam, Network, cross_entropy, cross_entropy_step, reinforce_step
from .inference_teachers import (
    pair_for,
    schedule,
    teacher_labels,
    teacher_params,
    teacher_tag,
)


def rewards_of(run, trace, cfg: TrainConfig) -> np.ndarray:
    """Per-decision rewards of a run (see the module docstring)."""
    data = run.data
    out = np.zeros(len(trace))
    qual = [float(data.quality(b.end, np.asarray(b.queries), data.model_index[b.model]).sum())
            for b in run.batches]
    sizes = [len(b.queries) for b in run.batches]
    k = 0
    sum_q, sum_n = 0.0, 0
    window_q: list[tuple[float, int]] = []
    for i, (_state, a) in enumerate(trace):
        if a == 0:
            out[i] = 0.0 if cfg.reward == "batch" else (sum_q / sum_n if sum_n else 0.0)
            continue
        if cfg.reward == "batch":
            out[i] = qual[k]
        else:  # mean Q of the latest `window` responses up to this batch
            window_q.append((qual[k], sizes[k]))
            sum_q += qual[k]
            sum_n += sizes[k]
            while window_q and sum_n - window_q[0][1] >= cfg.window:
                q0, n0 = window_q.pop(0)
                sum_q -= q0
                sum_n -= n0
            out[i] = sum_q / sum_n
        k += 1
    return out


def discounted(r: np.ndarray, gamma: float) -> np.ndarray:
    """Discounted returns G_i = r_i + γ G_{i+1}."""
    out = np.zeros_like(r)
    acc = 0.0
    for i in range(r.size - 1, -1, -1):
        acc = r[i] + gamma * acc
        out[i] = acc
    return out


def mean_q(inst: Instance, policy) -> float:
    """Mean Q over all queries of a run (dropped and unserved count 0)."""
    run = serve(inst, policy)
    total = sum(float(run.data.quality(b.end, np.asarray(b.queries),
                                       run.data.model_index[b.model]).sum())
                for b in run.batches)
    return total / max(run.data.num_queries, 1)


def train(cfg: TrainConfig, out_dir: str | Path, *, command: str = "",
          log=print) -> dict[str, float]:
    """Train, write ``<out_dir>/policy.safetensors`` and ``learning_curve.csv``."""
    from safetensors.numpy import save_file

    cpu0 = time.process_time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    episodes = training_episodes(cfg)
    val = validation_episodes(cfg)
    teachers = teacher_params(cfg, episodes)
    plans = [schedule(t, episodes) for t in teachers]
    for t in teachers:
        if "per_episode" in t:
            log(f"teacher {t['name']}: per episode (alpha, beta) "
                + " ".join(f"({p['alpha']:g},{p['beta']:g})" for p in t["per_episode"]))
        else:
            log(f"teacher {t['name']} heuristic: " + ", ".join(
                f"{k} alpha {p['alpha']}, beta {p['beta']}" for k, p in t["by_cluster"].items()))

    def val_q(t: dict) -> float:
        """A teacher's validation mean Q; ``adaptive``: tuned on each validation episode
        itself (an oracle, reported only: it is no policy one could run)."""
        from ..serve.tune import tune_heuristic

        if "per_episode" in t:
            return float(np.mean([max(g["mean_q"] for g in tune_heuristic([e])[1])
                                  for e in val]))
        return float(np.mean([mean_q(e, HeuristicPolicy(**pair_for(t, e))) for e in val]))

    data0 = inference_data(episodes[0])
    n_in, n_out = feature_size(data0), len(action_table(data0))
    curve: list[dict[str, float]] = []
    val_teacher = [val_q(t) for t in teachers]
    ref = val_teacher[0]  # the first teacher (by default the benchmark's heuristic)

    # phase 1: behaviour cloning of each teacher on its own runs
    labels: list[tuple[list[np.ndarray], list[int]]] = []
    for plan in plans:
        labels.append(teacher_labels(episodes, plan))
    x_all = np.stack([s for xs, _ in labels for s in xs])
    mu = x_all.mean(0)
    sd = x_all.std(0)
    sd[sd < 1e-9] = 1.0
    del x_all
    network = Network(n_in, HIDDEN, n_out, cfg.seed, mu, sd)
    init = network.state()
    order = np.random.default_rng([int(cfg.seed), 31])  # minibatch order

    def validate_now() -> float:
        w = network.weights()
        return float(np.mean([mean_q(e, PGPolicy(w)) for e in val]))

    def fit(stage: str, xs: list[np.ndarray], ys: list[int]) -> None:
        x = np.stack(xs)
        y = np.asarray(ys, dtype=np.int64)
        opt = Adam(network, cfg.lr)
        n = x.shape[0]
        for _epoch in range(cfg.bc_epochs):
            perm = order.permutation(n)
            for lo in range(0, n, cfg.batch_size):
                idx = perm[lo:lo + cfg.batch_size]
                cross_entropy_step(network, opt, x[idx], y[idx])
        loss, acc = cross_entropy(network, x, y)
        q = validate_now()
        log(f"{stage}: {n} labels, loss {loss:.4f}, agreement {acc:.4f}, validation mean Q "
            f"{q:.4f} (reference heuristic {ref:.4f})")
        curve.append({"phase": stage, "iteration": 0, "episode": -1, "labels": n,
                      "agreement": acc, "sampled_mean_q": float("nan"),
                      "val_greedy_mean_q": q, "val_teacher_mean_q": ref,
                      "cpu_seconds": time.process_time() - cpu0})

    best: dict = {}

    def consider(tag: str) -> None:
        q = curve[-1]["val_greedy_mean_q"]
        if not best or q > best["q"] + 1e-12:
            best.update(q=q, tag=tag, weights=network.weights(), state=network.state())

    if cfg.bc_epochs > 0:
        for j, t in enumerate(teachers):
            network.load(init)
            xs, ys = list(labels[j][0]), list(labels[j][1])
            name = f"bc{j + 1}({teacher_tag(t)})"
            fit(name, xs, ys)
            consider(name)
            for r in range(cfg.dagger):
                more_x, more_y = teacher_labels(episodes, plans[j], network.weights())
                xs.extend(more_x)
                ys.extend(more_y)
                fit(f"{name}-dagger{r + 1}", xs, ys)
                consider(f"{name}-dagger{r + 1}")
        network.load(best["state"])
    else:
        curve.append({"phase": "init", "iteration": 0, "episode": -1, "labels": 0,
                      "agreement": float("nan"), "sampled_mean_q": float("nan"),
                      "val_greedy_mean_q": validate_now(), "val_teacher_mean_q": ref,
                      "cpu_seconds": time.process_time() - cpu0})
        consider("init")
    del labels
    clone = {"tag": best["tag"], "q": best["q"]}
    clone_weights = best["weights"]

    # phase 2: REINFORCE
    opt = Adam(network, cfg.pg_lr)
    done = 0
    for it in range(cfg.iterations):
        if time.process_time() - cpu0 > cfg.max_cpu_seconds:
            log(f"CPU budget of {cfg.max_cpu_seconds:g} s reached after {it} iterations")
            break
        e = it % len(episodes)
        w = network.weights()
        states, actions, advantages, sampled, returns, traces = [], [], [], [], [], []
        for k in range(cfg.rollouts):
            pol = PGPolicy(w, greedy=False, rng=np.random.default_rng([cfg.seed, it, k]))
            pol.trace = []
            run = serve(episodes[e], pol)
            r = rewards_of(run, pol.trace, cfg)
            returns.append(discounted(r, cfg.gamma))
            traces.append(pol.trace)
            sampled.append(sum(float(run.data.quality(b.end, np.asarray(b.queries),
                                                      run.data.model_index[b.model]).sum())
                               for b in run.batches) / max(run.data.num_queries, 1))
        length = max(len(g) for g in returns)
        padded = np.full((len(returns), length), np.nan)
        for k, g in enumerate(returns):
            padded[k, :len(g)] = g
        base = np.nanmean(padded, axis=0)
        for k, g in enumerate(returns):
            adv = g - base[:len(g)]
            for (s, a), v in zip(traces[k], adv, strict=True):
                states.append(s)
                actions.append(a)
                advantages.append(v)
        adv = np.asarray(advantages)
        adv = adv / (adv.std(ddof=1) + 1e-8) if adv.size > 1 else adv
        reinforce_step(network, opt, np.stack(states), np.asarray(actions, dtype=np.int64),
                       adv, cfg.entropy)
        done = it + 1
        row = {"phase": "pg", "iteration": done, "episode": e, "labels": 0,
               "agreement": float("nan"), "sampled_mean_q": float(np.mean(sampled)),
               "val_greedy_mean_q": float("nan"), "val_teacher_mean_q": ref,
               "cpu_seconds": time.process_time() - cpu0}
        curve.append(row)
        last = done == cfg.iterations or time.process_time() - cpu0 > cfg.max_cpu_seconds
        if done % cfg.eval_every == 0 or last:
            row["val_greedy_mean_q"] = validate_now()
            row["cpu_seconds"] = time.process_time() - cpu0
            consider(f"pg{done}")
            log(f"iteration {done}: sampled {row['sampled_mean_q']:.4f} validation greedy "
                f"{row['val_greedy_mean_q']:.4f} reference heuristic {ref:.4f} "
                f"({row['cpu_seconds']:.0f} CPU s)")
    log(f"selected checkpoint {best['tag']}: validation mean Q {best['q']:.4f} "
        f"(reference heuristic {ref:.4f})")
    meta = {"format": "dlsched inference pg policy 3", "command": command,
            "config": json.dumps(asdict(cfg), sort_keys=True), "seed": str(cfg.seed),
            "teachers": json.dumps(teachers, sort_keys=True), "features": str(n_in),
            "actions": json.dumps(action_table(data0)), "hidden": str(HIDDEN),
            "selected": best["tag"], "val_mean_q": f"{best['q']:.6f}",
            "val_teachers_mean_q": json.dumps([round(v, 6) for v in val_teacher]),
            "pg_iterations": str(done), "clone": json.dumps(clone),
            "cpu_seconds": f"{time.process_time() - cpu0:.1f}"}
    with atomic_path(out / "policy.safetensors") as tmp:
        save_file({k: np.ascontiguousarray(v) for k, v in best["weights"].items()},
                  str(tmp), metadata=meta)
    # the clone policy gradient started from: the ablation's "clone only"
    with atomic_path(out / "clone.safetensors") as tmp:
        save_file({k: np.ascontiguousarray(v) for k, v in clone_weights.items()}, str(tmp),
                  metadata={**meta, "selected": clone["tag"],
                            "val_mean_q": f"{clone['q']:.6f}"})
    with atomic_path(out / "learning_curve.csv") as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)
    return {"cpu_seconds": time.process_time() - cpu0, "selected": best["tag"],
            "val_mean_q": best["q"], "clone": clone, "val_teachers_mean_q": val_teacher,
            "teachers": teachers}
