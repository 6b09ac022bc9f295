"""SCHED²'s job-selection environment and DQN agent (needs the ``rl`` extra)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from safetensors.numpy import load_file  # noqa: E402

from dlsched import Instance, Job, homogeneous_cluster, solve, validate  # noqa: E402
from dlsched.heuristics.sched2_dqn_policy import load_network, shipped_weights  # noqa: E402
from dlsched.heuristics.selection_features import time_feature  # noqa: E402
from dlsched.instances.sched2_gen import generate_sched2  # noqa: E402
from dlsched.rl.dqn import Agent, DqnSettings  # noqa: E402
from dlsched.rl.sched2_env import ENV_ID, Sched2Env, register  # noqa: E402
from dlsched.rl.sched2_train import EpisodeSpec, train  # noqa: E402
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


def _tiny_training(tmp_path, name):
    spec = EpisodeSpec(jobs=40, servers=2, gpus_per_server=4, interarrival=300.0)
    return train(tmp_path / name, episodes=3, seed=5, train_set=spec.workloads(range(2)),
                 valid_set=spec.workloads([2000]), window=4, eval_every=2,
                 pretrain_episodes=1, pretrain_updates=20,
                 settings=DqnSettings(learning_starts=20, batch=8, target_every=25,
                                      server_hidden=4, job_hidden=8, hidden=16))


def test_training_is_deterministic_and_its_policy_passes_the_checks(tmp_path):
    _tiny_training(tmp_path, "a")
    _tiny_training(tmp_path, "b")
    wa = load_file(str(tmp_path / "a" / "sched2_dqn.safetensors"))
    wb = load_file(str(tmp_path / "b" / "sched2_dqn.safetensors"))
    assert wa.keys() == wb.keys()
    for key in wa:
        assert np.array_equal(wa[key], wb[key]), key
    curve = (tmp_path / "a" / "curve.csv").read_text().splitlines()
    assert curve[0].startswith("episode,") and len(curve) == 5  # warm start + 3 episodes
    # the trained agent inside the simulator: every decision validated; same schedule
    # as the agent playing the environment greedily
    weights = str(tmp_path / "a" / "sched2_dqn.safetensors")
    workload = small_workloads(1, seed0=50)[0]
    run = simulate(workload, Policy("dqn", options={"weights": weights}), record_events=False)
    table = job_table(run).set_index("job")
    agent = Agent.load(weights)
    env = Sched2Env([workload], window=agent.net.shape.window)
    obs, info = env.reset(seed=0)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info["action_mask"]))
        if term or trunc:
            break
    ids = [j.id for j in env.jobs]
    np.testing.assert_allclose([j.start for j in env.jobs], table.loc[ids, "start"])


def test_numpy_forward_matches_torch(tmp_path):
    _tiny_training(tmp_path, "w")
    path = str(tmp_path / "w" / "sched2_dqn.safetensors")
    agent, net = Agent.load(path), load_network(path)
    obs = np.random.default_rng(0).random(2 * 4 + 6 * 4 + 4).astype(np.float32)
    np.testing.assert_allclose(net(obs.astype(np.float64)), agent.q_values(obs), rtol=1e-5,
                               atol=1e-5)


def test_shipped_agent_runs_a_full_test_episode():
    workload = generate_sched2(seed=1000, jobs=1000, interarrival=120.0)
    run = simulate(workload, Policy("dqn"), record_events=False)
    table = job_table(run)
    assert table["end"].notna().all() and len(table) == 1000
    assert load_network(shipped_weights()).shape["servers"] == 15
    snapshot = workload.replace(jobs=workload.jobs[:5])
    result = solve(snapshot, "dqn")
    assert result.decision.placements and validate(snapshot, result.decision).ok
