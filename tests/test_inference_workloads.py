"""Inference workloads: the generator, the Azure trace reader, committed files, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dlsched.cli import main
from dlsched.errors import InputError
from dlsched.instance_io import load_instance
from dlsched.instances.azure_llm import azure_workload, compression_for, read_azure_llm
from dlsched.instances.inference_gen import diurnal_rate, generate_inference, parse_gpus
from dlsched.problems.inference import inference_data
from dlsched.problems.inference.policies import FixedPolicy, HeuristicPolicy
from dlsched.serve import serve
from dlsched.validate import validate

WORKLOADS = Path(__file__).resolve().parents[1] / "instances" / "workloads"
CSV = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:46.6816000,396,109
2023-11-16 18:15:47.0000000,879,11
2023-11-16 18:15:50.2000009,91,8
"""


def test_generator_is_seeded_and_sane():
    a = generate_inference(seed=4, hours=0.02)
    b = generate_inference(seed=4, hours=0.02)
    c = generate_inference(seed=5, hours=0.02)
    assert a.sha256 == b.sha256 != c.sha256
    d = inference_data(a)
    assert (np.diff(d.arrival) >= 0).all()
    # t_s = request + 1 s, t_h = request + 2 s; the upstream delay is 20 ms .. 1 s
    assert (d.hard - d.soft == 1000).all()
    delay = d.arrival - (d.soft - 1000)
    assert delay.min() >= 20 and delay.max() <= 1000
    assert parse_gpus("g2:5,p2:5") == ["g2"] * 5 + ["p2"] * 5
    assert diurnal_rate(3.0, 24.0) < diurnal_rate(15.5, 24.0) <= 24.0


def test_azure_reader_by_hand(tmp_path):
    path = tmp_path / "AzureLLMInferenceTrace_test.csv"
    path.write_text(CSV)
    frame = read_azure_llm(path)
    # 46.68059 → 0 ms; 46.6816 → 1.01 ms → 1; 47.0 → 319.41 → 319; 50.2000009 → 3519.41 → 3519
    assert frame["arrival_ms"].tolist() == [0, 1, 319, 3519]
    assert frame["context_tokens"].tolist() == [374, 396, 879, 91]
    inst = azure_workload(path, factor=2.0)
    d = inference_data(inst)
    assert d.arrival.tolist() == [0, 0, 159, 1759]
    assert (d.soft - d.arrival).tolist() == [1000] * 4
    assert d.size.tolist() == [374, 396, 879, 91]
    # 4 requests over 3.51941 s → 1.1365 req/s; a 10 req/s target needs ≈ 8.80
    assert compression_for(frame, 10.0) == pytest.approx(10.0 / (4 / 3.519), rel=1e-3)


def test_azure_reader_bad_input(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.6805900,3\n")
    with pytest.raises(InputError, match="GeneratedTokens"):
        read_azure_llm(bad)
    bad.write_text(CSV.replace("18:15:47.0000000", "18:15:40.0000000"))
    with pytest.raises(InputError, match=r"TIMESTAMP\[2\]"):
        read_azure_llm(bad)


@pytest.mark.parametrize("name", sorted(p.name for p in WORKLOADS.glob("inference-azure-*")))
def test_committed_azure_workloads_load_and_serve(name):
    inst = load_instance(WORKLOADS / name)
    assert inst.problem == "inference" and "Azure" in inst.provenance["source"]
    d = inference_data(inst)
    assert d.num_queries in (8819, 19366)
    for pol in (FixedPolicy(), HeuristicPolicy()):
        run = serve(inst, pol)
        assert validate(inst, run.decision()).ok


def test_cli_generate_and_simulate(tmp_path, capsys):
    w = tmp_path / "w.json"
    assert main(["generate", "inference", "--hours", "0.01", "--seed", "2", "-o", str(w)]) == 0
    for policy in ("fixed", "heuristic"):
        out = tmp_path / policy
        assert main(["simulate", str(w), "--policy", policy, "--no-plots", "--out",
                     str(out)]) == 0
        summary = json.loads((out / "summary.json").read_text())["summary"]
        assert 0.0 <= summary["mean_q"] <= 1.0
        assert (out / "queries.csv").exists()
    assert main(["simulate", str(w), "--policy", "nope", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--policy" in err and err[-1] == "\n" and err.count("\n") == 1


def test_cli_exact_window_on_a_tiny_workload(tmp_path):
    from inference_factories import tiny_instance

    from dlsched.instance_io import save_instance

    inst = tiny_instance([(0, 100, 160), (0, 100, 160), (5, 1000, 2000)])
    path = tmp_path / "t.json"
    save_instance(inst, path)
    out = tmp_path / "ex"
    assert main(["simulate", str(path), "--policy", "exact-window", "--option", "window=3",
                 "--no-plots", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())["summary"]
    # full{0} [0,100) = 1, then tiny{1} [100,140) = 0.5·20/60, full{2} = 1 (see exact tests)
    assert summary["mean_q"] * 3 == pytest.approx(2.0 + 0.5 * 20 / 60)


def test_rl_cli_is_wired(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rl", "train", "inference", "--help"])
    assert exc.value.code == 0
    assert "--teacher-beta" in capsys.readouterr().out


def test_core_imports_without_torch():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "import dlsched, dlsched.serve, dlsched.rl.cli, dlsched.heuristics.inference_pg\n"
            "from dlsched.cli import build_parser; build_parser(); print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
