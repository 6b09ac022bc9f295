"""The papers' claims files (benchmarks/claims/*.toml): schema, ids, quotes, signs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlsched.benchmarks.paper_claims import PAPERS, claim, load, parse
from dlsched.errors import InputError

# the claims `dlsched reproduce` and the benchmark scripts compute (read from the files)
COMPUTED = [
    *(f"horus.table6.{w}.{b}" for w in ("w-small", "w-large") for b in ("fifo", "obp", "pab")),
    "horus.fig7.runtime", "horus.fig8.util-gain", "horus.fig8.util-level",
    "horus.table7.wait", "horus.table7.wait-f",
    "genie.fig13.qos", "genie.fig13.makespan", "genie.fig17.qos", "genie.fig17.makespan",
    "liquid.fig18.random", "liquid.fig18.even",
    *(f"liquid.fig19d.{m}.{b}" for m in ("makespan", "jct") for b in ("random", "even")),
    "sched2.fig7.E-60", "sched2.fig7.E-68", "sched2.fig7.E-75", "sched2.fig7.makespan",
    "sched2.fig7.jct", "sched2.fig10.wait", "sched2.fig10.run",
    "inference.table2.heuristic-fixed", "inference.table2.rl-heuristic",
    "inference.table4.heuristic-fixed", "inference.table4.rl-heuristic",
    *(f"inference.table{t}.{p}" for t in (3, 5) for p in ("fixed", "heuristic", "rl")),
]
# stated in the papers' text, not computed (none left)
NOT_RUN: list[str] = []

SEEDS = Path("/work/shared/seeds")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SEED_FILES = {"genie": "000_", "liquid": "001_", "horus": "002_", "sched2": "003_",
              "inference": "004_"}


def _all():
    return [c for p in PAPERS for c in load(p).values()]


def test_every_computed_and_listed_claim_is_in_the_files():
    ids = {c.id for c in _all()}
    assert set(COMPUTED) | set(NOT_RUN) <= ids
    assert ids == set(COMPUTED) | set(NOT_RUN)  # a new claim is listed here as run or not


def test_every_id_the_benchmarks_look_up_is_in_the_files():
    ids = {c.id for c in _all()}
    source = "\n".join(p.read_text(encoding="utf-8") for p in BENCHMARKS.glob("*.py"))
    looked_up = re.findall(r"""claim\(f?["']([^"']+)["']\)""", source)
    assert len(looked_up) >= 10
    for pattern in looked_up:  # an f-string's fields match any id part
        regex = re.sub(r"\\\{.*?\\\}", "[A-Za-z0-9-]+", re.escape(pattern))
        assert any(re.fullmatch(regex, i) for i in ids), pattern


def test_ids_are_unique_and_prefixed_by_their_paper():
    for paper in PAPERS:
        for cid in load(paper):
            assert cid.startswith(paper + ".")
            assert re.fullmatch(r"[a-z0-9]+(\.[A-Za-z0-9-]+)+", cid), cid
    ids = [c.id for c in _all()]
    assert len(ids) == len(set(ids))


def test_the_numbers_reproduce_compares_against():
    # the papers' figures, typed in from the papers (not from the files)
    assert claim("horus.table6.w-small.fifo").value == 204.0
    assert claim("horus.table6.w-small.fifo").baseline == 267.3
    assert claim("horus.table6.w-large.pab").baseline == 277.6
    assert claim("horus.fig7.runtime").value == {"w-small": [0.103, 0.303],
                                                 "w-large": [0.082, 0.218]}
    assert claim("genie.fig13.makespan").value == -0.282
    assert claim("liquid.fig18.even").value == -0.32
    assert claim("sched2.fig7.E-60").value == 0.64
    assert (claim("sched2.fig10.wait").value, claim("sched2.fig10.wait").baseline) == (557,
                                                                                       19075)
    assert claim("horus.fig8.util-gain").value == 0.615
    assert claim("genie.fig17.makespan").value == -0.208
    assert claim("sched2.fig7.makespan").change() == pytest.approx(1 / 2.1 - 1)
    assert claim("inference.table4.rl-heuristic").value == [0.955, 0.895, 0.933, 0.922]
    assert claim("horus.table6.w-large.fifo").change() == pytest.approx(-0.3066, abs=1e-4)
    assert claim("liquid.fig18.random").change() == -0.14


def _numbers(value) -> list[float]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    return list(value) if isinstance(value, list) else [value]


def test_direction_agrees_with_the_sign_of_the_number():
    checked = 0
    for c in _all():
        if c.direction == "level":
            continue
        if c.baseline is not None:
            pairs = zip(_numbers(c.value), _numbers(c.baseline), strict=True)
        elif c.unit == "relative change":
            pairs = ((x, 0.0) for x in _numbers(c.value))
        else:  # a ratio "by 2.1x" of the baseline over the claimed policy
            pairs = ((1.0, x) for x in _numbers(c.value))
        for claimed, base in pairs:
            assert (claimed > base) == (c.direction == "higher"), c.id
            checked += 1
    assert checked >= 30


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' text is not on this machine")
def test_quotes_are_verbatim_from_the_papers():
    def norm(text: str) -> str:
        return " ".join(re.sub(r"</?b>|\*", "", text).split())

    for paper, prefix in SEED_FILES.items():
        (path,) = SEEDS.glob(prefix + "*.txt")
        text = norm(path.read_text(encoding="utf-8"))
        for c in load(paper).values():
            assert norm(c.quote) in text, c.id


GOOD = """version = 1
paper = "horus"
[[claim]]
id = "horus.x"
quote = "q"
source = "Table 1"
value = 1.0
unit = "min"
direction = "lower"
setting = "s"
"""


def test_a_good_file_parses():
    assert parse(GOOD, "horus", "horus.toml")["horus.x"].unit == "min"


@pytest.mark.parametrize("text, field", [
    (GOOD.replace('id = "horus.x"', 'id = "genie.x"'), "claim[0].id"),
    (GOOD.replace('unit = "min"\n', ""), "claim[0]"),
    (GOOD.replace('"lower"', '"down"'), "claim[0].direction"),
    (GOOD.replace("value = 1.0", 'value = "a lot"'), "claim[0].value"),
    (GOOD + 'extra = 1\n', "claim[0]"),
    (GOOD + GOOD[GOOD.index("[[claim]]"):], "claim[1].id"),
    (GOOD.replace("version = 1", "version = 2"), "version"),
])
def test_a_bad_file_names_file_and_field(text, field):
    with pytest.raises(InputError) as err:
        parse(text, "horus", "horus.toml")
    assert err.value.field == field
    assert err.value.source == "horus.toml"


def test_unknown_paper_and_id():
    with pytest.raises(InputError, match="no claims for paper"):
        load("nopaper")
    with pytest.raises(InputError, match="no claim 'horus.table99'"):
        claim("horus.table99")
