"""Cut the small trace excerpts in this folder from the raw samples (run once, by hand).

Source files: ``../shared/traces/raw_samples/`` (see README.md here for each file's origin
and license). Only line selection happens here; kept lines are copied byte for byte.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
RAW = HERE.parents[3] / "shared" / "traces" / "raw_samples"


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def main() -> None:
    philly = lines(RAW / "dirlab_philly" / "philly_data_training.csv")
    (HERE / "dirlab_philly_40.csv").write_text("".join(philly[:41]), encoding="utf-8")
    itp = lines(RAW / "itp_raw" / "cluster10.csv")
    (HERE / "itp_cluster10_40.csv").write_text("".join(itp[:41]), encoding="utf-8")
    pods = lines(RAW / "alibaba_openb_raw" / "openb_pod_list_default.csv")
    # header + pods 6000..6039 (file lines 6002..6041): whole-GPU and shared pods,
    # CPU-only pods and pods never scheduled
    (HERE / "alibaba_pods_40.csv").write_text("".join([pods[0], *pods[6001:6041]]),
                                              encoding="utf-8")
    nodes = lines(RAW / "alibaba_openb_raw" / "openb_node_list_all_node.csv")
    gpu_nodes = [ln for ln in nodes[1:] if ln.split(",")[3] != "0"][:12]
    (HERE / "alibaba_nodes_12.csv").write_text("".join([nodes[0], *gpu_nodes]),
                                               encoding="utf-8")
    gavel = (RAW / "gavel" / "artifact_evaluation.trace").read_bytes()
    (HERE / "gavel_artifact_evaluation.trace").write_bytes(gavel)


if __name__ == "__main__":
    main()
