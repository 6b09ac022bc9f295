"""Duplicate JSON keys, gzip bombs, suite manifests and raw traces (issue 32, item 9):
each bad file is one InputError line naming the file and the field."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import pytest

from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.library import load_manifest, verify, write_instance_gz
from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.files import read_json
from dlsched.instances.trace_formats import read_raw_trace
from dlsched.registry import generators


@pytest.mark.parametrize("text, key", [('{"a": 1, "a": 2}', "a"),
                                       ('{"jobs": [{"id": "x", "b": {"c": 1, "c": 1}}]}', "c")])
def test_a_key_twice_is_refused_with_its_name(tmp_path, text, key):
    path = tmp_path / "dup.json"
    path.write_text(text)
    with pytest.raises(InputError, match=f"key '{key}' appears twice") as err:
        read_json(path)
    assert str(path) in err.value.one_line()


def test_an_instance_with_a_duplicate_key_fails_on_the_command_line(tmp_path, capsys):
    inst = generators()["horus"].build(seed=1, nodes=2, gpus_per_node=2, beta=3)
    text = json.dumps(inst.to_dict())
    path = tmp_path / "i.json"
    path.write_text(text.replace('"problem": "horus"', '"problem": "horus", "problem": "liquid"'))
    assert main(["solve", str(path), "--method", "greedy"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'problem' appears twice" in err


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    # ~300 MB of zeros in ~300 KB: one 1-MiB member compressed once and repeated (a gzip
    # file may hold several members, read as one stream), not 300 MB compressed here
    mib = gzip.compress(b"0" * 2**20, compresslevel=9, mtime=0)
    bomb.write_bytes(gzip.compress(b'{"a": "', mtime=0) + mib * 300
                     + gzip.compress(b'"}', mtime=0))
    code = ("import resource, sys\nfrom dlsched.files import read_json\n"
            "from dlsched.errors import InputError\n"
            "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            "try:\n    read_json(sys.argv[1])\nexcept InputError as exc:\n"
            "    print(exc.one_line())\n"
            "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)\n")
    out = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert "decompresses to more than" in out[0] and "gzip bomb" in out[0]
    assert int(out[1]) < 150  # MB above the interpreter's own (was ~430 MB)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A one-instance suite, built once for the module (only copies are edited)."""
    root = tmp_path_factory.mktemp("lib") / "s"
    spec = {"name": "s", "best_known": {"runs": [{"method": "greedy"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [1],
                           "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 3}}]}
    root.mkdir()
    (root / "suite.json").write_text(json.dumps(spec))
    build_suite(root, jobs=1, progress=False)
    return root


@pytest.fixture
def suite(built, tmp_path):
    """This test's own copy of the built suite, which it may spoil."""
    shutil.copytree(built, tmp_path / "s")
    return load_manifest(tmp_path / "s")


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["instances"][0].__setitem__("sha256", 5), "instances[0].sha256: 5 is not"),
    (lambda d: d.pop("instances"), "instances: missing field"),
    (lambda d: d["instances"][0].__setitem__("sense", "up"), "instances[0].sense: 'up' is not"),
    (lambda d: d["instances"][0].__setitem__("sense", "max"), "horus is a minimization"),
    (lambda d: d["instances"].append(dict(d["instances"][0])), "listed twice"),
    (lambda d: d["instances"][0].__setitem__("file", "../../etc/passwd"), "instances[0].file"),
    (lambda d: d.__setitem__("zz", 1), "'zz' was unexpected"),
])
def test_bad_manifests_are_one_line_input_errors(suite, capsys, edit, words):
    path = suite.directory / "manifest.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="manifest.json") as err:
        load_manifest(suite.directory)
    assert words in err.value.one_line()
    assert main(["library", "verify", "--suite", str(suite.directory)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_swapped_instance_file_is_refused_wherever_the_manifest_is_used(suite):
    other = generators()["horus"].build(seed=7, nodes=2, gpus_per_node=2, beta=3)
    write_instance_gz(other, suite.path_of("h-s1"))
    with pytest.raises(InputError, match="differs from the manifest"):
        load_manifest(suite.directory).load("h-s1")
    assert "differs from the manifest" in verify(suite.directory)[1][0]


PHILLY_JOB = {"jobid": "a1", "submitted_time": "2017-10-07 01:11:39",
              "attempts": [{"start_time": "2017-10-07 01:12:09",
                            "end_time": "2017-10-07 03:13:23",
                            "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]}


@pytest.mark.parametrize("detail", [{}, 0, False, "m1", [{"ip": "m1", "gpus": False}]])
def test_a_philly_attempt_with_a_malformed_detail_is_refused(tmp_path, detail):
    job = json.loads(json.dumps(PHILLY_JOB))
    job["attempts"][0]["detail"] = detail
    path = tmp_path / "p.json"
    path.write_text(json.dumps([job, {**PHILLY_JOB, "jobid": "a2"}]))
    with pytest.raises(InputError, match="detail"):
        read_raw_trace("philly", path)


def test_philly_reads_through_the_shared_limits(tmp_path):
    path = tmp_path / "p.json"
    path.write_text("[" * 2000 + "]" * 2000)
    with pytest.raises(InputError, match="nested more than 64"):
        read_raw_trace("philly", path)
    path.write_text(json.dumps([PHILLY_JOB])[:-5])  # cut short
    with pytest.raises(InputError, match="malformed JSON"):
        read_raw_trace("philly", path)
    assert len(read_raw_trace("philly", path.with_name("q.json") if False else _write(
        tmp_path / "ok.json", [PHILLY_JOB])).frame) == 1


def _write(path, doc):
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("value", ["1,5", "May", "5 o'clock", "2017-13-45 99:00:00"])
def test_a_time_is_seconds_or_an_iso_date_time(tmp_path, value):
    path = tmp_path / "t.csv"
    path.write_text(f'id,t,d,g\nx1,"{value}",100,1\nx2,5,200,2\n')
    with pytest.raises(InputError, match="not seconds or a date-time"):
        read_raw_trace("generic", path, columns="id=id,submit=t,duration=d,gpus=g")
