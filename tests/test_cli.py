"""The dlsched command line: the main flow, exit codes and one-line bad-input errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dlsched
from dlsched.cli import main


@pytest.fixture
def instance_file(tmp_path):
    """A small generated Horus instance on disk."""
    path = tmp_path / "h.json"
    assert main(["generate", "horus", "--nodes", "3", "--gpus-per-node", "2", "--beta", "4",
                 "--seed", "5", "-o", str(path)]) == 0
    return path


@pytest.mark.parametrize("method,exact_backend", [("exact", "cbc"), ("exact", "highs"),
                                            ("exact", "cpsat"), ("greedy", None),
                                            ("fifo", None), ("obp", None)])
def test_solve_validate_evaluate(instance_file, tmp_path, capsys, method, exact_backend):
    sol = tmp_path / "s.json"
    args = ["solve", str(instance_file), "--method", method, "--time-limit", "30", "-o", str(sol)]
    if exact_backend:
        args += ["--backend", exact_backend]
    assert main(args) == 0
    out = capsys.readouterr().out
    objective = float(next(line.split()[1] for line in out.splitlines()
                           if line.startswith("objective")))
    assert main(["validate", str(instance_file), str(sol)]) == 0
    assert "feasible" in capsys.readouterr().out
    assert main(["evaluate", str(instance_file), str(sol)]) == 0
    assert float(capsys.readouterr().out) == pytest.approx(objective, rel=1e-5)


def test_export(instance_file, tmp_path):
    assert main(["export", str(instance_file), "--format", "lp", "-o", str(tmp_path / "m.lp")]) == 0
    assert (tmp_path / "m.lp").read_text().startswith("\\* horus *\\")


def test_infeasible_solution_exits_1(instance_file, tmp_path, capsys):
    doc = json.loads((tmp_path / "h.json").read_text())
    job = doc["jobs"][0]
    gpus = [g["id"] for n in doc["cluster"]["nodes"] for g in n["gpus"]][: job["num_gpus"] + 1]
    sol = tmp_path / "s.json"
    sol.write_text(json.dumps({"format_version": 1, "instance_sha256": doc["sha256"],
                               "placements": [{"job": job["id"], "gpus": gpus}]}))
    assert main(["validate", str(instance_file), str(sol)]) == 1
    assert "[demand]" in capsys.readouterr().out
    assert main(["evaluate", str(instance_file), str(sol)]) == 1


def _bad(tmp_path, instance_file, case):
    doc = json.loads(instance_file.read_text())
    bad = tmp_path / "bad.json"
    if case == "malformed":
        bad.write_text("{ not json")
        return ["solve", str(bad)], "malformed JSON"
    if case == "missing":
        del doc["cluster"]["nodes"][1]["ram_gb"]
        doc.pop("sha256")
        bad.write_text(json.dumps(doc))
        return ["solve", str(bad)], "cluster.nodes[1].ram_gb"
    if case == "negative":
        doc["cluster"]["nodes"][0]["gpus"][1]["mem_gb"] = -8
        doc.pop("sha256")
        bad.write_text(json.dumps(doc))
        return ["solve", str(bad)], "cluster.nodes[0].gpus[1].mem_gb"
    sol = tmp_path / "s.json"
    other = doc["sha256"] if case == "unknown_gpu" else "f" * 64
    sol.write_text(json.dumps({"format_version": 1, "instance_sha256": other,
                               "placements": [{"job": doc["jobs"][0]["id"], "gpus": ["x/g9"]}]}))
    field = "unknown GPU" if case == "unknown_gpu" else "instance_sha256"
    return ["validate", str(instance_file), str(sol)], field


@pytest.mark.parametrize("case", ["malformed", "missing", "negative", "unknown_gpu",
                                  "other_instance"])
def test_bad_input_exits_2_with_one_line(tmp_path, instance_file, capsys, case):
    args, words = _bad(tmp_path, instance_file, case)
    code = main(args)
    err = capsys.readouterr()
    if case == "unknown_gpu":  # a well-formed solution naming an unknown GPU: infeasible
        assert code == 1 and "unknown GPU ids" in err.out
        return
    assert code == 2
    assert words in err.err
    assert len(err.err.strip().splitlines()) == 1
    assert args[-1] in err.err or str(tmp_path) in err.err


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    proc = subprocess.run([sys.executable, "-m", "dlsched.cli", "solve", str(bad)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr


def test_help_on_each_command(capsys):
    for command in (["--help"], ["generate", "horus", "--help"], ["solve", "--help"],
                    ["validate", "--help"], ["evaluate", "--help"], ["export", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            main(command)
        assert exit_.value.code == 0
        assert "usage" in capsys.readouterr().out


def test_unknown_method_is_bad_input(instance_file, capsys):
    assert main(["solve", str(instance_file), "--method", "magic"]) == 2
    assert "no method 'magic'" in capsys.readouterr().err


def _command_paths(parser, prefix=()):
    """Every command path of the parser tree, e.g. ("generate", "horus")."""
    import argparse

    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _command_paths(sub, (*prefix, name))


def test_every_help_exits_0(capsys):
    from dlsched.cli import build_parser

    paths = list(_command_paths(build_parser()))
    assert ("generate", "sched2") in paths and ("compete",) in paths
    for path in paths:
        with pytest.raises(SystemExit) as exit_:
            main([*path, "--help"])
        assert exit_.value.code == 0, path
        assert "usage" in capsys.readouterr().out, path


def test_an_unexpected_exception_is_one_line_exit_3(monkeypatch, capsys):
    import dlsched.cli as cli

    def boom(args):
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(cli, "_cmd_methods", boom)
    monkeypatch.setattr(cli, "_cached", None)  # a parser built with the patched handler
    monkeypatch.delenv("DLSCHED_TRACEBACK", raising=False)
    assert main(["methods"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("internal error: ZeroDivisionError: division by zero second line")
    assert "(please report" in err


def test_generate_help_in_a_fresh_process(fresh):
    # a fresh interpreter's `dlsched generate --help` through main() (no generator module
    # loaded before the command line's own import): tests/fresh_interpreter.py, whose one
    # run serves four files; the real process of `python -m dlsched.cli` is the test above
    seen = fresh
    assert seen["generators_loaded_before_cli"] == []
    code, text = seen["generate_help"]
    assert code == 0
    assert "sched2" in text


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"dlsched {dlsched.__version__}"
