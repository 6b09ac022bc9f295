"""Write the broken input files of tests/data/broken/ (run from the repository root).

``python tests/data/make_broken.py`` rewrites every file and ``expected.json``, which maps
each file name to the field its one-line error must name (written here by hand, not taken
from the loader). Every file is a small hand-written Horus snapshot or solution with one
thing wrong, said by its name.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).parent / "broken"

INSTANCE = {
    "format_version": 1,
    "problem": "horus",
    "name": "broken-base",
    "params": {"w_mem": 1.0, "w_util": 1.0, "beta": 2, "queues": 1},
    "provenance": {"source": "tests/data/make_broken.py"},
    "time": 0.0,
    "cluster": {"nodes": [
        {"id": "n0", "cpu": 16.0, "ram_gb": 64.0, "gpus": [
            {"id": "n0/g0", "type": "gtx1080", "mem_gb": 8.0},
            {"id": "n0/g1", "type": "gtx1080", "mem_gb": 8.0}]}]},
    "running": [{"job": "r0", "gpus": ["n0/g0"], "gpu_util": 40.0, "gpu_mem_gb": 2.0,
                 "cpu_per_gpu": 1.0, "ram_gb_per_gpu": 2.0,
                 "extra": {"node_cpu": {"n0": 1.0}, "node_ram_gb": {"n0": 1.0}}}],
    "jobs": [{"id": "j0", "num_gpus": 1, "duration": 100.0, "gpu_util": 30.0,
              "gpu_mem_gb": 2.0}],
}

SOLUTION = {"format_version": 1, "instance_sha256": "", "placements": [
    {"job": "j0", "gpus": ["n0/g1"], "start": 0.0}]}


def _canonical_sha(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _text(doc: dict, token: str | None = None) -> str:
    text = json.dumps(doc, indent=1)
    return text.replace('"@TOKEN@"', token) if token is not None else text


def cases() -> dict[str, tuple[bytes, str]]:
    """file name -> (bytes, field the error must name)."""
    out: dict[str, tuple[bytes, str]] = {}

    def inst(name: str, field: str, edit=None, token: str | None = None) -> None:
        doc = copy.deepcopy(INSTANCE)
        if edit is not None:
            edit(doc)
        out[f"instance-{name}.json"] = (_text(doc, token).encode(), field)

    def sol(name: str, field: str, edit=None, token: str | None = None) -> None:
        doc = copy.deepcopy(SOLUTION)
        if edit is not None:
            edit(doc)
        out[f"solution-{name}.json"] = (_text(doc, token).encode(), field)

    def at(path, value="@TOKEN@"):
        def edit(doc):
            target = doc
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        return edit

    # numbers
    inst("nan-duration", "jobs[0].duration", at(["jobs", 0, "duration"]), "NaN")
    inst("infinity-gpu-mem", "cluster.nodes[0].gpus[1].mem_gb",
         at(["cluster", "nodes", 0, "gpus", 1, "mem_gb"]), "Infinity")
    inst("minus-infinity-time", "time", at(["time"]), "-Infinity")
    inst("1e400-cpu", "cluster.nodes[0].cpu", at(["cluster", "nodes", 0, "cpu"]), "1e400")
    inst("subnormal-gpu-mem", "cluster.nodes[0].gpus[0].mem_gb",
         at(["cluster", "nodes", 0, "gpus", 0, "mem_gb"]), "1e-320")
    inst("20-digit-num-gpus", "jobs[0].num_gpus", at(["jobs", 0, "num_gpus"]),
         "12345678901234567890")
    inst("5000-digit-integer", "(file)", at(["jobs", 0, "num_gpus"]), "9" * 5000)
    inst("num-gpus-over-maximum", "jobs[0].num_gpus", at(["jobs", 0, "num_gpus"], 10**7))
    inst("float-num-gpus", "jobs[0].num_gpus", at(["jobs", 0, "num_gpus"], 1.5))
    inst("boolean-cpu", "cluster.nodes[0].cpu", at(["cluster", "nodes", 0, "cpu"], True))
    inst("w-util-1e308", "params.w_util", at(["params", "w_util"], 1e308))
    inst("w-util-over-maximum", "params.w_util", at(["params", "w_util"], 1e9))
    inst("negative-cpu", "cluster.nodes[0].cpu", at(["cluster", "nodes", 0, "cpu"], -4))
    inst("zero-duration", "jobs[0].duration", at(["jobs", 0, "duration"], 0))
    inst("nan-in-provenance", "provenance.source", at(["provenance", "source"]), "NaN")
    # running[].extra
    inst("negative-extra-node-cpu", "running[0].extra.node_cpu.n0",
         at(["running", 0, "extra", "node_cpu", "n0"], -8.0))
    inst("null-extra-node-ram", "running[0].extra.node_ram_gb.n0",
         at(["running", 0, "extra", "node_ram_gb", "n0"], None))
    inst("string-extra-node-cpu", "running[0].extra.node_cpu.n0",
         at(["running", 0, "extra", "node_cpu", "n0"], "lots"))
    inst("object-extra-node-cpu", "running[0].extra.node_cpu",
         at(["running", 0, "extra", "node_cpu"], [1, 2]))
    inst("unknown-extra-key", "running[0].extra.colour",
         at(["running", 0, "extra", "colour"], "red"))
    inst("extra-unknown-node", "running[0].extra.node_cpu",
         at(["running", 0, "extra", "node_cpu", "n9"], 1.0))
    # params
    inst("interference-is-a-list", "params.interference", at(["params", "interference"], []))
    inst("interference-quadratic-short", "params.interference.gtx1080.quadratic",
         at(["params", "interference"], {"gtx1080": {"quadratic": [1.0]}}))
    inst("unknown-param", "params.colour", at(["params", "colour"], 1))
    inst("queues-string", "params.queues", at(["params", "queues"], "3"))
    # structure
    inst("missing-cpu", "cluster.nodes[0].cpu",
         lambda d: d["cluster"]["nodes"][0].pop("cpu"))
    inst("unknown-job-key", "jobs[0].colour", at(["jobs", 0, "colour"], "red"))
    inst("unknown-problem", "problem", at(["problem"], "tetris"))
    inst("duplicate-job-id", "jobs[1].id", lambda d: d["jobs"].append(dict(d["jobs"][0])))
    inst("unknown-running-gpu", "running[0].gpus[0]", at(["running", 0, "gpus", 0], "n0/g7"))
    inst("sha256-mismatch", "sha256", at(["sha256"], "0" * 64))
    deep = "[" * 70 + "]" * 70
    inst("nested-70-in-provenance", "provenance.source" + "[0]" * 62,
         at(["provenance", "source"]), deep)
    inst("nested-2000", "(file)", at(["provenance", "source"]), "[" * 2000 + "]" * 2000)
    out["instance-nested-100000.json.gz"] = (
        gzip.compress(_text(INSTANCE, None).replace(
            '"source": "tests/data/make_broken.py"',
            '"source": ' + "[" * 100_000 + "]" * 100_000).encode(), mtime=0), "(file)")
    out["instance-truncated.json"] = (_text(INSTANCE).encode()[:200], "(file)")
    out["instance-not-utf8.json"] = (_text(INSTANCE).encode().replace(b"broken-base",
                                                                      b"broken-\xff\xfe"), "(file)")
    out["instance-corrupt.json.gz"] = (gzip.compress(_text(INSTANCE).encode(), mtime=0)[:-12]
                                       + b"\x00" * 12, "(file)")
    out["instance-plain-text-named-gz.json.gz"] = (_text(INSTANCE).encode(), "(file)")
    out["instance-empty.json"] = (b"", "(file)")
    out["instance-top-level-array.json"] = (b"[1, 2, 3]\n", "(top level)")
    out["instance-top-level-nan.json"] = (b"NaN\n", "(top level)")
    # solutions (for the base instance)
    sha = _canonical_sha(INSTANCE)

    def with_sha(edit=None):
        def both(doc):
            doc["instance_sha256"] = sha
            if edit is not None:
                edit(doc)
        return both

    sol("start-nan", "placements[0].start", with_sha(at(["placements", 0, "start"])), "NaN")
    sol("start-infinity", "placements[0].start", with_sha(at(["placements", 0, "start"])),
        "Infinity")
    sol("start-1e400", "placements[0].start", with_sha(at(["placements", 0, "start"])), "1e400")
    sol("start-string", "placements[0].start", with_sha(at(["placements", 0, "start"], "0")))
    sol("start-over-maximum", "placements[0].start",
        with_sha(at(["placements", 0, "start"], 1e13)))
    sol("gpus-not-a-list", "placements[0].gpus", with_sha(at(["placements", 0, "gpus"], "n0/g1")))
    sol("objective-nan", "objective", with_sha(at(["objective"])), "NaN")
    sol("wrong-instance", "instance_sha256", at(["instance_sha256"], "f" * 64))
    sol("nested-100000", "(file)", with_sha(at(["placements"])),
        "[" * 100_000 + "]" * 100_000)
    sol("unknown-key", "placements[0].colour", with_sha(at(["placements", 0, "colour"], 1)))
    return out


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for old in HERE.iterdir():
        old.unlink()
    expected = {}
    for name, (data, field) in sorted(cases().items()):
        (HERE / name).write_bytes(data)
        expected[name] = field
    base = copy.deepcopy(INSTANCE)
    base["sha256"] = _canonical_sha(INSTANCE)
    (HERE / "base-instance.json").write_text(json.dumps(base, indent=1) + "\n")
    good = copy.deepcopy(SOLUTION)
    good["instance_sha256"] = base["sha256"]
    (HERE / "base-solution.json").write_text(json.dumps(good, indent=1) + "\n")
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(expected)} broken files to {HERE}")


if __name__ == "__main__":
    main()
