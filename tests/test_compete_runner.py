"""The competition runner: wrong solvers score zero with the reason; the runner survives."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from conftest import readable_dir
from quick_cut import QUICK_TWO, quick_cut

from dlsched import InputError
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.compete import compete, leaderboard, parse_entrant, score
from dlsched.cli import main

PY = sys.executable

# each script: argv = instance path, solution path. Shell scripts (no interpreter to
# start, a few ms each) except where reading the instance's JSON needs Python (run with
# -S: no site, the standard library is enough); the
# instance file is written by pretty_json, its top-level "sha256" on a line of its own
SHA = r"""sha=$(sed -n 's/^  "sha256": "\([0-9a-f]*\)".*/\1/p' "$1")"""
SCRIPTS = {
    # every job waits: feasible, scored against the best known
    "waits": ("sh", SHA + """
        printf '{"format_version": 1, "instance_sha256": "%s", "placements": []}' "$sha" > "$2"
    """),
    # the first job on no GPU at all: the validator rejects it
    "infeasible": ("py", """
        doc = json.load(open(sys.argv[1]))
        json.dump({"format_version": 1, "instance_sha256": doc["sha256"],
                   "placements": [{"job": doc["jobs"][0]["id"], "gpus": []}]},
                  open(sys.argv[2], "w"))
    """),
    "garbage": ("sh", """
        printf 'this is not JSON' > "$2"
    """),
    "wrong": ("sh", f"""
        printf '{{"format_version": 1, "instance_sha256": "{'0' * 64}", "placements": []}}' > "$2"
    """),
    "crash": ("sh", """
        echo "boom: out of ideas" >&2
        exit 3
    """),
    "missing": ("sh", """
        :
    """),
    "sleeps": ("sh", """
        exec sleep 60
    """),
    # ignores SIGTERM (from its start: see IGNORING_SIGTERM; its sleep inherits that):
    # killed after the grace period
    "stubborn": ("sh", """
        exec sleep 60
    """),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """A two-instance Horus suite with proven best known values."""
    root = tmp_path_factory.mktemp("lib") / "two"
    root.mkdir()
    spec = {"name": "two", "best_known": {"runs": [{"method": "exact", "backend": "cbc"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0, 1],
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    return build_suite(root, jobs=1, progress=False)


@pytest.fixture(scope="module")
def scripts():
    """The solver scripts, written once (where an entrant's own user may read them)."""
    root = readable_dir()
    paths = {}
    for name, (kind, body) in SCRIPTS.items():
        path = root / f"{name}.{kind}"
        head = "import json, sys\n" if kind == "py" else ""
        path.write_text(head + textwrap.dedent(body).strip() + "\n")
        paths[name] = path
    yield paths
    shutil.rmtree(root, ignore_errors=True)


# a shell that ignores SIGTERM, then runs the command (which inherits the ignoring): the
# entrant ignores SIGTERM from its first millisecond, however late Python would get to
# its own signal() call on a busy machine, so a short limit cannot race the script
IGNORING_SIGTERM = """/bin/sh -c 'trap "" TERM; exec "$0" "$@"'"""


def test_bad_solvers_score_zero_with_reasons(suite, scripts, tmp_path):
    entrants = [parse_entrant(f"{IGNORING_SIGTERM if name == 'stubborn' else ''} "
                              f"{PY + ' -S' if path.suffix == '.py' else '/bin/sh'} {path} "
                              "{instance} {solution}", name)
                for name, path in scripts.items()]
    slow = [e for e in entrants if e.name in ("sleeps", "stubborn")]
    # 3 s: the well-behaved scripts need ~0.05 CPU-s each, a small share on a busy machine
    compete(suite, [e for e in entrants if e not in slow], tmp_path, time_limit=3.0,
            grace=0.5, progress=False, plots=False)
    # the two that outlive the limit on one instance, into the same folder: the
    # leaderboard is rebuilt from both competitions' rows. Neither ever ends by itself, so
    # a 0.5 s limit (and 0.1 s of grace) gives the verdicts a 3 s one did, waiting less
    # (the stubborn one ignores SIGTERM from its shell's first millisecond)
    first = next(iter(suite.entries))
    one = dataclasses.replace(suite, entries={first: suite.entries[first]})
    board, _ = compete(one, slow, tmp_path, time_limit=0.5, grace=0.1, progress=False,
                       plots=False)
    scores = pd.read_csv(tmp_path / "scores.csv", keep_default_na=False, na_values=[""])
    assert len(scores) == (len(SCRIPTS) - 2) * 2 + 2
    outcome = dict(zip(scores["entrant"], scores["outcome"], strict=False))
    assert outcome == {"waits": "ok", "infeasible": "infeasible", "garbage": "garbage",
                       "wrong": "wrong_instance", "crash": "crash", "missing": "missing",
                       "sleeps": "timeout", "stubborn": "timeout"}
    bad = scores[scores["entrant"] != "waits"]
    assert (bad["score"] == 0).all()
    assert bad["reason"].str.len().min() > 0
    reason = dict(zip(scores["entrant"], scores["reason"], strict=False))
    assert "exit code 3: boom: out of ideas" in reason["crash"]
    assert "[demand]" in reason["infeasible"]
    assert "killed" in reason["stubborn"]
    assert scores[scores["entrant"] == "stubborn"]["wall_time"].max() < 5
    # waiting everybody costs more than the optimum: score = best / objective in (0, 1)
    waits = scores[scores["entrant"] == "waits"]
    expected = (waits["best_known"] / waits["objective"]).tolist()
    assert waits["score"].tolist() == pytest.approx(expected)
    assert all(0 < s < 1 for s in expected)
    assert board.iloc[0]["entrant"] == "waits" and board.iloc[0]["valid"] == 2
    assert board.set_index("entrant").loc["crash", "failures"] == "crash 2"  # both instances
    assert (tmp_path / "leaderboard.md").read_text().count("|") > 10
    page = (tmp_path / "index.html").read_text(encoding="utf-8")  # plots=False: no images
    assert "data:image/png" not in page and "Profiles not drawn (--no-plots)." in page


def test_callable_entrant_runs_in_a_subprocess(suite, tmp_path, entrant_dir, monkeypatch):
    (entrant_dir / "mysolver.py").write_text(textwrap.dedent("""
        from dlsched import solve

        def exact(instance, time_limit=None):
            return solve(instance, "exact", backend="cbc", time_limit=time_limit)
    """))
    monkeypatch.chdir(entrant_dir)
    entrant = parse_entrant("mysolver:exact")
    # one instance: each run is an interpreter importing dlsched (~1 CPU-s)
    first = next(iter(suite.entries))
    one = dataclasses.replace(suite, entries={first: suite.entries[first]})
    board, _ = compete(one, [entrant], tmp_path / "out", time_limit=30.0, progress=False)
    # the exact model finds the proven optimum: full score
    assert board.iloc[0]["total score"] == pytest.approx(1.0)
    # by default the page has the time and gap profiles as images
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == 2 and "Profiles not drawn" not in page
    for image in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page):
        assert base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n")


def test_score_rule_by_hand():
    # minimization, positive: 10 / 12
    assert score(12.0, 10.0, "min") == pytest.approx(10 / 12)
    # maximization, positive: 8 / 10
    assert score(8.0, 10.0, "max") == pytest.approx(0.8)
    # better than the best known: clipped to 1
    assert score(9.0, 10.0, "min") == 1.0
    assert score(None, 10.0, "min") == 0.0


def test_leaderboard_rescores_against_the_best_entrant():
    rows = pd.DataFrame({
        "entrant": ["a", "b", "a", "b"], "instance": ["i", "i", "k", "k"],
        "time_limit": 1.0, "sense": "min", "objective": [4.0, 5.0, 2.0, float("nan")],
        "best_known": [float("nan"), float("nan"), 2.0, 2.0],
        "outcome": ["ok", "ok", "ok", "timeout"]})
    board = leaderboard(rows).set_index("entrant")
    # i has no best known: reference = a's 4; a scores 1 + 1, b scores 4/5 + 0
    assert board.loc["a", "total score"] == pytest.approx(2.0)
    assert board.loc["b", "total score"] == pytest.approx(0.8)
    assert board.loc["b", "failures"] == "timeout 1"


def test_entrant_input_errors():
    with pytest.raises(InputError, match="lacks"):
        parse_entrant("mysolver --in x")
    assert main(["compete", "--suite", "no-such-suite", "--solver", "a:b"]) == 2


def _as_a_user(argv: list[str], cwd, monkeypatch, capsys) -> tuple[int, str]:
    """``dlsched ARGV`` as a user types it in ``cwd``, the venv's commands on the PATH: its
    exit code and stderr. In this process (an interpreter less); the entrants it starts
    are processes of their own, as for the user."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent),
                                                os.environ.get("PATH", "")]))
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def test_the_docs_commands_run_from_the_repository_root_with_the_default_output(monkeypatch,
                                                                                capsys,
                                                                                tmp_path):
    root = Path(__file__).resolve().parents[1]
    made = not (root / "compete-results").exists()
    scores = root / "compete-results" / "quick" / "scores.csv"
    # rows of earlier competitions the user ran here stay in the table: judge this run's
    before = len(pd.read_csv(scores)) if scores.exists() else 0
    # the Horus snapshot alone: 2 entrant runs instead of 32, one of them an interpreter
    # importing dlsched (a method a problem lacks is an exit-2 crash row: see
    # test_bad_solvers_score_zero_with_reasons and test_cli's unknown-method test)
    quick_cut(tmp_path, QUICK_TWO[:1])
    try:
        # the docs' command with --library: the quick suite cut to one instance
        code, err = _as_a_user([
            # --no-plots: the page's images are checked by the callable-entrant test above
            "compete", "--suite", "quick", "--library", str(tmp_path), "--no-progress",
            "--no-plots", "--time-limit", "20",
            "--solver", "dlsched solve {instance} --method greedy -o {solution}",
            "--name", "greedy",
            "--solver", "python examples/external_solver.py {instance} {solution}",
            "--name", "external"], root, monkeypatch, capsys)
        assert code == 0, err
        rows = pd.read_csv(scores, dtype={"reason": str}, keep_default_na=False).iloc[before:]
        assert len(rows) == 2
        # every entrant started, found its files and was scored: both answer the Horus
        # snapshot with a valid solution
        assert not rows["reason"].str.contains("cannot start|No such file").any()
        assert rows["problem"].tolist() == ["horus", "horus"]
        assert rows.set_index("entrant")["outcome"].to_dict() == {"greedy": "ok",
                                                                  "external": "ok"}
    finally:
        if made:
            shutil.rmtree(root / "compete-results", ignore_errors=True)


def test_a_competition_where_every_entrant_fails_exits_non_zero(tmp_path, monkeypatch, capsys):
    # the quick suite cut to one instance: one failing run, not 16 (that an entrant's
    # failures on several instances are counted together: test_bad_solvers_score_zero_with_
    # reasons)
    quick_cut(tmp_path / "lib", QUICK_TWO[:1])
    code, err = _as_a_user(["compete", "--suite", "quick", "--library", str(tmp_path / "lib"),
                            "--no-progress", "--no-plots", "--output", "out",
                            "--solver", "./no-such-solver {instance} {solution}"], tmp_path,
                           monkeypatch, capsys)
    assert code == 1
    assert "no entrant wrote a valid solution" in err
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert board["valid"].tolist() == [0] and "crash 1" in board["failures"].iloc[0]
