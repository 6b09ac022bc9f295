"""Training the ``pg`` serving policy: behaviour cloning of Eq. 2, then policy gradient.

Episodes (Sec. 4.1): 10-minute slices of the generated stream from 9 h to 12 h (the
paper's training span), one per seed. Two phases, both seeded and deterministic on CPU
(``torch.set_num_threads(1)``, one numpy Generator per rollout):

1. warm start (our addition, stated): the network is fitted by cross-entropy to the
   heuristic's (B, M) choices on the training episodes (``bc_epochs``; the heuristic with
   ``teacher_alpha``, ``teacher_beta``);
2. REINFORCE (Sutton et al. [12]): per iteration, ``rollouts`` sampled runs of one
   episode; per decision the reward is, by ``reward``:
   ``window`` (the paper): the mean Q of the latest W = 1000 responses, batches after the
   decision excluded; ``batch``: the Σ Q of the batch it dispatched (0 for a wait).
   Returns are discounted by ``gamma`` per decision; the baseline is the mean return of
   the iteration's rollouts at the same decision index; Adam. Training stops after
   ``iterations`` or once ``max_cpu_seconds`` of CPU time are spent (default 1500 s,
   within the 30-minute budget).

The weights are written with safetensors (numpy arrays ``w1 b1 w2 b2``; metadata: the
command, seed, cluster and feature layout), the learning curve as CSV.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..instance import Instance
from ..problems.inference import inference_data
from ..serve.engine import serve
from ..serve.policies import HeuristicPolicy
from .inference_policy import HIDDEN, PGPolicy, action_table, feature_size, features


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (recorded with the weights)."""

    gpus: str = "p2:1"
    scale: float = 1.0
    peak_qps: float = 24.0
    episodes: int = 6
    episode_minutes: float = 10.0
    iterations: int = 60
    rollouts: int = 4
    bc_epochs: int = 200
    lr: float = 3e-3
    pg_lr: float = 3e-4
    gamma: float = 0.97
    entropy: float = 0.001
    reward: str = "batch"
    window: int = 1000
    teacher_alpha: float = 0.5
    teacher_beta: float = 0.5
    max_cpu_seconds: float = 1500.0
    seed: int = 0


def training_episodes(cfg: TrainConfig) -> list[Instance]:
    """The training episodes: 10-minute slices starting in 9-12 h, seeds 1000 + i."""
    from ..instances.inference_gen import generate_inference

    span = 3.0 - cfg.episode_minutes / 60.0
    out = []
    for i in range(cfg.episodes):
        start = 9.0 + span * (i + 0.5) / cfg.episodes
        out.append(generate_inference(seed=1000 + i + 7919 * cfg.seed, gpus=cfg.gpus,
                                      start_hour=start, hours=cfg.episode_minutes / 60.0,
                                      peak_qps=cfg.peak_qps, scale=cfg.scale))
    return out


class _Recorder(HeuristicPolicy):
    """The heuristic, recording (state, action index) for behaviour cloning."""

    def reset(self, sim):
        super().reset(sim)
        self.index = {a: i for i, a in enumerate(action_table(sim.data))}
        self.pairs: list[tuple[np.ndarray, int]] = []
        self._state = None

    def size(self, sim, gpu):
        self._state = features(sim, gpu)
        self._b = super().size(sim, gpu)
        return self._b

    def model(self, sim, gpu, queries, size):
        m = super().model(sim, gpu, queries, size)
        self.pairs.append((self._state, self.index[(self._b, m)]))
        return m


def rewards_of(run, trace, cfg: TrainConfig) -> np.ndarray:
    """Per-decision rewards of a run (see the module docstring)."""
    data = run.data
    out = np.zeros(len(trace))
    qual = [float(data.quality(b.end, np.asarray(b.queries), data.model_index[b.model]).sum())
            for b in run.batches]
    sizes = [len(b.queries) for b in run.batches]
    k = 0
    recent: list[float] = []
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
    del recent
    return out


def discounted(r: np.ndarray, gamma: float) -> np.ndarray:
    out = np.zeros_like(r)
    acc = 0.0
    for i in range(r.size - 1, -1, -1):
        acc = r[i] + gamma * acc
        out[i] = acc
    return out


def train(cfg: TrainConfig, out_dir: str | Path, *, command: str = "",
          log=print) -> dict[str, float]:
    """Train, write ``<out_dir>/policy.safetensors`` and ``learning_curve.csv``."""
    import torch
    from safetensors.numpy import save_file

    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    cpu0 = time.process_time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    episodes = training_episodes(cfg)
    data0 = inference_data(episodes[0])
    n_in, n_out = feature_size(data0), len(action_table(data0))
    net = torch.nn.Sequential(torch.nn.Linear(n_in, HIDDEN), torch.nn.Tanh(),
                              torch.nn.Linear(HIDDEN, n_out)).double()
    curve: list[dict[str, float]] = []

    def weights() -> dict[str, np.ndarray]:
        return {"w1": net[0].weight.detach().numpy().T.copy(),
                "b1": net[0].bias.detach().numpy().copy(),
                "w2": net[2].weight.detach().numpy().T.copy(),
                "b2": net[2].bias.detach().numpy().copy()}

    def mean_q(inst, policy) -> float:
        run = serve(inst, policy)
        total = sum(float(run.data.quality(b.end, np.asarray(b.queries),
                                           run.data.model_index[b.model]).sum())
                    for b in run.batches)
        return total / max(run.data.num_queries, 1)

    heur = [mean_q(e, HeuristicPolicy(alpha=cfg.teacher_alpha, beta=cfg.teacher_beta))
            for e in episodes]
    # phase 1: behaviour cloning of the heuristic
    if cfg.bc_epochs > 0:
        xs, ys = [], []
        for e in episodes:
            rec = _Recorder(alpha=cfg.teacher_alpha, beta=cfg.teacher_beta)
            serve(e, rec)
            xs.extend(s for s, _ in rec.pairs)
            ys.extend(a for _, a in rec.pairs)
        x = torch.tensor(np.stack(xs), dtype=torch.float64)
        y = torch.tensor(ys, dtype=torch.long)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
        for epoch in range(cfg.bc_epochs):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            if epoch % 50 == 0 or epoch == cfg.bc_epochs - 1:
                acc = float((net(x).argmax(1) == y).double().mean())
                log(f"bc epoch {epoch}: loss {float(loss.detach()):.4f} accuracy {acc:.3f}")
        greedy = [mean_q(e, PGPolicy(weights())) for e in episodes]
        curve.append({"phase": "bc", "iteration": 0, "episode": -1,
                      "sampled_mean_q": float("nan"),
                      "greedy_mean_q": float(np.mean(greedy)),
                      "heuristic_mean_q": float(np.mean(heur)),
                      "cpu_seconds": time.process_time() - cpu0})
    # phase 2: REINFORCE
    opt = torch.optim.Adam(net.parameters(), lr=cfg.pg_lr)
    for it in range(cfg.iterations):
        if time.process_time() - cpu0 > cfg.max_cpu_seconds:
            log(f"CPU budget of {cfg.max_cpu_seconds:g} s reached after {it} iterations")
            break
        e = it % len(episodes)
        w = weights()
        states, actions, advantages, sampled = [], [], [], []
        returns = []
        traces = []
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
        adv_t = torch.tensor(np.asarray(advantages), dtype=torch.float64)
        adv_t = adv_t / (adv_t.std() + 1e-8)
        x = torch.tensor(np.stack(states), dtype=torch.float64)
        a_t = torch.tensor(actions, dtype=torch.long)
        opt.zero_grad()
        logp = torch.log_softmax(net(x), dim=1)
        chosen = logp.gather(1, a_t[:, None])[:, 0]
        entropy = -(logp.exp() * logp).sum(1).mean()
        loss = -(chosen * adv_t).mean() - cfg.entropy * entropy
        loss.backward()
        opt.step()
        row = {"phase": "pg", "iteration": it + 1, "episode": e,
               "sampled_mean_q": float(np.mean(sampled)), "greedy_mean_q": float("nan"),
               "heuristic_mean_q": heur[e], "cpu_seconds": time.process_time() - cpu0}
        last = it + 1 == cfg.iterations or (time.process_time() - cpu0 > cfg.max_cpu_seconds)
        if (it + 1) % 10 == 0 or last:
            row["greedy_mean_q"] = float(np.mean([mean_q(ep, PGPolicy(weights()))
                                                  for ep in episodes]))
            row["heuristic_mean_q"] = float(np.mean(heur))
            log(f"iteration {it + 1}: sampled {row['sampled_mean_q']:.4f} greedy "
                f"{row['greedy_mean_q']:.4f} heuristic {row['heuristic_mean_q']:.4f} "
                f"({row['cpu_seconds']:.0f} CPU s)")
        curve.append(row)
    final = weights()
    meta = {"format": "dlsched inference pg policy 1", "command": command,
            "config": json.dumps(asdict(cfg), sort_keys=True), "features": str(n_in),
            "actions": json.dumps(action_table(data0)), "hidden": str(HIDDEN),
            "cpu_seconds": f"{time.process_time() - cpu0:.1f}"}
    save_file({k: np.ascontiguousarray(v) for k, v in final.items()},
              str(out / "policy.safetensors"), metadata=meta)
    with open(out / "learning_curve.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(curve[0]))
        writer.writeheader()
        writer.writerows(curve)
    return {"cpu_seconds": time.process_time() - cpu0,
            "greedy_mean_q": curve[-1]["greedy_mean_q"],
            "heuristic_mean_q": float(np.mean(heur))}
