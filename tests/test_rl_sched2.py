"""SCHED²'s job-selection environments and DQN agent (needs the ``rl`` extra)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

# torch (1.8 CPU-s to import) is imported by the tests
# that train or run the torch network, not when the suite is collected
gym = pytest.importorskip("gymnasium")
pytestmark = pytest.mark.torch

from gymnasium.utils.env_checker import check_env  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

from dlsched import (  # noqa: E402
    Instance,
    Job,
    homogeneous_cluster,
    solve,
    validate,
)
from dlsched.heuristics.sched2_dqn_policy import (  # noqa: E402
    Q_FEATURES,
    load_network,
    shipped_weights,
)
from dlsched.heuristics.selection_features import time_feature  # noqa: E402
from dlsched.instances.sched2_gen import generate_sched2  # noqa: E402
from dlsched.rl.dqn_settings import DqnSettings  # noqa: E402
from dlsched.rl.sched2_env import ENV_ID, Sched2Env, register  # noqa: E402
from dlsched.rl.sched2_fast_env import FastSelection  # noqa: E402
from dlsched.rl.sched2_search import SPF_WEIGHTS, Episode  # noqa: E402
from dlsched.rl.sched2_train import EpisodeSpec  # noqa: E402
from dlsched.simulate import Policy, job_table, simulate  # noqa: E402


def hand_workload() -> Instance:
    """2 servers x 2 GPUs. a: t=0, 2 GPUs, 100 s, insensitive; b: t=0, 1 GPU, 50 s;
    c: t=10, 4 GPUs, 30 s, VGG16 (sensitivity 5.9)."""
    jobs = (Job(id="a", submit_time=0.0, num_gpus=2, duration=100.0),
            Job(id="b", submit_time=0.0, num_gpus=1, duration=50.0),
            Job(id="c", submit_time=10.0, num_gpus=4, duration=30.0, model="vgg16"))
    return Instance("sched2", homogeneous_cluster(2, 2, gpu_mem_gb=16.0), jobs)


def small_workloads(n: int, seed0: int = 0) -> list[Instance]:
    return [generate_sched2(seed=seed0 + s, jobs=40, servers=2, gpus_per_server=4,
                            interarrival=300.0) for s in range(n)]


def test_check_env_passes():
    env = Sched2Env(small_workloads(2))
    check_env(env, skip_render_check=True)
    register()
    made = gym.make(ENV_ID, workloads=small_workloads(1))
    obs, info = made.reset(seed=0)
    assert obs.shape == (2 * 4 + 6 * 10 + 4,)
    assert info["action_mask"].dtype == bool


def test_hand_made_episode_observations_mask_and_rewards():
    env = Sched2Env([hand_workload()], window=2)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4 + 6 * 2 + 4,)
    # t = 0: nothing runs, a and b fit, so waiting (phi) is masked
    assert info["action_mask"].tolist() == [True, True, False]
    assert obs[:4].tolist() == [0.0] * 4
    np.testing.assert_allclose(obs[4:8], time_feature(np.full(4, 100.0)))  # a: insensitive
    assert obs[8] == pytest.approx(1.0) and obs[9] == 0.0  # demand 2/2, waited 0
    np.testing.assert_allclose(obs[10:14], time_feature(np.full(4, 50.0)))
    assert obs[14] == pytest.approx(0.5)
    assert obs[16:].tolist() == [0.0] * 4

    obs, r, term, trunc, info = env.step(0)  # a on server 0 (packing), runs 100 s
    assert r == pytest.approx(1.0) and not term
    np.testing.assert_allclose(obs[:4], time_feature(np.array([100.0, 100.0, 0.0, 0.0])))
    assert info["action_mask"].tolist() == [True, False, True]  # b; empty slot; phi

    obs, r, term, trunc, info = env.step(2)  # wait: c arrives at t = 10
    assert r == 0.0 and info["time"] == 10.0
    assert info["action_mask"].tolist() == [True, False, True]  # c needs 4 GPUs
    # c's profile: 2 servers x 2 -> slowdown 5.9, then 4 servers (capped at 4 GPUs) x 1
    # -> 1 + 4.9 * 1 / (2/3) = 8.35
    np.testing.assert_allclose(obs[10:14], time_feature(np.array([177.0, 250.5, 250.5,
                                                                   250.5])))
    assert obs[14] == pytest.approx(2.0)

    obs, r, term, trunc, info = env.step(0)  # b at t = 10 on server 1: E = 50 / (10 + 50)
    assert r == pytest.approx(50 / 60)
    # b ends at 60, a at 100: c starts at 100 on both servers, slowdown 5.9 -> ends 277
    assert info["time"] == 100.0
    assert info["action_mask"].tolist() == [True, False, False]
    obs, r, term, trunc, info = env.step(0)
    assert r == pytest.approx(30 / (90 + 177))
    assert term and info["makespan"] == pytest.approx(277.0)

    # an invalid action is a no-op with the documented penalty, never a crash
    env.reset(seed=0)
    obs2, r, term, trunc, info = env.step(1 + 1)
    assert r == pytest.approx(-0.1) and info["started"] == 0


def test_head_first_agent_is_the_simulators_fifo():
    workload = generate_sched2(seed=3, jobs=150, interarrival=120.0)
    env = Sched2Env([workload])
    obs, info = env.reset(seed=0)
    while True:
        obs, _, term, trunc, info = env.step(0 if info["action_mask"][0] else env.window)
        if term or trunc:
            break
    table = job_table(simulate(workload, "fifo", record_events=False)).set_index("job")
    ids = [j.id for j in env.jobs]
    np.testing.assert_allclose([j.start for j in env.jobs], table.loc[ids, "start"])
    np.testing.assert_allclose([j.end for j in env.jobs], table.loc[ids, "end"])


def _torch():
    """torch, or a skip where the ``rl`` extra is not installed."""
    return pytest.importorskip("torch")


def _tiny_training(tmp_path, name):
    _torch()
    from dlsched.rl.sched2_train import train

    # 20-job episodes, 2 episodes evaluated after each: 10 demonstration and 14 n-step
    # updates, the target network synced 4 times, 2 evaluations and the checkpoint choice,
    # every code path of the 40-job, 4-episode run (75 updates) at a third of its CPU
    spec = EpisodeSpec(jobs=20, servers=2, gpus_per_server=4, interarrival=60.0)
    settings = DqnSettings(episodes=2, envs=2, n_step=3, batch=8, train_every=4,
                           target_every=5, hidden=8, demo_episodes=1, pretrain_updates=10,
                           eval_every=1)
    return train(tmp_path / name, train_set=spec.workloads(range(2)),
                 valid_set=spec.workloads([2000]), seed=5, settings=settings)


@pytest.fixture(scope="module")
def tiny_agent(tmp_path_factory) -> Path:
    """One tiny training run's folder, shared; the determinism test trains a second."""
    root = tmp_path_factory.mktemp("dqn")
    _tiny_training(root, "a")
    return root / "a"


def _greedy_starts(net, workload: Instance) -> np.ndarray:
    torch = _torch()
    from dlsched.rl.dqn import padded

    episode = Episode.of(workload)
    env = FastSelection(episode)
    state = env.reset()
    with torch.no_grad():
        while state is not None:
            x, m = padded([state.rows(episode)], [state.mask()])
            state = env.step(state, int(net(x).masked_fill(~m, -np.inf).argmax(1)))[1]
    return env.start


def test_fast_selection_played_by_spf_is_the_simulators_spf():
    _torch()
    from dlsched.rl.dqn import teacher_action

    workload = generate_sched2(seed=7, jobs=300, interarrival=120.0)
    episode = Episode.of(workload)
    env = FastSelection(episode)
    state = env.reset()
    while state is not None:
        state = env.step(state, teacher_action(state.rows(episode), SPF_WEIGHTS))[1]
    table = job_table(simulate(workload, "spf", record_events=False)).set_index("job")
    ids = [j.id for j in sorted(workload.jobs, key=lambda j: j.submit_time)]
    np.testing.assert_allclose(env.start, table.loc[ids, "start"])
    np.testing.assert_allclose(env.end, table.loc[ids, "end"])


def test_training_is_deterministic_and_its_policy_passes_the_checks(tiny_agent, tmp_path):
    torch = _torch()
    from dlsched.rl.dqn import JobQ

    _tiny_training(tmp_path, "b")
    wa = load_file(str(tiny_agent / "sched2_dqn.safetensors"))
    wb = load_file(str(tmp_path / "b" / "sched2_dqn.safetensors"))
    assert wa.keys() == wb.keys() == {f"l{k}.{p}" for k in range(3) for p in ("weight", "bias")}
    for key in wa:
        assert np.array_equal(wa[key], wb[key]), key
    assert torch.are_deterministic_algorithms_enabled()  # the learner switched them on
    curve = (tiny_agent / "curve.csv").read_text().splitlines()
    assert curve[0].startswith("episode,") and len(curve) == 4  # warm start + 2 evaluations
    # the trained agent inside the simulator (every decision validated) starts every job
    # when the greedy agent does in the fast episode loop it was trained on
    weights = str(tiny_agent / "sched2_dqn.safetensors")
    workload = generate_sched2(seed=50, jobs=60, servers=2, gpus_per_server=4, interarrival=60.0)
    run = simulate(workload, Policy("dqn", options={"weights": weights}), record_events=False)
    table = job_table(run).set_index("job")
    net = JobQ(8)
    net.load_state_dict({k: torch.as_tensor(v) for k, v in wa.items()})
    ids = [j.id for j in sorted(workload.jobs, key=lambda j: j.submit_time)]
    np.testing.assert_allclose(_greedy_starts(net, workload), table.loc[ids, "start"])


def test_numpy_forward_matches_torch(tiny_agent):
    torch = _torch()
    from dlsched.rl.dqn import JobQ

    path = str(tiny_agent / "sched2_dqn.safetensors")
    network, window = load_network(path)
    assert window is None
    net = JobQ(8)
    net.load_state_dict({k: torch.as_tensor(v) for k, v in load_file(path).items()})
    rows = np.random.default_rng(0).random((7, len(Q_FEATURES)))
    with torch.no_grad():
        expected = net(torch.as_tensor(rows, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(network(rows), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("servers", "per_server", "jobs"), [(15, 8, 1000), (10, 8, 200),
                                                              (30, 8, 200), (3, 4, 100)])
def test_shipped_agent_acts_on_any_cluster(servers, per_server, jobs):
    workload = generate_sched2(seed=1000, jobs=jobs, servers=servers,
                               gpus_per_server=per_server, interarrival=120.0 * 15 / servers)
    run = simulate(workload, Policy("dqn"), record_events=False)
    table = job_table(run)
    assert table["end"].notna().all() and len(table) == jobs
    first = sorted(workload.jobs, key=lambda j: j.submit_time)[:5]
    snapshot = workload.replace(jobs=tuple(first), time=first[-1].submit_time)
    result = solve(snapshot, "dqn")
    assert result.decision.placements and validate(snapshot, result.decision).ok


# the shipped agent on the head of every committed trace: tests/test_rl_priority.py
# (test_shipped_policies_act_on_every_committed_trace, one read of each trace for both
# shipped learned policies)


def test_train_command_defaults_are_the_shipped_settings_and_train_the_asked_run(tmp_path):
    # one run of the command: a second, compared bit for bit, retrained what
    # test_training_is_deterministic_and_its_policy_passes_the_checks retrains through the
    # library the command calls (0.5 CPU-s); this checks what reaches the learner
    _torch()
    from dlsched.cli import build_parser, main
    from dlsched.rl.sched2_cli import dqn_settings

    defaults = build_parser().parse_args(["rl", "train", "sched2", "--learner", "dqn",
                                          "--out", "x"])
    assert dqn_settings(defaults) == DqnSettings()
    shipped = Path(shipped_weights()).with_name("training.json")
    assert json.loads(shipped.read_text())["dqn"] == asdict(DqnSettings())
    tiny = ["rl", "train", "sched2", "--learner", "dqn", "--servers", "2",
            "--gpus-per-server", "4", "--jobs", "20", "--interarrival", "60",
            "--train-episodes", "1", "--valid-episodes", "1", "--episodes", "3", "--envs", "2",
            "--demo-episodes", "1", "--pretrain-updates", "5", "--eval-every", "1",
            "--no-progress"]
    assert main([*tiny, "--out", str(tmp_path / "a")]) == 0
    summary = json.loads((tmp_path / "a" / "training.json").read_text())
    asked = dqn_settings(build_parser().parse_args([*tiny, "--out", "x"]))
    assert summary["dqn"] == asdict(asked)
    assert summary["dqn"]["episodes"] == 3 and summary["dqn"]["teacher"] == "spf"
    # one training and one validation workload per job mix (the three shares), seed 0
    assert len(summary["train_workloads"]) == len(summary["valid_workloads"]) == 3
    assert summary["seed"] == 0
    weights = load_file(str(tmp_path / "a" / "sched2_dqn.safetensors"))
    assert weights.keys() == {f"l{k}.{p}" for k in range(3) for p in ("weight", "bias")}
    curve = (tmp_path / "a" / "curve.csv").read_text().splitlines()
    assert len(curve) == 1 + 1 + 3  # header, warm start, an evaluation after each episode
