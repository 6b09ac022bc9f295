"""Write the Azure-trace inference workloads committed under ``instances/workloads/``.

Reads the raw CSVs in ``../shared/traces/azure_llm_2023`` (CC BY 4.0, see
``instances/workloads/INFERENCE-AZURE.md``) through ``dlsched.instances.azure_llm``:

* ``inference-azure-conv-x4-p2x1.json.gz``: conversation service (19,366 requests,
  5.53 req/s), time compressed by 4 (≈ 22 req/s, the calibrated one-p2 load);
* ``inference-azure-code-x8-p2x1.json.gz``: coding service (8,819 requests, 2.57 req/s),
  compressed by 8 (≈ 21 req/s);
* ``inference-azure-conv-x32-g2x5-p2x5.json.gz``: conversation, compressed by 32
  (≈ 177 req/s) on 5 g2 + 5 p2 (the paper's cluster, its × 8 load).

Delays exactly as Table 1 (delay_cv 0). Run: ``python instances/derive/inference_azure.py``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from dlsched.canonical import pretty_json
from dlsched.instances.azure_llm import azure_workload

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "workloads"
TRACE = ROOT.parents[1] / "shared" / "traces" / "azure_llm_2023"
MADE = (
    ("AzureLLMInferenceTrace_conv.csv", 4.0, "p2:1", "inference-azure-conv-x4-p2x1.json.gz"),
    ("AzureLLMInferenceTrace_code.csv", 8.0, "p2:1", "inference-azure-code-x8-p2x1.json.gz"),
    ("AzureLLMInferenceTrace_conv.csv", 32.0, "g2:5,p2:5",
     "inference-azure-conv-x32-g2x5-p2x5.json.gz"),
)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for src, factor, gpus, name in MADE:
        inst = azure_workload(TRACE / src, factor=factor, gpus=gpus)
        data = pretty_json(inst.to_dict()).encode("utf-8")
        path = OUT / name
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        n = len(inst.params["queries"]["arrival_ms"])
        print(f"{name}: {n} queries, {path.stat().st_size} bytes, sha256 {inst.sha256[:12]}")


if __name__ == "__main__":
    main()
