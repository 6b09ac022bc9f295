"""Hostile solvers in the competition runner: it survives every one, kills everything they
start, and scores each 0 with a clear reason (unless the solution it leaves is legitimate).

Every script records its pid, its session id and the pids of the children it starts in
``pids.txt`` (in its working directory); after each run the test checks that none of
those processes, and no process of the solver's session, is still alive. Sizes are small
where a cap makes the point (a 2 MiB solution cap instead of the default 16 MiB).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from dlsched import InputError
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.compete import Limits, compete, parse_entrant, safe_name
from dlsched.cli import main

PY = sys.executable
LIMIT, GRACE = 2.0, 0.5
LIMITS = Limits(memory_mb=400, solution_mb=2, output_kb=64)

PRELUDE = """
import json, os, signal, sys, time
def record(*pids):
    with open("pids.txt", "a") as fh:
        for pid in pids:
            fh.write(f"{pid} {os.getsid(0) if pid == os.getpid() else -1}\\n")
record(os.getpid())
inst = json.load(open(sys.argv[1]))
def waiting():
    return {"format_version": 1, "instance_sha256": inst["sha256"], "placements": []}
"""

# name -> (script body, expected outcome, words the reason must contain)
HOSTILE = {
    "crash": ("""
        print("first line", file=sys.stderr)
        print("second line: out of ideas", file=sys.stderr)
        sys.exit(3)
    """, "crash", "exit code 3: first line | second line: out of ideas"),
    "hang_ignoring_sigterm": ("""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        json.dump(waiting(), open(sys.argv[2], "w"))
        while True:
            time.sleep(0.05)
    """, "timeout", "killed"),
    "forked_orphan": ("""
        pid = os.fork()
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        record(pid)
        json.dump(waiting(), open(sys.argv[2], "w"))
    """, "ok", "killed 1 leftover process"),
    "setsid_orphan": ("""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            grandchild = os.fork()
            if grandchild:
                os.write(w, f"{grandchild}".encode())
                os._exit(0)
            time.sleep(120)
            os._exit(0)
        os.waitpid(pid, 0)
        record(int(os.read(r, 64)))
        json.dump(waiting(), open(sys.argv[2], "w"))
    """, "ok", "killed 1 leftover process"),
    "memory_hog": ("""
        hog = []
        while True:
            hog.append(bytearray(32 * 2**20))
    """, "crash", "memory limit 400 MiB"),
    "solution_150mb": ("""
        with open(sys.argv[2], "w") as fh:
            fh.write('{"format_version": 1, "placements": [')
            for _ in range(150 * 1024):
                fh.write("0," * 512)
    """, "crash", "file-size limit 2 MiB"),
    "stdout_100mb": ("""
        chunk = "x" * (1 << 20)
        for _ in range(100):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        json.dump(waiting(), open(sys.argv[2], "w"))
    """, "ok", "stdout truncated to 65536 bytes"),
    "nested_100000": ("""
        open(sys.argv[2], "w").write("[" * 100000 + "]" * 100000)
    """, "garbage", "nested more than 64 levels deep"),
    "nan_values": ("""
        doc = waiting()
        doc["placements"] = [{"job": inst["jobs"][0]["id"], "gpus": [], "start": float("nan")}]
        json.dump(doc, open(sys.argv[2], "w"))
    """, "garbage", "placements[0].start: nan is not a finite number"),
    "another_instances_solution": ("""
        doc = waiting()
        doc["instance_sha256"] = "ab" * 32
        json.dump(doc, open(sys.argv[2], "w"))
    """, "wrong_instance", "written for instance abababababab"),
    "writes_outside": ("""
        for target in ("../../../scores.csv", "../../../leaderboard.csv", "../../other/x.json"):
            try:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                open(target, "w").write("tampered")
            except OSError:
                pass
    """, "missing", "exited without writing the solution file"),
    "solution_is_a_symlink": ("""
        os.symlink("/dev/zero", sys.argv[2])
    """, "garbage", "not a regular file"),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """A one-instance Horus suite (no best known values needed)."""
    root = tmp_path_factory.mktemp("lib") / "one"
    root.mkdir()
    spec = {"name": "one", "best_known": {"runs": [{"method": "greedy"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                           "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    return build_suite(root, jobs=1, progress=False)


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return path


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _session_members(sid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
                out.append(int(entry))
    return out


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_solver(suite, tmp_path, name):
    body, outcome, words = HOSTILE[name]
    script = _script(tmp_path, name, body)
    entrant = parse_entrant(f"{PY} {script} {{instance}} {{solution}}", name)
    out = tmp_path / "out"
    start = time.perf_counter()
    compete(suite, [entrant], out, time_limit=LIMIT, grace=GRACE, progress=False,
            limits=LIMITS)
    runner_time = time.perf_counter() - start
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False, na_values=[""])
    assert len(scores) == 1, scores  # nothing the solver wrote changed the table
    row = scores.iloc[0]
    assert row["outcome"] == outcome, row["reason"]
    assert words in row["reason"], row["reason"]
    if outcome != "ok":
        assert row["score"] == 0
    # the runner's own time for the entrant: limit + grace + 2 s (plus interpreter start-up
    # of the build; generous on a loaded machine)
    assert runner_time <= LIMIT + GRACE + 2 + 3, runner_time
    # every process the solver started is gone
    run_dir = out / "runs" / safe_name(name) / safe_name(next(iter(suite.entries)))
    lines = (run_dir / "pids.txt").read_text().split("\n")
    records = [tuple(int(x) for x in line.split()) for line in lines if line.strip()]
    sid = records[0][1]
    for pid, _ in records:
        assert not _alive(pid), f"{name}: process {pid} is still alive"
    assert _session_members(sid) == []
    stored = sum(f.stat().st_size for f in run_dir.iterdir() if f.name.endswith(".txt"))
    assert stored < 1_000_000


def test_output_and_leaderboard_survive_writes_outside(suite, tmp_path):
    script = _script(tmp_path, "writes_outside", HOSTILE["writes_outside"][0])
    ok = _script(tmp_path, "ok", 'json.dump(waiting(), open(sys.argv[2], "w"))')
    entrants = [parse_entrant(f"{PY} {script} {{instance}} {{solution}}", "bad"),
                parse_entrant(f"{PY} {ok} {{instance}} {{solution}}", "good")]
    board, _ = compete(suite, entrants, tmp_path / "out", time_limit=LIMIT, grace=GRACE,
                       progress=False, limits=LIMITS)
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert list(scores["entrant"]) == ["bad", "good"]
    assert board.iloc[0]["entrant"] == "good"


@pytest.mark.parametrize("solver,words", [
    ("prog {0} {instance} {solution}", "unknown placeholder {0}"),
    ("prog {nosuch} {instance} {solution}", "unknown placeholder {nosuch}"),
    ('prog --opt={"a":1} {instance} {solution}', "unknown placeholder"),
    ("prog {instance!r} {solution}", "unknown placeholder {instance!r}"),
    ("prog {instance} {solution} {", "Single '{'"),
    ("prog {} {instance} {solution}", "unknown placeholder {}"),
])
def test_bad_placeholders_are_refused_before_anything_runs(solver, words, capsys):
    with pytest.raises(InputError) as err:
        parse_entrant(solver)
    assert words in err.value.message
    assert "{instance}, {solution}, {time_limit}, {seed}" in err.value.fix
    assert "{{" in err.value.fix
    code = main(["compete", "--suite", "quick", "--solver", solver])
    assert code == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "--solver" in line


def test_literal_braces_are_escaped(suite, tmp_path):
    script = _script(tmp_path, "braces", """
        assert sys.argv[3] == '--opt={"a":1}', sys.argv[3]
        json.dump(waiting(), open(sys.argv[2], "w"))
    """)
    entrant = parse_entrant(f"{PY} {script} {{instance}} {{solution}} '--opt={{{{\"a\":1}}}}'",
                            "braces")
    compete(suite, [entrant], tmp_path / "out", time_limit=LIMIT, grace=GRACE,
            progress=False, limits=LIMITS)
    scores = pd.read_csv(tmp_path / "out" / "scores.csv")
    assert scores.iloc[0]["outcome"] == "ok"


def test_traversal_names_stay_inside_the_output(suite, tmp_path):
    rec = next(iter(suite.entries.values()))
    evil = {"../../../../X": dict(rec), "..": dict(rec), "/etc/passwd": dict(rec)}
    manifest = type(suite)(suite.suite, suite.directory, suite.description, evil)
    script = _script(tmp_path, "ok", 'json.dump(waiting(), open(sys.argv[2], "w"))')
    entrant = parse_entrant(f"{PY} {script} {{instance}} {{solution}}", "../../escape")
    out = (tmp_path / "deep" / "out").resolve()
    compete(manifest, [entrant], out, time_limit=LIMIT, grace=GRACE, progress=False,
            limits=LIMITS)
    written = [p.resolve() for p in tmp_path.rglob("*")]
    outside = [p for p in written if not p.is_relative_to(out)
               and not p.is_relative_to(tmp_path / "ok.py") and p != tmp_path / "deep"]
    assert outside == []
    scores = pd.read_csv(out / "scores.csv")
    assert sorted(scores["instance"]) == sorted(evil)
    assert set(scores["outcome"]) == {"ok"}
    assert len({safe_name(n) for n in evil}) == 3


def test_limits_are_checked():
    with pytest.raises(InputError):
        Limits(memory_mb=0)
    assert main(["compete", "--suite", "quick", "--solver", "a:b", "--memory-limit",
                 "-5"]) == 2
