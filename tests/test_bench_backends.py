"""The older exact benchmarks (Horus scale, GENIE snapshots, Liquid Fig. 19) run every
backend of the backend layer (cbc, highs, scip, cpsat) unless told otherwise."""

from __future__ import annotations

import argparse
import json

import pytest

from dlsched.benchmarks import genie_snapshots, horus_scale, liquid_fig19
from dlsched.cli_support import parse_backends
from dlsched.formulations.backend import BACKENDS

SCRIPTS = (horus_scale, genie_snapshots, liquid_fig19)


def test_the_layer_has_four_backends():
    assert set(BACKENDS) == {"cbc", "highs", "scip", "cpsat"}


def test_backend_lists_parse_and_unknown_names_are_refused():
    assert parse_backends(",".join(BACKENDS)) == BACKENDS
    assert parse_backends("scip cpsat") == ("scip", "cpsat")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_backends("cbc,gurobi")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_backends(",")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_every_script_uses_the_one_parser(script):
    assert script.parse_backends is parse_backends


def test_horus_scale_tiny_runs_all_four(capsys):
    assert horus_scale.main(["--seeds", "1", "--nodes", "2", "--beta", "3",
                             "--time-limit", "20"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(lines[-1])
    for backend in BACKENDS:
        assert figures["methods"][backend][0]["status"] == "optimal"
        assert any(line.startswith(f"| exact ({backend}) | 1/1") for line in lines)
    objectives = {figures["methods"][b][0]["objective"] for b in BACKENDS}
    assert max(objectives) - min(objectives) < 1e-6


def test_horus_scale_pattern_form_agrees(capsys):
    args = ["--seeds", "1", "--nodes", "2", "--beta", "4", "--busy", "0.9",
            "--time-limit", "20", "--backends", "cbc"]
    objectives = []
    for form in ("pairs", "patterns"):
        assert horus_scale.main([*args, "--form", form]) == 0
        figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert figures["arguments"]["form"] == form
        run = figures["methods"]["cbc"][0]
        assert run["status"] == "optimal" and run["cpu"] > 0
        objectives.append(run["objective"])
    assert abs(objectives[0] - objectives[1]) < 1e-6
