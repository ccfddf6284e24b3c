"""``cepcli explain``: an automaton, as the data a user reads (text, dot or json).

Builders already produce automata as data; this module turns each kind into one
neutral view (states and labelled edges, in build order, so the output is stable
enough to golden-test) without running anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from math import perm

from cepcli.automata.adaptive import KEY_SAMPLE, KEYED, AdaptiveNfa
from cepcli.automata.chain import Action, Chain, ChainNfa, Negation
from cepcli.automata.eager import EagerBranch, EagerNfa
from cepcli.automata.placement import Placement, place
from cepcli.automata.tree import TreeBranch, TreeNfa, tree_state
from cepcli.plan.pattern import Branch, Pattern, Variable
from cepcli.query import ast as a
from cepcli.query.printer import print_duration, print_expr, print_structure
from cepcli.runtime.bands import MIN_WINDOW

TREE_LAYERS_SHOWN = 4  # variables up to which the whole (lazily instantiated) tree is listed


@dataclass(frozen=True, slots=True)
class StateView:
    id: str
    label: str
    kind: str  # start | positive | kleene | negative | tree | accept | reject
    note: str = ""


@dataclass(frozen=True, slots=True)
class EdgeView:
    source: str
    target: str
    action: str  # take | iterate | store | ignore | timeout | search_failed | accept
    events: tuple[str, ...] = ()
    condition: str = ""
    prec: tuple[str, ...] = ()
    succ: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AutomatonView:
    name: str
    states: tuple[StateView, ...]
    edges: tuple[EdgeView, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Explanation:
    engine: str
    order: tuple[str, ...]
    order_source: str
    branches: tuple[str, ...]  # each DNF branch, printed back as SASE+
    automata: tuple[AutomatonView, ...]
    notes: tuple[str, ...] = field(default=())


def explain(pattern: Pattern, engine: str, automaton: object, order_source: str) -> Explanation:
    branches = tuple(branch_text(pattern, b) for b in pattern.branches)
    match automaton:
        case EagerNfa():
            views = tuple(_eager(pattern, b, i) for i, b in enumerate(automaton.branches))
            return Explanation(engine, (), "", branches, views, _negations(pattern, _ON_ACCEPTANCE))
        case ChainNfa():
            views = tuple(_chain(pattern, c, i, automaton.negation) for i, c in enumerate(automaton.chains))
            notes = ("Multi-Chain NFA: the chains share their start, accepting and rejecting states",)
            return Explanation(
                engine, automaton.order, order_source, branches, views, notes if len(views) > 1 else ()
            )
        case AdaptiveNfa():
            views = tuple(_tree(pattern, t, i) for i, t in enumerate(automaton.tree.branches))
            checked = (
                f"in the segments, {_ON_ACCEPTANCE} under eager, {_POST} under the chain and the tree"
                if automaton.eager is not None
                else _POST  # (the tree alone)
            )
            if automaton.columnar:  # what a file runs: the columnar joins, then the segments' tree
                said = (
                    *_choices(pattern, automaton),
                    *_negations(pattern, _columnar_how(pattern, f"; {checked}")),
                )
                return Explanation(engine, (), "", branches, _columnar_views(pattern) + views, said)
            return Explanation(
                engine,
                (),
                "",
                branches,
                views,
                (*_choices(pattern, automaton), *_negations(pattern, checked)),
            )
        case Pattern():  # the columnar engine: the pattern's plan, joined set-at-a-time
            views = _columnar_views(pattern)
            note = (
                "columnar: the relevant rows as arrays (a file or a pipe step by step, the"
                " window's tail carried); per branch, the variables are joined the rarest first"
                " by their exact counts, then the one whose join keeps the fewest as estimated"
                " from the conditions it decides (the order below is the pattern's: the run's is"
                " in its stats), each a window join (searchsorted on time and on the SEQ order, on an"
                " equality key where there is one), then each negation as an anti-join; a Kleene"
                " pattern runs the tree, but a SEQ ending in b+ under skip_till_next_match (one run"
                " per start, followed element by element) and a bounded closure B{l,m} b[] (each"
                " length joined as plain variables, folded back into b's run)"
            )
            return Explanation(
                engine, (), "", branches, views, (note, *_negations(pattern, _columnar_how(pattern)))
            )
        case TreeNfa():
            views = tuple(_tree(pattern, t, i) for i, t in enumerate(automaton.branches))
            note = (
                "no fixed order: at each state the tree takes the variable with the fewest"
                " buffered events (p_se), once every remaining one has some (p_ne)"
            )
            return Explanation(engine, (), "", branches, views, (note, *_tree_negations(pattern, automaton)))
    raise TypeError(automaton)


def _stream_note(pattern: Pattern) -> str:
    """How a Spark stream (``--stream``) groups the pattern's rows (``Pattern.groups``)."""
    if pattern.groups:
        keys = ", ".join(f"[{k}]" for k in pattern.groups)
        return (
            f"stream      in a Spark stream (--stream): a group per {keys} key, the keys spread over"
            " the state's partitions"
        )
    return (
        "stream      in a Spark stream (--stream): one group (no [attr] key every variable shares),"
        " on one task at a time; each micro-batch still read on every core"
    )


def _columnar_views(pattern: Pattern) -> tuple[AutomatonView, ...]:
    """The columnar engine's joins, per branch, in the pattern's order (the run's: its stats)."""
    order = tuple(v.name for v in pattern.variables)
    return tuple(_columnar(pattern, b, i, order) for i, b in enumerate(pattern.branches))


_ON_ACCEPTANCE = "checked when a match is complete (on acceptance)"
_POST = "checked after the positive part is matched (post-processing)"
_ANTI_JOIN = "an anti-join after the joins of the positive variables"


def _columnar_how(pattern: Pattern, rest: str = "") -> Callable[[int, str], str]:
    """How the columnar engine checks a negated variable: an anti-join, but where
    skip-till-next-match binds the first event that could be the next (``Branch.next_match``,
    ``Branch.next_run``), whose negation then holds by construction."""

    def how(i: int, name: str) -> str:
        branch = pattern.branches[i]
        run = branch.next_run
        if run is not None and name in run[2:]:
            return (
                f"in the columnar engine, {run[1]}'s run is followed element by element, each the"
                f" first event that could be next: no anti-join{rest}"
            )
        if any(n == name for _, _, n in branch.next_match):
            return (
                "in the columnar engine, the next variable is bound to the first event that could be"
                f" it: no anti-join{rest}"
            )
        return _ANTI_JOIN + rest

    return how


def _negations(pattern: Pattern, how: str | Callable[[int, str], str]) -> tuple[str, ...]:
    """Where and how each negated variable is checked (``how``, or ``how(branch, name)``),
    then what drops a match."""
    out = []
    for i, branch in enumerate(pattern.branches):
        for n in branch.negated:
            after = ", ".join(sorted(branch.before(n.name) - {n.name}))
            before = ", ".join(sorted(branch.after(n.name) - {n.name}))
            where = " and ".join(
                part
                for part in (f"after {after}" if after else "", f"before {before}" if before else "")
                if part
            )
            conditions = [print_expr(c.text) for c in branch.conditions if n.name in c.variables]
            label = f" (branch {i + 1})" if len(pattern.branches) > 1 else ""
            checked = how if isinstance(how, str) else how(i, n.name)
            if n.gaps_of and n.any_type:  # (a contiguity: between the run's elements only)
                where = f"between two elements of {n.gaps_of}"
            elif n.gaps_of:  # (it also lies between the run's elements, the run so far as b[])
                where = f"between two elements of {n.gaps_of} or {where}"
            out.append(
                f"NOT {n.type} {n.name}{label}: {checked}; an event of {n.name}"
                + (f" {where}" if where else "")
                + " within the window"
                + (f" with {' AND '.join(conditions)}" if conditions else "")
                + " drops the match"
            )
    return tuple(out)


def _tree_negations(pattern: Pattern, tree: TreeNfa) -> tuple[str, ...]:
    def how(i: int, name: str) -> str:
        early = dict(tree.branches[i].first_chance)
        if name in early:
            return f"checked as soon as {', '.join(sorted(early[name]))} are bound (first chance)"
        return _POST

    return _negations(pattern, how)


def _joins(automaton: AdaptiveNfa) -> str:
    assert automaton.keys is not None
    return ", ".join(f"{j.left[0]}.{j.left[1]} = {j.right[0]}.{j.right[1]}" for j in automaton.keys.joins)


def _choices(pattern: Pattern, automaton: AdaptiveNfa) -> tuple[str, ...]:
    """What the adaptive engine runs for this pattern, and why: a short table, one line a
    choice (the details of the segments' rule in its last line)."""
    windows = automaton.segment // max(pattern.window, 1)
    lines = ["adaptive chooses, for this pattern:"]
    if automaton.columnar:
        lines += [
            "  columnar    a file or a pipe (step by step, the window's tail carried), a DataFrame, an"
            " Arrow table, a Spark shard (at once): its joins first below (the run's order in its"
            " stats), each negation an anti-join (the edge to R)",
            f"  segments    with --stats-every, or --sort on a pipe: segments of {windows} windows, each"
            " by the variables' counts in the one before:",
        ]
    else:
        lines.append(
            f"  segments    everywhere (no columnar plan: a Kleene closure it does not run): segments of"
            f" {windows} windows, each by the variables' counts in the one before:"
        )
    if automaton.eager is None:
        lines.append("    tree      always (a Kleene variable, or an eager NFA too large)")
    else:
        keyed = (
            f"; the equality joins ({_joins(automaton)}) choose the chain instead when eager's partial"
            f" matches (estimated from the counts and the keys' distinct values in the first"
            f" {KEY_SAMPLE:,} events) outnumber the best chain's more than {KEYED:g}x"
            if automaton.keys is not None
            else ""
        )
        lines += [
            f"    eager     the counts within 1:{automaton.ratio:g} of each other (at least"
            f" {automaton.least} of the rarest){keyed}",
            f"    chain     within 1:{automaton.chain_ratio:g}, the Chain NFA rarest first",
            "    tree      otherwise (the tree below)",
        ]
    if automaton.columnar:
        lines.append(f"  {_stream_note(pattern)}")
    else:
        lines.append("  stream      not in a Spark stream (--stream), which runs the columnar engine")
    lines.append(
        f"  (the first segment decides from the first events, until the rarest is counted"
        f" {automaton.first_least} times; on a pipe, from its first"
        f" {automaton.first_span // max(pattern.window, 1)} windows; a change needs the ratio"
        f" {automaton.hysteresis:g}x past the bound; the stats say what ran, and when it changed)"
    )
    return tuple(lines)


# --- the normalised pattern ---------------------------------------------------------------


def branch_text(pattern: Pattern, branch: Branch) -> str:
    """A DNF branch as SASE+: the query's structure with the other OR alternatives
    left out, and the WHERE conjuncts the branch keeps."""
    names = {v.name for v in branch.variables}
    structure = _prune(pattern.query.structure, names)
    assert structure is not None
    text = f"PATTERN {print_structure(structure)}"
    made = {v.name: v for v in branch.negated if v.made_by}  # a selection strategy's negations
    conjuncts = [print_expr(c.text) for c in branch.conditions if not c.variables & made.keys()]
    conjuncts += [f"[{x}]" for x in branch.equiv]
    if conjuncts:
        text += f" WHERE {' AND '.join(conjuncts)}"
    text += f" WITHIN {print_duration(pattern.query.window)}"
    for n in made.values():
        last = max(branch.before(n.name), key=lambda x: len(branch.before(x)))
        mine = [print_expr(c.text) for c in branch.conditions if n.name in c.variables]
        if n.gaps_of and n.any_type:  # a contiguity over a Kleene variable: its run is contiguous
            what = "no row" if n.keyed is False else "no row of the same key"
            text += f"; {n.made_by}: {what} between two elements of {n.gaps_of}"
            continue
        if n.gaps_of:  # next-match over a Kleene variable: the run's next element is never skipped
            after = branch.after(n.name)
            end = min(after, key=lambda x: len(branch.before(x))) if after else "the window's end"
            text += (
                f"; {n.made_by}: no {n.type} event that could be {n.gaps_of}'s next element between"
                f" its elements nor after them before {end}"
            )
            text += f" ({n.name}: {' AND '.join(mine)})" if mine else ""
            continue
        first = min(branch.after(n.name), key=lambda x: len(branch.before(x)))
        what = (
            f"no {n.type} event"
            if not n.any_type
            else "no row"
            if n.keyed is False
            else "no row of the same key"
        )
        text += f"; {n.made_by}: {what} between {last} and {first}"
        text += f" that could be {first} ({n.name}: {' AND '.join(mine)})" if mine else ""
    return text


def _prune(node: a.Structure, names: set[str]) -> a.Structure | None:
    match node:
        case a.Prim(_, var) | a.Kleene(_, var):
            return node if var in names else None
        case a.Neg(a.Prim(_, var)):
            return node if var in names else None
        case a.Disj(items):
            kept = [k for k in (_prune(i, names) for i in items) if k is not None]
            return kept[0] if len(kept) == 1 else (a.Disj(tuple(kept)) if kept else None)
        case a.Seq(items) | a.Conj(items):
            kept = [k for k in (_prune(i, names) for i in items) if k is not None]
            if not kept:
                return None
            return type(node)(tuple(kept)) if len(kept) > 1 else kept[0]
    raise TypeError(node)


# --- pieces shared by the views -------------------------------------------------------------


def _event(v: Variable) -> str:
    if v.negated:
        return f"{v.type} {v.name}"
    if v.kleene:
        if v.lo == 1 and v.hi is None:
            return f"{v.type}+ {v.name}[]"
        bounds = f"{v.lo}" if v.lo == v.hi else f"{v.lo},{'' if v.hi is None else v.hi}"
        return f"{v.type}{{{bounds}}} {v.name}[]"
    return f"{v.type} {v.name}"


def _events(pattern: Pattern, names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(_event(pattern.variable(n)) for n in names)


def _condition(pattern: Pattern, branch: Branch, placement: Placement, var: str) -> str:
    """The conditions a take edge checks, as query text (prefilter ones marked)."""
    indexes = placement.check + placement.each_new + placement.each_all
    parts = [print_expr(branch.conditions[i].text) for i in indexes]
    parts += [f"{print_expr(c.text)} [prefilter]" for c in pattern.filters_of(var)]
    return " AND ".join(parts)


def _negation_condition(pattern: Pattern, branch: Branch, name: str) -> str:
    parts = [print_expr(c.text) for c in branch.conditions_on(name) if not c.prefilter]
    parts += [f"{print_expr(c.text)} [prefilter]" for c in pattern.filters_of(name)]
    parts += [f"[{x}]" for x in branch.equiv]
    return " AND ".join(parts)


# --- eager ------------------------------------------------------------------------------------


def _eager(pattern: Pattern, nfa: EagerBranch, index: int) -> AutomatonView:
    branch = nfa.branch
    positives = branch.positives
    states = []
    for sid, counts in enumerate(nfa.states):
        taken = [
            v.name if not v.kleene else f"{v.name}[{c}{'+' if v.hi is None and c == v.lo else ''}]"
            for v, c in zip(positives, counts, strict=True)
            if c
        ]
        label = "{" + ", ".join(taken) + "}"
        kind = "start" if sid == 0 else ("accept" if sid in nfa.accepting else "positive")
        states.append(StateView(f"q{sid}", label, kind))
    states.append(StateView("R", "reject", "reject"))
    edges = []
    for sid in range(len(nfa.states)):
        for e in nfa.edges_from(sid):
            v = next(p for p in positives if p.name == e.var)
            placement = Placement(e.check, e.each_new, e.each_all)
            edges.append(
                EdgeView(
                    f"q{sid}",
                    f"q{e.target}",
                    "take",
                    (_event(v),),
                    _condition(pattern, branch, placement, v.name),
                )
            )
        edges.append(EdgeView(f"q{sid}", f"q{sid}", "ignore", ("*",)))
        if sid:
            edges.append(EdgeView(f"q{sid}", "R", "timeout"))
    notes = (
        "every event is applied to every instance on arrival; skip-till-any-match keeps the instance"
        " on its ignore edge as well",
    )
    return AutomatonView(f"eager NFA, branch {index + 1}", tuple(states), tuple(edges), notes)


# --- chain ------------------------------------------------------------------------------------


def _columnar(pattern: Pattern, branch: Branch, index: int, order: tuple[str, ...]) -> AutomatonView:
    """A branch of the columnar engine: the joins in ``order``, then the anti-joins."""
    names = [n for n in order if n in {v.name for v in branch.positives}]
    states = [StateView("q0", "", "start")]
    edges: list[EdgeView] = []
    bound: set[str] = set()
    for i, var in enumerate(names):
        v = pattern.variable(var)
        key = "; ".join(x for x in (_join_key(branch, bound, var), _join_range(branch, bound, var)) if x)
        states.append(StateView(f"q{i + 1}", ", ".join([*sorted(bound), var]), "positive", key))
        edges.append(
            EdgeView(
                f"q{i}",
                f"q{i + 1}",
                "take",
                (_event(v),),
                _condition(pattern, branch, place(branch, frozenset(bound), var), var),
                tuple(sorted(branch.before(var) & bound)),
                tuple(sorted(branch.after(var) & bound)),
            )
        )
        bound.add(var)
    last = f"q{len(names)}"
    for n in branch.negated:
        edges.append(
            EdgeView(
                last,
                "R",
                "take",
                (_event(n),),
                _negation_condition(pattern, branch, n.name),
                tuple(sorted(branch.before(n.name))),
                tuple(sorted(branch.after(n.name))),
            )
        )
    states.append(StateView("F", "", "accept"))
    edges.append(EdgeView(last, "F", "accept"))
    return AutomatonView(f"columnar branch {index + 1}", tuple(states), tuple(edges))


def _join_key(branch: Branch, bound: set[str], var: str) -> str:
    """The equality the join of ``var`` may look up by, if any."""
    keys = branch.equalities(var, bound)
    if keys:
        attr, other, theirs = keys[0]
        return f"by key {var}.{attr} = {other}.{theirs}"
    if bound and branch.equiv:
        return "by key " + ", ".join(f"[{x}]" for x in branch.equiv)
    return ""


def _join_range(branch: Branch, bound: set[str], var: str) -> str:
    """The order the join of ``var`` may search by (``runtime.bands``), if any."""
    orders = branch.orders(var, bound)
    if not orders:
        return ""
    attr, op, other, theirs = orders[0]
    return (
        f"by range {var}.{attr} {op} {other}.{theirs} where its windows hold {MIN_WINDOW}+"
        " candidates (numbers of one type)"
    )


def _chain(pattern: Pattern, chain: Chain, index: int, negation: Negation) -> AutomatonView:
    branch = chain.branch
    n = len(chain.states)
    negatives = chain.negative
    after_positive = "r1" if negatives else "F"
    states: list[StateView] = []
    edges: list[EdgeView] = []
    dep_of: dict[str, str] = {}
    for s in chain.states:
        for h in s.rejects:
            dep_of[h] = f"q{s.index + 2}" if s.index + 1 < n else f"q{n}"
    for s in chain.states:
        sid = f"q{s.index + 1}"
        v = pattern.variable(s.var)
        deps = sorted(h for h, at in dep_of.items() if at == sid)
        note = "; ".join(f"q_DEP of {h}" for h in deps)
        states.append(StateView(sid, _event(v), "kleene" if v.kleene else "positive", note))
        target = f"q{s.index + 2}" if s.index + 1 < n else after_positive
        edges.append(
            EdgeView(
                sid,
                target,
                s.action.value,
                (_event(v),),
                _condition(pattern, branch, s.conditions, s.var),
                s.prec,
                s.succ,
            )
        )
        if s.stores:
            edges.append(EdgeView(sid, sid, "store", _events(pattern, s.stores)))
        if s.ignores:
            edges.append(EdgeView(sid, sid, "ignore", _events(pattern, s.ignores)))
        for h in deps:
            hv = pattern.variable(h)
            edges.append(
                EdgeView(
                    sid,
                    "R",
                    "take",
                    (_event(hv),),
                    _negation_condition(pattern, branch, h),
                    tuple(sorted(branch.before(h))),
                    tuple(sorted(branch.after(h))),
                )
            )
        if s.index:
            edges.append(EdgeView(sid, "R", "timeout"))
    for j, r in enumerate(negatives):
        rid = f"r{j + 1}"
        hv = pattern.variable(r.var)
        states.append(StateView(rid, _event(hv), "negative", "negative sub-chain (most frequent first)"))
        checked = [x.var for x in negatives[:j]]
        edges.append(
            EdgeView(rid, rid, "ignore", _events(pattern, [p.name for p in branch.positives] + checked))
        )
        later = [x.var for x in negatives[j + 1 :]]
        if later:
            edges.append(EdgeView(rid, rid, "store", _events(pattern, later)))
        edges.append(
            EdgeView(
                rid, "R", "take", (_event(hv),), _negation_condition(pattern, branch, r.var), r.prec, r.succ
            )
        )
        following = f"r{j + 2}" if j + 1 < len(negatives) else "F"
        edges.append(EdgeView(rid, following, "timeout" if r.timeout else "search_failed"))
    states += [StateView("F", "accept", "accept"), StateView("R", "reject", "reject")]
    order = ", ".join(chain.order)
    strategy = "first-chance" if negation is Negation.FIRST_CHANCE else "post-processing"
    notes: tuple[str, ...] = (f"chain order {order}; negation: {strategy}",)
    if any(s.action is Action.ITERATE and s.group_by for s in chain.states):
        notes += tuple(
            f"{s.var}: subsets grouped by {s.group_by} (group-by-attribute)"
            for s in chain.states
            if s.group_by
        )
    return AutomatonView(f"chain {index + 1}", tuple(states), tuple(edges), notes)


# --- tree -------------------------------------------------------------------------------------


def _tree(pattern: Pattern, tree: TreeBranch, index: int) -> AutomatonView:
    variables = len(tree.positives) + len(tree.kleene)
    states = [StateView("q0", "root", "start", "takes the arriving event that can end a match")]
    edges: list[EdgeView] = []
    ids: dict[tuple[str, ...], str] = {(): "q0"}
    branch = tree.branch
    layer: list[tuple[tuple[str, ...], str]] = [((v,), v) for v in tree.triggers if v in tree.positives]
    for v in tree.triggers:
        if v in tree.kleene:
            edges.append(
                EdgeView(
                    "q0",
                    "q0",
                    "iterate",
                    _events(pattern, [v]),
                    "subsets that end with the arriving event, once the others are taken",
                )
            )
    full = variables <= TREE_LAYERS_SHOWN
    depth = 0
    while layer:
        depth += 1
        next_layer: list[tuple[tuple[str, ...], str]] = []
        for ord, var in layer:
            sid = f"q{len(ids)}"
            ids[ord] = sid
            parent = ids[ord[:-1]]
            edge = tree_state(tree, ord[:-1]).edge(var)
            states.append(StateView(sid, "q_" + ".".join(ord), "tree", f"layer {depth}, lazily instantiated"))
            cond = _condition(pattern, branch, edge.conditions, var)
            label = "take (arriving event)" if len(ord) == 1 else edge.action.value
            edges.append(EdgeView(parent, sid, label, _events(pattern, [var]), cond, edge.prec, edge.succ))
            if full:
                next_layer += [(ord + (e.var,), e.var) for e in tree_state(tree, ord).edges]
        layer = next_layer if full else []
    notes = ["the states are made when an instance first reaches them and dropped when the last leaves"]
    if not full:
        total = sum(
            _tree_size(len(tree.positives), len(tree.kleene), v in tree.kleene) for v in tree.triggers
        )
        notes.append(
            f"{variables} variables: only the root's choices are listed; the tree has up to"
            f" {total:,} states below the root"
        )
    for ord_id in ids.values():
        if ord_id != "q0":
            edges.append(EdgeView(ord_id, "R", "timeout"))
    states += [StateView("F", "accept", "accept"), StateView("R", "reject", "reject")]
    if full:
        for ord, sid in ids.items():
            if ord and not tree_state(tree, ord).edges:
                edges.append(EdgeView(sid, "F", "accept"))
    return AutomatonView(f"tree {index + 1}", tuple(states), tuple(edges), tuple(notes))


def _tree_size(positives: int, kleene: int, trigger_is_kleene: bool) -> int:
    """States below the root for one trigger: every ordered prefix of the rest."""
    rest_p = positives if trigger_is_kleene else positives - 1
    rest_k = kleene - 1 if trigger_is_kleene else kleene
    size = sum(perm(rest_p, k) for k in range(1, rest_p + 1))
    size += perm(rest_p, rest_p) * sum(perm(rest_k, k) for k in range(1, rest_k + 1))
    return size + (0 if trigger_is_kleene else 1)


# --- output formats -----------------------------------------------------------------------------


def to_json(explanation: Explanation) -> str:
    return json.dumps(asdict(explanation), indent=2) + "\n"


def to_text(explanation: Explanation) -> list[tuple[str, str]]:
    """Lines of text with a rich style each (the CLI prints them with rich)."""
    out: list[tuple[str, str]] = [(f"engine: {explanation.engine}", "bold")]
    if explanation.order:
        out.append((f"order: {', '.join(explanation.order)} ({explanation.order_source})", ""))
    for note in explanation.notes:
        out.append((note, "dim"))
    count = len(explanation.branches)
    out.append(("", ""))
    out.append((f"pattern, normalised to {count} DNF branch{'es' if count != 1 else ''}:", "bold"))
    for i, text in enumerate(explanation.branches, 1):
        out.append((f"  {i}. {text}", ""))
    for automaton in explanation.automata:
        out.append(("", ""))
        out.append((automaton.name, "bold"))
        for note in automaton.notes:
            out.append((f"  {note}", "dim"))
        for state in automaton.states:
            note = f"  ({state.note})" if state.note else ""
            out.append((f"  {state.id:<4} {state.label}  [{state.kind}]{note}", "bold cyan"))
            for e in (e for e in automaton.edges if e.source == state.id):
                out.append((f"       {_edge_text(e)}", ""))
    return out


def _edge_text(e: EdgeView) -> str:
    target = "" if e.target == e.source else f"-> {e.target}"
    text = " ".join(part for part in (f"{e.action:<13}", ", ".join(e.events), target) if part).rstrip()
    if e.condition:
        text += f"   if {e.condition}"
    if e.prec:
        text += f"   prec: {', '.join(e.prec)}"
    if e.succ:
        text += f"   succ: {', '.join(e.succ)}"
    return text


def to_dot(explanation: Explanation) -> str:
    """A Graphviz digraph in the style of the paper's figures: each edge labelled with its
    action, its event and, on a line below, its condition."""
    lines = [
        "digraph cepcli {",
        "  rankdir=LR;",
        '  node [shape=circle, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    shared = {"F", "R"}
    for final in ("F", "R"):
        shape = "doublecircle" if final == "F" else "circle"
        lines.append(f'  "{final}" [shape={shape}, label="{final}"];')
    for n, automaton in enumerate(explanation.automata):
        lines.append(f"  subgraph cluster_{n} {{")
        lines.append(f'    label="{_escape(automaton.name)}";')
        for s in automaton.states:
            if s.id in shared:
                continue
            shape = "doublecircle" if s.kind == "accept" else "circle"
            lines.append(f'    "{n}_{s.id}" [shape={shape}, label="{s.id}\\n{_escape(s.label)}"];')
        lines.append("  }")
        for e in automaton.edges:
            source = e.source if e.source in shared else f"{n}_{e.source}"
            target = e.target if e.target in shared else f"{n}_{e.target}"
            label = _escape(f"{e.action} {', '.join(e.events)}".strip())
            if e.condition:  # the edge's condition under its event, as the paper's figures have it
                label += "\\n" + _escape(e.condition)
            lines.append(f'  "{source}" -> "{target}" [label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
