"""The report page in a real browser (issue 31, item 6): `dlsched report --html DIR` and
`dlsched compete` write one self-contained index.html; headless Chromium loads it from
disk, runs its script (the tables become sortable and count their rows) and renders it.
The screenshots are kept under test-artifacts/ (git-ignored) for CI to publish."""

from __future__ import annotations

import base64
import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from dlsched.cli import main

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "docs" / "data" / "bench-quick.csv"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed: `apt-get install -y chromium` "
    "(.ci/run installs it, so CI runs these tests)")


def browser(page: Path, profile: Path, *args: str) -> str:
    """Run headless Chromium on ``page`` (a file:// URL); its stdout."""
    run = subprocess.run(
        [str(CHROMIUM), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
         f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=180, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def rendered(page: Path, tmp_path: Path, shot: str) -> str:
    """The DOM after the page's script ran; a screenshot kept as test-artifacts/SHOT,
    checked to show something (not one blank colour). One browser run gives both."""
    ARTIFACTS.mkdir(exist_ok=True)
    png = ARTIFACTS / shot
    png.unlink(missing_ok=True)
    dom = browser(page, tmp_path / "profile", "--dump-dom", f"--screenshot={png}",
                  "--window-size=1280,2400")
    import matplotlib.image as mpimg

    pixels = mpimg.imread(png)[..., :3]
    assert pixels.shape[:2] == (2400, 1280)
    assert (pixels.min(axis=2) < 0.9).mean() > 0.02  # text and tables, not blank (8 %, 3 %)
    return dom


def caption_rows(dom: str, table_id: str) -> int:
    """Rows the page's script counted in the table (its caption)."""
    match = re.search(rf'<table class="sortable" id="{re.escape(table_id)}">'
                      r'<caption>(\d+) rows; click a column heading to sort</caption>', dom)
    assert match, f"table {table_id} without the script's caption"
    return int(match[1])


def self_contained(text: str) -> None:
    """Nothing fetched from elsewhere: every src/href is inline or a link on the page."""
    for attr in re.findall(r"""(?:src|href)=['"]([^'"]*)""", text):
        assert attr.startswith(("data:image/png;base64,", "#")), attr
    assert "<link" not in text and "<script src" not in text and "@import" not in text
    for image in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", text):
        assert base64.b64decode(image).startswith(b"\x89PNG\r\n\x1a\n")


# the dlsched commands run through main() (an interpreter less each); the browser and the
# entrants are processes of their own


def two_groups(path: Path) -> Path:
    """The committed table's SCHED² and Liquid rows, line for line: a group with runs a
    method declares it does not take (n/a) and relative gaps, and one with gaps in
    objective units (its objective crosses zero); two sections of tables instead of four.
    Were GENIE (n/a, gaps in on-time tasks) and Horus (relative): the same three cases
    with longer tables (SCHED²'s 12 runs against GENIE's 56, Liquid's against Horus's)."""
    lines = TABLE.read_text(encoding="utf-8").splitlines(keepends=True)
    problem = next(csv.reader(lines[:1])).index("problem")
    kept = [line for line in lines[1:]
            if next(csv.reader([line]))[problem] in ("sched2", "liquid")]
    assert kept and len(kept) < len(lines) - 1
    path.write_text("".join(lines[:1] + kept), encoding="utf-8")
    return path


def small_pngs(monkeypatch) -> list[str]:
    """``GroupReport.plot`` replaced by one that writes a small real PNG per profile
    (white, so that the screenshot's not-blank check counts the tables' text only: the
    page's CSS stretches an image to 420 px or more); the groups it was called for. What
    this test checks of the profiles is the page's: one time and one gap image per
    group, inline, decoded PNG, shown by a browser. The drawing itself (most of this
    test's CPU: four figures' tight_layout and text) is other tests': the same
    ``GroupReport.plot`` of a relative gap in test_examples (compare_methods, horus) and
    of a gap in objective units in test_report_columns::test_printed_text (liquid), both
    checked as PNG files; and the page's real images (``group_section`` with plots) in
    test_compete_runner's test_callable_entrant_runs_in_a_subprocess."""
    import matplotlib.image as mpimg
    import numpy as np

    from dlsched.benchmarks.report import GroupReport

    drawn: list[str] = []

    def plot(self, time_png, gap_png):
        assert self.mode is not None and self.ratios is not None and self.gaps is not None
        drawn.append(self.stem)
        for out in (time_png, gap_png):
            mpimg.imsave(out, np.ones((40, 60)), cmap="gray", vmin=0, vmax=1, format="png")

    monkeypatch.setattr(GroupReport, "plot", plot)
    return drawn


def test_report_html_page_renders_every_table_and_profile(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    subset = two_groups(tmp_path / "bench-two.csv")
    drawn = small_pngs(monkeypatch)
    assert main(["report", "--input", str(subset), "--output-dir", "rep", "--no-plots",
                 "--html", "page"]) == 0
    page = tmp_path / "page" / "index.html"
    assert "wrote page/index.html" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    self_contained(text)
    table = pd.read_csv(subset, keep_default_na=False, na_values=[""])
    groups = table.groupby(["suite", "problem", "time_limit"])
    assert len(groups) == 2 and (table["status"] == "n/a").any()
    assert text.count("data:image/png;base64,") == 2 * len(groups)  # time and gap profiles
    assert sorted(drawn) == sorted(f"{s}-{p}-{limit:g}s" for s, p, limit in groups.groups)
    dom = rendered(page, tmp_path, "report-page.png")
    assert dom.count("<caption>") == dom.count("<table ")  # the script ran on every table
    for (suite, problem, limit), runs in groups:
        stem = f"{suite}-{problem}-{limit:g}s"
        assert caption_rows(dom, f"runs-{stem}") == len(runs)  # every run, per instance
        assert caption_rows(dom, f"summary-{stem}") == runs["method"].str.cat(
            runs["backend"].fillna(""), "/").nunique()
    assert dom.count("<td class=\"text\">n/a</td>") >= (table["status"] == "n/a").sum()
    assert "mean gap %" in dom and "mean gap (objective units)" in dom  # both gap kinds


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib") / "two"
    root.mkdir()
    spec = {"name": "two", "best_known": {"runs": [{"method": "greedy"}]},
            "instances": [{"name": "h", "generator": "horus", "seeds": [0, 1],
                           "arguments": {"nodes": 2, "gpus_per_node": 4, "beta": 4,
                                         "busy": 0.5}}]}
    (root / "suite.json").write_text(json.dumps(spec))
    assert main(["library", "build", "--suite", str(root), "--no-progress"]) == 0
    return root


# two entrants that need no interpreter (shell scripts, a few ms each; the instance file
# is written by pretty_json, its top-level "sha256" on a line of its own): one leaves
# every job waiting (valid, a score below 1), one writes garbage
ENTRANTS = {
    "waits": """sha=$(sed -n 's/^  "sha256": "\\([0-9a-f]*\\)".*/\\1/p' "$1")\n"""
             """printf '{"format_version": 1, "instance_sha256": "%s", "placements": []}' """
             """"$sha" > "$2"\n""",
    "garbage": "printf 'not JSON' > \"$2\"\n",
}


def test_compete_writes_a_page_with_the_leaderboard(suite, tmp_path, entrant_dir, monkeypatch):
    # --no-plots: the profiles' images in a browser are the report page's test (above);
    # the compete page's own two are checked in test_compete_runner (decoded, PNG)
    argv = ["compete", "--suite", str(suite), "--time-limit", "20", "--no-progress",
            "--no-plots", "--output", "out"]
    for name, body in ENTRANTS.items():
        (entrant_dir / f"{name}.sh").write_text(body)
        argv += ["--solver", f"/bin/sh {entrant_dir / name}.sh {{instance}} {{solution}}",
                 "--name", name]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    page = tmp_path / "out" / "index.html"
    self_contained(page.read_text(encoding="utf-8"))
    dom = rendered(page, tmp_path, "compete-page.png")
    assert caption_rows(dom, "leaderboard") == 2
    board = pd.read_csv(tmp_path / "out" / "leaderboard.csv")
    assert sorted(board["valid"]) == [0, 2]
    for entrant, total in zip(board["entrant"], board["total score"], strict=True):
        assert re.search(rf'<td class="text">{entrant}</td>.*?{total:.4g}', dom, re.DOTALL)
    assert caption_rows(dom, "runs-two-horus-20s") == 4  # 2 entrants × 2 instances
    assert "data:image/png" not in dom and "Profiles not drawn (--no-plots)." in dom
