"""Inference problem, validator, serving engine and policies on hand-checked tiny streams.

Tables of ``inference_factories``: p2 full 100/150/200 ms, tiny 40/60/80 ms for B = 1/2/4;
g2 full 200/300/- ms, tiny 80/120/160 ms. κ_full = 1, κ_tiny = 0.5. Bins of 200 ms.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from inference_factories import tiny_instance

from dlsched.errors import InputError
from dlsched.instance_io import instance_from_dict, load_instance, save_instance
from dlsched.problems import get_problem
from dlsched.problems.inference import (
    PAPER_QPS,
    Batch,
    InferenceDecision,
    inference_data,
    paper_models,
    utility,
)
from dlsched.problems.inference.policies import FixedPolicy, HeuristicPolicy
from dlsched.serve import serve
from dlsched.serve.metrics import (
    delay_cdf,
    plot_delay_cdf,
    plot_quality,
    quality_series,
    query_table,
    save_serving_results,
    summary,
)
from dlsched.validate import validate

PROBLEM = get_problem("inference")


def total_q(inst, decision) -> float:
    return PROBLEM.evaluate(inst, decision)


# ----------------------------------------------------------------------------- problem
def test_paper_table1_delays_by_hand():
    t = paper_models()
    # p2 full B=1: 1000/14.5 = 68.97 → 69 ms; g2 full B=64 unmeasured → null
    assert t["full"]["delay_ms"]["p2"]["1"] == 69
    assert t["full"]["delay_ms"]["g2"]["64"] is None
    # p2 tiny B=64: 64000/141.9 = 451.02 → 451; g2 full B=32: 32000/16.8 = 1904.76 → 1905
    assert t["tiny"]["delay_ms"]["p2"]["64"] == 451
    assert t["full"]["delay_ms"]["g2"]["32"] == 1905
    assert t["full"]["kappa"] == 1.0 and t["tiny"]["kappa"] == 0.5
    assert PAPER_QPS["tiny"]["g2"][4] == 73.7


def test_utility_by_hand():
    v = utility(np.array([900, 1000, 1250, 2000, 2500]), np.full(5, 1000), np.full(5, 2000))
    assert v.tolist() == [1.0, 1.0, 0.75, 0.0, 0.0]
    # a step when soft == hard
    assert utility(np.array([10, 11]), np.array([10, 10]), np.array([10, 10])).tolist() == [1, 0]


def _doc(inst):
    return json.loads(json.dumps(inst.to_dict()))


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["params"]["models"]["full"]["delay_ms"]["p2"].pop("4"),
     "params.models.full.delay_ms.p2.4"),
    (lambda d: d["params"]["queries"]["hard_ms"].__setitem__(1, 5),
     "params.queries.hard_ms[1]"),
    (lambda d: d["params"]["queries"]["arrival_ms"].__setitem__(0, -1),
     "params.queries.arrival_ms[0]"),
    (lambda d: d["params"]["queries"].__setitem__("size", [1, -2]), "params.queries.size[1]"),
    (lambda d: d["params"]["models"]["tiny"].__setitem__("kappa", 1.5),
     "params.models.tiny.kappa"),
    (lambda d: d["params"]["models"]["tiny"]["delay_ms"]["g2"].__setitem__("2", -3),
     "params.models.tiny.delay_ms.g2.2"),
    (lambda d: d["params"]["models"]["tiny"]["delay_ms"].pop("g2"),
     "params.models.tiny.delay_ms.g2"),
    (lambda d: d["params"].__setitem__("delay_cv", -0.1), "params.delay_cv"),
])
def test_bad_input_is_one_line_naming_the_field(tmp_path, edit, field):
    inst = tiny_instance([(0, 100, 200), (10, 110, 210)], gpus=("p2", "g2"))
    doc = _doc(inst)
    doc.pop("sha256")
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        load_instance(path)
    text = str(err.value)
    assert "\n" not in text and field in text and str(path) in text


def test_instance_round_trip_and_sha(tmp_path):
    inst = tiny_instance([(0, 100, 200), (10, 110, 210)])
    sha = save_instance(inst, tmp_path / "i.json")
    again = load_instance(tmp_path / "i.json")
    assert again.sha256 == sha == inst.sha256
    assert instance_from_dict(_doc(inst)).sha256 == sha


# ----------------------------------------------------------------------------- validator
def test_validator_rules():
    inst = tiny_instance([(0, 1000, 2000), (10, 1000, 2000), (20, 1000, 2000)])
    ok = InferenceDecision(batches=(Batch("gpu0", "full", 10, 160, (0, 1)),
                                    Batch("gpu0", "tiny", 160, 200, (2,))))
    assert validate(inst, ok).ok
    assert total_q(inst, ok) == pytest.approx(2 + 0.5)
    cases = {
        "overlap": (Batch("gpu0", "full", 10, 160, (0, 1)), Batch("gpu0", "tiny", 150, 190, (2,))),
        "duration": (Batch("gpu0", "full", 10, 110, (0, 1)),),  # 2 queries take 150 ms
        "duplicate": (Batch("gpu0", "full", 10, 160, (0, 1)),
                      Batch("gpu0", "full", 160, 260, (1,))),
        "release": (Batch("gpu0", "full", 5, 155, (0, 1)),),  # query 1 arrives at 10
        "unknown_model": (Batch("gpu0", "huge", 20, 120, (2,)),),
        "unknown_gpu": (Batch("gpu9", "full", 20, 120, (2,)),),
        "unknown_query": (Batch("gpu0", "full", 20, 120, (7,)),),
        "empty_batch": (Batch("gpu0", "full", 20, 120, ()),),
    }
    for kind, batches in cases.items():
        report = validate(inst, InferenceDecision(batches=batches))
        assert kind in report.kinds, (kind, report)


def test_validator_batch_size_and_padding():
    inst = tiny_instance([(0, 1000, 2000)] * 3 + [(5, 1000, 2000)] * 2, gpus=("g2",))
    # 3 queries run padded at size 4: g2 full has no 4 → too big; tiny 4 takes 160 ms
    assert "batch_size" in validate(inst, InferenceDecision(
        batches=(Batch("gpu0", "full", 0, 400, (0, 1, 2)),))).kinds
    padded = InferenceDecision(batches=(Batch("gpu0", "tiny", 0, 160, (0, 1, 2)),))
    assert validate(inst, padded).ok
    assert total_q(inst, padded) == pytest.approx(1.5)


def test_noisy_instances_still_fix_every_batch_duration():
    # delay_cv is the noise of simulated runs; a decision's batch lasts the table's 100 ms
    inst = tiny_instance([(0, 1000, 2000)], delay_cv=0.1)
    assert validate(inst, InferenceDecision(batches=(Batch("gpu0", "full", 0, 100, (0,)),))).ok
    for end in (1, 93, 107, 5):
        report = validate(inst, InferenceDecision(batches=(Batch("gpu0", "full", 0, end, (0,)),)))
        assert report.kinds == {"duration"}


# ----------------------------------------------------------------------------- engine
def test_fixed_event_sequence_by_hand():
    # q2 has the earliest soft deadline (bin 2) and is served before q1 (bin 5)
    inst = tiny_instance([(0, 1000, 2000), (10, 1010, 2010), (20, 500, 1500), (300, 1300, 2300)])
    run = serve(inst, FixedPolicy(), record_events=True)
    assert run.events == [
        ("arrive", 0, 0),
        ("dispatch", 0, "gpu0", "full", (0,), 100),
        ("arrive", 10, 1), ("arrive", 20, 2),
        ("dispatch", 100, "gpu0", "full", (2, 1), 250),
        ("arrive", 300, 3),
        ("dispatch", 300, "gpu0", "full", (3,), 400),
    ]
    assert total_q(inst, run.decision()) == 4.0
    assert validate(inst, run.decision()).ok


S2 = [(0, 100, 160), (0, 100, 160), (0, 1000, 2000), (0, 1000, 2000), (0, 1000, 2000),
      (0, 1000, 2000)]


def test_heuristic_batches_and_models_by_hand():
    # Eq. 2 with α = 0.5, β = 0.5, ξ = 1, threshold 2; R = 6 / 5000 per ms throughout.
    # t=0:   N=6: B=1 needs (0.5·100·0.0012 + 3)·0.5 = 1.53 > 1; B=2: 1.545 <= 2 → B=2,
    #        q0,q1: full ends 150 → V = 10/60 each, ΣQ = 1/3; tiny ends 60 → 2 · 0.5 = 1 → tiny
    # t=60:  N=4: B=1 needs 1.03 > 1; B=2: 1.045 → q2,q3 full (on time) [60, 210)
    # t=210: N=2: B=1 needs 0.53 → q4 full [210, 310); t=310: q5 full [310, 410)
    inst = tiny_instance(S2)
    run = serve(inst, HeuristicPolicy(alpha=0.5, beta=0.5, threshold=2), record_events=True)
    dispatches = [e[1:] for e in run.events if e[0] == "dispatch"]
    assert dispatches == [(0, "gpu0", "tiny", (0, 1), 60), (60, "gpu0", "full", (2, 3), 210),
                          (210, "gpu0", "full", (4,), 310), (310, "gpu0", "full", (5,), 410)]
    assert total_q(inst, run.decision()) == pytest.approx(5.0)
    assert validate(inst, run.decision()).ok


def test_fixed_batches_and_models_by_hand():
    # t=0: all 6 queued, cap 4 → q0..q3; full ends 200: q0,q1 past hard (0), q2,q3 1 → 2;
    #      tiny ends 80: 4 · 0.5 = 2 → a tie keeps full. t=200: q4,q5 full [200, 350).
    inst = tiny_instance(S2)
    run = serve(inst, FixedPolicy(threshold=2), record_events=True)
    dispatches = [e[1:] for e in run.events if e[0] == "dispatch"]
    assert dispatches == [(0, "gpu0", "full", (0, 1, 2, 3), 200),
                          (200, "gpu0", "full", (4, 5), 350)]
    assert total_q(inst, run.decision()) == pytest.approx(4.0)
    table = query_table(run)
    assert table["quality"].tolist() == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    assert table["past_hard"].tolist() == [True, True, False, False, False, False]


def test_expired_queries_are_dropped():
    inst = tiny_instance([(0, 1000, 2000), (10, 60, 100)])
    run = serve(inst, FixedPolicy(), record_events=True)
    assert run.events == [("arrive", 0, 0), ("dispatch", 0, "gpu0", "full", (0,), 100),
                          ("arrive", 10, 1), ("drop", 100, 1)]
    s = summary(run)
    assert s["share_dropped"] == 0.5 and s["share_past_hard"] == 0.5 and s["mean_q"] == 0.5


def test_two_gpus_by_hand():
    # gpu0 is p2, gpu1 is g2; both free at 0: gpu0 takes q0 [0, 100); gpu1 waits for q1
    # (arrives at 50) and runs it with g2 full: [50, 250).
    inst = tiny_instance([(0, 1000, 2000), (50, 1000, 2000)], gpus=("p2", "g2"))
    run = serve(inst, FixedPolicy(), record_events=True)
    assert [e[1:] for e in run.events if e[0] == "dispatch"] == [
        (0, "gpu0", "full", (0,), 100), (50, "gpu1", "full", (1,), 250)]
    s = summary(run)
    # busy 100 + 200 ms over 2 GPUs × [0, 250)
    assert s["gpu_utilization"] == pytest.approx(300 / 500)
    assert s["delay_p50_ms"] == pytest.approx(150.0)


def test_heuristic_xi_is_b8_throughput_share():
    from dlsched.instances.inference_gen import generate_inference

    inst = generate_inference(seed=0, gpus="g2:1,p2:1", hours=0.01)
    pol = HeuristicPolicy()
    serve(inst, pol)
    # Table 1 B=8 full: g2 14.7 QPS, p2 28.4 QPS (delays 544 and 282 ms after rounding)
    g2, p2 = 8 / 544, 8 / 282
    assert pol.xi == pytest.approx([g2 / (g2 + p2), p2 / (g2 + p2)])


def test_noise_is_seeded_and_only_noise_free_replays_are_decisions():
    from dlsched.instances.inference_gen import generate_inference
    from dlsched.problems.inference.decision import query_qualities
    from dlsched.solve import solve

    # ~800 queries (hours=0.005; 2,700 at 0.02 cost 5x the CPU for the same checks)
    inst = generate_inference(seed=3, gpus="g2:2,p2:1", hours=0.005, scale=2.0)
    data = inference_data(inst)
    assert data.delay_cv == 0.1  # the generator's default
    for pol, name in ((FixedPolicy, "fixed"), (HeuristicPolicy, "heuristic")):
        a = serve(inst, pol(), seed=5)
        b = serve(inst, pol(), seed=5)
        c = serve(inst, pol(), seed=6)
        assert a.batches == b.batches
        assert a.batches != c.batches
        # a noisy run is a measurement: its batches' drawn durations are not the instance's
        assert validate(inst, a.decision()).kinds == {"duration"}
        assert summary(a)["mean_q"] == pytest.approx(
            query_qualities(data, a.decision()).sum() / data.num_queries)
        exact = serve(inst, pol(), seed=5, noise_cv=0.0)
        assert validate(inst, exact.decision()).ok
        assert solve(inst, name, seed=5).decision.batches == tuple(exact.batches)


def test_results_and_plots_data(tmp_path):
    inst = tiny_instance([(0, 1000, 2000), (10, 1010, 2010), (20, 500, 1500), (300, 1300, 2300)])
    run = serve(inst, FixedPolicy())
    table = query_table(run)
    assert table["delay_ms"].tolist() == [100.0, 240.0, 230.0, 100.0]
    cdf = delay_cdf(table)
    assert cdf["delay_ms"].tolist() == [100.0, 100.0, 230.0, 240.0]
    assert cdf["cdf"].tolist() == [0.25, 0.5, 0.75, 1.0]
    series = quality_series(table, window_ms=200)
    assert series["time_s"].tolist() == [0.0, 0.2] and series["queries"].tolist() == [3, 1]
    _, drawn = plot_delay_cdf(table)
    assert drawn.equals(cdf)
    _, drawn = plot_quality(table, window_ms=200)
    assert drawn["mean_q"].tolist() == [1.0, 1.0]
    summ = save_serving_results(run, tmp_path, plots=True)
    assert (tmp_path / "queries.csv").exists() and (tmp_path / "quality.png").exists()
    assert summ["mean_q"] == 1.0 and summ["share_full"] == 1.0
