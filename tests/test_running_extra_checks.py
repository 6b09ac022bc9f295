"""A running job's per-server amounts (``extra.node_cpu``, ``extra.node_ram_gb``): a bad one
in a snapshot file or in a Python object is refused naming the file or the running job,
the field and the fix (dlsched.instance_numbers, checked once when the RunningJob is built),
never a traceback nor a number that a sum silently takes (a NaN or a negative amount used to
pass check_instance). The expected messages are written out by hand."""

from __future__ import annotations

import json
import math
import pickle
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance_io import check_instance, load_instance, save_instance
from dlsched.instances.genie_gen import generate_genie_workload
from dlsched.instances.horus_gen import generate_horus
from dlsched.jobs import RunningJob
from dlsched.simulate import Policy, simulate
from dlsched.solve import solve

AMOUNT_FIX = "give a finite number >= 0 and <= 1e+12 for each server"


@pytest.fixture(scope="module")
def snapshot():
    inst = generate_horus(seed=0, nodes=4)  # servers n0..n3, 64 CPUs and 512 GB each
    assert len(inst.running) > 2 and inst.cluster.node_ids[0] == "n0"
    return inst


def _with_extra(inst, extra, k=0):
    bad = replace(inst.running[k], extra=extra)
    return inst.replace(running=(*inst.running[:k], bad, *inst.running[k + 1:]))


def _refusal(inst) -> InputError:
    with pytest.raises(InputError) as err:
        check_instance(inst)
    return err.value


# --- Python objects ----------------------------------------------------------------------

@pytest.mark.parametrize("key", ["node_cpu", "node_ram_gb"])
@pytest.mark.parametrize(("value", "shown"), [
    (math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf"), (-1.0, "-1.0"),
    (-1e-9, "-1e-09"), (2e12, "2000000000000.0"), (np.float64("nan"), "np.float64(nan)"),
    # wrong types: a numeric string, a bool (numpy would read 1.0), a list, a dict
    ("2", "'2'"), (True, "True"), ([1.0], "[1.0]"), ({"a": 1}, "{'a': 1}"),
    # missing: a server listed without its amount
    (None, "None")])
def test_a_bad_per_server_amount_is_refused_naming_the_server(snapshot, key, value, shown):
    if isinstance(value, np.floating) and repr(value) == "nan":
        shown = "nan"  # numpy < 2 writes np.float64(nan) as plain nan
    err = _refusal(_with_extra(snapshot, {key: {"n0": value}}))
    assert err.field == f"running[0].extra.{key}.n0"
    assert err.message == f"{key}['n0'] = {shown}"
    assert err.fix == AMOUNT_FIX


def test_the_whole_message_names_the_field_and_the_fix(snapshot):
    err = _refusal(_with_extra(snapshot, {"node_cpu": {"n0": 1.0, "n1": -2.5}}))
    assert str(err) == ("running[0].extra.node_cpu.n1: node_cpu['n1'] = -2.5 "
                        "(give a finite number >= 0 and <= 1e+12 for each server)")


@pytest.mark.parametrize(("value", "shown"), [(5, "5"), (None, "None"), ([1, 2], "[1, 2]"),
                                              ("n0", "'n0'"), (math.nan, "nan")])
def test_per_server_amounts_that_are_not_a_mapping_are_refused(snapshot, value, shown):
    err = _refusal(_with_extra(snapshot, {"node_ram_gb": value}))
    assert str(err) == (f"running[0].extra.node_ram_gb: node_ram_gb = {shown} is not a "
                        "mapping (give a dict of server id to a finite number >= 0 and "
                        "<= 1e+12, or leave node_ram_gb out)")


@pytest.mark.parametrize(("value", "shown"), [(None, "None"), ("abc", "'abc'"), (3, "3"),
                                              ([("node_cpu", {})], "[('node_cpu', {})]")])
def test_an_extra_that_is_not_a_mapping_is_refused(snapshot, value, shown):
    err = _refusal(_with_extra(snapshot, value))
    assert str(err) == (f"running[0].extra: extra = {shown} is not a mapping (give a dict "
                        "(e.g. {'node_cpu': {server id: amount}}) or leave extra out)")


@pytest.mark.parametrize("bad", [math.nan, -math.inf, math.inf])
def test_a_bad_amount_after_good_ones_is_found(snapshot, bad):
    # min() and max() over [1.0, nan] are 1.0: the check must not rest on them alone
    err = _refusal(_with_extra(snapshot, {"node_cpu": {"n0": 1.0, "n1": bad, "n2": 0.5}}))
    assert err.field == "running[0].extra.node_cpu.n1"
    assert err.message == f"node_cpu['n1'] = {bad!r}"


def test_the_running_job_with_the_fault_is_named(snapshot):
    k = len(snapshot.running) - 1
    err = _refusal(_with_extra(snapshot, {"node_cpu": {"n3": 1.0}, "node_ram_gb": {"n3": -4}},
                               k=k))
    assert err.field == f"running[{k}].extra.node_ram_gb.n3"
    assert err.message == "node_ram_gb['n3'] = -4"


def test_good_amounts_pass_and_are_counted(snapshot):
    before_cpu, before_ram = snapshot.node_usage
    good = _with_extra(snapshot, {"node_cpu": {"n0": 2, "n1": np.float64(1.5)},
                                  "node_ram_gb": {"n0": 0.0}, "rate_factor": 0.5})
    assert not good.running[0]._numbers_fault
    check_instance(good)
    cpu, ram = good.node_usage
    assert cpu[0] - before_cpu[0] == 2.0 and cpu[1] - before_cpu[1] == 1.5
    assert ram[0] == before_ram[0]


def test_the_verdict_is_taken_when_the_running_job_is_built():
    good = RunningJob(job="r", gpus=("g",), extra={"node_cpu": {"n0": 3.0}})
    bad = RunningJob(job="r", gpus=("g",), extra={"node_cpu": {"n0": math.nan}})
    odd = RunningJob(job="r", gpus=("g",), extra=None)  # type: ignore[arg-type]
    assert not good._numbers_fault and bad._numbers_fault and odd._numbers_fault
    assert pickle.loads(pickle.dumps(bad))._numbers_fault
    assert not replace(bad, extra={"node_cpu": {"n0": 1.0}})._numbers_fault
    assert replace(good, extra={"node_ram_gb": {"n0": -1.0}})._numbers_fault


def test_a_running_job_not_built_as_running_job_has_its_extra_checked(snapshot):
    r = snapshot.running[0]
    duck = SimpleNamespace(job=r.job, gpus=r.gpus, gpu_util=r.gpu_util,
                           gpu_mem_gb=r.gpu_mem_gb, cpu_per_gpu=r.cpu_per_gpu,
                           ram_gb_per_gpu=r.ram_gb_per_gpu, remaining_s=None,
                           extra={"node_cpu": {"n0": -3.0}})
    err = _refusal(snapshot.replace(running=(duck, *snapshot.running[1:])))
    assert err.field == "running[0].extra.node_cpu.n0"


def test_solve_refuses_it_before_any_method_reads_it(snapshot):
    with pytest.raises(InputError) as err:
        solve(_with_extra(snapshot, {"node_cpu": {"n0": "4"}}), "greedy")
    assert err.value.field == "running[0].extra.node_cpu.n0"


def test_the_simulator_refuses_it():
    w = generate_genie_workload(seed=0, duration=1.0)
    node = w.cluster.node_ids[0]
    bad = RunningJob(job="r0", gpus=(w.cluster.gpu_ids[0],),
                     extra={"node_ram_gb": {node: math.inf}})
    with pytest.raises(InputError) as err:
        simulate(w.replace(running=(bad,)), Policy("fifo"))
    assert err.value.field == f"running[0].extra.node_ram_gb.{node}"


# --- files -------------------------------------------------------------------------------

def _file_with_extra(snapshot, tmp_path, extra_json: str):
    path = tmp_path / "snap.json"
    save_instance(snapshot, path)
    doc = json.loads(path.read_text())
    doc.pop("sha256")
    doc["running"][0]["extra"] = "@EXTRA@"
    path.write_text(json.dumps(doc).replace('"@EXTRA@"', extra_json))
    return path


@pytest.mark.parametrize(("extra", "field", "says"), [
    ('{"node_cpu": {"n0": NaN}}', "running[0].extra.node_cpu.n0", "nan is not a finite number"),
    ('{"node_ram_gb": {"n0": -Infinity}}', "running[0].extra.node_ram_gb.n0",
     "-inf is not a finite number"),
    ('{"node_cpu": {"n0": -1}}', "running[0].extra.node_cpu.n0",
     "-1 is less than the minimum of 0"),
    ('{"node_ram_gb": {"n0": 2e12}}', "running[0].extra.node_ram_gb.n0",
     "is greater than the maximum of 1000000000000.0"),
    ('{"node_cpu": {"n0": "2"}}', "running[0].extra.node_cpu.n0", "is not of type 'number'"),
    ('{"node_cpu": {"n0": true}}', "running[0].extra.node_cpu.n0", "is not of type 'number'"),
    ('{"node_cpu": {"n0": null}}', "running[0].extra.node_cpu.n0", "is not of type 'number'"),
    ('{"node_ram_gb": 7}', "running[0].extra.node_ram_gb", "is not of type 'object'"),
    ('{"node_cpu": null}', "running[0].extra.node_cpu", "is not of type 'object'"),
    ('null', "running[0].extra", "is not of type 'object'")])
def test_a_bad_per_server_amount_in_a_file_names_the_file_and_field(snapshot, tmp_path, extra,
                                                                   field, says):
    path = _file_with_extra(snapshot, tmp_path, extra)
    with pytest.raises(InputError) as err:
        load_instance(path)
    assert err.value.source == str(path) and err.value.field == field
    assert says in err.value.message and err.value.fix


def test_the_cli_refuses_such_a_file_with_one_line(snapshot, tmp_path, capsys):
    path = _file_with_extra(snapshot, tmp_path, '{"node_cpu": {"n0": -0.5}}')
    assert main(["solve", str(path), "--method", "greedy"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert str(path) in err and "running[0].extra.node_cpu.n0" in err
