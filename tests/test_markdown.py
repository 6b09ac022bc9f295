"""The one markdown-table helper (dlsched.markdown)."""

from __future__ import annotations

import pytest

from dlsched.markdown import markdown_head, markdown_row, markdown_table


def test_a_table_is_header_rule_and_rows():
    text = markdown_table(["a", "b"], [[1, "x"], [2.5, ""]])
    assert text == "| a | b |\n|---|---|\n| 1 | x |\n| 2.5 |  |"


def test_alignment_rules():
    assert markdown_head(["n", "name", "c"], align=["r", "l", "c"]).splitlines()[1] == (
        "|---:|:---|:---:|")


def test_rows_printed_one_by_one_match_the_whole_table():
    rows = [["w1", 3], ["w2", 4]]
    assert "\n".join([markdown_head(["w", "n"]), *map(markdown_row, rows)]) == (
        markdown_table(["w", "n"], rows))


@pytest.mark.parametrize("header, rows, align", [
    (["a", "b"], [[1]], None),
    (["a", "b"], [], ["r"]),
    (["a"], [], ["x"]),
])
def test_bad_shapes_are_refused(header, rows, align):
    with pytest.raises(ValueError):
        markdown_table(header, rows, align)
