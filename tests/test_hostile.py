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
import shutil
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from conftest import readable_dir

from dlsched import InputError
from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.compete import compete, parse_entrant, safe_name
from dlsched.benchmarks.sandbox import Limits
from dlsched.cli import main

PY = sys.executable
LIMIT, GRACE = 5.0, 0.5  # a well-behaved entrant needs ~0.1-0.3 CPU-s: a small share, busy or not
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
    # bytes(n) is calloc'd, pages never touched: the limit is on address space
    # (RLIMIT_AS), which these reach at the same 13th block as written ones would, with
    # ~0.01 CPU-s and 10 MB resident instead of 0.2 CPU-s and 400 MB (a limit on resident
    # memory instead would let this run to the timeout: a failure here, not a pass)
    "memory_hog": ("""
        hog = []
        while True:
            hog.append(bytes(32 * 2**20))
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
    # not hostile: a literal brace pair in the command (ARGS) reaches the solver unescaped
    "literal_braces": ("""
        assert sys.argv[3] == '--opt={"a":1}', sys.argv[3]
        json.dump(waiting(), open(sys.argv[2], "w"))
    """, "ok", None),
}
# after {instance} {solution}: a literal brace is doubled in a --solver command
ARGS = {"literal_braces": """ '--opt={{"a":1}}'"""}


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


def _script(folder: Path, name: str, body: str) -> Path:
    path = folder / f"{name}.py"
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


# Entrants that never end by themselves get the same verdict at any limit (and any grace):
# a shorter one waits less. Each starts under a shell that ignores SIGTERM and hands the
# ignoring on, so it ignores SIGTERM from its first millisecond, however late a busy
# machine lets Python reach its own signal() call; the shell also records its pid (the
# session leader's: the run starts a session, and exec keeps the pid) in pids.txt, so the
# check of what is left does not wait for Python's start-up either.
NEVER_ENDS = {"hang_ignoring_sigterm": (0.5, 0.2)}
IGNORING_SIGTERM = """/bin/sh -c 'trap "" TERM; echo "$$ $$" >> pids.txt; exec "$0" "$@"'"""


@pytest.fixture(scope="module")
def hostile_runs(suite, tmp_path_factory):
    """Every hostile entrant, run once for the module: those that end by themselves in one
    competition (each run in its own session and folder, each killed off before the next,
    so a survivor of one run would change another's verdict), the never-ending ones in a
    second with their short limit; name -> (output folder, limit, grace)."""
    folder = readable_dir()
    out = tmp_path_factory.mktemp("hostile")
    runs = {}
    try:
        for group, (limit, grace) in (("ends", (LIMIT, GRACE)),
                                      *((n, v) for n, v in NEVER_ENDS.items())):
            names = ([n for n in HOSTILE if n not in NEVER_ENDS] if group == "ends"
                     else [group])
            entrants = []
            # python -S: no site (the scripts use the standard library only), ~20 ms less
            # of start-up for each of the 13 entrants
            for name in names:
                script = _script(folder, name, HOSTILE[name][0])
                wrap = IGNORING_SIGTERM if name in NEVER_ENDS else ""
                entrants.append(parse_entrant(f"{wrap} {PY} -S {script} {{instance}} {{solution}}"
                                              f"{ARGS.get(name, '')}", name))
            compete(suite, entrants, out / group, time_limit=limit, grace=grace,
                    progress=False, limits=LIMITS, plots=False)
            runs.update((name, (out / group, limit, grace)) for name in names)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return runs


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_solver(suite, hostile_runs, name):
    _, outcome, words = HOSTILE[name]
    out, limit, grace = hostile_runs[name]
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False, na_values=[""])
    # nothing a solver wrote changed the table: one row per entrant of the competition
    assert sorted(scores["entrant"]) == sorted(n for n, v in hostile_runs.items()
                                               if v[0] == out), scores
    row = scores.set_index("entrant").loc[name]
    assert row["outcome"] == outcome, row["reason"]
    if words is not None:
        assert words in row["reason"], row["reason"]
    if outcome != "ok":
        assert row["score"] == 0
    # the entrant was stopped at its limit: its recorded run time is the limit and the
    # grace at most, plus the killer's reaction (the runner's other work, which a busy
    # machine slows, is not counted)
    assert row["wall_time"] <= limit + grace + 1.0, row["wall_time"]
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


def test_output_and_leaderboard_survive_writes_outside(hostile_runs):
    # in the module's competition (writes_outside beside entrants with valid solutions;
    # test_hostile_solver checks scores.csv there): the leaderboard file, also a target of
    # its writes, ranks every entrant once, one with a valid solution first
    out = hostile_runs["writes_outside"][0]
    board = pd.read_csv(out / "leaderboard.csv")
    assert sorted(board["entrant"]) == sorted(n for n, v in hostile_runs.items()
                                              if v[0] == out)
    assert board.iloc[0]["valid"] == 1
    assert board.set_index("entrant").loc["writes_outside", "valid"] == 0


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


def test_traversal_names_stay_inside_the_output(suite, tmp_path, entrant_dir):
    rec = next(iter(suite.entries.values()))
    evil = {"../../../../X": dict(rec), "..": dict(rec), "/etc/passwd": dict(rec)}
    manifest = type(suite)(suite.suite, suite.directory, suite.description, evil)
    # a shell script (no interpreter to start for each of the three runs): every job
    # waits; the instance file has its top-level "sha256" on a line of its own
    script = entrant_dir / "ok.sh"
    script.write_text(r"""sha=$(sed -n 's/^  "sha256": "\([0-9a-f]*\)".*/\1/p' "$1")
printf '{"format_version": 1, "instance_sha256": "%s", "placements": []}' "$sha" > "$2"
""")
    entrant = parse_entrant(f"/bin/sh {script} {{instance}} {{solution}}", "../../escape")
    out = (tmp_path / "deep" / "out").resolve()
    compete(manifest, [entrant], out, time_limit=LIMIT, grace=GRACE, progress=False,
            limits=LIMITS, plots=False)
    written = [p.resolve() for p in tmp_path.rglob("*")]
    outside = [p for p in written if not p.is_relative_to(out)
               and p != tmp_path / "deep"]
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


# --------------------------------------------------------------------------------------
# Hostile command-line input (audit of 2026-11-23): each case must exit 2 with ONE line
# naming the file (when there is one) and the field or option, never exit 3 or hang.


TRACES = Path(__file__).parent / "data" / "traces"


def _refused(capsys, argv, *words):
    """Run ``dlsched ARGV``; assert exit 2, one stderr line holding every word."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, code, err)
    assert len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, (word, err)
    return err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A Horus snapshot (paper and co-location costs), a Horus workload, a SCHED² one."""
    d = tmp_path_factory.mktemp("hostile_cli")
    for argv in (["horus", "--nodes", "3", "--gpus-per-node", "2", "--beta", "3", "-o",
                  str(d / "h.json")],
                 ["horus", "--nodes", "3", "--gpus-per-node", "2", "--beta", "3",
                  "--cost-model", "colocation", "-o", str(d / "hc.json")],
                 ["horus-workload", "--jobs", "4", "-o", str(d / "hw.json")],
                 ["sched2", "--jobs", "6", "--servers", "2", "--gpus-per-server", "4", "-o",
                  str(d / "s2.json")]):
        assert main(["generate", *argv]) == 0
    return d


@pytest.mark.parametrize("argv,words", [
    (["--time-limit", "nan"], ["--time-limit", "'nan'"]),
    (["--time-limit", "inf"], ["--time-limit"]),
    (["--time-limit", "-1"], ["--time-limit"]),
    (["--time-limit", "abc"], ["--time-limit"]),
    (["--seed", "-1"], ["--seed"]),
    (["--option", "beta=NaN"], ["--option beta"]),
    (["--option", 'beta={"a": 1e999}'], ["--option beta"]),
    (["--option", "beta=-1"], ["options.beta"]),
    (["--option", "queues=1.5"], ["options.queues"]),
    (["--option", "beta=[1]"], ["options.beta"]),
])
def test_bad_solve_options(files, capsys, argv, words):
    _refused(capsys, ["solve", str(files / "h.json"), "--method", "greedy", *argv], *words)


def test_bad_method_option_values(files, capsys):
    _refused(capsys, ["solve", str(files / "s2.json"), "--method", "sif", "--option",
                      'window="x"'], "options.window")
    _refused(capsys, ["solve", str(files / "s2.json"), "--method", "offline-makespan",
                      "--option", "num_workers=-1"], "options.num_workers")


def test_non_regular_files_are_refused(files, tmp_path, capsys):
    _refused(capsys, ["solve", str(tmp_path), "--method", "greedy"], str(tmp_path),
             "a directory")
    _refused(capsys, ["validate", str(files / "h.json"), "/dev/null"], "/dev/null",
             "not a file")


def test_unwritable_outputs_are_bad_input(files, tmp_path, capsys):
    h = str(files / "h.json")
    missing = str(tmp_path / "no" / "such" / "x.json")
    _refused(capsys, ["solve", h, "--method", "greedy", "-o", str(tmp_path)], "--output",
             "is a directory")
    _refused(capsys, ["solve", h, "--method", "greedy", "-o", missing], "--output", missing)
    _refused(capsys, ["export", h, "--format", "lp", "-o", missing], "--output")
    _refused(capsys, ["generate", "horus", "--nodes", "2", "-o", str(tmp_path)], "--output")
    _refused(capsys, ["simulate", str(files / "hw.json"), "--policy", "greedy", "--no-plots",
                      "--no-progress", "--out", h], "--out", "not a directory")
    _refused(capsys, ["import-trace", "tiresias", str(TRACES / "tiresias_60_job.csv"),
                      "-o", str(tmp_path)], "--output")


@pytest.mark.parametrize("argv,words", [
    (["horus", "--p-long", "nan"], ["--p-long"]),
    (["liquid", "--lambda", "inf"], ["--lambda"]),
    (["genie", "--density", "1e12"], ["expected tasks"]),
    (["inference", "--hours", "1e12"], ["hours"]),
    (["sched2", "--median-duration", "0"], ["median_duration"]),
    (["liquid", "--nodes-per-rack", "0"], ["nodes_per_rack"]),
    (["horus", "--nodes", "100000000"], ["at most"]),
])
def test_bad_generator_arguments(tmp_path, capsys, argv, words):
    _refused(capsys, ["generate", *argv, "-o", str(tmp_path / "g.json")], *words)


def test_demo_arguments(capsys):
    _refused(capsys, ["demo", "--busy", "2"], "--busy")


def test_colocation_whole_percent_names_the_file_and_field(files, tmp_path, capsys):
    doc = json.loads((files / "hc.json").read_text())
    doc.pop("sha256")
    doc["running"][0]["gpu_util"] = 12.5
    bad = tmp_path / "frac.json"
    bad.write_text(json.dumps(doc))
    _refused(capsys, ["export", str(bad), "--format", "lp", "-o", str(tmp_path / "m.lp")],
             str(bad), "running[0].gpu_util")


def test_simulate_policy_settings_are_bad_input(files, tmp_path, capsys):
    base = ["simulate", "--no-plots", "--no-progress", "--out", str(tmp_path / "sim")]
    _refused(capsys, [*base, str(files / "hw.json"), "--policy", "exact", "--backend",
                      "bogus"], "backend")
    _refused(capsys, [*base, str(files / "hw.json"), "--policy", "greedy", "--option",
                      "queues=0"], "options.queues")
    _refused(capsys, [*base, str(files / "hw.json"), "--policy", "greedy", "--interval",
                      "-1"], "--interval")
    junk = tmp_path / "w.safetensors"
    junk.write_bytes(b"\xff" * 64)
    _refused(capsys, [*base, str(files / "s2.json"), "--policy", "dqn", "--weights",
                      str(junk)], str(junk), "weights")


def test_hostile_trace_files(tmp_path, capsys):
    raw = (TRACES / "tiresias_60_job.csv").read_bytes()
    out = ["-o", str(tmp_path / "w.json")]
    bad = tmp_path / "latin1.csv"
    bad.write_bytes(raw[:20] + b"\xff\xfe" + raw[20:])
    _refused(capsys, ["import-trace", "tiresias", str(bad), *out], str(bad))
    huge = tmp_path / "huge.csv"
    lines = raw.decode().splitlines()
    lines[1] = "0,99999999999999999999" + lines[1][len("0,1"):]
    huge.write_text("\n".join(lines) + "\n")
    _refused(capsys, ["import-trace", "tiresias", str(huge), *out], str(huge), "num_gpu")
    _refused(capsys, ["import-trace", "tiresias", str(tmp_path), *out], str(tmp_path))
    good = str(TRACES / "tiresias_60_job.csv")
    _refused(capsys, ["import-trace", "tiresias", good, *out, "--cluster",
                      "99999999999x99999"], "--cluster")
    _refused(capsys, ["import-trace", "tiresias", good, *out, "--target-load", "1e-300"],
             "--target-load")


def test_suite_names_cannot_escape_and_errors_name_the_spec(tmp_path, capsys):
    root = tmp_path / "suite"
    root.mkdir()
    spec = {"name": "s", "instances": [{"name": "../../evil", "generator": "horus",
                                        "seeds": [0], "arguments": {"nodes": 2}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    _refused(capsys, ["library", "build", "--suite", str(root), "--no-progress"],
             "suite.json", "instances[0].name")
    assert not list(tmp_path.glob("evil*")) and not list(tmp_path.parent.glob("evil*"))
    spec["instances"][0].update(name="h", generator="nosuch")
    (root / "suite.json").write_text(json.dumps(spec))
    _refused(capsys, ["library", "build", "--suite", str(root), "--no-progress"],
             "suite.json", "h.generator")


def test_report_refuses_foreign_tables(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("a,b\n1,2\n")
    _refused(capsys, ["report", "--input", str(table), "--no-plots"], str(table), "--input")


def test_simulate_wake_up_options(files, tmp_path, capsys):
    base = ["simulate", str(files / "hw.json"), "--policy", "greedy", "--no-plots",
            "--no-progress", "--out", str(tmp_path / "sim")]
    _refused(capsys, [*base, "--interval", "1e-300"], "--interval")  # t + dt == t: a hang
    _refused(capsys, [*base, "--batch-only"], "--batch-only")


def test_suite_best_known_runs_must_exist(tmp_path, capsys):
    root = tmp_path / "suite"
    root.mkdir()
    spec = {"name": "s", "best_known": {"runs": [{"method": "greedy"}, {"method": "greddy"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                           "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    _refused(capsys, ["library", "build", "--suite", str(root), "--no-progress"],
             "suite.json", "best_known.runs[1]", "'greddy'")
    spec["best_known"] = {"runs": [{"method": "greedy"}], "time_limit": -1}
    (root / "suite.json").write_text(json.dumps(spec))
    _refused(capsys, ["library", "build", "--suite", str(root), "--no-progress"],
             "suite.json", "best_known.time_limit")


def test_bench_and_compete_options(suite, tmp_path, capsys):
    where = str(suite.directory)
    _refused(capsys, ["bench", "--suite", where, "--no-progress", "--seeds", "-1"], "--seeds")
    _refused(capsys, ["bench", "--suite", where, "--no-progress", "--kill-after", "nan"],
             "--kill-after")
    _refused(capsys, ["bench", "--suite", where, "--no-progress", "--output", str(tmp_path)],
             "--output", "is a directory")
    _refused(capsys, ["compete", "--suite", where, "--solver", "a:b", "--name", "x", "--name",
                      "y"], "--name")
    _refused(capsys, ["report", "--input", str(tmp_path / "none.csv")], "--input")


def test_simulate_names_the_workload(files, tmp_path, capsys):
    doc = json.loads((files / "hw.json").read_text())
    doc.pop("sha256")
    del doc["jobs"][0]["duration"]
    bad = tmp_path / "no_duration.json"
    bad.write_text(json.dumps(doc))
    base = ["--policy", "greedy", "--no-plots", "--no-progress", "--out", str(tmp_path / "o")]
    _refused(capsys, ["simulate", str(bad), *base], str(bad), "jobs[0].duration")
    doc["jobs"] = []
    empty = tmp_path / "no_jobs.json"
    empty.write_text(json.dumps(doc))
    _refused(capsys, ["simulate", str(empty), *base], str(empty), "jobs")  # not NaN metrics


# ------------------------------------------------------------ typed option values per method
NAN = float("nan")


@pytest.fixture(scope="module")
def tiny():
    """One tiny generated instance per problem (and a workload / a 15 x 8 GPU one)."""
    from inference_factories import tiny_instance

    from dlsched.registry import generators

    g = generators()
    return {
        "horus": g["horus"].build(seed=1, nodes=2, gpus_per_node=2, beta=3),
        "genie": g["genie"].build(seed=1, snapshot=True, nodes=2, gpus_per_node=2, waiting=3,
                                  duration=3.0),
        "genie-workload": g["genie"].build(seed=1, nodes=1, gpus_per_node=2, duration=0.5,
                                           density=8.0),
        "sched2": g["sched2"].build(seed=1, jobs=4, servers=2, gpus_per_server=2),
        "sched2-15x8": g["sched2"].build(seed=1, jobs=4, servers=15, gpus_per_server=8),
        "liquid": g["liquid"].build(seed=1, nodes=2, gpus_per_node=2, nodes_per_rack=2,
                                    racks_per_domain=1),
        "inference": tiny_instance([(0, 1000, 2000), (5, 1000, 2000), (10, 1000, 2000)]),
    }


@pytest.mark.parametrize("problem,method,option,bad", [
    ("horus", "exact", "num_workers", 1.5), ("horus", "exact", "symmetry", "no"),
    ("horus", "exact", "reduce", 1), ("horus", "exact", "solver_options", "x"),
    ("horus", "exact", "initial_solution", "greedy"), ("horus", "greedy", "queues", 0),
    ("horus", "greedy", "beta", NAN), ("horus", "greedy", "refill", "no"),
    ("horus", "fifo", "backfill", "x"),
    ("horus", "pab", "warmup_s", NAN), ("horus", "pab", "threshold", 0),
    ("horus", "pab", "serial", "yes"), ("horus", "pab", "policy_state", "x"),
    ("genie", "exact", "prune", "no"), ("genie", "exact", "symmetry", 0),
    ("genie", "exact", "num_workers", 0), ("genie", "exact", "solver_options", {1: 2}),
    ("genie", "swaf", "backfill", "x"), ("genie", "swaf", "late_last", 1),
    ("genie", "fifo", "request", 1.5), ("genie", "capacity", "request", 0),
    ("genie", "minmin", "request", True), ("genie", "wfair", "arrival_weight", "x"),
    ("genie", "wfair", "arrival_weight", NAN), ("genie", "wfair", "request", -2),
    ("genie-workload", "offline-makespan", "time_unit", -1),
    ("genie-workload", "offline-makespan", "time_unit", 0),
    ("genie-workload", "offline-makespan", "bounds", 0),
    ("genie-workload", "offline-makespan", "num_workers", 1.5),
    ("genie-workload", "offline-makespan", "initial_solution", [1]),
    ("genie-workload", "offline-wct", "bnb_share", 2),
    ("genie-workload", "offline-qos", "symmetry", "no"),
    ("sched2", "offline-makespan", "time_unit", NAN),
    ("sched2", "offline-makespan", "time_unit", 1e-300),  # a horizon past 64-bit integers
    ("sched2", "offline-wct", "time_unit", 5e-324),
    ("sched2", "offline-wct", "bnb_share", -0.1), ("sched2", "offline-wct", "bnb_share", 1),
    ("sched2", "offline-qos", "solver_options", "x"),
    ("inference", "exact", "max_batches", 0), ("inference", "exact", "lagrange", -1),
    ("inference", "exact", "lagrange", 1.5), ("inference", "exact", "workers", 1.5),
    ("inference", "exact", "hint", 5), ("inference", "lagrange", "iterations", 0),
    ("inference", "lagrange", "bound_share", 0), ("inference", "lagrange", "improve", "no"),
    ("inference", "lagrange", "hint", [1]), ("inference", "edf-dp", "max_states", NAN),
    ("liquid", "exact", "symmetry", "no"), ("liquid", "exact", "num_workers", -1),
    ("liquid", "exact", "solver_options", "x"), ("liquid", "exact", "initial_solution", {}),
    ("liquid", "gga", "population", 1), ("liquid", "gga", "seed_bestfit", "yes"),
    ("liquid", "gga", "repair", "everywhere"), ("liquid", "gga", "repair", 3),
    ("liquid", "gga-ls", "mutation_rate", 2), ("liquid", "gga-ls", "population", 10**400),
    ("sched2", "sif", "backfill", "x"), ("sched2", "fifo", "window", 0),
    ("sched2", "lrf", "window", 2.5), ("sched2", "dsif", "policy_state", 3),
    ("sched2", "saf", "backfill", None), ("sched2", "spf", "window", True),
    ("sched2", "dqn", "weights", 5),
])
def test_option_values_are_typed(tiny, problem, method, option, bad):
    from dlsched import solve

    result = solve(tiny[problem], method, time_limit=5, **{option: bad})
    assert result.status.value == "invalid_input", (method, option, result.status)
    assert f"options.{option}" in result.message, result.message
    assert "failed on its options" not in result.message  # a rule, not the backstop
    assert len(result.message.splitlines()) == 1


@pytest.mark.parametrize("problem,method,options", [
    ("horus", "exact", {"num_workers": 1, "symmetry": False, "reduce": True,
                        "solver_options": {}}),
    ("horus", "greedy", {"queues": None, "beta": 2, "refill": False}),
    ("horus", "fifo", {"backfill": True}),
    ("horus", "pab", {"warmup_s": 0, "threshold": 1, "serial": False, "policy_state": None}),
    ("genie", "exact", {"prune": False, "symmetry": True, "num_workers": 2}),
    ("genie", "wfair", {"arrival_weight": 1, "request": None}), ("genie", "fifo", {"request": 1}),
    ("genie", "swaf", {"backfill": True, "late_last": False}),
    ("genie-workload", "offline-makespan", {"time_unit": None, "num_workers": 0}),
    ("sched2", "offline-wct", {"bnb_share": 0.0, "symmetry": False, "bounds": False}),
    ("sched2", "offline-qos", {"time_unit": 60, "bnb_share": None}),
    ("inference", "exact", {"max_batches": None, "lagrange": None, "hint": None, "workers": 1}),
    ("inference", "lagrange", {"bound_share": 1, "hint": "", "iterations": 5}),
    ("inference", "edf-dp", {"max_states": 1000}),
    ("liquid", "exact", {"symmetry": True, "num_workers": 1}),
    ("liquid", "gga", {"population": None, "node_weight": None, "seed_bestfit": True,
                       "max_generations": 5}),
    ("sched2", "dsif", {"policy_state": {}, "window": None}),
    ("sched2-15x8", "dqn", {"weights": None}),
])
def test_valid_option_values_are_not_refused(tiny, problem, method, options):
    from dlsched import solve

    result = solve(tiny[problem], method, time_limit=20, **options)  # generous: CI is loaded
    assert result.status.value not in ("invalid_input", "error"), result.message
    assert result.decision is not None, result.status


def test_simulate_fast_forms_check_option_values(files, tmp_path, capsys):
    """The simulator's fast form of ``fifo`` (which never calls the method's ``run``) still
    refuses a value of the wrong type."""
    _refused(capsys, ["simulate", str(files / "hw.json"), "--policy", "fifo", "--option",
                      'backfill="x"', "--no-plots", "--no-progress", "--out",
                      str(tmp_path / "sim")], "options.backfill")
