"""Hypothesis strategies: small random streams and random SASE+ queries as TEXT.

Streams: 3 to 10 events, types from A B C D, integer timestamps that never
decrease and often tie, two small-int attributes ``x`` and ``y`` with occasional
empty (missing) cells.

Queries: SEQ/AND/OR nested up to depth 2 with 2-4 items each, occasional NOT
(repaired so that no DNF branch is negations only; never around a Kleene
element), occasional Kleene ``+`` or ``{l,m}``, 0-2 WHERE conjuncts drawn from
templates that are valid for the variables (pairs are taken from variables that
share a DNF branch), and a small window. Every variable has a unique name.

``Pattern`` keeps the generated tree next to the text, so a test can bound the
brute force of the oracle before running it (``oracle_cost``).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import comb

from hypothesis import strategies as st

TYPES = "ABCD"
NAMES = "abcdefgh"
MAX_LEAVES = 5  # variables per query
MAX_COST = 20_000  # assignments the oracle may enumerate per example

# --- the tree -------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    kind: str  # "prim" | "kleene" | "neg"
    type: str
    var: str
    lo: int = 1
    hi: int | None = 1
    neg_form: int = 0  # which of the four NOT spellings


@dataclass(frozen=True)
class Node:
    op: str  # "SEQ" | "AND" | "OR"
    items: tuple[Leaf | Node, ...]


Tree = Leaf | Node


def structure_text(tree: Tree) -> str:
    if isinstance(tree, Node):
        return f"{tree.op}({', '.join(structure_text(i) for i in tree.items)})"
    if tree.kind == "prim":
        return f"{tree.type} {tree.var}"
    if tree.kind == "neg":
        return (f"NOT {tree.type} {tree.var}", f"NOT({tree.type} {tree.var})",
                f"~{tree.type} {tree.var}", f"!{tree.type} {tree.var}")[tree.neg_form]
    if (tree.lo, tree.hi) == (1, None):
        return f"{tree.type}+ {tree.var}[]"
    if tree.lo == tree.hi:
        return f"{tree.type}{{{tree.lo}}} {tree.var}[]"
    return f"{tree.type}{{{tree.lo},{'' if tree.hi is None else tree.hi}}} {tree.var}[]"


def leaves(tree: Tree) -> list[Leaf]:
    if isinstance(tree, Leaf):
        return [tree]
    return [leaf for item in tree.items for leaf in leaves(item)]


def branches(tree: Tree) -> list[list[Leaf]]:
    """The DNF branches (as leaf lists), the same expansion as SPEC section 3."""
    if isinstance(tree, Leaf):
        return [[tree]]
    parts = [branches(item) for item in tree.items]
    if tree.op == "OR":
        return [b for part in parts for b in part]
    return [[leaf for b in combo for leaf in b] for combo in product(*parts)]


# --- structure ------------------------------------------------------------------------


@st.composite
def _leaf(draw: st.DrawFn, allow_neg: bool) -> Leaf:
    kinds = ["prim"] * 6 + ["kleene"] * 2 + (["neg"] * 2 if allow_neg else [])
    kind = draw(st.sampled_from(kinds))
    type_ = draw(st.sampled_from(TYPES))
    if kind == "kleene":
        lo, hi = draw(st.sampled_from([(1, None), (1, None), (1, 2), (2, None), (2, 2), (2, 3)]))
        return Leaf("kleene", type_, "", lo, hi)
    if kind == "neg":
        return Leaf("neg", type_, "", neg_form=draw(st.integers(0, 3)))
    return Leaf("prim", type_, "")


@st.composite
def _node(draw: st.DrawFn, depth: int, budget: list[int]) -> Node:
    op = draw(st.sampled_from(["SEQ", "SEQ", "AND", "OR"]))
    want = draw(st.integers(2, 4))
    items: list[Tree] = []
    while len(items) < want and budget[0] > 0:
        if depth < 2 and budget[0] >= 3 and draw(st.integers(0, 3)) == 0:
            items.append(draw(_node(depth + 1, budget)))
        else:
            budget[0] -= 1
            items.append(draw(_leaf(allow_neg=True)))
    if len(items) < 2:  # out of budget: pad with a plain event (one over the budget)
        items.append(Leaf("prim", draw(st.sampled_from(TYPES)), ""))
    return Node(op, tuple(items))


def _name(tree: Tree, counter: list[int]) -> Tree:
    """Give every leaf a unique variable name, left to right."""
    if isinstance(tree, Leaf):
        counter[0] += 1
        return Leaf(tree.kind, tree.type, NAMES[counter[0] - 1], tree.lo, tree.hi, tree.neg_form)
    return Node(tree.op, tuple(_name(i, counter) for i in tree.items))


def _positive(tree: Tree, var: str) -> Tree:
    """``tree`` with the negated leaf ``var`` made a plain event."""
    if isinstance(tree, Leaf):
        return Leaf("prim", tree.type, var) if tree.var == var else tree
    return Node(tree.op, tuple(_positive(i, var) for i in tree.items))


def _repair(tree: Tree) -> Tree:
    """Make a positive of the first NOT of every branch that has only NOTs (a query
    error: NOT cannot be the whole pattern)."""
    while True:
        bad = next((b for b in branches(tree) if all(v.kind == "neg" for v in b)), None)
        if bad is None:
            return tree
        tree = _positive(tree, bad[0].var)


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    if draw(st.integers(0, 9)) == 0:  # a single positive element is a pattern too
        tree: Tree = draw(_leaf(allow_neg=False))
    else:
        tree = draw(_node(1, [MAX_LEAVES - 1]))
    return _repair(_name(tree, [0]))


# --- conditions -----------------------------------------------------------------------


def _templates(tree: Tree) -> list[str]:
    """Every condition valid for the variables of ``tree`` (each conjunct's variables
    share at least one DNF branch; one negated variable at most, and never with an
    element-wise Kleene reference)."""
    out: set[str] = set()
    for branch in branches(tree):
        prims = [v.var for v in branch if v.kind == "prim"]
        kleenes = [v.var for v in branch if v.kind == "kleene"]
        negs = [v.var for v in branch if v.kind == "neg"]
        for p in prims:
            out |= {f"{p}.x < 3", f"{p}.y >= 2", f"NOT {p}.x > 1", f"{p}.x % 2 = 0"}
            for q in prims:
                if q != p:
                    out |= {f"{p}.x > {q}.x", f"{p}.x + {q}.y <= 4", f"{p}.y != {q}.x",
                            f"{p}.x / {q}.y >= 1", f"({p}.x > {q}.x OR {q}.y < 1)",
                            f"NOT ({p}.x = {q}.x AND {p}.y = 2)"}
        for k in kleenes:
            out |= {f"{k}[i].x > {k}[i-1].x", f"avg({k}[].x) > 1", f"{k}[1].x <= {k}[last].x",
                    f"{k}[i].y >= max({k}[..i-1].y)", f"{k}[i].x < 4", f"count({k}[]) <= 2"}
            for p in prims:
                out |= {f"{k}[i].x >= {p}.x", f"sum({k}[].y) > {p}.y",
                        f"({k}[i].x > {k}[i-1].x OR {k}[i].y = {p}.y)"}
        for n in negs:
            out |= {f"{n}.y < 2"}
            for p in prims:
                out |= {f"{n}.x = {p}.x", f"({n}.x = {p}.x OR {n}.y > 3)"}
            for k in kleenes:
                out |= {f"{n}.x > {k}[last].x"}
    out.add("[x]")
    return sorted(out)


# Conjuncts that mention no variable (they hold or fail for every match alike).
CONSTANTS = ["1 + 1 = 2", "2 < 1"]


@dataclass(frozen=True)
class Pattern:
    tree: Tree
    where: tuple[str, ...]
    window: str
    braced: bool = False

    @property
    def text(self) -> str:
        lines = [f"PATTERN {structure_text(self.tree)}"]
        if self.where:
            cond = " AND ".join(self.where)
            lines.append(f"WHERE skip_till_any_match {{ {cond} }}" if self.braced else f"WHERE {cond}")
        lines.append(f"WITHIN {self.window}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text


@st.composite
def patterns(draw: st.DrawFn, constants: bool = False) -> Pattern:
    """A random query; with ``constants``, one conjunct mentions no variable."""
    tree = draw(trees())
    templates = _templates(tree)
    size = draw(st.sampled_from([0, 1, 1, 2, 2]))
    where = tuple(draw(st.lists(st.sampled_from(templates), min_size=size, max_size=size,
                                unique=True)))
    if constants:
        where += (draw(st.sampled_from(CONSTANTS)),)
    window = draw(st.sampled_from(["1", "2", "3", "3", "5", "5", "1.5", "4 s", "8 sec"]))
    return Pattern(tree, where, window, braced=bool(where) and draw(st.integers(0, 4)) == 0)


def queries() -> st.SearchStrategy[str]:
    return patterns().map(lambda p: p.text)


# --- streams --------------------------------------------------------------------------


def _cell() -> st.SearchStrategy[str]:
    return st.one_of(st.integers(0, 4).map(str), st.integers(0, 4).map(str),
                     st.integers(0, 4).map(str), st.integers(0, 4).map(str), st.just(""))


@st.composite
def streams(draw: st.DrawFn, min_size: int = 3, max_size: int = 10, types: str = TYPES) -> str:
    """A CSV stream; event types are drawn from ``types`` (repeat a letter to make
    it more frequent)."""
    n = draw(st.integers(min_size, max_size))
    lines = ["ts,type,x,y"]
    ts = 0
    for _ in range(n):
        ts += draw(st.sampled_from([0, 0, 1, 1, 2]))
        lines.append(f"{ts},{draw(st.sampled_from(types))},{draw(_cell())},{draw(_cell())}")
    return "\n".join(lines) + "\n"


@st.composite
def examples(draw: st.DrawFn, constants: bool = False) -> tuple[Pattern, str]:
    """A pattern and a stream whose types lean towards the pattern's, so that
    matches (and violated negations) are common."""
    pattern = draw(patterns(constants))
    used = "".join(sorted({v.type for v in leaves(pattern.tree)}))
    return pattern, draw(streams(types=used * 3 + TYPES))


# --- cost -----------------------------------------------------------------------------


def oracle_cost(pattern: Pattern, csv_text: str) -> int:
    """How many assignments the oracle enumerates (sum over branches of the product
    of each bound variable's choices)."""
    types = [line.split(",")[1] for line in csv_text.splitlines()[1:]]
    total = 0
    for branch in branches(pattern.tree):
        cost = 1
        for v in branch:
            k = types.count(v.type)
            if v.kind == "prim":
                cost *= k
            elif v.kind == "kleene":
                hi = k if v.hi is None else min(v.hi, k)
                cost *= sum(comb(k, i) for i in range(v.lo, hi + 1))
        total += cost
    return total
