"""Hypothesis strategies: small random streams and random SASE+ queries as TEXT.

Streams (``streams``): 3 to 10 events with columns ``ts,type,x,y,g``: types drawn
from a pool that leans towards the query's types, timestamps that never decrease
and often tie, small integers in ``x`` and ``y`` and short strings (``p q r``) in
the text column ``g``. Every attribute cell is empty (missing) with probability
``missing`` (``MISSING``, about 1 in 4, by default), so every condition, group-by
key, ``[attr]`` test, negation condition and aggregate meets missing values often.

Time (``time_form``): the stream is drawn in integer *ticks* and written as
``int`` (the tick, in seconds; the default), ``decimal`` (``14.067`` + 0.3 s a
tick, e.g. ``14.667``), ``iso`` (ISO-8601 with milliseconds and ``Z``, 0.3 s a
tick) or ``epoch_ms`` (epoch milliseconds, 300 a tick; read with time unit ``ms``).
``examples`` draws the window to suit the form: for the fractional forms in
multiples of the 0.3 s tick (``600 ms``, ``1.5 s``, ...), so that two events are
often exactly a window apart, plus a few that fall between ticks.
The engine properties draw every form (``tests/test_properties.py``).

Queries (``patterns``): SEQ/AND/OR nested to depth 3 (``MAX_DEPTH``) with 2-4
items each and about ``MAX_LEAVES`` elements; negation at any position (first,
middle or last of a SEQ, inside AND, inside an OR branch, at any depth; repaired
so that no DNF branch is negations only; never around a Kleene element); Kleene
``+`` and bounded ``{l,m}`` / ``{n}`` / ``{l,}``; types from a pool that is
sometimes one or two letters, so that variables share a type, and then often
told apart by conditions (``a.g = 'p'``, ``b[i].x >= 2``); 0-3 WHERE conjuncts
drawn from templates valid for the variables (see ``templates_of``: arithmetic,
``x``- and ``g``-keyed group-by pairs ``k[i].g = k[i-1].g``, ``[x]`` and ``[g]``,
``b[1]``/``b[last]``, aggregates over ``b[]`` and ``b[..i-1]``, string equality,
conditions on negated variables, OR/NOT inside a conjunct); a window to suit the
time form. Every variable has a unique name. ``focus`` makes every query carry a
Kleene element (``"kleene"``) or a negation (``"neg"``) with a condition on it, or
variables of shared types (``"shared"``).

Every generated query is valid for cepcli (``test_generated_queries_parse_and_round_trip``):
a conjunct's variables share a DNF branch, it mentions one negated variable at
most, iterates over one Kleene variable at most, and never both.

``Pattern`` keeps the generated tree next to the text, so a test can bound the
brute force of the oracle before running it (``oracle_cost``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from itertools import product
from math import comb

from hypothesis import assume
from hypothesis import strategies as st

TYPES = "ABCD"
# Variable names: never an attribute (x y g), nor i (as in b[i]).
NAMES = "abcdefhjkmnopqrstuvw"
MAX_LEAVES = 6  # elements per query (a node short of items is padded past it)
MAX_DEPTH = 3  # SEQ/AND/OR nesting
MAX_COST = 20_000  # assignments the oracle may enumerate per example
MISSING = 0.25  # the share of empty cells in x, y and g
TEXTS = ("p", "q", "r")  # the values of the text column g
TIME_FORMS = ("int", "decimal", "iso", "epoch_ms")

# --- the tree -------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    kind: str  # "prim" | "kleene" | "neg"
    type: str
    var: str
    lo: int = 1
    hi: int | None = 1
    form: int = 0  # spelling: which of the four NOT forms; for 1..: "+" (0) or "{1,}" (1)


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
                f"~{tree.type} {tree.var}", f"!{tree.type} {tree.var}")[tree.form]
    if (tree.lo, tree.hi) == (1, None) and tree.form == 0:
        return f"{tree.type}+ {tree.var}[]"
    if tree.lo == tree.hi:
        return f"{tree.type}{{{tree.lo}}} {tree.var}[]"
    return f"{tree.type}{{{tree.lo},{'' if tree.hi is None else tree.hi}}} {tree.var}[]"


def leaves(tree: Tree) -> list[Leaf]:
    if isinstance(tree, Leaf):
        return [tree]
    return [leaf for item in tree.items for leaf in leaves(item)]


def depth(tree: Tree) -> int:
    """SEQ/AND/OR nesting: 0 for a single element."""
    return 0 if isinstance(tree, Leaf) else 1 + max(depth(i) for i in tree.items)


def branches(tree: Tree) -> list[list[Leaf]]:
    """The DNF branches (as leaf lists), the same expansion as docs/semantics.md section 6."""
    if isinstance(tree, Leaf):
        return [[tree]]
    parts = [branches(item) for item in tree.items]
    if tree.op == "OR":
        return [b for part in parts for b in part]
    return [[leaf for b in combo for leaf in b] for combo in product(*parts)]


def negation_places(tree: Tree) -> set[str]:
    """Where the tree has negations: ``seq-first``, ``seq-middle``, ``seq-last``,
    ``and``, ``or`` (the parent of the NOT), and ``nested`` (below depth 1).
    For test statistics."""
    out: set[str] = set()

    def walk(node: Tree, level: int) -> None:
        if isinstance(node, Leaf):
            return
        for j, item in enumerate(node.items):
            if isinstance(item, Leaf):
                if item.kind == "neg":
                    if node.op == "SEQ":
                        out.add("seq-first" if j == 0 else "seq-last" if j == len(node.items) - 1
                                else "seq-middle")
                    else:
                        out.add(node.op.lower())
                    if level > 1:
                        out.add("nested")
            else:
                walk(item, level + 1)

    walk(tree, 1)
    return out


# --- structure ------------------------------------------------------------------------

KLEENE_BOUNDS = [(1, None), (1, None), (1, 2), (2, None), (2, 2), (2, 3), (1, 1), (1, 3), (3, None)]


@dataclass(frozen=True)
class _Weights:
    """Relative weights of the element kinds, and the types to draw from."""

    prim: int = 5
    kleene: int = 2
    neg: int = 3
    types: str = TYPES


@st.composite
def _kleene(draw: st.DrawFn, type_: str, var: str = "") -> Leaf:
    lo, hi = draw(st.sampled_from(KLEENE_BOUNDS))
    form = draw(st.integers(0, 1)) if (lo, hi) == (1, None) else 0
    return Leaf("kleene", type_, var, lo, hi, form)


@st.composite
def _leaf(draw: st.DrawFn, w: _Weights, allow_neg: bool) -> Leaf:
    kinds = ["prim"] * w.prim + ["kleene"] * w.kleene + (["neg"] * w.neg if allow_neg else [])
    kind = draw(st.sampled_from(kinds))
    type_ = draw(st.sampled_from(w.types))
    if kind == "kleene":
        return draw(_kleene(type_))
    if kind == "neg":
        return Leaf("neg", type_, "", form=draw(st.integers(0, 3)))
    return Leaf("prim", type_, "")


@st.composite
def _node(draw: st.DrawFn, level: int, budget: list[int], w: _Weights) -> Node:
    # a nested OR puts a NOT in one branch only (a NOT as a whole branch of the root
    # OR is made positive by the repair)
    op = draw(st.sampled_from(["SEQ", "SEQ", "AND", "OR"] if level == 1 else ["SEQ", "AND", "OR", "OR"]))
    want = draw(st.integers(2, 4))
    items: list[Tree] = []
    while len(items) < want and budget[0] > 0:
        if level < MAX_DEPTH and budget[0] >= 2 and draw(st.integers(0, 2)) == 0:
            items.append(draw(_node(level + 1, budget, w)))
        else:
            budget[0] -= 1
            items.append(draw(_leaf(w, allow_neg=True)))
    while len(items) < 2:  # out of budget: pad with a plain event (over the budget)
        items.append(Leaf("prim", draw(st.sampled_from(w.types)), ""))
    return Node(op, tuple(items))


def _name(tree: Tree, counter: list[int]) -> Tree:
    """Give every leaf a unique variable name, left to right."""
    if isinstance(tree, Leaf):
        counter[0] += 1
        return replace(tree, var=NAMES[counter[0] - 1])
    return Node(tree.op, tuple(_name(i, counter) for i in tree.items))


def _swap(tree: Tree, var: str, new: Leaf) -> Tree:
    """``tree`` with the leaf ``var`` replaced by ``new``."""
    if isinstance(tree, Leaf):
        return new if tree.var == var else tree
    return Node(tree.op, tuple(_swap(i, var, new) for i in tree.items))


def _repair(tree: Tree) -> Tree:
    """Make a positive of the first NOT of every branch that has only NOTs (a query
    error: NOT cannot be the whole pattern)."""
    while True:
        bad = next((b for b in branches(tree) if all(v.kind == "neg" for v in b)), None)
        if bad is None:
            return tree
        tree = _swap(tree, bad[0].var, Leaf("prim", bad[0].type, bad[0].var))


@st.composite
def _ensure(draw: st.DrawFn, tree: Tree, kind: str, w: _Weights) -> Tree:
    """``tree`` with at least one element of ``kind`` (``kleene`` or ``neg``)."""
    if any(v.kind == kind for v in leaves(tree)):
        return tree
    prims = [v for v in leaves(tree) if v.kind == "prim"]
    if kind == "kleene":
        v = draw(st.sampled_from(prims))
        return _swap(tree, v.var, draw(_kleene(v.type, v.var)))
    for v in draw(st.permutations(prims)):  # a NOT where it leaves a positive in every branch
        tried = _swap(tree, v.var, Leaf("neg", v.type, v.var, form=draw(st.integers(0, 3))))
        if _repair(tried) == tried:
            return tried
    neg = Leaf("neg", draw(st.sampled_from(w.types)), NAMES[len(leaves(tree))],
               form=draw(st.integers(0, 3)))
    where = draw(st.sampled_from(["first", "last", "and"]))
    if where == "and":
        return Node("AND", (tree, neg))
    return Node("SEQ", (neg, tree) if where == "first" else (tree, neg))


@st.composite
def trees(draw: st.DrawFn, focus: str | None = None) -> Tree:
    w = _Weights()
    if focus == "kleene":
        w = _Weights(kleene=4)
    elif focus == "neg":
        w = _Weights(neg=5)
    pools = ["A", "AB"] if focus == "shared" else [TYPES, TYPES, TYPES, "ABC", "AB", "A"]
    w = replace(w, types=draw(st.sampled_from(pools)))
    if focus == "strategy":  # a SEQ of events and negations (section 7: what a strategy takes)
        w = replace(w, kleene=0)
        items = [draw(_leaf(w, allow_neg=True)) for _ in range(draw(st.integers(2, 4)))]
        return _repair(_name(Node("SEQ", tuple(items)), [0]))
    if focus == "kleene_strategy":  # a SEQ with a Kleene element, under a strategy
        items = [draw(_leaf(replace(w, kleene=0), allow_neg=True)) for _ in range(draw(st.integers(1, 3)))]
        at = draw(st.integers(0, len(items)))
        items.insert(at, draw(_kleene(draw(st.sampled_from(w.types)))))
        tree = _repair(_name(Node("SEQ", tuple(items)), [0]))
        assume(any(v.kind == "kleene" for v in leaves(tree)))
        return tree
    single = 4 if focus == "kleene" else 10  # one in so many is a single element
    if draw(st.integers(0, single - 1)) == 0:  # (shrinks to it)
        tree: Tree = draw(_leaf(w, allow_neg=False))
    else:
        size = draw(st.sampled_from([2, 3, 4, MAX_LEAVES, MAX_LEAVES, MAX_LEAVES]))
        tree = draw(_node(1, [size - 1], w))
    tree = _repair(_name(tree, [0]))
    if focus in ("kleene", "neg"):
        tree = draw(_ensure(tree, focus, w))
    return tree


# --- conditions -----------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A WHERE conjunct, its category (templates are drawn category first, so
    that rare shapes such as ``[x]`` are met as often as common ones) and the kinds
    of variable it mentions (``prim``, ``kleene``, ``neg``)."""

    text: str
    category: str
    tags: frozenset[str]


def templates_of(tree: Tree) -> dict[str, Template]:
    """Every condition valid for the variables of ``tree``, by text. Each conjunct's
    variables share at least one DNF branch; it mentions one negated variable at
    most, never together with an element-wise Kleene reference (``b[i]``,
    ``b[i-1]``, ``b[..i-1]``), and iterates over one Kleene variable at most. Text
    (``g``) is compared with text only and never aggregated but by ``count``."""
    out: dict[str, Template] = {}

    def add(category: str, tags: str, *texts: str) -> None:
        for text in texts:
            out[text] = Template(text, category, frozenset(tags.split()))

    for branch in branches(tree):
        prims = [v.var for v in branch if v.kind == "prim"]
        kleenes = [v.var for v in branch if v.kind == "kleene"]
        negs = [v.var for v in branch if v.kind == "neg"]
        for p in prims:
            add("single", "prim", f"{p}.x < 3", f"{p}.y >= 2", f"NOT {p}.x > 1", f"{p}.x % 2 = 0",
                f"{p}.g = 'p'", f"{p}.g != 'q'", f"({p}.g = 'p' OR {p}.x > 2)")
            for q in prims:
                if q != p:
                    add("pair", "prim", f"{p}.x > {q}.x", f"{p}.x + {q}.y <= 4", f"{p}.y != {q}.x",
                        f"{p}.x / {q}.y >= 1", f"({p}.x > {q}.x OR {q}.y < 1)",
                        f"NOT ({p}.x = {q}.x AND {p}.y = 2)", f"{p}.x == {q}.x")
                    add("pair-text", "prim", f"{p}.g = {q}.g", f"{p}.g <> {q}.g", f"NOT {p}.g = {q}.g")
        for k in kleenes:
            # group-by pairs (the lazy engines' group-by key), on a number and on text
            add("group", "kleene", f"{k}[i].x == {k}[i-1].x", f"{k}[i].g = {k}[i-1].g",
                f"{k}[i-1].y = {k}[i].y")
            add("monotone", "kleene", f"{k}[i].x > {k}[i-1].x", f"{k}[i].y >= {k}[i-1].y",
                f"{k}[i].g != {k}[i-1].g")
            add("each", "kleene", f"{k}[i].x < 4", f"{k}[i].g = 'p'", f"{k}[i].g != 'q'")
            add("ends", "kleene", f"{k}[1].x <= {k}[last].x", f"{k}[1].g = {k}[last].g", f"{k}[last].y > 1")
            # aggregates over the whole subset (missing values are skipped)
            add("aggregate", "kleene", f"avg({k}[].x) > 1", f"sum({k}[].x) >= 3", f"min({k}[].y) >= 1",
                f"max({k}[].x) < 3", f"count({k}[].x) >= 2", f"count({k}[]) <= 2",
                f"count({k}[].g) = count({k}[])")
            # aggregates over the elements before the current one
            add("prefix", "kleene", f"{k}[i].y >= max({k}[..i-1].y)", f"{k}[i].x > avg({k}[..i-1].x)",
                f"{k}[i].x <= min({k}[..i-1].x) + 1", f"sum({k}[..i-1].x) < 4",
                f"count({k}[..i-1].g) < 2")
            for p in prims:
                add("kleene-prim", "kleene prim", f"{k}[i].x >= {p}.x", f"sum({k}[].y) > {p}.y",
                    f"({k}[i].x > {k}[i-1].x OR {k}[i].y = {p}.y)", f"{k}[i].g = {p}.g",
                    f"{k}[1].x = {p}.x", f"{k}[last].g != {p}.g", f"max({k}[].x) < {p}.x")
            for m in kleenes:
                if m != k:
                    add("kleene-kleene", "kleene", f"{k}[1].x < {m}[last].x", f"avg({k}[].x) <= avg({m}[].x)",
                        f"{k}[i].x >= {m}[1].x", f"{k}[i].g = {m}[last].g")
        for n in negs:
            add("neg", "neg", f"{n}.y < 2", f"{n}.g = 'p'", f"{n}.x != 1")
            for p in prims:
                add("neg-prim", "neg prim", f"{n}.x = {p}.x", f"{n}.g = {p}.g",
                    f"({n}.x = {p}.x OR {n}.y > 3)", f"{n}.x > {p}.x", f"{n}.g <> {p}.g")
            for k in kleenes:
                add("neg-kleene", "neg kleene", f"{n}.x > {k}[last].x", f"{n}.g = {k}[1].g",
                    f"{n}.x < avg({k}[].x)", f"{n}.x >= max({k}[].y)", f"{n}.y = count({k}[])")
    add("equivalence", "", "[x]", "[g]")
    return dict(sorted(out.items()))


@st.composite
def _template(draw: st.DrawFn, templates: list[Template]) -> str:
    """One of ``templates``: a category, then a template of it."""
    category = draw(st.sampled_from(sorted({t.category for t in templates})))
    return draw(st.sampled_from([t.text for t in templates if t.category == category]))


def _discriminator(v: Leaf) -> list[str]:
    """Conditions that tell a variable apart from others of its type."""
    ref = f"{v.var}[i]" if v.kind == "kleene" else v.var
    return [f"{ref}.g = 'p'", f"{ref}.g = 'q'", f"{ref}.g != 'p'", f"{ref}.x < 2", f"{ref}.x >= 2"]


# Conjuncts that mention no variable (they hold or fail for every match alike).
CONSTANTS = ["1 + 1 = 2", "2 < 1"]

# Windows by time form. ``int``: in seconds, over integer ticks. The others: over
# ticks of 0.3 s, mostly whole numbers of ticks (two events are then often exactly
# a window apart), some not; ``epoch_ms`` only with a unit (a bare number would be
# in the timestamp's unit).
WINDOWS = {
    "int": ["1", "2", "3", "3", "5", "5", "1.5", "4 s", "8 sec", "1000 ms", "0.5"],
    "decimal": ["600 ms", "1.5", "0.3", "0.9 s", "1500 ms", "3 s", "0.45", "1 s", "1.2"],
    "iso": ["600 ms", "1.5 s", "300 ms", "0.9", "1500 ms", "3 sec", "450 ms", "1 s", "1.2 s"],
    "epoch_ms": ["600 ms", "1.5 s", "300 ms", "0.9 s", "1500 ms", "3 s", "450 ms", "1 s", "1200 ms"],
}


@dataclass(frozen=True)
class Pattern:
    tree: Tree
    where: tuple[str, ...]
    window: str
    braced: bool = False
    strategy: str = ""  # a selection strategy, with its variables: ``strict_contiguity(a, b)``

    @property
    def text(self) -> str:
        lines = [f"PATTERN {structure_text(self.tree)}"]
        if self.strategy:
            lines.append(f"WHERE {self.strategy} {{ {' AND '.join(self.where)} }}" if self.where
                         else f"WHERE {self.strategy}")
        elif self.where:
            cond = " AND ".join(self.where)
            lines.append(f"WHERE skip_till_any_match {{ {cond} }}" if self.braced else f"WHERE {cond}")
        lines.append(f"WITHIN {self.window}")
        return "\n".join(lines)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v.var for v in leaves(self.tree))

    def __str__(self) -> str:
        return self.text


@st.composite
def patterns(draw: st.DrawFn, constants: bool = False, focus: str | None = None,
             time_form: str | None = None) -> Pattern:
    """A random query; with ``constants``, one conjunct mentions no variable. ``focus``:
    see the module docstring. ``time_form``: the window suits that form of the
    stream's timestamps (None: any window of any form)."""
    tree = draw(trees(focus))
    templates = templates_of(tree)
    size = draw(st.sampled_from([0, 1, 1, 2, 2, 3]))
    where = []
    for _ in range(size):
        text = draw(_template(list(templates.values())))
        if text not in where:
            where.append(text)
    if focus in ("kleene", "neg") and not any(focus in templates[t].tags for t in where):
        where.insert(0, draw(_template([t for t in templates.values() if focus in t.tags])))
    if focus == "kleene" and draw(st.sampled_from([False, True, True, True])):  # a group-by pair (issue 16)
        group = draw(_template([t for t in templates.values() if t.category == "group"]))
        if group not in where:
            where.insert(0, group)
    # tell variables of a shared type apart: always with focus "shared", else in one
    # query in three; then each such variable with odds 1 in 2 (shrinks to none)
    types = [v.type for v in leaves(tree)]
    if focus == "shared" or draw(st.integers(0, 2)) == 2:
        for v in leaves(tree):
            if types.count(v.type) > 1 and draw(st.booleans()):
                cond = draw(st.sampled_from(_discriminator(v)))
                if cond not in where:
                    where.append(cond)
    if constants:
        where.append(draw(st.sampled_from(CONSTANTS)))
    forms = [time_form] if time_form else list(TIME_FORMS)
    window = draw(st.sampled_from([w for f in forms for w in WINDOWS[f]]))
    strategy = ""
    if focus == "kleene_strategy":
        if not any(t in templates and "kleene" in templates[t].tags for t in where):
            where.insert(0, draw(_template([t for t in templates.values() if "kleene" in t.tags])))
        strategy = draw(st.sampled_from(["skip_till_next_match", "skip_till_next_match", "strict_contiguity",
                                         "partition_contiguity"]))
        if strategy == "partition_contiguity":
            key = draw(st.sampled_from(["[g]", "[x]"]))
            where = [c for c in where if not c.startswith("[")] + [key]
        events = [v.var for v in leaves(tree) if v.kind != "neg"]
        listed = draw(st.lists(st.sampled_from(events), unique=True))
        strategy += f"({', '.join(sorted(listed))})" if len(listed) >= 2 else ""
    if focus == "strategy":
        strategy = draw(st.sampled_from(["skip_till_next_match", "strict_contiguity", "partition_contiguity",
                                         "skip_till_next_match"]))
        if strategy == "partition_contiguity":
            key = draw(st.sampled_from(["[g]", "[x]"]))
            where = [c for c in where if not c.startswith("[")] + [key]
        positives = [v.var for v in leaves(tree) if v.kind == "prim"]
        listed = draw(st.lists(st.sampled_from(positives), unique=True, max_size=len(positives)))
        if len(listed) >= 2:
            strategy += f"({', '.join(sorted(listed))})"
    return Pattern(tree, tuple(where), window, braced=bool(where) and draw(st.integers(0, 4)) == 0,
                   strategy=strategy)


def queries() -> st.SearchStrategy[str]:
    return patterns().map(lambda p: p.text)


# --- streams --------------------------------------------------------------------------

# Where the fractional forms start (the 0.3 s tick is added): a small time, the
# the issue's ``614.067``, and a recent epoch time (13 significant digits: a float
# difference of two of them is rarely the exact decimal one).
DECIMAL_STARTS_MS = [14_067, 614_067, 1_709_251_199_100]
ISO_STARTS = [datetime(2024, 2, 29, 23, 59, 58, 800_000, tzinfo=UTC),  # crosses midnight
              datetime(1970, 1, 1, 0, 0, 0, tzinfo=UTC)]
TICK_MS = 300


def time_text(tick: int, form: str, start: int = 0) -> str:
    """Tick ``tick`` of a stream written in ``form`` (``start``: an index into the
    form's list of starting times)."""
    if form == "int":
        return str(tick)
    if form == "decimal":
        ms = DECIMAL_STARTS_MS[start % len(DECIMAL_STARTS_MS)] + TICK_MS * tick
        return f"{ms // 1000}.{ms % 1000:03d}"
    if form == "iso":
        stamp = ISO_STARTS[start % len(ISO_STARTS)] + timedelta(milliseconds=TICK_MS * tick)
        return f"{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond // 1000:03d}Z"
    if form == "epoch_ms":
        return str(DECIMAL_STARTS_MS[-1] + TICK_MS * tick)
    raise ValueError(form)


def time_unit(form: str) -> str:
    """The ``--time-unit`` that reads timestamps of ``form``."""
    return "ms" if form == "epoch_ms" else "s"


def _cell(values: st.SearchStrategy[str], missing: float) -> st.SearchStrategy[str]:
    """A cell of ``values``, empty with probability ``missing`` (shrinks to present)."""
    share = round(missing * 100)
    return st.tuples(st.integers(0, 99), values).map(lambda t: "" if t[0] >= 100 - share else t[1])


NUMBERS = st.integers(0, 4).map(str)
TEXT_VALUES = st.sampled_from(TEXTS)


Row = tuple[int, str, str, str, str]  # tick, type, x, y, g


@st.composite
def stream_rows(draw: st.DrawFn, min_size: int = 3, max_size: int = 10, types: str = TYPES,
                missing: float = MISSING) -> list[Row]:
    """The events of a stream, their time in ticks (never decreasing, often tied)."""
    n = draw(st.integers(min_size, max_size))
    rows = []
    tick = 0
    for _ in range(n):
        tick += draw(st.sampled_from([0, 0, 1, 1, 1, 2, 3]))
        rows.append((tick, draw(st.sampled_from(types)), draw(_cell(NUMBERS, missing)),
                     draw(_cell(NUMBERS, missing)), draw(_cell(TEXT_VALUES, missing))))
    return rows


def render(rows: list[Row], time_form: str = "int", start: int = 0) -> str:
    """The CSV text of ``rows``, timestamps written in ``time_form``."""
    lines = ["ts,type,x,y,g"]
    lines += [",".join([time_text(tick, time_form, start), *rest]) for tick, *rest in rows]
    return "\n".join(lines) + "\n"


@st.composite
def streams(draw: st.DrawFn, min_size: int = 3, max_size: int = 10, types: str = TYPES,
            missing: float = MISSING, time_form: str = "int") -> str:
    """A CSV stream; event types are drawn from ``types`` (repeat a letter to make
    it more frequent); ``missing``: the share of empty attribute cells."""
    rows = draw(stream_rows(min_size, max_size, types, missing))
    return render(rows, time_form, draw(st.integers(0, 2)))


@dataclass(frozen=True)
class Example:
    """A query and a stream, and how the stream writes its timestamps."""

    pattern: Pattern
    csv: str
    time_form: str = "int"

    @property
    def query(self) -> str:
        return self.pattern.text

    @property
    def time_unit(self) -> str:
        return time_unit(self.time_form)

    def __str__(self) -> str:
        unit = "" if self.time_unit == "s" else f" (time unit {self.time_unit})"
        return f"query:\n{self.query}\ncsv{unit}:\n{self.csv}"


@st.composite
def examples(draw: st.DrawFn, constants: bool = False, focus: str | None = None,
             time_forms: tuple[str, ...] = ("int",), missing: float | None = None) -> Example:
    """A pattern and a stream whose types lean towards the pattern's, so that
    matches (and violated negations) are common. ``time_forms``: the forms of
    timestamp to draw from; ``missing``: the share of empty cells (None: ``MISSING``
    three times in five, else none or half)."""
    form = draw(st.sampled_from(time_forms))
    pattern = draw(patterns(constants, focus, form))
    used = "".join(sorted({v.type for v in leaves(pattern.tree)}))
    share = draw(st.sampled_from([MISSING, MISSING, MISSING, 0.0, 0.5])) if missing is None else missing
    return Example(pattern, draw(streams(types=used * 3 + TYPES, missing=share, time_form=form)), form)


# --- cost -----------------------------------------------------------------------------


def oracle_cost(pattern: Pattern, csv_text: str) -> int:
    """How many assignments the oracle enumerates (sum over branches of the product
    of each bound variable's choices)."""
    lines = csv_text.splitlines()
    at = lines[0].split(",").index("type")
    types = [line.split(",")[at] for line in lines[1:]]
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
