"""Matches as typed Arrow data: the one result schema of ``Matches.to_arrow()``,
``to_pandas()``, ``--format parquet`` and ``--spark --output DIR --format parquet``.

A match is one row. Each positive variable of the pattern is a column (pattern order), a
struct of the bound event's ``_row`` (int64) and its columns (``show``: only those); a Kleene
variable is a list of such structs, in row order; a variable the match's OR branch does not
bind is null. With several queries a ``query`` column (text) comes first, and a variable
name two queries share is one column. Each column has the type of its kind
(``RESULT_TYPES``): a decimal column has the precision and scale its values need
(``decimal_type``; more than 76 digits, Arrow's most, is an ``InputError`` naming the
column), a nested value is its JSON text. The time column keeps the input's form, as in
jsonl, csv and ``cepcli.find``'s dicts: numbers stay numbers (whole numbers int64,
fractions written as text exact decimals, never through a float; a float column's doubles
float64), and any other time column (ISO-8601 or ``--time-format`` text, a timestamp) is
the time cepcli read (``timestamp[ns, UTC]``). A value that contradicts its column's kind
(a column the query did not read, so never checked) is null.

Events repeat across matches: each is typed once, and a variable's column is a ``take`` of
the typed events.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepcli.arrays import arrow, sorted_distinct, whole
from cepcli.errors import InputError, UsageError, flag
from cepcli.events import Event, Kind, Schema
from cepcli.output import exact_number_text, kept, variables
from cepcli.plan.pattern import Pattern
from cepcli.runtime.matches import Match
from cepcli.sources.rows import column_values

if TYPE_CHECKING:
    import pandas as pd

    from cepcli.runtime.columnar import Columns, Found

TIME_TYPE = pa.timestamp("ns", tz="UTC")
RESULT_TYPES: dict[Kind, pa.DataType] = {
    Kind.INT: pa.int64(),
    Kind.FLOAT: pa.float64(),
    Kind.BOOL: pa.bool_(),
    Kind.TIME: TIME_TYPE,
    Kind.DURATION: pa.duration("ns"),
    Kind.STR: pa.string(),
    Kind.OTHER: pa.string(),  # JSON text
    Kind.UNKNOWN: pa.string(),
    Kind.PENDING: pa.string(),
}
CHUNK = 1 << 16  # matches per record batch
WIDEST = 76  # the most digits of an Arrow decimal (decimal256)
NUMBERS = (Kind.INT, Kind.FLOAT, Kind.DECIMAL)  # a time column of these kinds stays a number


class Results:
    """Matches collected as typed Arrow data. ``patterns`` maps each query's name to its
    pattern (``None`` as the only name: one query, no ``query`` column)."""

    def __init__(
        self,
        schema: Schema,
        patterns: Mapping[str | None, Pattern],
        show: Sequence[str] | None = None,
        source: str = "",
    ) -> None:
        self.schema = schema
        self.source = source  # the input's name, for the errors of its values
        keep = kept(schema, show)
        self.columns = list(schema.columns) if keep is None else [schema.columns[i] for i in keep]
        self.names = {query: variables(p) for query, p in patterns.items()}
        shapes: dict[str, tuple[bool, str | None]] = {}  # a variable's name -> Kleene?, its first query
        for query, p in patterns.items():
            for v in p.variables:
                if v.negated:
                    continue
                kleene, first = shapes.setdefault(v.name, (v.kleene, query))
                if kleene != v.kleene:
                    one, other = (query, first) if v.kleene else (first, query)
                    raise UsageError(
                        f"query {one}'s {v.name} is a Kleene variable, {other}'s is not: they cannot share"
                        f" the result column {v.name} (rename one)"
                    )
        self.kleene = {name for name, (kleene, _) in shapes.items() if kleene}
        self.variables = list(dict.fromkeys(n for names in self.names.values() for n in names))
        self.named = None not in patterns
        self.queries: list[str] = []
        self.index: dict[int, int] = {}  # an event's row -> its place (the events placed so far)
        self.at = [schema.index(c) for c in self.columns]  # the columns' places in an event
        # the events placed and not typed yet, by column: rows, times, each column's values
        # (as an event holds them)
        self.rows: list[int] = []
        self.times: list[int] = []
        self.values: list[list[object]] = [[] for _ in self.columns]
        # before each column's values: pieces of them, in order, Python values or typed
        # already (a column of the result's type, taken as it is: ``_typed_as_is``)
        self.pieces: list[list[list[object] | pa.Array]] = [[] for _ in self.columns]
        self.batches: list[pa.RecordBatch] = []
        self.typed: list[list[pa.Array]] = []  # per column, the events' typed values in chunks
        self._reset()

    def _reset(self) -> None:
        self.count = 0
        # each variable's matches (their numbers), only those that bind it (a match of many
        # queries' costs its own query's variables): its event in each (its place), a
        # Kleene variable's events in a row and how many
        self.bound: dict[str, array[int]] = {n: array("q") for n in self.variables}
        self.picks: dict[str, array[int]] = {n: array("q") for n in self.variables}
        self.lengths: dict[str, array[int]] = {n: array("q") for n in self.kleene}
        self.queries = []

    def add(self, match: Match, query: str | None = None) -> None:
        """One match of ``query`` (None: the only query)."""
        bound = dict(match.bindings)
        for name in self.names[query]:
            binding = bound.get(name)
            if binding is None:  # (an OR branch's: the variable's struct or list is null)
                continue
            self.bound[name].append(self.count)
            if name in self.kleene:
                assert isinstance(binding, tuple)
                self.picks[name].extend(self._place(event) for event in binding)
                self.lengths[name].append(len(binding))
                continue
            assert not isinstance(binding, tuple)
            self.picks[name].append(self._place(binding))
        self._added(1, query)

    def add_found(self, found: Found, query: str | None = None) -> None:
        """The columnar engine's matches (``Found``) of ``query``, as ``add`` adds each of
        them, without making them: each distinct event placed once (its values from its
        columns), the matches' places by numpy."""
        if not len(found):
            return
        bound = dict(zip(found.names, found.positions, strict=True))
        names = [name for name in self.names[query] if name in bound]
        runs = {name: found.runs[name] for name in names if name in found.runs}
        wanted = sorted_distinct(np.concatenate([bound[n] for n in names] + [r.flat for r in runs.values()]))
        data = found.data
        if data.values is None:  # (events made before: a Spark shard's)
            places = np.array([self._place(event) for event in data.events(wanted)], np.int64)
        else:
            places = self._placed(data, wanted)
        numbers = np.arange(self.count, self.count + len(found), dtype=np.int64)
        for name in names:
            self.bound[name].frombytes(numbers.tobytes())
            if name in self.kleene:
                run = runs[name]
                self.picks[name].frombytes(places[np.searchsorted(wanted, run.flat)].tobytes())
                self.lengths[name].frombytes(np.diff(run.offsets).astype(np.int64).tobytes())
                continue
            self.picks[name].frombytes(places[np.searchsorted(wanted, bound[name])].tobytes())
        self._added(len(found), query)

    def _place(self, event: Event) -> int:
        """The place of ``event`` among the events (placed the first time: by its row)."""
        at = self.index.get(event.row)
        if at is None:
            at = self.index[event.row] = len(self.index)
            self.rows.append(event.row)
            self.times.append(event.ts)
            for values, i in zip(self.values, self.at, strict=True):
                values.append(event.values[i])
        return at

    def _placed(self, data: Columns, positions: np.ndarray) -> np.ndarray:
        """The places of the events at ``positions`` of ``data`` (distinct), as ``_place``
        gives them, without making them: the new ones' values taken from its columns
        (``Columns.values``: as their events would hold them)."""
        rows = data.rows[positions].tolist()
        index = self.index
        places = np.empty(len(rows), np.int64)
        new: list[int] = []
        for k, row in enumerate(rows):
            at = index.get(row)
            if at is None:
                at = index[row] = len(index)
                new.append(k)
            places[k] = at
        if new:
            fresh = positions[new]
            assert data.values is not None
            columns = data.values(fresh)
            self.rows.extend(rows[k] for k in new)
            self.times.extend(data.ts[fresh].tolist())
            for k, i in enumerate(self.at):
                typed = None if i in data.decimal_text else _typed_as_is(columns[i], self.schema.kind_at(i))
                if typed is None:
                    self.values[k].extend(column_values(columns[i], i in data.decimal_text))
                    continue
                if self.values[k]:
                    self.pieces[k].append(self.values[k])
                    self.values[k] = []
                self.pieces[k].append(typed)
        return places

    def _added(self, count: int, query: str | None) -> None:
        if self.named:
            assert query is not None
            self.queries.extend([query] * count)
        self.count += count
        if self.count >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        try:
            self._flushed()
        except InputError as err:  # (a value no result type holds: said with its input's name)
            raise replace(err, filename=err.filename or self.source) from None

    def _flushed(self) -> None:
        if self.count:
            self.batches.append(self._batch())
        self._reset()

    def _batch(self) -> pa.RecordBatch:
        self._type_new_events()
        typed = [_joined(chunks, c) for chunks, c in zip(self.typed, ["_row", *self.columns], strict=True)]
        self.typed = [[c] for c in typed]
        arrays: list[pa.Array] = []
        names: list[str] = []
        if self.named:
            arrays.append(pa.array(self.queries, pa.string()))
            names.append("query")
        fields = ["_row", *self.columns]
        for name in self.variables:
            matches = np.frombuffer(self.bound[name], np.int64)
            picks = np.frombuffer(self.picks[name], np.int64)
            if name in self.kleene:  # (no element: the list is null; a bound one has one or more)
                lengths = np.zeros(self.count, np.int64)
                lengths[matches] = np.frombuffer(self.lengths[name], np.int64)
                offsets = np.zeros(self.count + 1, np.int32)
                np.cumsum(lengths, out=offsets[1:])
                values = pa.StructArray.from_arrays([c.take(arrow(picks)) for c in typed], fields)
                arrays.append(pa.ListArray.from_arrays(arrow(offsets), values, mask=arrow(lengths == 0)))
            else:
                unbound = np.ones(self.count, np.bool_)
                unbound[matches] = False
                at = np.zeros(self.count, np.int64)
                at[matches] = picks
                taken = [c.take(pa.array(at, pa.int64(), mask=unbound)) for c in typed]
                arrays.append(pa.StructArray.from_arrays(taken, fields, mask=arrow(unbound)))
            names.append(name)
        return pa.RecordBatch.from_arrays(arrays, names)

    def _type_new_events(self) -> None:
        schema = self.schema
        if not self.typed:
            self.typed = [[] for _ in range(1 + len(self.columns))]
        self.typed[0].append(pa.array(self.rows, pa.int64()))
        for k, (column, i) in enumerate(zip(self.columns, self.at, strict=True), 1):
            kind = schema.kind_at(i)
            if column == schema.time_col and kind not in NUMBERS:  # a time (ISO text, a timestamp)
                self.typed[k].append(pa.array(self.times, pa.int64()).cast(TIME_TYPE))
                continue
            done = 0  # (the events typed before the piece)
            for piece in [*self.pieces[k - 1], self.values[k - 1]]:
                if isinstance(piece, pa.Array):
                    self.typed[k].append(piece)
                    done += len(piece)
                    continue
                try:
                    if column == schema.time_col:
                        typed = time_values(piece, kind, schema.nulls)
                    else:
                        typed = typed_values(piece, kind, schema.nulls)
                except pa.ArrowInvalid:
                    rows = self.rows[done : done + len(piece)]
                    raise replace(_too_wide(column, piece, rows), filename=self.source) from None
                self.typed[k].append(typed)
                done += len(piece)
        self.rows, self.times = [], []
        self.values = [[] for _ in self.columns]
        self.pieces = [[] for _ in self.columns]

    def table(self) -> pa.Table:
        """Every match added so far, as one table (decimal columns unified to the precision
        and scale every chunk needs)."""
        self._flush()
        if not self.batches:
            self.batches.append(self._batch())
        batches = self.batches
        if len(batches) > 1:
            try:
                target = unified(b.schema for b in batches)
            except InputError as err:
                raise replace(err, filename=err.filename or self.source) from None
            batches = [b.cast(target) if b.schema != target else b for b in batches]
        return pa.Table.from_batches(batches)


def _typed_as_is(column: pa.Array | pa.ChunkedArray, kind: Kind) -> pa.Array | None:
    """A column of events' values already of the result's type for ``kind`` (``typed_values``
    of their Python values, exactly: integers, floats, NaN missing, text, booleans, times
    in ns), by Arrow's kernels; None for the others (typed value by value)."""
    column = whole(column)
    given = column.type
    if kind is Kind.INT and given == pa.int64():
        return column
    if kind is Kind.FLOAT and pa.types.is_floating(given):
        numbers = column.cast(pa.float64())
        return pc.if_else(pc.fill_null(pc.is_nan(numbers), False), pa.scalar(None, pa.float64()), numbers)
    if kind is Kind.STR and (pa.types.is_string(given) or pa.types.is_large_string(given)):
        try:
            return column.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowCapacityError):  # (text past 2 GiB: value by value)
            return None
    if kind is Kind.BOOL and pa.types.is_boolean(given):
        return column
    if kind is Kind.TIME and given == pa.int64():
        return column.cast(TIME_TYPE)
    return None


def _joined(chunks: list[pa.Array], column: str = "") -> pa.Array:
    """One column's typed events, made batch by batch, as one array (decimals of the
    precision and scale every part needs)."""
    if len(chunks) == 1:
        return chunks[0]
    if pa.types.is_decimal(chunks[0].type):
        target = decimal_type((c.type for c in chunks), column)
        chunks = [c.cast(target) for c in chunks]
    return pa.concat_arrays(chunks)


def time_values(values: list[object], kind: Kind, nulls: frozenset[str]) -> pa.Array:
    """The time column's values when they are not a time (ISO text or a timestamp): as the
    input holds them, as ``typed_values``, but that fractions written as text are exact
    decimals (``time_json``: never through a float)."""
    if kind is Kind.FLOAT and any(isinstance(v, str) for v in values):
        exact = [exact_number_text(v) if isinstance(v, str) else v for v in values]
        if all(isinstance(v, int | Decimal) for v in exact):
            return typed_values([Decimal(v) for v in exact], Kind.DECIMAL, nulls)  # type: ignore[arg-type]
    return typed_values(values, kind, nulls)


def _too_wide(column: str, values: list[object], rows: list[int]) -> InputError:
    """The error of a decimal with more digits than Arrow's decimals hold (76)."""
    for value, row in zip(values, rows, strict=True):
        number = _decimal(value, frozenset())
        if isinstance(number, Decimal) and _digits(number) > WIDEST:
            return InputError(_too_wide_text(column, _digits(number)), row)
    return InputError(_too_wide_text(column, WIDEST + 1))


def _too_wide_text(column: str, digits: int) -> str:
    return (
        f"column {column!r} holds a decimal of {digits} digits, more than a typed result holds"
        f" ({WIDEST}: Arrow's widest decimal), so the matches cannot be typed (to_arrow, to_pandas,"
        f" --format parquet); read the column as text ({flag('schema', f'{column}:str')})"
        " or write jsonl or csv"
    )


def _digits(number: Decimal) -> int:
    """The digits a decimal type needs for ``number``: its integer digits and its scale."""
    integer, scale = _places(number)
    return max(integer + scale, 1)


def _places(number: Decimal) -> tuple[int, int]:
    """The digits of ``number`` before and after the point."""
    _, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)
    return max(len(digits) + exponent, 0), max(-exponent, 0)


def decimal_digits(value: object, nulls: frozenset[str]) -> tuple[int, int] | None:
    """The digits before and after the point of a decimal value as the result types it
    (its exact text, or a number); None for a missing one or one it leaves null."""
    number = _decimal(value, nulls)
    if isinstance(number, int) and not isinstance(number, bool):
        number = Decimal(number)
    if not isinstance(number, Decimal) or not number.is_finite():
        return None
    return _places(number)


def typed_values(values: list[object], kind: Kind, nulls: frozenset[str]) -> pa.Array:
    """One column of events' values as the result type of ``kind``: typed values as they
    are, text (a column the query did not read) typed here as the input's kinds say."""
    if kind is Kind.DECIMAL:
        numbers = pa.array([_decimal(v, nulls) for v in values])
        return numbers if pa.types.is_decimal(numbers.type) else pa.nulls(len(values), pa.decimal128(1, 0))
    target = RESULT_TYPES[kind]
    texts = [isinstance(v, str) for v in values]
    if kind not in (Kind.STR, Kind.OTHER, Kind.UNKNOWN, Kind.PENDING) and any(texts):
        from cepcli.sources.kinds import type_text

        text = pa.array([v if t else None for v, t in zip(values, texts, strict=True)], pa.string())
        typed, _ = type_text(text, kind, pa.array(sorted(nulls), pa.string()))
        typed = typed.cast(pa.int64()).cast(target) if kind.timed else typed.cast(target)
        if all(texts):
            return typed
        rest = typed_values([None if t else v for v, t in zip(values, texts, strict=True)], kind, nulls)
        return pc.if_else(pa.array(texts, pa.bool_()), typed, rest)
    if kind in (Kind.STR, Kind.OTHER, Kind.UNKNOWN, Kind.PENDING):
        return pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], pa.string())
    if kind is Kind.FLOAT:
        return pa.array([None if v is None or v != v else float(v) for v in values], target)  # type: ignore[arg-type]
    if kind.timed:
        return pa.array(values, pa.int64()).cast(target)
    try:
        return pa.array(values, target)
    except OverflowError:  # an unsigned 64-bit value beyond int64 (Parquet): kept exactly
        return pa.array(values, pa.uint64())


def _decimal(value: object, nulls: frozenset[str]) -> object:
    if isinstance(value, str):
        if value in nulls:
            return None
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return None
        return number if number.is_finite() else None
    return value


def _result_kind(schema: Schema, column: str) -> Kind:
    """The kind a column is written as: its own; the time column's own too (a number stays
    a number), but that a time stays a time."""
    if column != schema.time_col:
        return schema.kind(column)
    kind = schema.kind_at(schema.index(column))
    return kind if kind in NUMBERS else Kind.TIME


def _result_type(table_types: Mapping[str, pa.DataType], columns: Sequence[str]) -> pa.DataType:
    return pa.struct([pa.field("_row", pa.int64()), *(pa.field(c, table_types[c]) for c in columns)])


def shipped_schema(schema: Schema, pattern: Pattern, show: Sequence[str] | None) -> pa.Schema:
    """The result schema as Spark receives it from a shard: a decimal as its exact text (its
    scale is known once every shard has reported: ``spark_facts``), times and durations in
    microseconds (Spark's own)."""
    keep = kept(schema, show)
    columns = list(schema.columns) if keep is None else [schema.columns[i] for i in keep]
    spark = {
        Kind.DECIMAL: pa.string(),
        Kind.TIME: pa.timestamp("us", tz="UTC"),
        Kind.DURATION: pa.duration("us"),
    }
    kinds = {c: _result_kind(schema, c) for c in columns}
    types = {c: spark.get(kinds[c], RESULT_TYPES.get(kinds[c], pa.string())) for c in columns}
    if kinds.get(schema.time_col) is Kind.FLOAT:  # (fractions as exact text, as decimals)
        types[schema.time_col] = pa.string()
    struct = _result_type(types, columns)
    return pa.schema(
        [
            pa.field(v.name, pa.list_(struct) if v.kleene else struct)
            for v in pattern.variables
            if not v.negated
        ]
    )


def decimal_columns(schema: Schema) -> list[str]:
    """The columns Spark receives as decimal text and types as decimals (``shipped_schema``):
    those of kind ``decimal``, and a time column of decimals (whose values the result keeps
    as the input's numbers)."""
    time_decimal = schema.kind_at(schema.index(schema.time_col)) is Kind.DECIMAL
    return [
        c for c in schema.columns if schema.kind(c) is Kind.DECIMAL or (c == schema.time_col and time_decimal)
    ]


def shipped(table: pa.Table, target: pa.Schema) -> tuple[pa.Table, dict[str, object]]:
    """A shard's result table as ``shipped_schema`` says, and what the driver needs of it:
    each decimal column's largest scale (``scales``, by ``variable.column``) and how many
    times had digits finer than a microsecond (``finer``: Spark's timestamps cut them)."""
    scales: dict[str, int] = {}
    finer = 0
    for name, column in zip(table.column_names, table.columns, strict=True):
        for field, values in _leaves(column):
            if pa.types.is_decimal(values.type):
                scales[f"{name}.{field}"] = values.type.scale
            elif pa.types.is_timestamp(values.type) or pa.types.is_duration(values.type):
                ns = pc.cast(values, pa.int64())
                below = pc.subtract(ns, pc.multiply(pc.divide(ns, 1000), 1000))  # (whole division)
                finer += int(pc.sum(pc.not_equal(below, 0)).as_py() or 0)
    return table.cast(target, safe=False), {"scales": scales, "finer": finer}


def _leaves(column: pa.ChunkedArray) -> Iterable[tuple[str, pa.Array]]:
    """Each field of a variable's column (a struct, or a list of structs), all chunks."""
    t = column.type
    struct = t.value_type if pa.types.is_list(t) else t
    for i in range(struct.num_fields):
        parts = [(c.values if pa.types.is_list(t) else c).field(i) for c in column.chunks]
        if parts:
            yield struct.field(i).name, pa.concat_arrays(parts)


def spark_facts(reports: Iterable[Mapping[str, object]]) -> tuple[dict[str, int], int]:
    """The shards' reports merged: each decimal column's largest scale, the finer times."""
    scales: dict[str, int] = {}
    finer = 0
    for report in reports:
        for key, scale in dict(report.get("scales") or {}).items():  # type: ignore[call-overload]
            scales[key] = max(scales.get(key, 0), int(scale))
        finer += int(report.get("finer") or 0)  # type: ignore[call-overload]
    return scales, finer


def decimal_type(types: Iterable[pa.DataType], column: str = "") -> pa.DataType:
    """The decimal type that holds every value of ``types`` exactly: the largest scale, and
    the largest number of integer digits plus it (decimal256 beyond 38 digits)."""
    integer = scale = 0
    for t in types:
        if pa.types.is_null(t):
            continue
        integer, scale = max(integer, t.precision - t.scale), max(scale, t.scale)
    precision = max(integer + scale, 1)
    if precision > WIDEST:
        raise InputError(_too_wide_text(column, precision))
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def unified(schemas: Iterable[pa.Schema]) -> pa.Schema:
    """One schema for batches that differ only in their decimals' precision and scale."""
    schemas = list(schemas)
    first = schemas[0]
    return pa.schema([_unify([s.field(i) for s in schemas]) for i in range(len(first))])


def _unify(fields: list[pa.Field]) -> pa.Field:
    t = fields[0].type
    if pa.types.is_decimal(t):
        return fields[0].with_type(decimal_type((f.type for f in fields), fields[0].name))
    if pa.types.is_struct(t):
        inner = [_unify([f.type.field(i) for f in fields]) for i in range(t.num_fields)]
        return fields[0].with_type(pa.struct(inner))
    if pa.types.is_list(t):
        element = _unify([f.type.value_field for f in fields])
        return fields[0].with_type(pa.list_(element))
    return fields[0]


def flat_pandas(table: pa.Table) -> pd.DataFrame:
    """The result as pandas: a column per variable and field (``a._row``, ``a.price``), in
    real dtypes: whole numbers ``Int64`` and booleans ``boolean`` (nullable: an unbound
    variable is missing), floats ``float64``, times ``datetime64[ns, UTC]``, durations
    ``timedelta64[ns]``, decimals ``Decimal`` objects, text ``object``; a Kleene variable's
    fields as lists (numpy arrays), one per match (whole numbers and booleans with a missing
    one among them: arrays of Python values and None, exact)."""
    import pandas as pd

    columns: list[pa.Array | pa.ChunkedArray] = []
    names: list[str] = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        t = column.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                columns.append(
                    pa.chunked_array([c.field(i) for c in _with_parent_nulls(column)], t.field(i).type)
                )
                names.append(f"{name}.{t.field(i).name}")
        elif pa.types.is_list(t) and pa.types.is_struct(t.value_type):
            struct = t.value_type
            for i in range(struct.num_fields):
                chunks = [
                    pa.ListArray.from_arrays(c.offsets, c.values.field(i), mask=c.is_null())
                    for c in column.chunks
                ]
                columns.append(pa.chunked_array(chunks, pa.list_(struct.field(i).type)))
                names.append(f"{name}.{struct.field(i).name}")
        else:
            columns.append(column)
            names.append(name)
    flat = pa.table(columns, names=names)
    mapping = {pa.int64(): pd.Int64Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}
    frame: pd.DataFrame = flat.to_pandas(types_mapper=mapping.get)
    for name, column in zip(names, flat.columns, strict=True):
        # a Kleene variable's whole numbers or booleans with a missing one: arrays of Python
        # values and None (numpy would make them floats: 2^63-1 inexact, 2 as 2.0)
        t = column.type
        exact = pa.types.is_list(t) and (
            pa.types.is_integer(t.value_type) or pa.types.is_boolean(t.value_type)
        )
        if exact and any(chunk.values.null_count for chunk in column.chunks):
            rows = [None if row is None else np.array(row, dtype=object) for row in column.to_pylist()]
            frame[name] = pd.Series(rows, index=frame.index, dtype=object)
    return frame


def _with_parent_nulls(column: pa.ChunkedArray) -> list[pa.StructArray]:
    """A struct column's chunks whose fields are null where the struct is (``field`` alone
    ignores the struct's own validity)."""
    out = []
    for chunk in column.chunks:
        if chunk.null_count:
            fields = [
                pc.if_else(chunk.is_null(), pa.scalar(None, f.type), chunk.field(i))
                for i, f in enumerate(chunk.type)
            ]
            chunk = pa.StructArray.from_arrays(fields, fields=list(chunk.type))
        out.append(chunk)
    return out
