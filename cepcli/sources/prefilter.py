"""The prefilter: per batch, which rows can each pattern variable use?

A row is kept for variable ``v`` when its type is ``v``'s type and it satisfies every
single-variable condition of ``v`` (the plan keeps those in every branch that binds
``v``: ``Pattern.filters``). The lowered conditions are evaluated over the whole batch by
their vectorised lowering (``plan.arrow``); the rows it marks unsure are decided by the
reference (``plan.python``), one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.events import Event, Schema
from cepcli.plan.arrow import Frame, evaluate
from cepcli.plan.pattern import Pattern
from cepcli.plan.python import CompiledCondition, compile_condition
from cepcli.query import ast as a


@dataclass(frozen=True, slots=True)
class VariableFilter:
    bit: int
    type: str | None  # None: every row's (``Variable.any_type``)
    conditions: tuple[a.Expr, ...]
    compiled: tuple[CompiledCondition, ...]  # the same conditions, for the unsure rows
    # the conditions with the variable's name left out: two variables (of two queries) with
    # the same condition read the same rows' values, so it is evaluated once per batch
    shapes: tuple[a.Expr, ...] = field(init=False)

    def __post_init__(self) -> None:
        unnamed = tuple(a.renamed(c, dict.fromkeys(a.variables_of(c), "")) for c in self.conditions)
        object.__setattr__(self, "shapes", unnamed)


@dataclass(slots=True)
class Prefilter:
    variables: tuple[VariableFilter, ...]
    columns: frozenset[str]  # columns the conditions read
    schema: Schema
    types: pa.Array  # the pattern's types, once each
    type_codes: dict[str, int]  # a type -> its position in ``types``
    # What the input held so far, for the warning about a type it never holds: per type of
    # ``types``, whether a row had it; and a few of the input's other types (for a hint).
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    others: set[str] = field(default_factory=set)
    # the bits of the variables without conditions, by a row's type code + 1 (0: a type no
    # variable has): a row's mask from them is one look-up, whatever the number of variables
    plain: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))

    def _codes(self, types: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
        """The position of each type among the pattern's (-1: none), by one hash look-up
        per value, whatever the number of variables: per row; or, of a dictionary without
        a missing type, per entry, with the rows' indices into them."""
        if pa.types.is_dictionary(types.type):
            entries = pc.index_in(types.dictionary, value_set=self.types).fill_null(-1)
            codes = np.asarray(entries.to_numpy(zero_copy_only=False))
            indices = np.asarray(types.indices.fill_null(0).to_numpy(zero_copy_only=False))
            if not types.null_count:
                return codes, indices
            return np.where(types.is_null().to_numpy(zero_copy_only=False), -1, codes[indices]), None
        found = pc.index_in(types, value_set=self.types)
        return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False)), None

    @classmethod
    def of(cls, pattern: Pattern, schema: Schema) -> Prefilter:
        filters = []
        for v in pattern.variables:
            conditions = tuple(c.expr for c in pattern.filters_of(v.name))
            compiled = tuple(compile_condition(c, {v.name: 0}, schema) for c in conditions)
            filters.append(VariableFilter(v.bit, None if v.any_type else v.type, conditions, compiled))
        return cls._of(tuple(filters), schema)

    @classmethod
    def merged(cls, parts: Sequence[Prefilter]) -> Prefilter:
        """One prefilter for the patterns of a run, whose variables have bits of their own
        (``cepcli.run``): a row's mask holds every query's variables that can use it (one
        pattern's: its own prefilter)."""
        return cls._of(tuple(f for part in parts for f in part.variables), parts[0].schema)

    @classmethod
    def _of(cls, filters: tuple[VariableFilter, ...], schema: Schema) -> Prefilter:
        columns = frozenset(
            n.attr for f in filters for c in f.conditions for n in a.iter_expr(c) if isinstance(n, a.Attr)
        )
        names = list(dict.fromkeys(f.type for f in filters if f.type is not None))
        codes = {t: i for i, t in enumerate(names)}
        plain = np.zeros(len(names) + 1, dtype=np.int64)
        for f in filters:
            if not f.conditions:
                if f.type is None:
                    plain |= np.int64(1) << f.bit
                else:
                    plain[codes[f.type] + 1] |= np.int64(1) << f.bit
        return cls(
            filters,
            columns,
            schema,
            pa.array(names, pa.string()),
            codes,
            np.zeros(len(names), dtype=bool),
            plain=plain,
        )

    def unseen(self) -> list[tuple[str, list[str]]]:
        """The pattern's types no row has had so far, each with the input's types that
        differ from it only in case (``UA`` for ``ua``)."""
        out = []
        for code in np.flatnonzero(~self.seen):
            name = str(self.types[int(code)])
            out.append((name, sorted(t for t in self.others if t.lower() == name.lower())))
        return out

    def _see(self, types: pa.Array, codes: np.ndarray) -> None:
        if self.seen.all():
            return
        self.seen[codes[codes >= 0]] = True  # (np.unique would import numpy.ma)
        if not self.seen.all() and len(self.others) < 10_000:
            self.others.update(str(t) for t in pc.unique(types[:65_536]).to_pylist() if t is not None)

    def masks(
        self,
        types: pa.Array,
        columns: Mapping[str, pa.Array],
        ts: np.ndarray,
        events_at: Callable[[np.ndarray], Sequence[Event]],
    ) -> tuple[np.ndarray, int]:
        """Per row, the bit mask of variables that can use it; and the number of
        condition evaluations (rows x conditions) it took. ``events_at(positions)`` makes
        the events the compiled conditions need for unsure rows."""
        evaluations = 0
        frame = Frame.of_events(columns, ts, self.schema)
        found, indices = self._codes(types)
        mask = self.plain[found + 1]  # the variables without conditions
        codes: np.ndarray | None = found
        if indices is not None:  # (of a dictionary's entries: one look-up per row)
            mask = mask[indices]
            wanted = not self.seen.all() or any(f.conditions for f in self.variables)
            codes = found[indices] if wanted else None  # (each row's, where they are read)
        if codes is not None:
            self._see(types, codes)
        of_type: dict[str | None, np.ndarray] = {}  # per type, its rows
        done: dict[a.Expr, tuple[np.ndarray, np.ndarray | None]] = {}  # per condition, its result
        for f in self.variables:
            if not f.conditions:
                continue
            if f.type not in of_type:
                of_type[f.type] = (
                    np.ones(len(mask), dtype=bool)
                    if f.type is None
                    else cast(np.ndarray, codes) == self.type_codes[f.type]
                )
            hit = of_type[f.type]
            for cond, shape, compiled in zip(f.conditions, f.shapes, f.compiled, strict=True):
                if not hit.any():
                    break
                evaluations += int(np.count_nonzero(hit))
                if shape not in done:
                    done[shape] = evaluate(cond, frame)
                result, unsure = done[shape]
                keep = hit & result
                if unsure is not None and (unsure & hit).any():
                    at = np.flatnonzero(unsure & hit)
                    keep[at] = [bool(compiled([e], e)) for e in events_at(at)]  # e is also b[i]
                hit = keep
            mask |= hit.astype(np.int64) << f.bit
        return mask, evaluations
