"""The learned ``pg`` serving policy: deterministic training, safetensors weights."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from dlsched.validate import validate

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from dlsched.rl.inference_policy import (  # noqa: E402
    SHIPPED,
    load_pg_policy,
    read_weights,
    shipped_weights,
)
from dlsched.rl.inference_train import TrainConfig, discounted, rewards_of, train  # noqa: E402

TINY = TrainConfig(episodes=1, episode_minutes=0.5, iterations=2, rollouts=2, bc_epochs=3,
                   seed=7)


def test_training_is_deterministic_for_a_seed(tmp_path):
    a = train(TINY, tmp_path / "a", log=lambda *_: None)
    b = train(TINY, tmp_path / "b", log=lambda *_: None)
    wa, wb = read_weights(tmp_path / "a" / "policy.safetensors"), read_weights(
        tmp_path / "b" / "policy.safetensors")
    assert sorted(wa) == ["b1", "b2", "w1", "w2"]
    for k in wa:
        assert np.array_equal(wa[k], wb[k])
    rows_a = list(csv.DictReader((tmp_path / "a" / "learning_curve.csv").open()))
    rows_b = list(csv.DictReader((tmp_path / "b" / "learning_curve.csv").open()))
    drop = "cpu_seconds"
    assert [{k: v for k, v in r.items() if k != drop} for r in rows_a] == \
           [{k: v for k, v in r.items() if k != drop} for r in rows_b]
    assert a["greedy_mean_q"] == b["greedy_mean_q"]
    c = train(TrainConfig(**{**TINY.__dict__, "seed": 8}), tmp_path / "c", log=lambda *_: None)
    wc = read_weights(tmp_path / "c" / "policy.safetensors")
    assert not np.array_equal(wa["w1"], wc["w1"])
    del c


def test_weights_file_is_not_pickle(tmp_path):
    train(TINY, tmp_path / "a", log=lambda *_: None)
    head = (tmp_path / "a" / "policy.safetensors").read_bytes()[:16]
    assert not head.startswith(b"\x80")  # a pickle stream starts with PROTO 0x80


def test_discounted_returns_by_hand():
    assert discounted(np.array([1.0, 0.0, 2.0]), 0.5).tolist() == [1.5, 1.0, 2.0]


def test_window_reward_by_hand():
    from inference_factories import tiny_instance

    from dlsched.serve.engine import serve

    class Always1:
        label = "one"

        def reset(self, sim):
            pass

        def size(self, sim, gpu):
            return 1

        def model(self, sim, gpu, queries, size):
            return 0  # "full" (models sorted: full, tiny)

    # q0 on time (1.0), q1 ends at 200 > soft 150, hard 250 → 0.5
    inst = tiny_instance([(0, 1000, 2000), (0, 150, 250)])
    run = serve(inst, Always1())
    trace = [(None, 1), (None, 1)]
    cfg = TrainConfig(reward="window", window=1000)
    assert [b.queries for b in run.batches] == [(1,), (0,)]  # q1 has the earlier bin
    # q1 first: ends 100 <= 150 → 1.0; q0 ends 200 → 1.0
    assert rewards_of(run, trace, cfg).tolist() == [1.0, 1.0]
    assert rewards_of(run, trace, TrainConfig(reward="batch")).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("gpus", sorted(SHIPPED))
def test_shipped_weights_load_and_run(gpus):
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.engine import serve

    if not shipped_weights(gpus).exists():
        pytest.fail(f"shipped weights for {gpus} are missing: {shipped_weights(gpus)}")
    inst = generate_inference(seed=11, gpus=gpus, hours=0.01, scale=8.0 if "g2" in gpus else 1.0)
    run = serve(inst, load_pg_policy(gpus=gpus))
    assert validate(inst, run.decision()).ok
    assert len(run.batches) > 0
    again = serve(inst, load_pg_policy(gpus=gpus))
    assert again.batches == run.batches
    curve = shipped_weights(gpus).parent / "learning_curve.csv"
    assert curve.exists()


def test_weights_for_another_cluster_are_refused():
    from dlsched.errors import InputError
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.engine import serve

    inst = generate_inference(seed=1, gpus="p2:2", hours=0.005)
    if not shipped_weights("p2:1").exists():
        pytest.fail("shipped p2:1 weights missing")
    with pytest.raises(InputError, match="features"):
        serve(inst, load_pg_policy(gpus="p2:1"))
