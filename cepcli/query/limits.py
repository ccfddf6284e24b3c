"""Limits checked on the query text before it is parsed, where parsing itself is the cost.

Most of the cost of a long WHERE clause is the parser (lark, LALR: time and memory grow with
every condition), then compiling each condition: a generated query of hundreds of
thousands of conditions took minutes and gigabytes before the first event was read. A
quick scan of the text counts them first.
"""

from __future__ import annotations

import re

from cepcli.errors import QueryError, Span

# Conditions of a WHERE clause (comparisons, [attr] tests, true/false: what AND and OR
# join). 10,000 parse, check and compile in about two seconds.
MAX_CONDITIONS = 10_000

# Strings and comments (skipped), and the keywords that matter; the grammar reserves them,
# so outside strings and comments they are never names.
_SCAN = re.compile(
    r"""'[^'\n]*'|"[^"\n]*"|(?:--|\#)[^\n]*|\b(where|and|or)\b\s*""",
    re.IGNORECASE,
)


def check_conditions(text: str) -> None:
    """Refuse a WHERE clause of more than ``MAX_CONDITIONS`` conditions, at the first one
    past the limit: the one after the ``MAX_CONDITIONS``-th AND or OR."""
    joins = -1  # not in the WHERE clause yet
    for found in _SCAN.finditer(text):
        word = (found.group(1) or "").lower()
        if word == "where" and joins < 0:
            joins = 0
        elif word in ("and", "or") and joins >= 0:
            joins += 1
            if joins < MAX_CONDITIONS:
                continue
            at = found.end()  # the condition after the blanks
            line = text.count("\n", 0, at) + 1
            col = at - (text.rfind("\n", 0, at) + 1) + 1
            raise QueryError(
                f"too many conditions: a WHERE clause joins at most {MAX_CONDITIONS:,} with AND"
                f" or OR (this is the {ordinal(MAX_CONDITIONS + 1)})",
                Span(line, col, line, col + 1),
            )


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``65th``, ``10,001st``."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"
