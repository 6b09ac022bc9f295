"""The one relative gap and the one optimality proof (dlsched.gaps), and their users."""

import math

import pandas as pd
import pytest

from dlsched.benchmarks.profiles import gaps_to_reference
from dlsched.benchmarks.runner import gap_to_best
from dlsched.gaps import OPTIMALITY_ABS, OPTIMALITY_GAP, is_proven_optimal, relative_gap


def test_unsigned_gap_hand_values():
    assert relative_gap(10.0, 8.0) == pytest.approx(0.2)
    assert relative_gap(8.0, 10.0) == pytest.approx(0.2)
    assert relative_gap(-8.0, -10.0) == pytest.approx(0.2)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(None, 1.0) is None
    assert relative_gap(1.0, None) is None


def test_signed_gap_is_positive_when_worse():
    assert relative_gap(10.0, 8.0, "min") == pytest.approx(0.2)  # 10 is worse than 8
    assert relative_gap(8.0, 10.0, "min") == pytest.approx(-0.2)  # beats the reference
    assert relative_gap(8.0, 10.0, "max") == pytest.approx(0.2)
    assert relative_gap(10.0, 8.0, "max") == pytest.approx(-0.2)
    assert relative_gap(0.0, 0.0, "max") == 0.0
    with pytest.raises(ValueError, match="sense"):
        relative_gap(1.0, 2.0, "minimize")  # type: ignore[arg-type]


def test_proof_needs_both_values_and_a_tiny_gap():
    assert not is_proven_optimal(None, 1.0)
    assert not is_proven_optimal(1.0, None)
    assert is_proven_optimal(100.0, 100.0)
    assert is_proven_optimal(1000.0, 1000.0 * (1 - OPTIMALITY_GAP / 2))
    assert not is_proven_optimal(1000.0, 999.0)
    # near 0 the absolute tolerance decides (relative gap of 1e-5 vs 0 is 1)
    assert is_proven_optimal(OPTIMALITY_ABS / 2, 0.0)
    assert not is_proven_optimal(2 * OPTIMALITY_ABS, 0.0)


def test_runner_and_profiles_use_the_same_numbers():
    assert gap_to_best(12.0, 10.0, "min") == pytest.approx(2 / 12)
    assert gap_to_best(10.0, 12.0, "max") == pytest.approx(2 / 12)
    assert gap_to_best(None, 12.0, "max") is None
    table = pd.DataFrame({
        "instance": ["a", "a", "b", "b"],
        "sense": ["min", "min", "max", "max"],
        "objective": [10.0, 12.0, 8.0, None],
    })
    gaps = gaps_to_reference(table).tolist()
    assert gaps[0] == 0.0
    assert gaps[1] == pytest.approx(2 / 12)
    assert gaps[2] == 0.0
    assert math.isinf(gaps[3])
