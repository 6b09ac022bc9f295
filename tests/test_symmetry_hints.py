"""Relabelling a warm start into a model's symmetry order, by hand."""

from __future__ import annotations

from dlsched.formulations.symmetry_hints import chained_runs, relabel_in_runs


def test_runs_chain_consecutive_pairs():
    assert chained_runs([(5, 6), (0, 1), (1, 2)]) == [[0, 1, 2], [5, 6]]
    assert chained_runs([]) == []


def test_busiest_member_takes_the_first_place():
    load = {0: 1, 1: 3, 2: 2, 5: 0, 6: 4}
    mapping = relabel_in_runs([[0, 1, 2], [5, 6]], load.__getitem__)
    # run [0, 1, 2]: 1 (load 3) -> 0, 2 (load 2) -> 1, 0 (load 1) -> 2; run [5, 6]: swap
    assert mapping == {1: 0, 2: 1, 0: 2, 6: 5, 5: 6}


def test_ties_keep_their_places_and_smallest_first_reverses():
    assert relabel_in_runs([[3, 4, 7]], lambda g: 0) == {3: 3, 4: 4, 7: 7}
    assert relabel_in_runs([[3, 4]], {3: 2, 4: 1}.__getitem__, largest_first=False) == {
        4: 3, 3: 4}
