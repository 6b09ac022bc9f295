"""The shared trace-reader skeleton: the Philly JSON within the shared file limits, errors
that name the entry or line and the column, and formats whose declarations agree."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import dlsched.files
from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instances.trace_formats import FORMATS, generic_format, read_raw_trace
from dlsched.instances.trace_reader import Read

DATA = Path(__file__).resolve().parent / "data" / "traces"
PHILLY = DATA / "philly_cluster_job_log_synthetic.json"


def _philly_jobs() -> list[dict]:
    return json.loads(PHILLY.read_text())


def test_philly_reads_gzip_through_the_shared_json_reader(tmp_path):
    packed = tmp_path / "log.json.gz"
    packed.write_bytes(gzip.compress(PHILLY.read_bytes()))
    plain, again = read_raw_trace("philly", PHILLY), read_raw_trace("philly", packed)
    assert again.frame.equals(plain.frame) and again.columns == plain.columns
    assert len(plain.frame) == 4  # 6 jobs, 2 left out (see test_trace_import)
    assert plain.columns["submitted_time"] == "kept as submit (read in America/Los_Angeles)"


def test_philly_json_obeys_the_shared_limits(tmp_path, monkeypatch):
    deep = tmp_path / "deep.json"
    jobs = _philly_jobs()
    nest: dict = {}
    for _ in range(70):
        nest = {"x": nest}
    jobs[1]["extra"] = nest
    deep.write_text(json.dumps(jobs))
    with pytest.raises(InputError, match="nested more than 64"):
        read_raw_trace("philly", deep)
    monkeypatch.setattr(dlsched.files, "MAX_BYTES", 100)
    with pytest.raises(InputError, match="more than the 100 bytes"):
        read_raw_trace("philly", PHILLY)


def test_philly_json_must_be_a_list(tmp_path):
    one = tmp_path / "one.json"
    one.write_text(json.dumps(_philly_jobs()[0]))
    with pytest.raises(InputError, match="not a JSON list") as err:
        read_raw_trace("philly", one)
    assert err.value.field == "(top level)"


def test_philly_bad_entry_names_entry_and_field_or_is_skipped(tmp_path, capsys):
    jobs = _philly_jobs()
    jobs[1]["attempts"][0]["end_time"] = "yesterday"
    jobs[3]["attempts"] = [42]
    path = tmp_path / "log.json"
    path.write_text(json.dumps(jobs))
    with pytest.raises(InputError) as err:
        read_raw_trace("philly", path)
    assert err.value.field == "attempts[0].end_time" and "entry 2:" in str(err.value)
    table = read_raw_trace("philly", path, skip_bad=True)
    assert table.first_skipped == [2, 4] and len(table.frame) == 2
    assert table.skipped["attempts[0]: not a JSON object"] == 1
    assert main(["import-trace", "philly", str(path), "-o", str(tmp_path / "w.json"),
                 "--skip-bad-rows"]) == 0
    assert "skipped 2 malformed rows (first at entries 2, 4)" in capsys.readouterr().out


def test_unknown_philly_keys_are_reported_dropped(tmp_path):
    jobs = _philly_jobs()
    jobs[0]["queue"] = "q1"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(jobs))
    assert read_raw_trace("philly", path).columns["queue"] == \
        "dropped: not in the documented schema"


def test_a_blank_job_id_is_a_bad_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_id,num_gpu,submit_time,duration\n1,2,0,10\n ,1,5,10\n")
    with pytest.raises(InputError, match="line 3: missing") as err:
        read_raw_trace("tiresias", path)
    assert err.value.field == "job_id"


def test_a_headerless_row_of_the_wrong_width_is_a_bad_row(tmp_path):
    lines = (DATA / "gavel_artifact_evaluation.trace").read_text().splitlines()
    lines[2] = "\t".join(lines[2].split("\t")[:9])
    path = tmp_path / "g.trace"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 3: 9 fields, the format has 10"):
        read_raw_trace("gavel", path)


def test_a_missing_mapped_column_is_named(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("t,g,d\n0,1,5\n")
    with pytest.raises(InputError, match="no column 'cores'"):
        read_raw_trace("generic", path, columns="submit=t,gpus=g,duration=d,cpu=cores")


@pytest.mark.parametrize("spec", [*{s.name: s for s in FORMATS.values()}.values(),
                                  generic_format("submit=s,gpus=g,start=a,end=b,cpu=c")],
                         ids=lambda s: s.name)
def test_every_column_read_is_reported_kept(spec):
    read = {s.column for s in spec.steps if isinstance(s, Read)}
    assert read <= set(spec.report)
    assert all(spec.report[c].startswith("kept") for c in read)
