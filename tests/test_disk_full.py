"""A full disk: every command that writes exits 2 with one line naming the file, and leaves
the old file or none — never a truncated one, never a temporary file.

Two ways to fill the disk: a small tmpfs filled to the last byte (real ``ENOSPC`` from
``write``, where the test may mount one: root on Linux), and, everywhere, ``ENOSPC``
injected where every writer flushes its file to disk (``os.fsync`` in
:func:`dlsched.files.atomic_path`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import readable_dir

from dlsched import Instance, Job, homogeneous_cluster
from dlsched.benchmarks.build import build_suite
from dlsched.cli import main
from dlsched.files import atomic_path, write_text
from dlsched.instance_io import save_instance


@contextlib.contextmanager
def _tmpfs_full():
    """A tmpfs of 256 KiB with no byte free, or None when none can be mounted."""
    where = Path(tempfile.mkdtemp(prefix="dlsched-full-"))
    mounted = False
    try:
        if shutil.which("mount") and os.geteuid() == 0:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755",
                                   "tmpfs", str(where)], capture_output=True)
            mounted = done.returncode == 0
        if not mounted:
            yield None
            return
        (where / "old.json").write_text('{"old": true}\n')
        fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # every block taken
            while os.write(fd, b"\0" * 512):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture(params=["tmpfs", "injected"])
def full(request, tmp_path, monkeypatch):
    """A folder where writing fails with ENOSPC; holds ``old.json`` from before."""
    if request.param == "tmpfs":
        with _tmpfs_full() as where:
            if where is None:
                pytest.skip("no tmpfs can be mounted here; the injected variant runs")
            yield where
        return
    where = tmp_path / "full"
    where.mkdir()
    (where / "old.json").write_text('{"old": true}\n')

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)
    yield where


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A Horus snapshot, a SCHED² workload and a one-instance suite."""
    d = tmp_path_factory.mktemp("full_inputs")
    assert main(["generate", "horus", "--nodes", "3", "--gpus-per-node", "2", "--beta", "3",
                 "-o", str(d / "h.json")]) == 0
    jobs = (Job(id="a", submit_time=0.0, num_gpus=2, duration=10.0, model="vgg16"),
            Job(id="b", submit_time=1.0, num_gpus=1, duration=5.0, model="transformer"))
    save_instance(Instance(problem="sched2", cluster=homogeneous_cluster(1, 2, gpu_type="g"),
                           jobs=jobs, params={}, name="w"), d / "w.json")
    root = d / "one"
    root.mkdir()
    (root / "suite.json").write_text(json.dumps({
        "name": "one", "best_known": {"runs": [{"method": "greedy"}]},
        "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                       "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2}}]}))
    build_suite(root, jobs=1, progress=False)
    return d


def _commands(inputs: Path, full: Path, entrant: Path) -> dict[str, list[str]]:
    h = str(inputs / "h.json")
    return {
        "generate": ["generate", "horus", "--nodes", "40", "-o", str(full / "new.json")],
        "solve": ["solve", h, "--method", "greedy", "-o", str(full / "old.json")],
        "export": ["export", h, "--format", "lp", "-o", str(full / "model.lp")],
        "simulate": ["simulate", str(inputs / "w.json"), "--policy", "fifo", "--no-progress",
                     "--out", str(full / "sim")],
        "bench-csv": ["bench", "--suite", str(inputs / "one"), "--methods", "greedy",
                      "--no-progress", "--output", str(full / "r.csv")],
        "bench-parquet": ["bench", "--suite", str(inputs / "one"), "--methods", "greedy",
                          "--no-progress", "--output", str(full / "r.parquet")],
        "compete": ["compete", "--suite", str(inputs / "one"), "--no-progress",
                    "--time-limit", "20", "--solver", f"/bin/sh {entrant} {{instance}} "
                    "{solution}", "--output", str(full / "c")],
    }


COMMANDS = ("generate", "solve", "export", "simulate", "bench-csv", "bench-parquet",
            "compete")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_disk_is_one_line_and_exit_2(inputs, full, command, capsys):
    entrant_dir = readable_dir()
    try:
        entrant = entrant_dir / "waits.sh"
        entrant.write_text('sha=$(sed -n \'s/^  "sha256": "\\([0-9a-f]*\\)".*/\\1/p\' "$1")\n'
                           'printf \'{"format_version": 1, "instance_sha256": "%s", '
                           '"placements": []}\' "$sha" > "$2"\n')
        before = {p.name for p in full.iterdir()}
        argv = _commands(inputs, full, entrant)[command]
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err, err
        assert str(full) in err and ("No space left" in err or "cannot" in err), err
    finally:
        shutil.rmtree(entrant_dir, ignore_errors=True)
    # the old file is whole; nothing truncated, nothing temporary left behind
    assert (full / "old.json").read_text() == '{"old": true}\n'
    left = [p for p in full.rglob("*") if p.is_file() and p.name not in before]
    assert [p for p in left if p.name.startswith(".")] == [], left
    for p in left:  # a file that exists is complete (here: only empty run logs may be)
        assert p.suffix in (".txt",), p


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "table.csv"
    write_text(target, "old\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("killed half-way")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["table.csv"]


def test_an_interrupted_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "scores.csv"
    write_text(target, "old\n")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert target.read_text() == "old\n" and len(list(tmp_path.iterdir())) == 1


def test_atomic_files_get_the_usual_permissions(tmp_path):
    from dlsched import files

    write_text(tmp_path / "a.txt", "x")
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o666 & ~files._UMASK
    (tmp_path / "a.txt").chmod(0o600)  # an existing file keeps its own mode
    write_text(tmp_path / "a.txt", "y")
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o600
