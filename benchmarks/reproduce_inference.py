"""``dlsched reproduce inference``: Tables 2-5 of Fang et al. (CIKM'17).

Setting (Sec. 4): one p2 GPU (Tables 2-3) and 5 g2 + 5 p2 with arrivals x 8 (Tables
4-5); test slots 12-15, 15-18, 18-21, 21-24 h, each a generated workload of ``SLOT_HOURS``
from the slot's start (the calibrated diurnal, bursty stream of
``dlsched.instances.inference_gen``), one per slot and seed. The heuristic's alpha, beta
of Eq. 2 are tuned on the training span 9-12 h, as the paper does ("that give the highest
mean response quality on the training data"); the printed alpha = beta = 0.5 is the
sensitivity reading. The RL scheduler is the shipped ``pg``. A headline is the mean over
the four slots of a gap in mean Q (heuristic - fixed, pg - heuristic), against the
paper's mean gap; P_tiny (Tables 3, 5) is reported beside it. Beyond the paper: pg and
the tuned heuristic against the proven optimum (Lagrangian bound met by its schedule) on
the windows where the heuristic loses most.
"""

from __future__ import annotations

import statistics

from dlsched.gaps import relative_gap
from dlsched.instances.inference_gen import CLUSTER_SCALE_CALIBRATED, generate_inference
from dlsched.problems import get_problem
from dlsched.problems.inference import window
from dlsched.serve.metrics import summary
from dlsched.serve.run import run_policy
from dlsched.solve import solve

from .claim_rows import Row, beyond, verdict
from .inference_paper import (
    LEARNED,
    PAPER_Q,
    PAPER_TINY,
    SETTINGS,
    SLOTS,
    heuristic_params,
)
from .paper_claims import claim

SLOT_HOURS = 0.5
QUICK_HOURS = 0.02
"""``--quick``: 72 s per slot (1.5-2 k queries on one p2, 12-16 k on 5 g2 + 5 p2), the
heuristic tuned on 3 training episodes of half a minute: a smoke run of every row."""
QUICK_TUNE_MINUTES = 0.5
"""``--quick``: minutes of each of the 3 training episodes the heuristic is tuned on."""
PRINTED = {"alpha": 0.5, "beta": 0.5}
TABLES = {"p2:1": ("table2", "table3"), "g2:5,p2:5": ("table4", "table5")}
GAPS = (("heuristic-fixed", "heuristic", "fixed"), ("rl-heuristic", LEARNED, "heuristic"))


def _slots(gpus: str, scale: float, seeds: int, hours: float, params: dict[str, dict],
           with_pg: bool = True) -> list[list[dict[str, dict]]]:
    """Per seed, per slot: policy (``heuristic`` / ``heuristic@0.5``: tuned / printed
    alpha, beta) -> serving summary."""
    out = []
    for s in range(seeds):
        per_slot = []
        for i, h in enumerate(SLOTS):
            inst = generate_inference(seed=s + i, gpus=gpus, start_hour=h, hours=hours,
                                      scale=scale)
            runs = {}
            for name, pol, opts in (("fixed", "fixed", {}),
                                    *(((LEARNED, LEARNED, {}),) if with_pg else ()),
                                    *((k, "heuristic", v) for k, v in params.items())):
                runs[name] = summary(run_policy(inst, pol, opts, seed=s)[0])
            per_slot.append(runs)
        out.append(per_slot)
    return out


def _gap_row(gpus: str, runs: list[list[dict[str, dict]]], gap: str, a: str, b: str,
             kind: str, label: str, reason: str, of: str | None = None) -> Row:
    """One mean-Q gap, the mean over the four slots, per seed, against the paper's."""
    q_table, t_table = TABLES[gpus]
    cid = f"inference.{q_table}.{gap}"
    pa, pb = (LEARNED if a == LEARNED else "heuristic"), ("heuristic" if b != "fixed" else "fixed")
    paper = statistics.fmean(x - y for x, y in zip(PAPER_Q[gpus][pa], PAPER_Q[gpus][pb],
                                                   strict=True))
    per_seed = [statistics.fmean(slot[a]["mean_q"] - slot[b]["mean_q"] for slot in seed)
                for seed in runs]
    mean = statistics.fmean(per_seed)
    # pg "matches" the heuristic when it is not below it (the paper's pg - heuristic > 0)
    direction, within = verdict(mean if a != LEARNED or mean != 0 else 1e-12, paper, paper)
    tiny = "; ".join(
        f"{p} P_tiny {statistics.fmean(100 * slot[k]['share_tiny'] for seed in runs for slot in seed):.1f} % "  # noqa: E501
        f"(Table {t_table[-1]}: {statistics.fmean(PAPER_TINY[gpus][p]):.1f} %)"
        for p, k in (("fixed", "fixed"), ("heuristic", "heuristic"), (LEARNED, LEARNED))
        if k in runs[0][0])
    slots = ", ".join(f"{h:g} h {statistics.fmean(seed[i][a]['mean_q'] - seed[i][b]['mean_q'] for seed in runs):+.4f}"  # noqa: E501
                      for i, h in enumerate(SLOTS))
    return Row("inference", cid, kind, f"{gpus}: mean Q, {a} − {b}, mean of the 4 slots "
               f"[{label}]", claim(cid).source, f"{paper:+.4f}",
               f"{mean:+.4f} [{min(per_seed):+.4f}, {max(per_seed):+.4f}] (per slot: {slots}; "
               f"{tiny})", len(per_seed), direction, within,
               reason if kind != "headline" or not (direction and within) else "", of)


def _why(runs: list[list[dict[str, dict]]], gpus: str, gap: str) -> str:
    """The measured reason a headline gap misses: fixed's quality against the paper's."""
    fixed = statistics.fmean(slot["fixed"]["mean_q"] for seed in runs for slot in seed)
    heur = statistics.fmean(slot["heuristic"]["mean_q"] for seed in runs for slot in seed)
    paper_f = statistics.fmean(PAPER_Q[gpus]["fixed"])
    paper_h = statistics.fmean(PAPER_Q[gpus]["heuristic"])
    if gap == "heuristic-fixed":
        return (f"fixed reaches Q {fixed:.3f} (paper {paper_f:.3f}) and the heuristic "
                f"{heur:.3f} (paper {paper_h:.3f}); more load, where fixed reaches the "
                "paper's Q and P_tiny, shrinks the gain further (the load ablation): not "
                "explained")
    pg = statistics.fmean(slot[LEARNED]["mean_q"] for seed in runs for slot in seed)
    return f"learned-batching Q {pg:.4f} vs heuristic {heur:.4f}: the learned policy adds little"


def _beyond(params: dict, quick: bool) -> list[Row]:
    """The learned policy and the tuned heuristic vs the proven optimum on the windows of 30
    queries (one p2, 15-15.25 h, delays without noise) where the heuristic loses most."""
    problem = get_problem("inference")
    inst = generate_inference(seed=0, gpus="p2:1", start_hour=15.0, hours=0.25, scale=1.0,
                              delay_cv=0.0)
    n, size = len(inst.params["queries"]["arrival_ms"]), 30

    def q(sub, pol: str, opts: dict) -> float:
        return problem.evaluate(sub, run_policy(sub, pol, opts)[0].decision())

    starts = range(0, n - size, size * (8 if quick else 1))
    worst = sorted(starts, key=lambda lo: q(window(inst, lo, lo + size), "heuristic",
                                            params))[:1 if quick else 3]
    gaps: dict[str, list[float]] = {LEARNED: [], "heuristic": []}
    proven = 0
    for lo in sorted(worst):
        sub = window(inst, lo, lo + size)
        best = solve(sub, "lagrange", time_limit=None)  # its iteration limits: load-free
        if best.status.value != "optimal":
            continue
        proven += 1
        for pol in gaps:
            got = q(sub, pol, params if pol == "heuristic" else {})
            gaps[pol].append(relative_gap(got, best.objective, "max") or 0.0)
    return [beyond("inference", f"{p}-optimum", f"{LEARNED if p == LEARNED else 'Eq. 2 (tuned)'} "
                   "vs the proven optimum (lagrange: bound met), windows of 30 queries on one"
                   " p2 where the heuristic loses most: share of Σ Q lost", g,
                   note=f"{proven} of {len(worst)} windows proven")
            for p, g in gaps.items()]


def inference(seeds: int, quick: bool) -> list[Row]:
    """Every inference row (module docstring); ``quick``: :data:`QUICK_HOURS` per slot."""
    hours = QUICK_HOURS if quick else SLOT_HOURS
    rows: list[Row] = []
    tuned = {gpus: heuristic_params(gpus, scale, True, [],
                                     QUICK_TUNE_MINUTES if quick else 10.0)
             for gpus, scale, _t in SETTINGS}
    printed = {"heuristic": "heuristic@0.5", "fixed": "fixed", LEARNED: LEARNED}
    for gpus, scale, _table in SETTINGS:
        runs = _slots(gpus, scale, seeds, hours, {"heuristic": tuned[gpus],
                                                   "heuristic@0.5": PRINTED})
        tag = f"tuned alpha = {tuned[gpus]['alpha']}, beta = {tuned[gpus]['beta']}"
        heads = [_gap_row(gpus, runs, gap, a, b, "headline", tag, _why(runs, gpus, gap))
                 for gap, a, b in GAPS]
        rows += heads
        rows += [_gap_row(gpus, runs, gap, printed[a], printed[b], "sensitivity",
                          "printed alpha = beta = 0.5", "the other reading: the heuristic "
                          "at the printed alpha = beta = 0.5, untuned") for gap, a, b in GAPS]
        missed = [h.claim for h in heads if not (h.direction_matches and h.within_2x)]
        if missed and not quick:
            # one change: the load (the calibrated arrival scale of inference_gen)
            more = CLUSTER_SCALE_CALIBRATED / 8.0 * scale
            pg = any(c.endswith("rl-heuristic") for c in missed)
            load = _slots(gpus, more, seeds, hours, {"heuristic": tuned[gpus]}, pg)
            rows += [_gap_row(gpus, load, gap, a, b, "ablation", f"arrivals x {more:g}",
                              f"one change: the load, arrivals x {more:g} (x "
                              f"{CLUSTER_SCALE_CALIBRATED:g} is where our fixed reaches Table "
                              "4's mean Q on 5 g2 + 5 p2)", f"inference.{TABLES[gpus][0]}.{gap}")
                     for gap, a, b in GAPS if f"inference.{TABLES[gpus][0]}.{gap}" in missed]
    rows += _beyond(tuned["p2:1"], quick)
    return rows
