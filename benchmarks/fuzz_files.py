"""The fuzz benchmark's files beside instances: suite manifests and raw traces.

Seeds: a built one-instance suite whose ``manifest.json`` is mutated (run through
``dlsched library verify``), and a small valid file of every trace format (run through
``dlsched import-trace``): the Philly JSON list is mutated like an instance (values, types,
tokens, nesting, truncation, ...); the delimited formats by text operations (a bad value in
a numeric column, a dropped column, a cut, an extra field, a huge field, invalid UTF-8,
flipped bits). Each mutant says whether the reader must refuse it; :mod:`.fuzz` counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_NULLABLE = frozenset({"best", "bound", "backend", "seed"})
"""Manifest keys whose value may be null."""

PHILLY_CHECKED = frozenset({"jobid", "submitted_time", "start_time", "end_time", "attempts",
                            "detail", "gpus"})
"""Philly keys the reader uses (every other one is dropped, whatever it holds)."""

PHILLY = [
    {"status": "Pass", "vc": "a1", "jobid": "app_0001", "user": "u1",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 03:13:23",
                   "detail": [{"ip": "m47", "gpus": ["gpu0", "gpu1"]}]}]},
    {"status": "Killed", "vc": "a1", "jobid": "app_0002", "user": "u2",
     "submitted_time": "2017-10-07 02:00:00",
     "attempts": [{"start_time": "2017-10-07 02:00:05", "end_time": "2017-10-07 05:00:00",
                   "detail": [{"ip": "m12", "gpus": ["gpu0"]}]}]},
    {"status": "Pass", "vc": "b2", "jobid": "app_0003", "user": "u1",
     "submitted_time": "2017-10-07 02:30:00",
     "attempts": [{"start_time": "2017-10-07 02:31:00", "end_time": "2017-10-07 04:00:00",
                   "detail": [{"ip": "m3", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]}]},
]


@dataclass(frozen=True)
class CsvSeed:
    """A valid delimited trace: its format, text, numeric columns, and CLI extras."""

    fmt: str
    text: str
    numeric: frozenset[str]
    required: frozenset[str]
    delimiter: str = ","
    header: bool = True
    extra: tuple[str, ...] = ()


CSV_SEEDS = (
    CsvSeed("dirlab", "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,"
            "new_status\n0,1,1,0,1,0,1389,0,Killed\n1,2,8,0,4,3951,14405,0,Failed\n"
            "2,1,2,4,1,120,600,0,Pass\n", frozenset({"gpu_num", "interval", "run_time"}),
            frozenset({"u_id", "gpu_num", "interval", "run_time"})),
    CsvSeed("alibaba", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
            "creation_time,deletion_time,scheduled_time\n"
            "p-1,11400,48128,1,1000,,LS,Running,12347558,12348084,12347559\n"
            "p-2,11300,49152,1,500,,LS,Running,12349891,12350100,12349893\n",
            frozenset({"num_gpu", "gpu_milli", "creation_time", "deletion_time",
                       "scheduled_time"}),
            frozenset({"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time",
                       "scheduled_time"})),
    CsvSeed("itp", "job_id,submission_time,duration,num_gpu\na1,2266647,604,16\n"
            "a2,2371685,767,1\na3,2371990,80,2\n",
            frozenset({"submission_time", "duration", "num_gpu"}),
            frozenset({"job_id", "submission_time", "duration", "num_gpu"})),
    CsvSeed("tiresias", "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
            "0,1,0,606,vgg19,164,30\n1,8,30,133,vgg11,147,23\n2,2,53,90,resnet50,300,10\n",
            frozenset({"num_gpu", "submit_time", "duration"}),
            frozenset({"job_id", "num_gpu", "submit_time", "duration"})),
    CsvSeed("gavel", "ResNet-50 (batch size 64)\tpython3 main.py\timagenet\t--num_minibatches\t1"
            "\t2931\t1\t1\t-1.000000\t0\nTransformer (batch size 16)\tpython3 train.py\t"
            "translation\t-step\t1\t11005\t2\t1\t-1.000000\t30\n",
            frozenset({"total_steps", "scale_factor", "arrival_time", "priority_weight"}),
            frozenset(), delimiter="\t", header=False),
    CsvSeed("generic", "id,t,d,g\nx1,0,100,1\nx2,5,200,2\nx3,9,50,4\n",
            frozenset({"t", "d", "g"}), frozenset({"id", "t", "d", "g"}),
            extra=("--columns", "id=id,submit=t,duration=d,gpus=g")),
)
GAVEL_NAMES = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
               "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")
BAD_NUMBERS = ("NaN", "inf", "-inf", "abc", "1e400", "0x1F", "1,5")


def build_manifest_suite(root: Path) -> dict[str, Any]:
    """A one-instance Horus suite in ``root`` (best known from ``greedy``); its manifest."""
    from .build import build_suite

    spec = {"name": "fuzz", "best_known": {"runs": [{"method": "greedy"}], "time_limit": 10},
            "instances": [{"name": "h", "generator": "horus", "seeds": [1],
                           "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 3,
                                         "busy": 0.5}}]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "suite.json").write_text(json.dumps(spec), encoding="utf-8")
    build_suite(root, jobs=1, progress=False)
    return json.loads((root / "manifest.json").read_text(encoding="utf-8"))


def checked_path(kind: str, path: tuple[Any, ...]) -> bool:
    """Whether the reader of ``kind`` checks the value at ``path`` (else anything goes)."""
    if kind == "manifest":
        return not any(k in ("source", "description") for k in path)
    if kind == "trace-json":
        return bool(path) and path[-1] in PHILLY_CHECKED
    return True


def value_must_reject(kind: str, path: tuple[Any, ...], old: Any, new: Any) -> bool | None:
    """Whether replacing ``old`` by ``new`` at ``path`` must be refused, where the generic
    rule of :func:`.fuzz.mutate` does not apply (None: it does)."""
    if kind == "trace-json":  # only a list the reader walks must stay a list
        return isinstance(old, list) and new is not None and not isinstance(new, list)
    if kind == "manifest" and path and path[-1] in MANIFEST_NULLABLE and (
            new is None or (old is None and _nullable_value(path[-1], new))):
        return False
    return None


def _nullable_value(key: str, new: Any) -> bool:
    """True when ``new`` is a valid non-null value of the nullable manifest key ``key``."""
    if key == "backend":
        return isinstance(new, str)
    number = isinstance(new, int | float) and not isinstance(new, bool)
    return number and (key == "bound" or (isinstance(new, int) and new >= 0))


def mutate_csv(seed: CsvSeed, ch: Any) -> tuple[bytes, bool, str]:
    """(bytes, must the reader refuse them, what was done) of one text mutant of ``seed``;
    choices from ``ch`` (a :class:`.fuzz.Chooser`)."""
    lines = seed.text.splitlines()
    names = lines[0].split(seed.delimiter) if seed.header else list(GAVEL_NAMES)
    first = 1 if seed.header else 0
    op = ch.choice(["number", "number", "drop_column", "cut", "extra_field", "huge_field",
                    "bad_utf8", "flip", "blank_lines"])
    if op in ("number", "drop_column", "extra_field", "huge_field"):
        row = ch.integer(first, len(lines) - 1)
        col = ch.integer(0, len(names) - 1)
        fields = lines[row].split(seed.delimiter)
        if op == "number":
            token = ch.choice(BAD_NUMBERS)
            fields[col] = token if seed.delimiter != "," or "," not in token else f'"{token}"'
            lines[row] = seed.delimiter.join(fields)
            reject = names[col] in seed.numeric
            return _text(lines), reject, f"line {row + 1} {names[col]} = {token}"
        if op == "drop_column":
            for i in range(len(lines)):
                parts = lines[i].split(seed.delimiter)
                del parts[col]
                lines[i] = seed.delimiter.join(parts)
            reject = names[col] in seed.required or not seed.header
            return _text(lines), reject, f"drop column {names[col]}"
        if op == "extra_field":
            lines[row] += seed.delimiter + "7"
            return _text(lines), True, f"line {row + 1} has an extra field"
        fields[col] = "9" * 200_000
        lines[row] = seed.delimiter.join(fields)
        return _text(lines), True, f"line {row + 1} {names[col]} is 200,000 characters"
    data = _text(lines)
    if op == "cut":
        cut = ch.integer(1, len(data) - 1)
        text = data[:cut].decode("utf-8")
        last = text.split("\n")[-1]
        short = bool(last) and len(last.split(seed.delimiter)) < len(names)
        return data[:cut], short, f"cut at byte {cut}"
    if op == "bad_utf8":
        pos = ch.integer(0, len(data) - 1)
        return data[:pos] + b"\xff\xfe" + data[pos:], True, f"invalid UTF-8 at byte {pos}"
    if op == "flip":
        pos = ch.integer(0, len(data) - 1)
        flipped = data[:pos] + bytes([data[pos] ^ (1 << ch.integer(0, 6))]) + data[pos + 1:]
        return flipped, False, f"bit flipped at byte {pos}"
    return data.replace(b"\n", b"\n\n\n", 1), False, "blank lines"


def _text(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


def run_manifest(directory: Path, data: bytes, run_cli) -> tuple[list[str], int, str]:
    """Write the mutated manifest into the suite and verify it: (argv, exit, stderr)."""
    (directory / "manifest.json").write_bytes(data)
    argv = ["library", "verify", "--suite", str(directory)]
    code, out, err = run_cli(argv)
    return argv, code, err if code != 1 else out


def run_trace(fmt: str, path: Path, extra: tuple[str, ...], run_cli
              ) -> tuple[list[str], int, str]:
    """Import the mutated trace: (argv, exit, stderr)."""
    target = path.with_name("workload.json")
    target.unlink(missing_ok=True)
    argv = ["import-trace", fmt, str(path), "-o", str(target), *extra]
    code, _, err = run_cli(argv)
    return argv, code, err
