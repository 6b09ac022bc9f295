"""docs/benchmarks.md's result tables are what the current report code makes of the
committed results table (issue 31, item 4): regenerating them changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

from dlsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
TABLE = ROOT / "docs" / "data" / "bench-quick.csv"


def test_docs_benchmark_tables_are_generated_from_the_committed_table(tmp_path, monkeypatch,
                                                                       capsys):
    copy = tmp_path / "benchmarks.md"
    shutil.copy(DOC, copy)
    # the command docs/benchmarks.md gives, on a copy, through main() (the command's
    # process is not what this checks: an interpreter less)
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    code = main(["report", "--input", str(TABLE), "--update-doc", str(copy)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert copy.read_text(encoding="utf-8") == DOC.read_text(encoding="utf-8"), (
        "docs/benchmarks.md is out of date: run `dlsched report --input "
        "docs/data/bench-quick.csv --update-doc docs/benchmarks.md`")
    assert out.out.startswith("unchanged")
    generated = DOC.read_text(encoding="utf-8").split("--update-doc`: begin -->")[1]
    assert "| solver | runs |" in generated and "### quick · horus" in generated
