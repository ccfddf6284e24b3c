"""The normalised pattern: DNF branches of variables, order pairs and conditions."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cepcli.errors import NO_SPAN, Span
from cepcli.query import ast as a


class Role(enum.Enum):
    POSITIVE = "positive"
    KLEENE = "kleene"
    NEGATED = "negated"


@dataclass(frozen=True, slots=True)
class Variable:
    """A pattern variable. ``bit`` is its position in the query (event masks use it)."""

    name: str
    type: str
    role: Role
    bit: int
    lo: int = 1
    hi: int | None = 1
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    # a negated variable a selection strategy made (``plan.strategy``): the strategy's name
    made_by: str = ""
    # next-match over a Kleene variable: this negation also holds between the run's elements
    # (no event that could have been its next element is skipped, ``NegationCheck.gaps``)
    gaps_of: str = ""

    @property
    def kleene(self) -> bool:
        return self.role is Role.KLEENE

    @property
    def any_type(self) -> bool:
        """Every row is an event of this variable (a contiguity's "no row between")."""
        return self.made_by in ("strict_contiguity", "partition_contiguity")

    @property
    def keyed(self) -> bool:
        """Whether ``[attr]`` applies to its events: to every variable but the negation of
        strict contiguity (no row at all between, whatever its key)."""
        return self.made_by != "strict_contiguity"

    def of_type(self, other: Variable) -> bool:
        """Can one event be of both variables' types?"""
        return self.any_type or other.any_type or self.type == other.type

    @property
    def negated(self) -> bool:
        return self.role is Role.NEGATED


@dataclass(frozen=True, slots=True)
class Join:
    """An equality between plain attributes of two variables (``a.x = c.y``): a match needs
    equal present values, so the events of one side can be looked up by the other's."""

    left: tuple[str, str]  # (variable, attribute)
    right: tuple[str, str]

    def of(self, var: str) -> tuple[str, str]:
        """``var``'s attribute and the other variable: ``(attribute, other)``."""
        (mine, theirs) = (self.left, self.right) if self.left[0] == var else (self.right, self.left)
        return mine[1], theirs[0]

    def attr_of(self, var: str) -> str:
        return self.left[1] if self.left[0] == var else self.right[1]


@dataclass(frozen=True, slots=True)
class Band:
    """An order between plain attributes of two variables (``a.x < c.y``): the events of
    one side are those on one side of the other's value (a range join)."""

    left: tuple[str, str]  # (variable, attribute)
    op: str  # < <= > >=
    right: tuple[str, str]

    def of(self, var: str) -> tuple[str, str, str, str]:
        """From ``var``'s side: ``(attribute, op, other, other's attribute)``, so that the
        condition reads ``var.attribute op other.attribute``."""
        if self.left[0] == var:
            return self.left[1], self.op, self.right[0], self.right[1]
        return self.right[1], _FLIPPED[self.op], self.left[0], self.left[1]


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, slots=True)
class Condition:
    """A top-level WHERE conjunct, lowered once for every consumer (the runtimes, the
    prefilter, the tree's probes, Spark): ``expr`` in negation normal form (``plan.nnf``:
    the missing-value rule is then plain ``and``/``or`` over comparisons that are false on
    a missing value), ``written`` as the query wrote it (for explain), and classified by
    what it references."""

    expr: a.Expr
    variables: frozenset[str]
    iterates: str | None = None  # Kleene var referenced element-wise (b[i], b[i-1], b[..i-1])
    from_second: bool = False  # uses b[i-1] or b[..i-1]: checked from the 2nd element on
    whole: frozenset[str] = frozenset()  # Kleene vars used as a whole (b[1], b[last], b[])
    prefilter: bool = False  # single-variable, element-wise: applied before the automaton
    negated: str | None = None  # the negated variable it mentions: its negation check decides it
    join: Join | None = None  # ``a.x = c.y`` between two plain attributes
    band: Band | None = None  # ``a.x < c.y`` between two plain attributes
    written: a.Expr | None = field(default=None, compare=False, repr=False)  # None: ``expr``

    @property
    def text(self) -> a.Expr:
        """The condition as the query wrote it."""
        return self.written if self.written is not None else self.expr


@dataclass(frozen=True, slots=True)
class Branch:
    """One DNF branch: its variables (pattern order), order pairs and conditions."""

    variables: tuple[Variable, ...]
    order: frozenset[tuple[str, str]]  # (x, y): x before y in stream order, closed
    conditions: tuple[Condition, ...]
    equiv: tuple[str, ...] = ()  # [attr] tests

    @property
    def positives(self) -> tuple[Variable, ...]:
        """Variables bound in a match: positive and Kleene ones."""
        return tuple(v for v in self.variables if not v.negated)

    @property
    def negated(self) -> tuple[Variable, ...]:
        return tuple(v for v in self.variables if v.negated)

    def before(self, name: str) -> frozenset[str]:
        """Bound variables that must precede ``name``."""
        bound = {v.name for v in self.positives}
        return frozenset(x for x, y in self.order if y == name and x in bound)

    def after(self, name: str) -> frozenset[str]:
        """Bound variables that must follow ``name``."""
        bound = {v.name for v in self.positives}
        return frozenset(y for x, y in self.order if x == name and y in bound)

    def equalities(self, var: str, bound: set[str] | frozenset[str]) -> tuple[tuple[str, str, str], ...]:
        """The equalities the join of ``var`` may look up by once ``bound`` are bound (a key
        join): per condition ``var.attr = other.attr2`` with ``other`` bound (not a
        negation's), ``(attr, other, attr2)``, in the conditions' order. (``[attr]``, the
        branch's ``equiv``, joins on a key too, with any bound variable.)"""
        found = []
        for cond in self.conditions:
            if cond.join is not None and var in cond.variables and cond.negated is None:
                attr, other = cond.join.of(var)
                if other in bound:
                    found.append((attr, other, cond.join.attr_of(other)))
        return tuple(found)

    def orders(self, var: str, bound: set[str] | frozenset[str]) -> tuple[tuple[str, str, str, str], ...]:
        """The orders the join of ``var`` may search by once ``bound`` are bound (a range
        join, ``runtime.bands``): per condition ``var.attr op other.attr2`` with ``other``
        bound (not a negation's), ``(attr, op, other, attr2)``, in the conditions' order."""
        found = []
        for cond in self.conditions:
            if cond.band is not None and var in cond.variables and cond.negated is None:
                attr, op, other, theirs = cond.band.of(var)
                if other in bound:
                    found.append((attr, op, other, theirs))
        return tuple(found)

    @property
    def adjacent(self) -> tuple[tuple[str, str], ...]:
        """The pairs ``(x, y)`` of bound variables that strict contiguity makes neighbours
        (no row at all between them: its negated variable of every row, ``plan.strategy``):
        ``y``'s row is the one right after ``x``'s."""
        return tuple((x, y) for x, y, _ in self._between("strict_contiguity"))

    @property
    def next_match(self) -> tuple[tuple[str, str, str], ...]:
        """The triples ``(x, y, n)`` where skip-till-next-match makes ``y``'s event the first
        after ``x``'s that could be ``y``'s: ``n`` the negated variable of that strategy
        between them (``plan.strategy``), whose conditions say what could."""
        return self._between("skip_till_next_match")

    @property
    def next_run(self) -> tuple[str, str, str, str] | None:
        """``(x, b, n1, n2)`` where skip-till-next-match makes the last bound variable ``b``,
        an unbounded Kleene one (``b+``, ``b{2,}``), one run per start: its first element
        the first event after ``x``'s that could be it (``n1``, a ``next_match`` pair) and
        each next one the first that could follow the run so far (``n2``, its gaps'
        negated variable), until none can within the window. None for any other shape."""
        kleene = [v for v in self.positives if v.kleene]
        if len(kleene) != 1 or kleene[0].hi is not None or self.after(kleene[0].name):
            return None
        b = kleene[0].name
        gaps = [n.name for n in self.negated if n.gaps_of == b and n.made_by == "skip_till_next_match"]
        first = [(x, n) for x, y, n in self.next_match if y == b]
        if len(gaps) != 1 or len(first) != 1:
            return None
        return first[0][0], b, first[0][1], gaps[0]

    def _between(self, strategy: str) -> tuple[tuple[str, str, str], ...]:
        """The bound variables ``(x, y, n)`` right before and after each negated variable
        ``n`` that ``strategy`` made between two of them (not in a Kleene run's gaps)."""
        out = []
        for n in self.negated:
            if n.made_by != strategy or n.gaps_of:
                continue
            before, after = self.before(n.name), self.after(n.name)
            last = [x for x in before if not any((x, z) in self.order for z in before if z != x)]
            first = [y for y in after if not any((z, y) in self.order for z in after if z != y)]
            if len(last) == 1 and len(first) == 1:
                out.append((last[0], first[0], n.name))
        return tuple(out)

    @property
    def trailing(self) -> bool:
        """Does a negation trail the branch (no bound variable must follow it)? Its matches
        are decided only once their window has closed."""
        return any(not self.after(n.name) for n in self.negated)

    def conditions_on(self, name: str) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if name in c.variables)

    @property
    def key(self) -> tuple[str, ...]:
        """The names a match of this branch binds; branches with equal keys can duplicate."""
        return tuple(sorted(v.name for v in self.positives))


@dataclass(frozen=True, slots=True)
class Pattern:
    """A whole normalised query."""

    branches: tuple[Branch, ...]
    variables: tuple[Variable, ...]  # all variables of the query, by bit
    window: int  # nanoseconds
    filters: tuple[tuple[str, tuple[Condition, ...]], ...]  # per variable, prefilter conjuncts
    query: a.Query

    def variable(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(name)

    def filters_of(self, name: str) -> tuple[Condition, ...]:
        return dict(self.filters).get(name, ())

    def rarest_first(self, counts: dict[int, int]) -> tuple[str, ...]:
        """Variable names by ascending event count (``counts`` by bit); ties keep the
        query's order. The frequency order the chain engines build from."""
        return tuple(v.name for v in sorted(self.variables, key=lambda v: (counts[v.bit], v.bit)))

    @property
    def groups(self) -> tuple[str, ...]:
        """The ``[attr]`` key its rows may be grouped by, each key's rows evaluated on their
        own and the rows without it left out (a Spark shard's groups, a stream's): when
        every variable's events are of one key (``Variable.keyed``); else none. Not under
        ``strict_contiguity``, whose negation is any row at all between two events, whatever
        its key; ``partition_contiguity`` and ``skip_till_next_match`` are about the rows of
        the same key."""
        equiv = self.branches[0].equiv
        return tuple(equiv) if equiv and all(v.keyed for v in self.variables) else ()

    @property
    def bits(self) -> int:
        """Its variables' bits as one mask, a Python int (a row's mask is an int64:
        ``runtime.columnar.as_mask``)."""
        return sum(1 << v.bit for v in self.variables)

    @property
    def columns(self) -> frozenset[str]:
        """Attributes the conditions read."""
        out: set[str] = set()
        for branch in self.branches:
            for cond in branch.conditions:
                out |= _attrs(cond.expr)
            out |= set(branch.equiv)
        return frozenset(out)


def first_only(expr: a.Expr, var: str) -> bool:
    """Whether ``expr`` reads Kleene variable ``var`` only by its first element (``b[1]``):
    no ``b[last]``, no element-wise ``b[i]`` and no aggregate over it."""
    seen = False
    for node in a.iter_expr(expr):
        if isinstance(node, a.Agg) and node.var == var:
            return False
        if isinstance(node, a.Attr) and node.var == var:
            if node.index is not a.Index.FIRST:
                return False
            seen = True
    return seen


def _attrs(expr: a.Expr) -> set[str]:
    out: set[str] = set()
    for node in a.iter_expr(expr):
        attr = node.attr if isinstance(node, a.Attr | a.Agg) else None
        if attr is not None:
            out.add(attr)
    return out
