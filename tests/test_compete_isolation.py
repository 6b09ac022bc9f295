"""Entrants cannot see each other: each runs in a private folder outside the output tree,
deleted after its run, and, when the runner is root, as a user of its own with its own
temporary folder, who can read neither the output tree nor another entrant's files.

The entrants are shell scripts (``/bin/sh`` is usable by every user; an interpreter in a
folder only root may enter, such as ``/root/.pyenv``, is not, and such an entrant runs as
the runner's user with the reason stated: tested below too).
"""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest
from conftest import readable_dir

from dlsched.benchmarks.build import build_suite
from dlsched.benchmarks.compete import compete, parse_entrant
from dlsched.benchmarks.isolation import ENTRANT_UID_BASE, entrant_identity

ROOT = os.geteuid() == 0

# writes a valid solution (every job waits) and a secret beside it
HONEST = r"""
sha=$(sed -n 's/^  "sha256": "\([0-9a-f]*\)".*/\1/p' "$1")
printf '{"format_version": 1, "instance_sha256": "%s", "placements": []}' "$sha" > "$2"
echo "secret-of-honest" > secret.txt
"""

# looks for any other solution.json or secret it can read: in the output tree (whose path
# it is given) and in the solvers' private folders (dlsched-run-* in the temporary folder)
COPYCAT = r"""
out_tree="$3"
found=""
for f in $(find /tmp/dlsched-run-* "$out_tree" -name 'solution.json' -o -name 'secret.txt' \
           2>/dev/null); do
    case "$f" in "$PWD"/*) continue ;; esac
    if cat "$f" > /dev/null 2>&1; then found="$found $f"; cp "$f" "$2" 2>/dev/null; fi
done
for f in "$out_tree"/runs/honest/*/solution.json; do
    if cat "$f" > /dev/null 2>&1; then found="$found $f"; cp "$f" "$2"; fi
done
echo "uid=$(id -u) pwd=$PWD tmpdir=$TMPDIR found=[${found# }]"
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("lib") / "one"
    root.mkdir()
    (root / "suite.json").write_text(json.dumps({
        "name": "one", "best_known": {"runs": [{"method": "greedy"}]},
        "instances": [{"name": "h", "generator": "horus", "seeds": [0],
                       "arguments": {"nodes": 2, "gpus_per_node": 2, "beta": 2}}]}))
    return build_suite(root, jobs=1, progress=False)


@pytest.fixture
def scripts():
    folder = readable_dir()
    for name, body in (("honest", HONEST), ("copycat", COPYCAT)):
        (folder / f"{name}.sh").write_text(body)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _copycat_line(out) -> str:
    run = next((out / "runs" / "copycat").iterdir())
    return (run / "stdout.txt").read_text().strip()


def test_a_copycat_finds_no_other_entrants_solution(suite, scripts, tmp_path):
    out = tmp_path / "out"
    entrants = [parse_entrant(f"/bin/sh {scripts / 'honest.sh'} {{instance}} {{solution}}",
                              "honest"),
                parse_entrant(f"/bin/sh {scripts / 'copycat.sh'} {{instance}} {{solution}} "
                              f"{out}", "copycat")]
    compete(suite, entrants, out, time_limit=30, grace=1, progress=False, plots=False)
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False, na_values=[""])
    outcome = dict(zip(scores["entrant"], scores["outcome"], strict=True))
    line = _copycat_line(out)
    fields = dict(item.split("=", 1) for item in line.split(" ", 3))
    # the solver's folder is private, outside the output tree, and its TMPDIR inside it
    assert not fields["pwd"].startswith(str(out.resolve())), line
    assert fields["tmpdir"] == fields["pwd"] + "/tmp", line
    assert not os.path.exists(fields["pwd"])  # deleted after the run
    # the honest entrant's files were copied back into the output tree for the record
    honest_run = next((out / "runs" / "honest").iterdir())
    assert (honest_run / "secret.txt").read_text() == "secret-of-honest\n"
    assert outcome["honest"] == "ok"
    if ROOT:  # a user of its own: the output tree (0700) and other folders are closed
        assert int(fields["uid"]) >= ENTRANT_UID_BASE, line
        assert fields["found"] == "[]", line
        assert outcome["copycat"] == "missing"
        assert (out / "runs").stat().st_mode & 0o777 == 0o700
    else:  # the runner's own user: the earlier run's private folder is already gone
        assert "/tmp/dlsched-run-" not in fields["found"], line


@pytest.mark.skipif(not ROOT, reason="switching users needs root")
def test_each_entrant_runs_as_a_user_of_its_own(suite, scripts, tmp_path):
    a, b = entrant_identity("a"), entrant_identity("b")
    assert a is not None and b is not None and a.uid != b.uid and min(a.uid, b.uid) > 0
    assert entrant_identity("a", "self") is None
    nobody = entrant_identity("x", "nobody")
    assert nobody is not None and nobody.uid != 0


@pytest.mark.skipif(not ROOT, reason="switching users needs root")
def test_an_entrant_its_user_cannot_run_runs_as_the_runner_with_the_reason(suite, tmp_path):
    hidden = tmp_path / "hidden"  # under pytest's 0700 folder: no other user may enter
    hidden.mkdir()
    script = hidden / "honest.sh"
    script.write_text(HONEST)
    entrant = parse_entrant(f"/bin/sh {script} {{instance}} {{solution}}", "hidden")
    _, notes = compete(suite, [entrant], tmp_path / "out", time_limit=30, grace=1,
                       progress=False, plots=False)
    scores = pd.read_csv(tmp_path / "out" / "scores.csv", keep_default_na=False,
                         na_values=[""])
    assert scores["outcome"].tolist() == ["ok"]
    assert "not isolated" in scores["reason"].iloc[0] and str(script) in scores["reason"].iloc[0]
    assert any("not isolated" in n for n in notes)


def test_run_as_a_named_user_needs_root_and_an_existing_user():
    from dlsched import InputError

    if not ROOT:
        with pytest.raises(InputError, match="not root"):
            entrant_identity("x", "nobody")
    else:
        with pytest.raises(InputError, match="no user"):
            entrant_identity("x", "no-such-user-dlsched")
        with pytest.raises(InputError, match="root"):
            entrant_identity("x", "root")
