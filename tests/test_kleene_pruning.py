"""A condition on a Kleene variable's first element cuts its subsets there: the subsets
that start with an element that fails it are never grown (issue: a chain of growing delays
that never finished)."""

from __future__ import annotations

import pytest

from tests.harness import run_engine
from tests.oracle import oracle

ENGINES = ("eager", "chain", "tree", "first-chance", "post-processing", "adaptive")


def _rising(n: int) -> str:
    """An A of x = 100, then ``n`` B's of rising x, of which only the last three are above
    it, then a C."""
    rows = ["ts,type,x", "0,A,100"] + [f"{i + 1},B,{50 + i if i < n - 3 else 200 + i}" for i in range(n)]
    return "\n".join([*rows, f"{n + 1},C,0"]) + "\n"


FIRST = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > b[i-1].x AND b[1].x > a.x WITHIN 100"
EACH = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > b[i-1].x AND b[i].x > a.x WITHIN 100"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_first_element_cuts_the_subsets(engine: str) -> None:
    """16 B's: 65,535 rising subsets, of which 7 start above a.x. With the cut the engine
    looks at a few hundred prefixes, as the element-wise twin does; the matches are the
    oracle's (the same as the twin's: in a rising run, the first above a.x is all above)."""
    data = _rising(16)
    found, stats = run_engine(FIRST, data, engine)
    twin, twin_stats = run_engine(EACH, data, engine)
    assert found == twin == oracle(FIRST, data) and len(found) == 7
    assert stats.predicate_evaluations < 1_000, stats.predicate_evaluations
    assert stats.predicate_evaluations <= 3 * twin_stats.predicate_evaluations


@pytest.mark.parametrize("engine", ENGINES)
def test_the_cut_waits_for_the_variables_it_reads(engine: str) -> None:
    """``b[1].x > c.x`` reads C, which comes after the B's: where an engine forms the
    subsets before it takes c (the chain from the rarest, here a), the cut must wait;
    the matches are the oracle's either way."""
    query = "PATTERN SEQ(A a, B+ b[], C c) WHERE b[1].x > c.x AND b[last].x < 250 WITHIN 100"
    data = _rising(6)
    assert run_engine(query, data, engine)[0] == oracle(query, data)


NEXT = "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match { b[i].x > b[i-1].x } WITHIN 100"


@pytest.mark.parametrize("engine", ENGINES)
def test_next_match_grows_one_run_per_start(engine: str) -> None:
    """Under skip_till_next_match a Kleene variable takes every next qualifying event: 14
    rising B's after an A hold 16,383 rising subsets but one run (the first B starts it);
    every engine grows one run per start (eager drops an instance that lets the run's next
    element pass), a few hundred predicate evaluations where the subsets take some hundred
    thousand. (The oracle, which enumerates every subset, agrees
    on 8 B's.)"""
    found, stats = run_engine(NEXT, _rising(14), engine)
    assert found == {frozenset({("a", (0,)), ("b", tuple(range(1, 15)))})}
    assert stats.predicate_evaluations < 2_000, stats.predicate_evaluations
    small = _rising(8)
    assert run_engine(NEXT, small, engine)[0] == oracle(NEXT, small)
