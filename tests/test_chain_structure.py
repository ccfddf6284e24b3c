"""The chains the builder makes for the paper's examples: states, actions, ordering
filters and where negations are checked (paper sections 3-5)."""

from __future__ import annotations

from cepcli.automata.chain import Action, Negation, build_chain
from cepcli.engines import compile_pattern

EXAMPLE_1_1 = """PATTERN SEQ(A a, B b, C c)
WHERE skip_till_any_match { a.price > 10 AND b.price > 10 AND c.price > 10 }
WITHIN 1 hour"""

PATTERN_4 = """PATTERN SEQ(A a, NOT(B b), C c, D d)
WHERE skip_till_any_match { b.x < c.y }
WITHIN 1 hour"""


def test_example_1_1_with_order_c_b_a() -> None:
    _, pattern = compile_pattern(EXAMPLE_1_1)
    (chain,) = build_chain(pattern, ("c", "b", "a"), Negation.POST_PROCESSING).chains
    assert chain.order == ("c", "b", "a")
    c, b, a = chain.states
    assert [s.action for s in chain.states] == [Action.TAKE] * 3
    # q1 takes C from the stream and stores A and B; nothing was taken before it.
    assert (c.prec, c.succ, c.stores, c.ignores, c.from_stream) == ((), (), ("b", "a"), (), True)
    # q2 takes B from the buffer only: it must precede the C already taken.
    assert (b.prec, b.succ, b.from_stream) == ((), ("c",), False)
    # q3 takes A, before B and C: prec(A) = {}, succ(A) = {B, C} (the earliest is used).
    assert (a.prec, a.succ, a.ignores, a.from_stream) == ((), ("b", "c"), ("b", "c"), False)
    assert chain.negative == ()


def test_conjunction_has_no_ordering_filters() -> None:
    _, pattern = compile_pattern("PATTERN AND(A a, B b, C c) WITHIN 1 h")
    (chain,) = build_chain(pattern, ("b", "c", "a"), Negation.POST_PROCESSING).chains
    assert chain.order == ("b", "c", "a")
    assert all(s.prec == () and s.succ == () and s.from_stream for s in chain.states)


def test_partial_sequence_keeps_several_filter_candidates() -> None:
    _, pattern = compile_pattern("PATTERN AND(SEQ(A a, B b), SEQ(C c, D d), E e) WITHIN 1 h")
    (chain,) = build_chain(pattern, ("e", "d", "b", "c", "a"), Negation.POST_PROCESSING).chains
    by_var = {s.var: s for s in chain.states}
    assert (by_var["e"].prec, by_var["e"].succ) == ((), ())
    assert (by_var["c"].prec, by_var["c"].succ) == ((), ("d",))
    assert (by_var["a"].prec, by_var["a"].succ) == ((), ("b",))


def test_pattern_4_post_processing() -> None:
    _, pattern = compile_pattern(PATTERN_4)
    nfa = build_chain(pattern, ("c", "a", "d", "b"), Negation.POST_PROCESSING)
    (chain,) = nfa.chains
    assert chain.order == ("c", "a", "d")
    assert all(s.rejects == () for s in chain.states)
    # The negative sub-chain checks B after the positive chain; B must precede C, so a
    # failed buffer search passes the state (no timeout needed).
    (b,) = chain.negative
    assert (b.var, b.prec, b.succ, b.timeout) == ("b", ("a",), ("c", "d"), False)
    # Every positive state stores the negated type as well.
    assert all("b" in s.stores for s in chain.states)


def test_pattern_4_first_chance_checks_b_once_a_and_c_are_taken() -> None:
    _, pattern = compile_pattern(PATTERN_4)
    (chain,) = build_chain(pattern, ("c", "a", "d", "b"), Negation.FIRST_CHANCE).chains
    c, a, d = chain.states
    # DEP(B) = {ImmPrec = A, ImmSucc = C} plus C from b.x < c.y: checked after A is taken,
    # before D (the paper's Figure), not in a negative sub-chain.
    assert (c.rejects, a.rejects, d.rejects) == ((), ("b",), ())
    assert chain.negative == ()


def test_trailing_negation_is_post_processed_with_a_timeout_even_first_chance() -> None:
    _, pattern = compile_pattern("PATTERN SEQ(A a, C c, NOT D d) WITHIN 1 h")
    (chain,) = build_chain(pattern, ("c", "a", "d"), Negation.FIRST_CHANCE).chains
    assert all(s.rejects == () for s in chain.states)
    (d,) = chain.negative
    assert (d.var, d.timeout) == ("d", True)


def test_negative_sub_chain_in_descending_frequency() -> None:
    _, pattern = compile_pattern("PATTERN AND(A a, NOT B b, NOT C c, NOT D d) WITHIN 1 h")
    (chain,) = build_chain(pattern, ("a", "c", "d", "b"), Negation.POST_PROCESSING).chains
    assert [n.var for n in chain.negative] == ["b", "d", "c"]
    assert all(n.timeout for n in chain.negative)


def test_kleene_pattern_5_iterates_last_whatever_its_frequency() -> None:
    _, pattern = compile_pattern("PATTERN SEQ(A a, B+ b[], C c) WITHIN 1 h")
    (chain,) = build_chain(pattern, ("b", "c", "a"), Negation.POST_PROCESSING).chains
    assert chain.order == ("c", "a", "b")
    assert [s.action for s in chain.states] == [Action.TAKE, Action.TAKE, Action.ITERATE]
    assert (chain.states[2].prec, chain.states[2].succ) == (("a",), ("c",))


def test_group_by_attribute_for_kleene() -> None:
    _, pattern = compile_pattern("PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x = b[i-1].x WITHIN 1 h")
    (chain,) = build_chain(pattern, ("a", "c", "b"), Negation.POST_PROCESSING).chains
    assert chain.states[2].group_by == "x"


def test_pattern_8_multi_chain_one_chain_per_branch() -> None:
    _, pattern = compile_pattern("PATTERN OR(SEQ(A a, B b, C c), SEQ(C c2, D d, E e)) WITHIN 1 hour")
    nfa = build_chain(pattern, ("c", "c2", "b", "a", "d", "e"), Negation.POST_PROCESSING)
    assert [chain.order for chain in nfa.chains] == [("c", "b", "a"), ("c2", "d", "e")]
