"""Training the inference ``pg`` policy over a range of loads with the ``adaptive`` teacher."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("safetensors")

from dlsched.errors import InputError  # noqa: E402
from dlsched.heuristics.inference_pg import action_table, read_weights  # noqa: E402
from dlsched.problems.inference.policies import HeuristicPolicy  # noqa: E402
from dlsched.rl.inference_episodes import (  # noqa: E402
    TrainConfig,
    parse_peak_qps,
    training_episodes,
    validation_episodes,
)
from dlsched.rl.inference_teachers import teacher_labels, teacher_params  # noqa: E402
from dlsched.rl.inference_train import train  # noqa: E402
from dlsched.serve.engine import serve  # noqa: E402
from dlsched.serve.metrics import summary  # noqa: E402
from dlsched.serve.tune import ALPHAS, BETAS  # noqa: E402

# 6-s episodes: at 40 queries/s one grid pair is strictly the best (the teacher's pick is
# no tie), at 12/s every pair serves all on time, in training and validation episodes
# alike (as with the 12-s ones before, for 2x the CPU)
TINY = TrainConfig(peak_qps=(12.0, 40.0), episodes=2, episode_minutes=0.1, val_episodes=2,
                   iterations=1, rollouts=2, bc_epochs=2, dagger=1, eval_every=1,
                   teachers="adaptive", seed=3)


def test_peak_qps_parses_one_value_or_a_list():
    assert parse_peak_qps("30") == 30.0 and isinstance(parse_peak_qps("30"), float)
    assert parse_peak_qps("24, 30,36") == (24.0, 30.0, 36.0)


@pytest.mark.parametrize("bad", ["", "24,x", "24,,30", "0", "24,-1", "nan", "inf"])
def test_bad_peak_qps_is_a_one_line_input_error(bad):
    with pytest.raises(InputError) as exc:
        parse_peak_qps(bad)
    assert "--peak-qps" in str(exc.value) and "\n" not in str(exc.value)


def test_bad_peak_qps_on_the_command_line(capsys):
    from dlsched.cli import main

    code = main(["rl", "train", "inference", "--peak-qps", "24,x", "--out", "unused"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "--peak-qps" in err and "24,x" in err


def test_peaks_are_cycled_over_training_and_validation_episodes():
    cfg = TrainConfig(peak_qps=(20.0, 30.0), episodes=3, val_episodes=3, episode_minutes=0.5)
    for eps in (training_episodes(cfg), validation_episodes(cfg)):
        assert [e.provenance["arguments"]["peak_qps"] for e in eps] == [20.0, 30.0, 20.0]
    one = TrainConfig(peak_qps=30.0, episodes=2, episode_minutes=0.5)
    assert [e.provenance["arguments"]["peak_qps"] for e in training_episodes(one)] == [30.0] * 2


def test_adaptive_teacher_is_the_best_grid_pair_of_each_episode():
    cfg = TrainConfig(peak_qps=(12.0, 40.0), episodes=2, episode_minutes=TINY.episode_minutes,
                      teachers="adaptive,given", teacher_alpha=0.5, teacher_beta=0.5)
    eps = training_episodes(cfg)
    adaptive, given = teacher_params(cfg, eps)
    assert adaptive["name"] == "adaptive" and len(adaptive["per_episode"]) == 2
    assert given == {"name": "given", "alpha": 0.5, "beta": 0.5,
                     "by_cluster": {"p2:1@x1": {"alpha": 0.5, "beta": 0.5}}}
    for e, pick in zip(eps, adaptive["per_episode"], strict=True):
        q = {(a, b): summary(serve(e, HeuristicPolicy(alpha=a, beta=b)))["mean_q"]
             for a in ALPHAS for b in BETAS}
        assert q[(pick["alpha"], pick["beta"])] == max(q.values())
    assert len(set(q.values())) > 1  # the last (40/s) episode tells the pairs apart


def test_unknown_teacher_is_refused():
    with pytest.raises(InputError, match="adaptive"):
        teacher_params(TrainConfig(teachers="benchmark,oracle", episodes=1,
                                   episode_minutes=0.5))


def test_each_episode_is_labelled_by_its_own_teacher():
    eps = training_episodes(TrainConfig(peak_qps=(40.0,), episodes=2, episode_minutes=0.5))
    plan = [{"alpha": 0.25, "beta": 0.25}, {"alpha": 0.75, "beta": 3.0}]
    xs, ys = teacher_labels(eps, plan)
    assert len(xs) == len(ys)
    lo = 0
    for e, p in zip(eps, plan, strict=True):
        run = serve(e, HeuristicPolicy(**p))
        table = action_table(run.data)
        chosen = ys[lo:lo + len(run.batches)]
        # the teacher drives: one label per dispatched batch, its size class and model
        assert len(chosen) == len(run.batches) and 0 not in chosen
        for a, b in zip(chosen, run.batches, strict=True):
            size, m = table[a]
            assert run.data.models[m] == b.model and len(b.queries) <= size
        lo += len(run.batches)
    assert lo == len(ys)


def test_adaptive_training_is_deterministic_for_a_seed(tmp_path):
    from safetensors import safe_open

    a = train(TINY, tmp_path / "a", log=lambda *_: None)
    b = train(TINY, tmp_path / "b", log=lambda *_: None)
    wa = read_weights(tmp_path / "a" / "policy.safetensors")
    wb = read_weights(tmp_path / "b" / "policy.safetensors")
    for k in wa:
        assert np.array_equal(wa[k], wb[k])
    assert a["selected"] == b["selected"] and a["val_mean_q"] == b["val_mean_q"]
    rows = list(csv.DictReader((tmp_path / "a" / "learning_curve.csv").open()))
    assert [r["phase"] for r in rows] == ["bc1(adaptive)", "bc1(adaptive)-dagger1", "pg"]
    with safe_open(str(tmp_path / "a" / "policy.safetensors"), framework="numpy") as fh:
        meta = fh.metadata()
    assert json.loads(meta["config"])["peak_qps"] == [12.0, 40.0]
    (teacher,) = json.loads(meta["teachers"])
    assert teacher["name"] == "adaptive" and len(teacher["per_episode"]) == 2
