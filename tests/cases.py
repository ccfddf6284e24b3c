"""Hand-written cases: query, a tiny stream, and the matches worked out BY HAND
from docs/semantics.md section 6 (skip-till-any-match).

``expected`` is written as a list of dicts ``{"a": 0, "b": (2, 3), "c": 4}``: row ids
are 0-based data rows (header excluded); a single event is an int, a Kleene
variable is a tuple of rows in row order; negated variables never appear. The
property ``Case.expected`` turns that into the harness's key form
``frozenset((name, rows), ...)``.

Streams are written one row per line; leading blanks are stripped, so rows can be
indented. In most streams ``ts`` equals the row id, which makes the hand work easy
to re-check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.oracle import MatchKey

Literal = list[dict[str, int | tuple[int, ...]]]


def key(match: dict[str, int | tuple[int, ...]]) -> MatchKey:
    """``{"a": 0, "b": (2, 3)}`` -> ``frozenset({("a", (0,)), ("b", (2, 3))})``."""
    return frozenset(
        (name, (rows,) if isinstance(rows, int) else tuple(rows)) for name, rows in match.items()
    )


def keys(matches: Literal) -> set[MatchKey]:
    out = {key(m) for m in matches}
    assert len(out) == len(matches), "a hand-written expected list repeats a match"
    return out


def csv(text: str) -> str:
    """A CSV literal: one row per line, surrounding blanks stripped, blank lines dropped."""
    return "".join(line.strip() + "\n" for line in text.strip().splitlines() if line.strip())


@dataclass(frozen=True)
class Case:
    name: str
    query: str
    csv: str
    matches: Literal = field(repr=False)
    type_col: str = "type"

    @property
    def expected(self) -> set[MatchKey]:
        return keys(self.matches)

    def __str__(self) -> str:
        return self.name


# Streams shared by several cases ---------------------------------------------------

PAPER = csv("""
    ts,type
    0,A
    1,A
    2,B
    3,B
    4,C
""")

# a, then B with x = 1, 3, 2, then c
KLEENE_132 = csv("""
    ts,type,x
    0,A,0
    1,B,1
    2,B,3
    3,B,2
    4,C,0
""")

# A ... D pairs separated by a B (row 3) and a C (row 6)
A_B_C_D = csv("""
    ts,type
    0,A
    1,D
    2,A
    3,B
    4,D
    5,A
    6,C
    7,D
    8,A
    9,D
""")

MIDDLE_NEG = csv("""
    ts,type
    0,A
    1,B
    2,A
    3,C
    4,A
    5,C
""")

MISSING = csv("""
    ts,type,x
    0,A,1
    1,B,7
    2,B,
    3,B,3
""")

DIVISION = csv("""
    ts,type,x,y
    0,A,6,
    1,B,,0
    2,B,,2
    3,B,,10
""")

STRINGS = csv("""
    ts,type,name
    0,A,x
    1,B,y
    2,B,x
    3,A,y
    4,B,y
""")

SMALL_X = csv("""
    ts,type,x
    0,A,1
    1,B,0
    2,B,2
""")


STRATEGIES = csv("""
    ts,type,x,k
    0,A,1,p
    1,B,5,q
    2,C,0,p
    3,B,7,p
    4,B,2,q
    5,A,3,q
    6,B,9,p
    7,C,4,q
""")

CASES: list[Case] = [
    # --- plain SEQ and the window ---------------------------------------------------
    Case("seq_paper_a1a2b1b2c", "PATTERN SEQ(A a, B b, C c) WITHIN 10", PAPER, [
        {"a": 0, "b": 2, "c": 4}, {"a": 0, "b": 3, "c": 4},
        {"a": 1, "b": 2, "c": 4}, {"a": 1, "b": 3, "c": 4},
    ]),
    Case("seq_row_order_matters", "PATTERN SEQ(A a, B b, C c) WITHIN 10", csv("""
        ts,type
        0,B
        1,A
        2,B
        3,C
        4,A
    """), [{"a": 1, "b": 2, "c": 3}]),
    Case("seq_same_type_two_variables", "PATTERN SEQ(A a, A b) WITHIN 10", csv("""
        ts,type
        0,A
        1,A
        2,A
    """), [{"a": 0, "b": 1}, {"a": 0, "b": 2}, {"a": 1, "b": 2}]),
    Case("window_inclusive_at_W_excluded_above", "PATTERN SEQ(A a, B b) WITHIN 5", csv("""
        ts,type
        0,A
        1,A
        5,B
        6,B
        7,B
    """), [{"a": 0, "b": 2}, {"a": 1, "b": 2}, {"a": 1, "b": 3}]),
    Case("window_spans_all_three", "PATTERN SEQ(A a, B b, C c) WITHIN 4", csv("""
        ts,type
        0,A
        1,A
        3,B
        4,C
        5,C
    """), [{"a": 0, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 4}]),
    Case("window_milliseconds_fraction", "PATTERN SEQ(A a, B b) WITHIN 1500 ms", csv("""
        ts,type
        0,A
        1.5,B
        1.501,B
    """), [{"a": 0, "b": 1}]),
    Case("window_small_with_tied_ts", "PATTERN SEQ(A a, B b) WITHIN 0.5", csv("""
        ts,type
        1,A
        1,B
        2,B
    """), [{"a": 0, "b": 1}]),
    Case("ties_row_order_not_ts", "PATTERN SEQ(A a, B b) WITHIN 1", csv("""
        ts,type
        5,B
        5,A
        5,B
        5,A
    """), [{"a": 1, "b": 2}]),
    # --- AND -------------------------------------------------------------------------
    Case("and_all_arrival_orders", "PATTERN AND(A a, B b, C c) WITHIN 10", csv("""
        ts,type
        0,C
        1,B
        2,A
        3,C
        4,B
    """), [
        {"a": 2, "b": 1, "c": 0}, {"a": 2, "b": 4, "c": 0},
        {"a": 2, "b": 1, "c": 3}, {"a": 2, "b": 4, "c": 3},
    ]),
    Case("and_window", "PATTERN AND(A a, B b, C c) WITHIN 3", csv("""
        ts,type
        0,C
        1,B
        2,A
        3,C
        4,B
    """), [{"a": 2, "b": 1, "c": 0}, {"a": 2, "b": 1, "c": 3}, {"a": 2, "b": 4, "c": 3}]),
    Case("and_same_type_distinct_events", "PATTERN AND(A a, A b) WITHIN 10", csv("""
        ts,type
        0,A
        1,A
        2,A
    """), [
        {"a": 0, "b": 1}, {"a": 0, "b": 2}, {"a": 1, "b": 0},
        {"a": 1, "b": 2}, {"a": 2, "b": 0}, {"a": 2, "b": 1},
    ]),
    Case("and_inside_seq", "PATTERN SEQ(A a, AND(B b, C c), D d) WITHIN 10", csv("""
        ts,type
        0,A
        1,C
        2,B
        3,A
        4,B
        5,D
        6,C
        7,D
    """), [
        {"a": 0, "b": 2, "c": 1, "d": 5}, {"a": 0, "b": 4, "c": 1, "d": 5},
        {"a": 0, "b": 2, "c": 1, "d": 7}, {"a": 0, "b": 4, "c": 1, "d": 7},
        {"a": 0, "b": 2, "c": 6, "d": 7}, {"a": 0, "b": 4, "c": 6, "d": 7},
        {"a": 3, "b": 4, "c": 6, "d": 7},
    ]),
    Case("seq_inside_and_partial_order", "PATTERN AND(SEQ(A a, B b), C c) WITHIN 10", csv("""
        ts,type
        0,B
        1,C
        2,A
        3,B
        4,C
    """), [{"a": 2, "b": 3, "c": 1}, {"a": 2, "b": 3, "c": 4}]),
    # --- OR --------------------------------------------------------------------------
    # two OR branches take c after a or after b, with conditions on different variables: the
    # tree's take memo must not give one branch's checked events to the other (hypothesis)
    Case("or_branches_take_one_variable_under_different_conditions",
         "PATTERN SEQ(SEQ(OR(A a, A b), A c), A d) WHERE (a.x > c.x OR c.y < 1) AND (c.x > b.x OR b.y < 1)"
         " WITHIN 1", csv("""
        ts,type,x,y
        0,A,0,1
        0,A,0,0
        0,A,0,0
    """), [{"a": 0, "c": 1, "d": 2}]),
    Case("or_of_two_seqs", "PATTERN OR(SEQ(A a, B b), SEQ(C c, D d)) WITHIN 10", csv("""
        ts,type
        0,A
        1,C
        2,B
        3,D
        4,B
    """), [{"a": 0, "b": 2}, {"a": 0, "b": 4}, {"c": 1, "d": 3}]),
    Case("or_branches_share_types", "PATTERN OR(SEQ(A a, B b), SEQ(B c, A d)) WITHIN 10",
         csv("""
        ts,type
        0,A
        1,B
        2,A
        3,B
    """), [{"a": 0, "b": 1}, {"a": 0, "b": 3}, {"a": 2, "b": 3}, {"c": 1, "d": 2}]),
    Case("or_inside_seq", "PATTERN SEQ(A a, OR(B b, C c), D d) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,C
        3,D
        4,C
        5,D
    """), [
        {"a": 0, "b": 1, "d": 3}, {"a": 0, "b": 1, "d": 5},
        {"a": 0, "c": 2, "d": 3}, {"a": 0, "c": 2, "d": 5}, {"a": 0, "c": 4, "d": 5},
    ]),
    Case("or_of_single_events", "PATTERN OR(A a, B b) WITHIN 1", csv("""
        ts,type
        0,A
        1,B
        2,C
        3,A
    """), [{"a": 0}, {"b": 1}, {"a": 3}]),
    Case("or_with_seq_branch_inside_seq", "PATTERN SEQ(A a, OR(SEQ(B b, C c), D d)) WITHIN 10",
         csv("""
        ts,type
        0,A
        1,C
        2,B
        3,D
        4,C
    """), [{"a": 0, "b": 2, "c": 4}, {"a": 0, "d": 3}]),
    Case("or_inside_and", "PATTERN AND(A a, OR(B b, C c)) WITHIN 2", csv("""
        ts,type
        0,B
        1,A
        2,C
        3,C
        4,B
    """), [{"a": 1, "b": 0}, {"a": 1, "c": 2}, {"a": 1, "c": 3}]),
    # two branches bind {a, d}; a pair with neither B nor C between is found by both
    # and reported once; a pair with a B but no C (or vice versa) by one branch
    Case("or_two_branches_same_match_reported_once",
         "PATTERN SEQ(A a, OR(NOT B b, NOT C c), D d) WITHIN 100", A_B_C_D, [
             {"a": 0, "d": 1}, {"a": 0, "d": 4}, {"a": 2, "d": 4},
             {"a": 5, "d": 7}, {"a": 5, "d": 9}, {"a": 8, "d": 9},
         ]),
    # b.x > 5 mentions b, which the branch "C c" does not bind: dropped there
    Case("or_condition_dropped_in_other_branch",
         "PATTERN OR(SEQ(A a, B b), C c) WHERE b.x > 5 WITHIN 10", csv("""
        ts,type,x
        0,A,0
        1,B,3
        2,B,7
        3,C,0
    """), [{"a": 0, "b": 2}, {"c": 3}]),
    # --- negation --------------------------------------------------------------------
    # the C at ts 0 spoils (1,2) only: with b at ts 7 the C is outside the window
    Case("neg_leading_within_window", "PATTERN SEQ(NOT C n, A a, B b) WITHIN 5", csv("""
        ts,type
        0,C
        2,A
        3,B
        6,A
        7,B
        9,A
        10,B
    """), [{"a": 1, "b": 4}, {"a": 3, "b": 4}, {"a": 3, "b": 6}, {"a": 5, "b": 6}]),
    Case("neg_middle", "PATTERN SEQ(A a, NOT B n, C c) WITHIN 10", MIDDLE_NEG,
         [{"a": 2, "c": 3}, {"a": 2, "c": 5}, {"a": 4, "c": 5}]),
    Case("neg_middle_tilde_form", "PATTERN SEQ(A a, ~B n, C c) WITHIN 10", MIDDLE_NEG,
         [{"a": 2, "c": 3}, {"a": 2, "c": 5}, {"a": 4, "c": 5}]),
    Case("neg_middle_bang_form", "PATTERN SEQ(A a, !B n, C c) WITHIN 10", MIDDLE_NEG,
         [{"a": 2, "c": 3}, {"a": 2, "c": 5}, {"a": 4, "c": 5}]),
    Case("neg_trailing_within_window", "PATTERN SEQ(A a, B b, NOT(C n)) WITHIN 3", csv("""
        ts,type
        0,A
        1,B
        2,A
        3,B
        5,C
        6,A
        7,B
    """), [{"a": 0, "b": 1}, {"a": 0, "b": 3}, {"a": 5, "b": 6}]),
    Case("neg_inside_and_anywhere_in_window", "PATTERN AND(A a, B b, NOT C n) WITHIN 4", csv("""
        ts,type
        0,A
        1,B
        5,C
        6,A
        7,B
        10,B
    """), [{"a": 0, "b": 1}, {"a": 3, "b": 5}]),
    # NOT inside AND inside SEQ: a C anywhere between a and d, even before b, violates
    Case("neg_inside_and_inside_seq", "PATTERN SEQ(A a, AND(B b, NOT C n), D d) WITHIN 10",
         csv("""
        ts,type
        0,C
        1,A
        2,B
        3,D
        4,C
        5,B
        6,D
        7,C
    """), [{"a": 1, "b": 2, "d": 3}]),
    Case("neg_with_condition", "PATTERN SEQ(A a, NOT(B n), C c) WHERE n.x < c.y WITHIN 10",
         csv("""
        ts,type,x,y
        0,A,,
        1,B,5,
        2,C,,3
        3,C,,6
        4,B,1,
        5,C,,1
    """), [{"a": 0, "c": 2}, {"a": 0, "c": 5}]),
    Case("neg_same_type_as_positive", "PATTERN SEQ(A a, NOT A n, B b) WITHIN 10", csv("""
        ts,type
        0,A
        1,A
        2,B
        3,A
        4,B
    """), [{"a": 1, "b": 2}, {"a": 3, "b": 4}]),
    # the assigned A never violates; another A within the window does
    Case("neg_same_type_inside_and", "PATTERN AND(A a, B b, NOT A n) WITHIN 2", csv("""
        ts,type
        0,A
        1,B
        10,A
        11,B
        12,A
    """), [{"a": 0, "b": 1}]),
    Case("neg_two_in_seq", "PATTERN SEQ(A a, NOT B n1, NOT C n2, D d) WITHIN 100", A_B_C_D,
         [{"a": 0, "d": 1}, {"a": 8, "d": 9}]),
    Case("neg_after_kleene", "PATTERN SEQ(A a, B+ b[], NOT C n, D d) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,C
        3,B
        4,D
    """), [{"a": 0, "b": (3,), "d": 4}, {"a": 0, "b": (1, 3), "d": 4}]),
    # only subsets ending at the last B before c survive
    Case("neg_same_type_as_kleene", "PATTERN SEQ(A a, B+ b[], NOT B n, C c) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,B
        3,C
    """), [{"a": 0, "b": (2,), "c": 3}, {"a": 0, "b": (1, 2), "c": 3}]),
    # --- Kleene ----------------------------------------------------------------------
    # Issue 16: a one-element subset has no consecutive pair, so a missing group-by key
    # (b[i].x = b[i-1].x turns on the group-by-attribute optimisation) cannot lose it.
    Case("kleene_group_key_missing_alone", "PATTERN B+ q[] WHERE q[i].x == q[i-1].x WITHIN 1", csv("""
        type,ts,x,y,g
        B,16,,78.4,p
    """), [{"q": (0,)}]),
    Case("kleene_group_key_missing_beside_present",
         "PATTERN B+ q[] WHERE q[i].x == q[i-1].x WITHIN 1", csv("""
        type,ts,x,y,g
        B,16,,78.4,p
        B,16,3,1.0,p
    """), [{"q": (0,)}, {"q": (1,)}]),
    Case("kleene_group_text_key_missing", "PATTERN B+ q[] WHERE q[i].g = q[i-1].g WITHIN 1", csv("""
        type,ts,x,g
        B,16,1,
        B,16,2,p
        B,17,3,p
        B,17,4,
    """), [{"q": (0,)}, {"q": (1,)}, {"q": (2,)}, {"q": (3,)}, {"q": (1, 2)}]),
    # the subset's last element arrives on the stream with its key missing
    Case("kleene_group_key_missing_last_from_stream",
         "PATTERN SEQ(A a, B+ q[]) WHERE q[i].x = q[i-1].x WITHIN 5", csv("""
        type,ts,x
        A,0,1
        B,1,2
        B,2,2
        B,3,
    """), [{"a": 0, "q": (1,)}, {"a": 0, "q": (2,)}, {"a": 0, "q": (1, 2)}, {"a": 0, "q": (3,)}]),
    # with [x] too, a missing x matches nothing (docs/semantics.md section 3: [attr] fails on a missing value)
    Case("kleene_group_key_missing_with_equivalence",
         "PATTERN B+ q[] WHERE q[i].x = q[i-1].x AND [x] WITHIN 1", csv("""
        type,ts,x
        B,16,
        B,16,3
    """), [{"q": (1,)}]),
    Case("kleene_plus_all_seven_subsets", "PATTERN SEQ(A a, B+ b[], C c) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,B
        3,B
        4,C
    """), [
        {"a": 0, "b": (1,), "c": 4}, {"a": 0, "b": (2,), "c": 4}, {"a": 0, "b": (3,), "c": 4},
        {"a": 0, "b": (1, 2), "c": 4}, {"a": 0, "b": (1, 3), "c": 4},
        {"a": 0, "b": (2, 3), "c": 4}, {"a": 0, "b": (1, 2, 3), "c": 4},
    ]),
    Case("kleene_trailing", "PATTERN SEQ(A a, B+ b[]) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,B
    """), [{"a": 0, "b": (1,)}, {"a": 0, "b": (2,)}, {"a": 0, "b": (1, 2)}]),
    Case("kleene_increasing_prev", "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > b[i-1].x WITHIN 10",
         KLEENE_132, [
             {"a": 0, "b": (1,), "c": 4}, {"a": 0, "b": (2,), "c": 4},
             {"a": 0, "b": (3,), "c": 4}, {"a": 0, "b": (1, 2), "c": 4},
             {"a": 0, "b": (1, 3), "c": 4},
         ]),
    Case("kleene_avg_whole", "PATTERN SEQ(A a, B+ b[], C c) WHERE avg(b[].x) > 2 WITHIN 10",
         KLEENE_132, [{"a": 0, "b": (2,), "c": 4}, {"a": 0, "b": (2, 3), "c": 4}]),
    # x = 2, 1, 3, 3: each element from the second on must exceed the mean before it
    Case("kleene_prefix_avg",
         "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > avg(b[..i-1].x) WITHIN 10", csv("""
        ts,type,x
        0,A,0
        1,B,2
        2,B,1
        3,B,3
        4,B,3
        5,C,0
    """), [{"a": 0, "b": b, "c": 5} for b in [
            (1,), (2,), (3,), (4,), (1, 3), (1, 4), (2, 3), (2, 4), (1, 3, 4), (2, 3, 4)]]),
    Case("kleene_first_and_last", "PATTERN SEQ(A a, B+ b[], C c) WHERE b[1].x < b[last].x WITHIN 10",
         KLEENE_132, [
             {"a": 0, "b": (1, 2), "c": 4}, {"a": 0, "b": (1, 3), "c": 4},
             {"a": 0, "b": (1, 2, 3), "c": 4},
         ]),
    Case("kleene_count_and_sum",
         "PATTERN SEQ(A a, B+ b[], C c) WHERE count(b[]) = 2 AND sum(b[].x) >= 4 WITHIN 10",
         KLEENE_132, [{"a": 0, "b": (1, 2), "c": 4}, {"a": 0, "b": (2, 3), "c": 4}]),
    Case("kleene_min_max",
         "PATTERN SEQ(A a, B+ b[], C c) WHERE max(b[].x) - min(b[].x) = 1 WITHIN 10",
         KLEENE_132, [{"a": 0, "b": (1, 3), "c": 4}, {"a": 0, "b": (2, 3), "c": 4}]),
    Case("kleene_bounded_2_to_3", "PATTERN SEQ(A a, B{2,3} b[], C c) WITHIN 10", csv("""
        ts,type
        0,A
        1,B
        2,B
        3,B
        4,B
        5,C
    """), [{"a": 0, "b": b, "c": 5} for b in [
            (1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4),
            (1, 2, 3), (1, 2, 4), (1, 3, 4), (2, 3, 4)]]),
    Case("kleene_bounded_exactly_2", "PATTERN SEQ(A a, B{2} b[], C c) WITHIN 10", KLEENE_132,
         [{"a": 0, "b": (1, 2), "c": 4}, {"a": 0, "b": (1, 3), "c": 4},
          {"a": 0, "b": (2, 3), "c": 4}]),
    Case("kleene_bounded_at_least_2", "PATTERN SEQ(A a, B{2,} b[], C c) WITHIN 10", KLEENE_132,
         [{"a": 0, "b": (1, 2), "c": 4}, {"a": 0, "b": (1, 3), "c": 4},
          {"a": 0, "b": (2, 3), "c": 4}, {"a": 0, "b": (1, 2, 3), "c": 4}]),
    Case("kleene_inside_and_window", "PATTERN AND(A a, B+ b[]) WITHIN 3", csv("""
        ts,type
        0,B
        1,A
        2,B
        5,B
    """), [{"a": 1, "b": (0,)}, {"a": 1, "b": (2,)}, {"a": 1, "b": (0, 2)}]),
    Case("kleene_each_vs_positive", "PATTERN SEQ(A a, B+ b[]) WHERE b[i].x > a.x WITHIN 10",
         csv("""
        ts,type,x
        0,A,2
        1,B,3
        2,B,1
        3,A,0
        4,B,4
    """), [{"a": 0, "b": (1,)}, {"a": 0, "b": (4,)}, {"a": 0, "b": (1, 4)}, {"a": 3, "b": (4,)}]),
    Case("kleene_equivalence", "PATTERN SEQ(A a, B+ b[]) WHERE [id] WITHIN 10", csv("""
        ts,type,id
        0,A,1
        1,B,1
        2,B,2
        3,B,1
    """), [{"a": 0, "b": (1,)}, {"a": 0, "b": (3,)}, {"a": 0, "b": (1, 3)}]),
    # a missing x makes the comparison with its neighbour false; alone it is fine
    Case("kleene_prev_with_missing", "PATTERN SEQ(A a, B+ b[], C c) WHERE b[i].x > b[i-1].x WITHIN 10",
         csv("""
        ts,type,x
        0,A,0
        1,B,1
        2,B,
        3,B,3
        4,C,0
    """), [{"a": 0, "b": (1,), "c": 4}, {"a": 0, "b": (2,), "c": 4},
           {"a": 0, "b": (3,), "c": 4}, {"a": 0, "b": (1, 3), "c": 4}]),
    # SQL aggregate semantics: avg skips missing values; avg of no value is missing
    Case("kleene_avg_skips_missing", "PATTERN SEQ(A a, B+ b[], C c) WHERE avg(b[].x) > 2.5 WITHIN 10",
         csv("""
        ts,type,x
        0,A,0
        1,B,2
        2,B,
        3,B,4
        4,C,0
    """), [{"a": 0, "b": (3,), "c": 4}, {"a": 0, "b": (1, 3), "c": 4},
           {"a": 0, "b": (2, 3), "c": 4}, {"a": 0, "b": (1, 2, 3), "c": 4}]),
    # --- one type, several variables; the type column -----------------------------
    Case("same_type_told_apart_by_conditions",
         "PATTERN SEQ(E a, E b) WHERE a.ticker = 'MSFT' AND b.ticker = 'GOOG'"
         " AND b.price > a.price WITHIN 10", csv("""
        ts,type,ticker,price
        0,E,MSFT,10
        1,E,GOOG,12
        2,E,MSFT,11
        3,E,GOOG,9
        4,E,GOOG,15
    """), [{"a": 0, "b": 1}, {"a": 0, "b": 4}, {"a": 2, "b": 4}]),
    Case("type_column_option", "PATTERN SEQ(MSFT m, GOOG g) WHERE g.price > m.price WITHIN 10",
         csv("""
        ts,ticker,price
        0,MSFT,10
        1,GOOG,12
        2,MSFT,11
        3,GOOG,9
    """), [{"m": 0, "g": 1}], type_col="ticker"),
    Case("quoted_type_name", "PATTERN SEQ('9E' a, B b) WITHIN 10", csv("""
        ts,type
        0,9E
        1,B
        2,9E
    """), [{"a": 0, "b": 1}]),
    Case("numeric_looking_type_values", "PATTERN SEQ('1' a, '2' b) WITHIN 10", csv("""
        ts,type
        0,1
        1,2
        2,1
        3,2
    """), [{"a": 0, "b": 1}, {"a": 0, "b": 3}, {"a": 2, "b": 3}]),
    # --- [attr] ----------------------------------------------------------------------
    Case("equivalence_attr", "PATTERN SEQ(A a, B b) WHERE [id] WITHIN 10", csv("""
        ts,type,id
        0,A,1
        1,A,2
        2,B,1
        3,B,2
        4,B,3
    """), [{"a": 0, "b": 2}, {"a": 1, "b": 3}]),
    # a C with another id does not violate; one with the same id does; missing ids
    # never satisfy [id]
    Case("equivalence_with_negation_and_missing",
         "PATTERN SEQ(A a, NOT C n, B b) WHERE [id] WITHIN 10", csv("""
        ts,type,id
        0,A,1
        1,C,2
        2,B,1
        3,A,2
        4,C,2
        5,B,2
        6,B,1
        7,A,
        8,B,
    """), [{"a": 0, "b": 2}, {"a": 0, "b": 6}]),
    Case("equivalence_negated_event_missing_attr",
         "PATTERN SEQ(A a, NOT C n, B b) WHERE [id] WITHIN 10", csv("""
        ts,type,id
        0,A,1
        1,C,
        2,B,1
    """), [{"a": 0, "b": 2}]),
    # --- missing values, arithmetic, strings ----------------------------------------
    Case("missing_greater_is_false", "PATTERN SEQ(A a, B b) WHERE b.x > 5 WITHIN 10", MISSING,
         [{"a": 0, "b": 1}]),
    Case("missing_not_greater_is_false_too", "PATTERN SEQ(A a, B b) WHERE NOT b.x > 5 WITHIN 10",
         MISSING, [{"a": 0, "b": 3}]),
    Case("missing_not_equal_is_false", "PATTERN SEQ(A a, B b) WHERE b.x != a.x WITHIN 10",
         MISSING, [{"a": 0, "b": 1}, {"a": 0, "b": 3}]),
    Case("division_by_zero_is_missing", "PATTERN SEQ(A a, B b) WHERE a.x / b.y > 1 WITHIN 10",
         DIVISION, [{"a": 0, "b": 2}]),
    Case("division_by_zero_not_is_missing",
         "PATTERN SEQ(A a, B b) WHERE NOT (a.x / b.y > 1) WITHIN 10", DIVISION,
         [{"a": 0, "b": 3}]),
    Case("modulo_by_zero_is_missing", "PATTERN SEQ(A a, B b) WHERE a.x % b.y <> 0 WITHIN 10",
         DIVISION, [{"a": 0, "b": 3}]),
    Case("arithmetic_abs_minus_precedence",
         "PATTERN SEQ(A a, B b) WHERE abs(a.x - b.y * 2) >= 2 AND -b.y < -1 WITHIN 10", DIVISION,
         [{"a": 0, "b": 2}, {"a": 0, "b": 3}]),
    Case("where_or_inside_condition", "PATTERN SEQ(A a, B b) WHERE a.x = 1 OR b.x = 2 WITHIN 10",
         csv("""
        ts,type,x
        0,A,1
        1,A,2
        2,B,1
        3,B,2
    """), [{"a": 0, "b": 2}, {"a": 0, "b": 3}, {"a": 1, "b": 3}]),
    Case("string_equality_between_events", "PATTERN SEQ(A a, B b) WHERE a.name = b.name WITHIN 10",
         STRINGS, [{"a": 0, "b": 2}, {"a": 3, "b": 4}]),
    Case("string_literals", "PATTERN SEQ(A a, B b) WHERE a.name == 'x' AND b.name <> 'x' WITHIN 10",
         STRINGS, [{"a": 0, "b": 1}, {"a": 0, "b": 4}]),
    Case("timestamp_in_condition", "PATTERN SEQ(A a, B b) WHERE b.ts - a.ts >= 2 WITHIN 10",
         csv("""
        ts,type
        0,A
        1,B
        3,B
    """), [{"a": 0, "b": 2}]),
    # --- timestamps ------------------------------------------------------------------
    Case("iso_timestamps_window_minutes", "PATTERN SEQ(A a, B b) WITHIN 5 minutes", csv("""
        ts,type
        2024-01-01T10:00:00,A
        2024-01-01T10:01:00,A
        2024-01-01T10:05:00,B
        2024-01-01T10:05:01,B
        2024-01-01T10:06:01,B
    """), [{"a": 0, "b": 2}, {"a": 1, "b": 2}, {"a": 1, "b": 3}]),
    # 11:03+01:00 is 10:03 UTC: in time order, and 3 minutes after a
    Case("iso_timestamps_time_zones", "PATTERN SEQ(A a, B b) WITHIN 5 min", csv("""
        ts,type
        2024-03-01T10:00:00Z,A
        2024-03-01T11:03:00+01:00,B
        2024-03-01T10:06:00+00:00,B
    """), [{"a": 0, "b": 1}]),
    # --- syntax forms ----------------------------------------------------------------
    Case("where_strategy_braced", "PATTERN SEQ(A a, B b) WHERE skip_till_any_match { a.x < b.x } WITHIN 10",
         SMALL_X, [{"a": 0, "b": 2}]),
    Case("where_strategy_only", "PATTERN SEQ(A a, B b) WHERE skip_till_any_match WITHIN 10",
         SMALL_X, [{"a": 0, "b": 1}, {"a": 0, "b": 2}]),
    # --- selection strategies (section 7): rows 0 A1p 1 B5q 2 C0p 3 B7p 4 B2q 5 A3q 6 B9p 7 C4q
    Case("next_match_the_next_b_that_qualifies",
         "PATTERN SEQ(A a, B b) WHERE skip_till_next_match { a.x < b.x } WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 1}, {"a": 5, "b": 6}]),
    # b.x > 6 alone decides: row 3 (7) is a's next b; a0-b6 skips row 3, which qualified
    Case("next_match_a_condition_of_b_alone",
         "PATTERN SEQ(A a, B b) WHERE skip_till_next_match { b.x > 6 } WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 3}, {"a": 5, "b": 6}]),
    Case("next_match_every_pair", "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 1, "c": 2}, {"a": 5, "b": 6, "c": 7}]),
    # only a and b listed: c is any later C
    Case("next_match_listed_variables",
         "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match(a, b) WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 1, "c": 2}, {"a": 0, "b": 1, "c": 7}, {"a": 5, "b": 6, "c": 7}]),
    # a condition that reads c is not one a's next b must pass: a0's next b is row 1
    Case("next_match_ignores_later_variables",
         "PATTERN SEQ(A a, B b, C c) WHERE skip_till_next_match { b.x > c.x } WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 1, "c": 2}, {"a": 5, "b": 6, "c": 7}]),
    # next-match over a Kleene variable: its first element the next B, then every next B,
    # the run maximal (b last: to the window's end): one run per start
    Case("next_match_kleene_one_run_per_start",
         "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match WITHIN 10",
         STRATEGIES, [{"a": 0, "b": (1, 3, 4, 6)}, {"a": 5, "b": 6}]),
    # each next element the next B above the one before: row 4 (2) is skipped, it does not qualify
    Case("next_match_kleene_rising_run",
         "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match { b[i].x > b[i-1].x } WITHIN 10",
         STRATEGIES, [{"a": 0, "b": (1, 3, 6)}, {"a": 5, "b": 6}]),
    # with c after it, the run ends where a C comes before the next B: (1) then c2, or the
    # whole run then c7; (1, 3) then c7 would skip B row 4
    Case("next_match_kleene_then_c",
         "PATTERN SEQ(A a, B+ b[], C c) WHERE skip_till_next_match WITHIN 10",
         STRATEGIES,
         [{"a": 0, "b": 1, "c": 2}, {"a": 0, "b": (1, 3, 4, 6), "c": 7}, {"a": 5, "b": 6, "c": 7}]),
    # a run of its most elements takes no more
    Case("next_match_kleene_bounded",
         "PATTERN SEQ(A a, B{1,2} b[]) WHERE skip_till_next_match WITHIN 10",
         STRATEGIES, [{"a": 0, "b": (1, 3)}, {"a": 5, "b": 6}]),
    # [k]: a0 (p) starts at the next B of key p, row 3; a5 (q) has no B of key q after it
    Case("next_match_kleene_partition",
         "PATTERN SEQ(A a, B+ b[]) WHERE skip_till_next_match { [k] } WITHIN 10",
         STRATEGIES, [{"a": 0, "b": (3, 6)}]),
    # strict contiguity over a Kleene variable: consecutive rows (rows 3 and 4 are the only
    # two B's in a row); partition contiguity: rows of the same key, other keys between
    Case("strict_contiguity_kleene_run",
         "PATTERN SEQ(B+ b[]) WHERE strict_contiguity WITHIN 10",
         STRATEGIES, [{"b": 1}, {"b": 3}, {"b": 4}, {"b": 6}, {"b": (3, 4)}]),
    Case("partition_contiguity_kleene_run",
         "PATTERN SEQ(C c, B+ b[]) WHERE partition_contiguity { [k] } WITHIN 10",
         STRATEGIES, [{"c": 2, "b": 3}, {"c": 2, "b": (3, 6)}]),
    Case("strict_contiguity_consecutive_rows", "PATTERN SEQ(A a, B b) WHERE strict_contiguity WITHIN 10",
         STRATEGIES, [{"a": 0, "b": 1}, {"a": 5, "b": 6}]),
    Case("strict_contiguity_three", "PATTERN SEQ(B b, C c) WHERE strict_contiguity { b.x > c.x } WITHIN 10",
         STRATEGIES, [{"b": 1, "c": 2}, {"b": 6, "c": 7}]),
    # [attr] does not soften strict contiguity: c2-b6 have k = p, rows 3-5 between
    Case("strict_contiguity_with_a_partition",
         "PATTERN SEQ(C c, B b) WHERE strict_contiguity { [k] } WITHIN 10",
         STRATEGIES, [{"c": 2, "b": 3}]),
    # c2-b6 (p): row 3 (p) between; b1-b4 (q) and b3-b6 (p): only rows of the other key between
    Case("partition_contiguity_same_key_rows_only",
         "PATTERN SEQ(C c, B b) WHERE partition_contiguity { [k] } WITHIN 10",
         STRATEGIES, [{"c": 2, "b": 3}]),
    Case("partition_contiguity_other_keys_between",
         "PATTERN SEQ(B x, B y) WHERE partition_contiguity { [k] } WITHIN 10",
         STRATEGIES, [{"x": 1, "y": 4}, {"x": 3, "y": 6}]),
    Case("lower_case_keywords_and_comments",
         "pattern seq(A a, B b) -- a comment\nwhere a.x < b.x # another\nwithin 10 seconds",
         SMALL_X, [{"a": 0, "b": 2}]),
    # --- no match --------------------------------------------------------------------
    Case("zero_matches_wrong_order", "PATTERN SEQ(A a, B b) WITHIN 10", csv("""
        ts,type
        0,B
        1,A
    """), []),
    Case("zero_matches_false_condition", "PATTERN SEQ(A a, B b) WHERE a.x > 0 AND false WITHIN 10",
         SMALL_X, []),
    Case("zero_matches_absent_type", "PATTERN SEQ(A a, Z z) WITHIN 10", PAPER, []),
]

assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"
