"""The learned ``pg`` serving policy: deterministic training, safetensors weights."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from dlsched.validate import validate

pytest.importorskip("safetensors")

from dlsched.heuristics.inference_pg import (  # noqa: E402
    Featurizer,
    PGPolicy,
    action_table,
    feature_size,
    load_pg_policy,
    read_weights,
    shipped_weights,
)
from dlsched.rl.inference_episodes import (  # noqa: E402
    TrainConfig,
    training_episodes,
    validation_episodes,
)
from dlsched.rl.inference_teachers import _Labeller  # noqa: E402
from dlsched.rl.inference_train import discounted, rewards_of, train  # noqa: E402

# 9 s of stream (~140 queries): every phase runs (cloning, DAgger, two policy-gradient
# iterations) and the selection is not a tie (validation mean Q below 1 after cloning)
TINY = TrainConfig(episodes=1, episode_minutes=0.15, val_episodes=1, iterations=2, rollouts=2,
                   bc_epochs=2, dagger=1, eval_every=1, teachers="given", seed=7)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[dict, Path]:
    """One training run of TINY (its summary and folder), shared by the tests that read
    a run's files; the determinism test trains a second one beside it."""
    out = tmp_path_factory.mktemp("tiny") / "a"
    return train(TINY, out, log=lambda *_: None), out


@pytest.fixture(scope="module")
def clone_run(tmp_path_factory) -> tuple[dict, Path]:
    """TINY without policy gradient (its summary and folder)."""
    out = tmp_path_factory.mktemp("tiny") / "bc"
    return train(TrainConfig(**{**TINY.__dict__, "iterations": 0}), out,
                 log=lambda *_: None), out


def test_training_is_deterministic_for_a_seed(tiny_run, clone_run, tmp_path):
    a, dir_a = tiny_run
    b = train(TINY, tmp_path / "b", log=lambda *_: None)
    wa, wb = read_weights(dir_a / "policy.safetensors"), read_weights(
        tmp_path / "b" / "policy.safetensors")
    assert sorted(wa) == ["b1", "b2", "w1", "w2"]
    for k in wa:
        assert wa[k].tobytes() == wb[k].tobytes(), k
    rows_a = list(csv.DictReader((dir_a / "learning_curve.csv").open()))
    rows_b = list(csv.DictReader((tmp_path / "b" / "learning_curve.csv").open()))
    assert [r["phase"] for r in rows_a] == ["bc1(a=0.5,b=0.5)", "bc1(a=0.5,b=0.5)-dagger1",
                                            "pg", "pg"]
    drop = "cpu_seconds"
    assert [{k: v for k, v in r.items() if k != drop} for r in rows_a] == \
           [{k: v for k, v in r.items() if k != drop} for r in rows_b]
    assert a["val_mean_q"] == b["val_mean_q"] and a["selected"] == b["selected"]
    # another seed gives other weights: checked on the cloning phase alone (TINY's
    # policy-gradient iterations cost 4x as much and add nothing to it)
    train(TrainConfig(**{**TINY.__dict__, "iterations": 0, "seed": 8}), tmp_path / "c",
          log=lambda *_: None)
    wc = read_weights(tmp_path / "c" / "policy.safetensors")
    w7 = read_weights(clone_run[1] / "policy.safetensors")
    assert not np.array_equal(w7["w1"], wc["w1"])


# 6 s episodes and one policy-gradient iteration (9 s and two before, 2x the CPU on both
# sides): with np.tanh, np.exp or BLAS matmuls in place of dlsched.heuristics.inference_net's
# own, the weights of this run and of the one before both differed between the two sides
TWO_CLUSTERS = TrainConfig(gpus="p2:1;g2:1,p2:1", scale=(1.0, 2.0), episodes=2,
                           episode_minutes=0.1, val_episodes=2, iterations=1, rollouts=2,
                           bc_epochs=2, dagger=1, eval_every=1, teachers="given", seed=5)


def test_training_gives_the_same_tensors_on_a_machine_without_avx(tmp_path):
    """Another machine, emulated: numpy's CPU-dispatched kernels switched off down to the
    x86-64 baseline (NPY_DISABLE_CPU_FEATURES, where np.tanh and np.exp give other bits)
    and OpenBLAS forced to its oldest kernel; the weights must not change by one bit."""
    import os
    import subprocess
    import sys

    here = train(TWO_CLUSTERS, tmp_path / "here", log=lambda *_: None)
    code = ("import sys; from dlsched.rl.inference_episodes import TrainConfig; "
            "from dlsched.rl.inference_train import train; "
            f"train(TrainConfig(**{TWO_CLUSTERS.__dict__!r}), sys.argv[1], log=lambda *_: None)")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
           "OPENBLAS_CORETYPE": "Prescott"}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "there")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("policy.safetensors", "clone.safetensors"):
        wa = read_weights(tmp_path / "here" / name)
        wb = read_weights(tmp_path / "there" / name)
        assert sorted(wa) == sorted(wb) == ["b1", "b2", "w1", "w2"]
        for k in wa:
            assert wa[k].tobytes() == wb[k].tobytes(), (name, k)
    assert (tmp_path / "here" / "learning_curve.csv").read_text().splitlines()[0] == \
        (tmp_path / "there" / "learning_curve.csv").read_text().splitlines()[0]
    assert here["selected"]


def test_weights_file_is_not_pickle_and_records_the_selection(tiny_run):
    from safetensors import safe_open

    out, run_dir = tiny_run
    path = run_dir / "policy.safetensors"
    raw = path.read_bytes()  # safetensors: 8-byte header length, JSON header, raw arrays
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    assert sorted(k for k in header if k != "__metadata__") == ["b1", "b2", "w1", "w2"]
    assert header["w1"]["dtype"] == "F64"
    assert len(raw) == 8 + n + max(v["data_offsets"][1] for k, v in header.items()
                                   if k != "__metadata__")
    with safe_open(str(path), framework="numpy") as fh:
        meta = fh.metadata()
    assert meta["selected"] == out["selected"]
    assert meta["seed"] == "7"
    assert '"teachers": "given"' in meta["config"]
    # the selected checkpoint is the best validation row of the learning curve
    rows = list(csv.DictReader((run_dir / "learning_curve.csv").open()))
    vals = [float(r["val_greedy_mean_q"]) for r in rows if r["val_greedy_mean_q"] != "nan"]
    assert out["val_mean_q"] == pytest.approx(max(vals))


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


def test_features_by_hand():
    from dlsched.instances.inference_gen import inference_instance
    from dlsched.problems.inference import inference_data
    from dlsched.problems.inference.policies import ServeState

    tables = {"full": {"kappa": 1.0, "delay_ms": {
                  "p2": {"1": 100, "2": 150, "4": 200, "8": 400},
                  "g2": {"1": 200, "2": 300, "4": 500, "8": 800}}},
              "tiny": {"kappa": 0.5, "delay_ms": {
                  "p2": {"1": 40, "2": 60, "4": 80, "8": 160},
                  "g2": {"1": 80, "2": 120, "4": 160, "8": 320}}}}
    inst = inference_instance(arrival=[0, 100, 300], soft=[1000, 1100, 1300],
                              hard=[2000, 2100, 2300], gpu_types=["g2", "p2"], name="f",
                              provenance={}, models=tables, batch_sizes=(1, 2, 4, 8))
    data = inference_data(inst)
    g2, p2 = data.gpu_type.tolist().index(0), data.gpu_type.tolist().index(1)
    free = [0, 0]
    free[g2] = 500
    # bins (200 ms): soft 1000, 1100 → bin 5, 1300 → bin 6; heap keys bin * N + query
    sim = ServeState(data=data, now=300, heap=[15, 16, 20], bin_count={5: 2, 6: 1},
                     gpu_free=free, next_arrival=3, arrivals=[0, 100, 300])
    # ξ by B = 8 throughput: p2 8/400, g2 8/800 → 2/3, 1/3; R_t = 3 / 5 s = 0.6 q/s
    xi = 2.0 / 3.0
    hist = [0.0] * 8 + [2.0 * xi, 1.0 * xi]
    pooled = [1 / 3, 0.2, 1.0,  # g2: share, mean busy (s), share busy
              2 / 3, 0.0, 0.0]  # p2
    want = (hist + [3 * xi, 0.6 * xi] + [d * xi * 0.6 for d in (0.1, 0.15, 0.2, 0.4)]
            + [0.0, 1.0] + [0.7, 1.7] + pooled + [0.2])
    got = Featurizer(data)(sim, p2)
    assert len(want) == feature_size(data)
    assert got.tolist() == pytest.approx(want)


def test_features_do_not_depend_on_the_number_of_gpus():
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.problems.inference import inference_data

    sizes = {feature_size(inference_data(generate_inference(seed=1, gpus=g, hours=0.002)))
             for g in ("p2:1", "p2:2", "g2:1", "g2:5,p2:5", "g2:50,p2:51")}
    assert len(sizes) == 1


def test_an_unknown_gpu_type_is_refused():
    from dlsched.errors import InputError
    from dlsched.instances.inference_gen import inference_instance
    from dlsched.serve.engine import serve

    tables = {"full": {"kappa": 1.0, "delay_ms": {"v100": {"1": 50, "8": 200}}}}
    inst = inference_instance(arrival=[0], soft=[1000], hard=[2000], gpu_types=["v100"],
                              name="v", provenance={}, models=tables, batch_sizes=(1, 8))
    w = {"w1": np.zeros((25, 3)), "b1": np.zeros(3), "w2": np.zeros((3, 3)),
         "b2": np.zeros(3)}  # the right sizes for batch sizes 1, 8 and one model
    with pytest.raises(InputError, match="v100"):
        serve(inst, PGPolicy(w))


def test_labeller_reproduces_the_teacher_and_labels_its_choices():
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.problems.inference.policies import HeuristicPolicy
    from dlsched.serve.engine import serve

    inst = generate_inference(seed=3, gpus="p2:1", start_hour=15.0, hours=0.02, peak_qps=40)
    plain = serve(inst, HeuristicPolicy(alpha=0.75, beta=0.75))
    lab = _Labeller(HeuristicPolicy(alpha=0.75, beta=0.75), None)
    run = serve(inst, lab)
    assert run.batches == plain.batches
    table = action_table(run.data)
    assert len(lab.pairs) == len(run.batches)
    for (_s, a), b in zip(lab.pairs, run.batches, strict=True):
        size, m = table[a]
        assert run.data.models[m] == b.model
        assert len(b.queries) <= size
    assert any(b.model == "tiny" for b in run.batches)  # the model rule is exercised


def test_validation_episodes_are_disjoint_from_training_and_test_slots():
    cfg = TrainConfig(episodes=2, val_episodes=2, episode_minutes=1.0)
    tr, va = training_episodes(cfg), validation_episodes(cfg)
    seeds_tr = {e.provenance["seed"] for e in tr}
    seeds_va = {e.provenance["seed"] for e in va}
    assert not seeds_tr & seeds_va
    for e in va:
        args = e.provenance["arguments"]
        assert args["start_hour"] >= 9.0 and args["start_hour"] + args["hours"] <= 12.0


def test_greedy_is_the_default_at_evaluation():
    pol = load_pg_policy()
    assert pol.greedy
    assert not load_pg_policy(greedy="false").greedy
    w = {"w1": np.zeros((2, 3)), "b1": np.zeros(3), "w2": np.zeros((3, 3)),
         "b2": np.array([0.0, 2.0, 1.0])}
    assert PGPolicy(w).act(np.ones(2)) == 1


@pytest.mark.parametrize("gpus,scale", [("p2:1", 1.0), ("p2:2", 2.0), ("g2:5,p2:5", 8.0),
                                        ("g2:2,p2:1", 3.0)])
def test_one_shipped_policy_runs_on_every_cluster(gpus, scale):
    from safetensors import safe_open

    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.engine import serve

    if not shipped_weights().exists():
        pytest.fail(f"shipped weights are missing: {shipped_weights()}")
    # 140-1,120 queries (290-2,200 at hours=0.004, 3x the CPU): the same runs on every
    # cluster, both models on g2:2,p2:1
    inst = generate_inference(seed=11, gpus=gpus, hours=0.002, scale=scale)
    run = serve(inst, load_pg_policy(), noise_cv=0.0)  # a decision: table delays
    assert validate(inst, run.decision()).ok
    assert len(run.batches) > 0
    again = serve(inst, load_pg_policy(), noise_cv=0.0)
    assert again.batches == run.batches
    assert (shipped_weights().parent / "learning_curve.csv").exists()
    with safe_open(str(shipped_weights()), framework="numpy") as fh:
        meta = fh.metadata()
    assert meta["command"].startswith("dlsched rl train inference")


def test_weights_for_other_batch_sizes_are_refused():
    from dlsched.errors import InputError
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.engine import serve

    inst = generate_inference(seed=1, gpus="p2:2", hours=0.005)
    w = {"w1": np.zeros((5, 3)), "b1": np.zeros(3), "w2": np.zeros((3, 15)),
         "b2": np.zeros(15)}
    with pytest.raises(InputError, match="features"):
        serve(inst, PGPolicy(w))


def test_the_clone_of_a_run_is_what_a_run_without_policy_gradient_writes(tiny_run, clone_run):
    with_pg, pg_dir = tiny_run
    clone_only, bc_dir = clone_run
    assert with_pg["clone"] == {"tag": clone_only["selected"], "q": clone_only["val_mean_q"]}
    wa = read_weights(pg_dir / "clone.safetensors")
    wb = read_weights(bc_dir / "policy.safetensors")
    for k in wa:
        assert wa[k].tobytes() == wb[k].tobytes(), k
