"""``dlsched reproduce PAPER --quick --json``: every paper's rows parse and say something."""

from __future__ import annotations

import json

import pytest

from dlsched.benchmarks.reproduce import compare
from dlsched.cli import main


def test_compare_checks_direction_and_factor_two():
    row = compare("p", "r", "Fig. 1", (-0.2, -0.2), [-0.1, -0.3], "why")
    assert row.direction_matches and row.within_2x and row.reason == ""
    row = compare("p", "r", "Fig. 1", (-0.2, -0.2), [0.05], "why")
    assert not row.direction_matches and not row.within_2x and row.reason == "why"
    row = compare("p", "r", "Fig. 1", (-0.2, -0.2), [-0.5], "why")
    assert row.direction_matches and not row.within_2x
    row = compare("p", "r", "Fig. 7", (0.1, 0.3), [0.55], "why")  # a range: [0.05, 0.6]
    assert row.within_2x


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
