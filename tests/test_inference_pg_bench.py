"""The learned serving policy's benchmark runs on a tiny setting and reports the target."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("safetensors")

from dlsched.benchmarks import inference_pg  # noqa: E402


def test_azure_code_stream_retimed_to_its_own_compression_is_the_committed_file():
    from importlib import resources

    from dlsched.instance_io import load_instance

    path = resources.files("dlsched.instances").joinpath("workloads", inference_pg.AZURE_CODE)
    assert inference_pg.azure_code(8.0).params["queries"] == \
        load_instance(str(path)).params["queries"]
    fast = inference_pg.azure_code(12.0).params["queries"]["arrival_ms"]
    slow = inference_pg.azure_code(6.0).params["queries"]["arrival_ms"]
    assert fast[-1] < slow[-1] and len(fast) == len(slow)


def test_tiny_run_prints_tables_and_the_target_figures(capsys, tmp_path, monkeypatch):
    from dlsched.rl.inference_episodes import TrainConfig
    from dlsched.rl.inference_train import train

    # the grid tuning on 3 × 10 min per cluster is the benchmark's own cost, not its logic
    monkeypatch.setattr(inference_pg, "heuristic_params",
                        lambda gpus, scale, tune, out: {"alpha": 0.5, "beta": 0.75})
    run = tmp_path / "run"
    train(TrainConfig(gpus="p2:1;g2:1,p2:1", scale=(1.0, 2.0), episodes=2,
                      episode_minutes=0.1, val_episodes=2, iterations=1, rollouts=2,
                      bc_epochs=1, dagger=0, eval_every=1, teachers="given", seed=1),
          run, log=lambda *_: None)
    # 1.8 s per slot: 12 workloads of ~30-530 queries, each served by 4 policies (3.6 s
    # cost 2x the CPU for the same tables)
    assert inference_pg.main(["--hours", "0.0005", "--seeds", "1", "--no-azure",
                              "--weights", str(run / "policy.safetensors"),
                              "--ablation", str(run)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["benchmark"] == "inference_pg"
    assert set(figures["target"]) == {"p2:1", "g2:5,p2:5", "p2:2"}
    for fig in figures["target"].values():
        assert fig["runs"] == 4 and len(fig["rows"]) == 4
        assert fig["min_diff"] == min(r["learned-batching"] - r["heuristic"] for r in fig["rows"])
    assert figures["target_met"] == all(f["min_diff"] >= 0 for g, f in
                                        figures["target"].items() if g != "p2:2")
    (abl,) = figures["ablation"]
    assert abl["seed"] == 1 and abl["workloads"] == 12
    assert abl["diff_mean"] == pytest.approx(abl["selected_mean_q"] - abl["clone_mean_q"])
