"""The Tree NFA follows the buffer counters: its evaluation order changes with the
stream, and its states are made only where instances go (paper section 7)."""

from __future__ import annotations

from cepcli.automata.chain import Action
from cepcli.automata.tree import build_tree, tree_state
from cepcli.engines import compile_pattern
from tests.harness import run_engine
from tests.oracle import oracle

SEQ3 = "PATTERN SEQ(A a, B b, C c) WITHIN 10"


def _stream(*parts: list[tuple[int, str]]) -> str:
    rows = [f"{ts},{kind}" for part in parts for ts, kind in part]
    return "ts,type\n" + "\n".join(rows) + "\n"


def test_after_a_burst_of_the_rare_type_the_order_changes() -> None:
    # First A is rare (1 A, 5 B before the C), then, after the window has passed,
    # a burst of A makes B the rare one (6 A, 1 B).
    quiet = [(0, "A"), (1, "B"), (2, "B"), (3, "B"), (4, "B"), (5, "B"), (6, "C")]
    burst = [(100 + i, "A") for i in range(6)] + [(106, "B"), (107, "C")]
    data = _stream(quiet, burst)
    found, stats = run_engine(SEQ3, data, "tree")
    assert found == oracle(SEQ3, data)
    orders = stats.extra["tree_orders"]
    assert orders == {"c a b": 5, "c b a": 6}, orders


def test_ties_go_to_the_variable_written_first() -> None:
    data = _stream([(0, "A"), (1, "B"), (2, "C")])
    _, stats = run_engine(SEQ3, data, "tree")
    assert stats.extra["tree_orders"] == {"c a b": 1}


def test_no_evaluation_until_every_counter_is_positive() -> None:
    # Without any B in the window, a C starts nothing (p_ne): no instance, no state.
    data = _stream([(0, "A"), (1, "A"), (2, "C"), (3, "C")])
    found, stats = run_engine(SEQ3, data, "tree")
    assert found == set()
    assert stats.instances_created == 0
    assert stats.extra["tree_states_instantiated"] == 0


def test_counters_follow_the_window() -> None:
    # The only B has left the window when the C arrives: no evaluation either.
    data = _stream([(0, "A"), (1, "B"), (20, "A"), (21, "C")])
    found, stats = run_engine(SEQ3, data, "tree")
    assert found == set()
    assert stats.instances_created == 0


def test_states_are_made_lazily_not_the_n_factorial_tree() -> None:
    names = "abcdefgh"
    query = "PATTERN AND(" + ", ".join(f"{n.upper()} {n}" for n in names) + ") WITHIN 100"
    rows = [(i, n.upper()) for i, n in enumerate(names)]
    data = _stream(rows)
    found, stats = run_engine(query, data, "tree")
    assert len(found) == 1
    # One path from the root down: 8 states of the 8! = 40,320 leaves' tree (plus the
    # root edges' states), and only the path of the current instance is live at once.
    assert stats.extra["tree_states_instantiated"] <= 16
    assert stats.extra["peak_live_states"] <= 8


def test_tree_state_edges_have_the_filters_of_their_path() -> None:
    _, pattern = compile_pattern("PATTERN SEQ(A a, B b, C c) WITHIN 1 h")
    (tree,) = build_tree(pattern).branches
    assert tree.triggers == ("c",)
    state = tree_state(tree, ("c", "a"))
    (edge,) = state.edges
    assert (edge.var, edge.action, edge.prec, edge.succ) == ("b", Action.TAKE, ("a",), ("c",))
    state = tree_state(tree, ("c",))
    assert {e.var: (e.prec, e.succ) for e in state.edges} == {"a": ((), ("c",)), "b": ((), ("c",))}


def test_kleene_is_taken_last_and_only_after_the_others() -> None:
    _, pattern = compile_pattern("PATTERN SEQ(A a, B+ b[], C c) WITHIN 1 h")
    (tree,) = build_tree(pattern).branches
    assert [e.var for e in tree_state(tree, ("c",)).edges] == ["a"]
    (edge,) = tree_state(tree, ("c", "a")).edges
    assert (edge.var, edge.action) == ("b", Action.ITERATE)


def _keyed(rows: list[tuple[int, str, str]]) -> str:
    return "ts,type,k\n" + "".join(f"{ts},{kind},{k}\n" for ts, kind, k in rows)


def test_an_arrival_whose_join_value_no_buffered_event_holds_starts_nothing() -> None:
    # p_ne per value: the As that no buffered B can join (k = 2, 3, missing) start no
    # instance; the A with k = 1 does, and finds the match.
    query = "PATTERN AND(A a, B b) WHERE a.k = b.k WITHIN 10"
    data = _keyed([(0, "B", "1"), (1, "A", "2"), (2, "A", "3"), (3, "A", ""), (4, "A", "1")])
    found, stats = run_engine(query, data, "tree")
    assert found == oracle(query, data)
    assert len(found) == 1
    assert stats.instances_created == 2  # in q_(a), then q_(a,b), for the last A only


def test_partial_work_is_remembered_across_arrivals() -> None:
    # Each A completes {a, d} and then needs the Bs that join d (b.k = d.k), which does
    # not depend on the A: the five Bs are checked against d once, not once per A.
    query = "PATTERN AND(A a, B b, D d) WHERE b.k = d.k WITHIN 100"
    rows = [(0, "D", "1")] + [(1 + i, "B", "2") for i in range(5)]
    rows += [(10 + i, "A", "x") for i in range(20)]
    data = _keyed(rows)
    found, stats = run_engine(query, data, "tree")
    assert found == oracle(query, data) == set()
    assert stats.predicate_evaluations == 5
    assert stats.extra["tree_memo_hits"] == 19
    # A B that joins arrives later: the remembered range grows by it alone, and the As
    # after it find their matches.
    later = rows + [(40, "B", "1")] + [(41 + i, "A", "y") for i in range(3)]
    data = _keyed(later)
    found, stats = run_engine(query, data, "tree")
    assert found == oracle(query, data)
    assert len(found) == 23  # the B with each of the twenty As before it, then the three after it
