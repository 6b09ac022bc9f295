"""benchmarks/exact_hard.py on a tiny setting: its table and its last JSON line."""

from __future__ import annotations

import json

from dlsched.benchmarks import exact_hard


def test_exact_hard_tiny(capsys):
    exact_hard.main(["--busy", "0.9", "--seeds", "2", "--small-nodes", "2", "--beta", "3",
                     "--sizes", "",
                     "--genie-seeds", "1", "--genie", "2,5", "--backends", "highs",
                     "--forms", "pairs,auto,servers,classes", "--horus-limit", "30",
                     "--genie-limit", "30"])
    lines = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(lines[-1])
    assert figures["benchmark"] == "exact_hard"
    cases = figures["cases"]
    assert set(cases) == {"horus-2x8-0.9", "genie-8x5"}
    assert set(cases["horus-2x8-0.9"]) == {"highs/pairs", "highs/auto"}
    assert set(cases["genie-8x5"]) == {"highs/servers", "highs/classes"}
    for per_form in cases.values():
        objectives = set()
        for entry in per_form.values():
            assert entry["summary"]["proven"] == entry["summary"]["runs"]
            objectives.add(tuple(round(r["objective"], 6) for r in entry["runs"]))
        assert len(objectives) == 1  # every form proves the same optima
    rows = [line for line in lines if line.startswith("| horus-2x8") or
            line.startswith("| genie-8x5")]
    assert len(rows) == 4
