"""The hand-written cases of ``tests/cases.py`` against the oracle and every engine."""

from __future__ import annotations

import pytest

from tests.cases import CASES, Case
from tests.harness import run_engine
from tests.oracle import MatchKey, oracle

# Engines that must equal the oracle. Add a name here when an engine lands:
# "chain", "first-chance", "post-processing", "tree".
# Every engine, and the lazy ones with several frequency orders (a wrong order must
# change the cost, never the result): see tests.harness.run_engine.
ENGINES = [
    "eager",
    "chain",
    "chain:reverse",
    "chain:shuffle",
    "post-processing:pattern",
    "first-chance",
    "first-chance:reverse",
    "first-chance:shuffle",
    "tree",
    "adaptive",
    "adaptive:w4",
    "adaptive:half",
    "adaptive:mixed",
    "adaptive:pipe",
    "columnar",
    "columnar:pipe",
    "columnar:steps",
]

# Cases also run with several reader chunk sizes (chunk borders must not matter).
CHUNKED = [
    "seq_paper_a1a2b1b2c",
    "and_inside_seq",
    "or_two_branches_same_match_reported_once",
    "neg_leading_within_window",
    "neg_trailing_within_window",
    "kleene_prefix_avg",
    "kleene_avg_skips_missing",
    "equivalence_with_negation_and_missing",
    "iso_timestamps_time_zones",
]
CHUNK_ROWS = [1, 3, 1000]

_BY_NAME = {c.name: c for c in CASES}


def _show(keys: set[MatchKey]) -> list[dict[str, tuple[int, ...]]]:
    """Matches as sorted dicts, for readable assertion messages."""
    return sorted((dict(sorted(k)) for k in keys), key=lambda d: sorted(d.items()))


def _oracle(case: Case) -> set[MatchKey]:
    return oracle(case.query, case.csv, type_col=case.type_col)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_oracle_matches_hand_result(case: Case) -> None:
    got = _oracle(case)
    assert got == case.expected, (
        f"oracle disagrees with the hand result\n  missing: {_show(case.expected - got)}"
        f"\n  extra:   {_show(got - case.expected)}"
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_engine_equals_oracle(case: Case, engine: str) -> None:
    want = _oracle(case)
    got, _ = run_engine(case.query, case.csv, engine, type_col=case.type_col)
    assert got == want, (
        f"{engine} disagrees with the oracle\n  missing: {_show(want - got)}"
        f"\n  extra:   {_show(got - want)}"
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("chunk_rows", CHUNK_ROWS)
@pytest.mark.parametrize("name", CHUNKED)
def test_chunk_borders(name: str, chunk_rows: int, engine: str) -> None:
    case = _BY_NAME[name]
    got, stats = run_engine(case.query, case.csv, engine, chunk_rows=chunk_rows,
                            type_col=case.type_col)
    assert got == _oracle(case)
    assert stats.events == case.csv.count("\n") - 1  # every data row was read


def test_case_table_size_and_coverage() -> None:
    """The table keeps at least one case per operator and corner."""
    text = " ".join(c.query.upper() for c in CASES)
    for needle in ("SEQ(", "AND(", "OR(", "NOT ", "NOT(", "~", "!", "+ ", "{2,3}", "{2}",
                   "{2,}", "[I-1]", "[..I-1]", "[1]", "[LAST]", "AVG(", "[ID]", " MIN",
                   "SKIP_TILL_ANY_MATCH {"):
        assert needle in text, needle
    assert sum(1 for c in CASES if not c.expected) >= 2
    assert len(CASES) >= 45
