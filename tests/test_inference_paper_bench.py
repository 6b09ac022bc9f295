"""The inference paper benchmark: the calibrated cluster-load preset is explicit (never the
default) and every gap outside 2× of the paper's carries a measured reason."""

from __future__ import annotations

import pytest

from dlsched.benchmarks.inference_paper import measured_reason, run_tables, settings
from dlsched.instances.inference_gen import CLUSTER_SCALE_CALIBRATED, CLUSTER_SCALE_PAPER


def test_the_default_runs_the_papers_stated_load_only():
    assert [(g, sc) for g, sc, _, _ in settings()] == [("p2:1", 1.0),
                                                       ("g2:5,p2:5", CLUSTER_SCALE_PAPER)]
    both = settings("both")
    assert [(g, sc) for g, sc, _, _ in both][-1] == ("g2:5,p2:5", CLUSTER_SCALE_CALIBRATED)
    assert len({key for *_, key in both}) == 3  # the calibrated rows have their own key
    assert [sc for _, sc, _, _ in settings("calibrated")] == [1.0, CLUSTER_SCALE_CALIBRATED]
    with pytest.raises(ValueError):
        settings("heavy")


def _summary(q, tiny, batch=3.0, util=0.9):
    return {"mean_q": q, "share_tiny": tiny, "mean_batch": batch, "gpu_utilization": util}


def test_measured_reason_names_the_figures():
    paper_q = {"fixed": 0.820, "heuristic": 0.948}
    paper_t = {"fixed": 32.6, "heuristic": 9.6}
    ours = {"fixed": _summary(0.936, 0.102, 2.5, 0.875), "heuristic": _summary(0.97, 0.03)}
    assert measured_reason("heuristic-fixed", ours, paper_q, paper_t, True) == ""
    text = measured_reason("heuristic-fixed", ours, paper_q, paper_t, False)
    assert "fixed Q 0.936 (paper 0.820)" in text and "P_tiny 10 % (paper 33 %)" in text
    assert "mean batch 2.5" in text and "GPU util 0.88" in text
    assert "less load than the paper's" in text
    ours["fixed"] = _summary(0.80, 0.40)
    assert "our heuristic stays below" in measured_reason("heuristic-fixed", ours, paper_q,
                                                          paper_t, False)
    ours["learned-batching"] = _summary(0.90, 0.1)
    assert "learned-batching Q 0.9000 < heuristic 0.9700" in measured_reason(
        "learned-batching-heuristic", ours, paper_q, paper_t, False)
    ours["learned-batching"] = _summary(0.98, 0.1)
    assert "learned-batching Q 0.9800 >= heuristic 0.9700" in measured_reason(
        "learned-batching-heuristic", ours, paper_q, paper_t, False)


def test_a_short_calibrated_run_reports_both_gaps_with_their_reason():
    out: list[str] = []
    # 7.2 s per slot (18 s before, 2x the CPU): its gaps fall both within 2x and outside
    figures = run_tables(0.002, 0, False, out, cluster_load="calibrated")
    key = f"g2:5,p2:5@x{CLUSTER_SCALE_CALIBRATED:g}"
    assert set(figures) == {"p2:1", key}
    fig = figures[key]
    assert fig["arrival_scale"] == CLUSTER_SCALE_CALIBRATED
    assert set(fig["rows"]) == {"fixed", "heuristic"}  # no pg: trained at × 8
    for gap in fig["gaps"]:
        assert gap["within_2x"] == (gap["measured_reason"] == "")
        assert gap["within_2x"] == (gap["direction_holds"] and abs(gap["paper"]) / 2
                                    <= abs(gap["ours"]) <= 2 * abs(gap["paper"]))
    assert any("measured reason" in line for line in out)


# ------------------------------------------------------------------ capacity ceiling
def _saturated(tiny_ms: int | None):
    import numpy as np

    from dlsched.instances.inference_gen import inference_instance

    models = {"full": {"kappa": 1.0, "delay_ms": {"p2": {"1": 100}}}}
    if tiny_ms is not None:
        models["tiny"] = {"kappa": 0.5, "delay_ms": {"p2": {"1": tiny_ms}}}
    zeros = np.zeros(30, dtype=np.int64)
    return inference_instance(arrival=zeros, soft=zeros + 500, hard=zeros + 1000,
                              gpu_types=["p2"], name="saturated", provenance={},
                              models=models, batch_sizes=(1,))


def test_ceiling_by_hand():
    from dlsched.serve.ceiling import quality_ceiling

    # 1000 ms of one GPU: 10 full-model queries of 100 ms out of 30
    assert quality_ceiling(_saturated(None)) == pytest.approx(10 / 30)
    # tiny at 40 ms earns 0.5 / 40 per ms > 1 / 100: 25 tiny queries, 12.5
    assert quality_ceiling(_saturated(40)) == pytest.approx(12.5 / 30)
    # tiny at 60 ms earns less per ms than full: full only, 10
    assert quality_ceiling(_saturated(60)) == pytest.approx(10 / 30)


def test_ceiling_bounds_every_policy_on_exact_delays():
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.serve.ceiling import quality_ceiling
    from dlsched.serve.metrics import summary
    from dlsched.serve.run import run_policy

    # 18 s of ~1,000 queries per cluster (72 s at x2 on p2:1 before, 2x the CPU)
    for gpus, scale in (("p2:1", 3.0), ("g2:1,p2:1", 4.0)):
        inst = generate_inference(seed=5, gpus=gpus, start_hour=15, hours=0.005, scale=scale,
                                  delay_cv=0.0)
        ceiling = quality_ceiling(inst)
        assert ceiling < 1.0  # overloaded on purpose: the bound binds
        for pol in ("fixed", "heuristic"):
            assert summary(run_policy(inst, pol, {})[0])["mean_q"] <= ceiling + 1e-12
