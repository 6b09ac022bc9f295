"""``dlsched reproduce PAPER --quick --json``: every paper's rows parse and say something."""

from __future__ import annotations

import json

import pytest

from dlsched.benchmarks.claim_rows import compare
from dlsched.benchmarks.paper_claims import Claim
from dlsched.cli import main


def test_compare_checks_direction_and_factor_two():
    cut = Claim(id="p.fig1", quote="q", source="Fig. 1", value=-0.2, unit="relative change",
                direction="lower", setting="s")
    row = compare(cut, "r", [-0.1, -0.3], "why")
    assert (row.paper, row.cite, row.paper_value) == ("p", "Fig. 1", "-20.0 %")
    assert row.direction_matches and row.within_2x and row.reason == ""
    row = compare(cut, "r", [0.05], "why")
    assert not row.direction_matches and not row.within_2x and row.reason == "why"
    row = compare(cut, "r", [-0.5], "why")
    assert row.direction_matches and not row.within_2x
    rise = Claim(id="p.fig7", quote="q", source="Fig. 7", value=[0.1, 0.3],
                 unit="relative change", direction="higher", setting="s")
    row = compare(rise, "r", [0.55], "why", claimed=[0.1, 0.3])  # a range: [0.05, 0.6]
    assert row.within_2x and row.paper_value == "+10.0 … +30.0 %"
    table = Claim(id="p.table6", quote="q", source="Table 6", value=204.0, baseline=267.3,
                  unit="min", direction="lower", setting="s")
    assert compare(table, "r", [-0.2], "why").paper_value == "-23.7 %"


@pytest.mark.parametrize("paper", ["horus", "genie", "liquid", "sched2", "inference"])
def test_reproduce_quick_json_rows_parse(paper, capsys):
    assert main(["reproduce", paper, "--quick", "--seeds", "1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert len(rows) >= 3
    for row in rows:
        assert row["paper"] == paper
        assert row["result"] and row["paper_value"]
        if row["direction_matches"] is False or row["within_2x"] is False:
            assert row["reason"], row
