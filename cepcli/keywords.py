"""How the command line's messages are said to a Python caller (``cepcli.find``,
``cepcli.spark.find``): each flag a message names as the keyword argument of ``find``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from cepcli.errors import CepError, InputError, OutputError, QueryError

# How the messages' command-line flags are said to a Python caller: a keyword argument of
# ``find`` (with a value in its Python form where the flag takes one).
_KEYWORDS = {
    "type-col": "type_col=",
    "time-col": "time_col=",
    "time-format": "time_format=",
    "time-unit": "time_unit=",
    "input-format": "input_format=",
    "null-values": "null_values=",
    "columns": "columns=",
    "chunk-rows": "chunk_rows=",
    "on-bad-row": "on_bad_row=",
    "max-row-bytes": "max_row_bytes=",
    "max-matches": "max_matches=",
    "max-instances": "max_instances=",
    "order": "order=",
    "engine": "engine=",
    "sort": "sort=True",
    "max-delay": "max_delay=",
    "no-header": "header=False",
    "schema": "schema=",
    "show": "show=",
}
_VALUES = {  # what a flag's value looks like (else the word after it is the message's)
    "time-format": r"'[^']*'|%\S+",
    "time-unit": r"s|ms|us|ns",
    "on-bad-row": r"fail|skip",
    "engine": r"adaptive|tree|chain|first-chance|post-processing|eager",
    "input-format": r"csv|parquet|jsonl",
    "max-delay": r"[0-9.]+\s*[a-z]*",
}
_FLAG = re.compile(r"--(schema|[a-z][a-z-]*)(?: ((?<=schema )[^\s;)]+|'[^']*'|[^\s,;)]+))?")


def for_python(message: str) -> str:
    """A message written for the command line, with each flag it names said as the keyword
    argument of ``find`` (``--schema x:float`` -> ``schema={'x': 'float'}``)."""

    def keyword(found: re.Match[str]) -> str:
        flag, value = found.group(1), found.group(2)
        if flag not in _KEYWORDS:
            return found.group(0)
        if flag == "schema" and value and ":" in value:
            pairs = (pair.rpartition(":") for pair in value.rstrip(",.").split(","))
            return "schema={" + ", ".join(f"{name!r}: {kind!r}" for name, _, kind in pairs) + "}"
        if flag in _VALUES and value and re.fullmatch(_VALUES[flag], value):
            return f"{_KEYWORDS[flag]}{value.strip(chr(39))!r}"
        return _KEYWORDS[flag] + (f" {value}" if value else "")

    return _FLAG.sub(keyword, message)


@contextmanager
def as_python() -> Iterator[None]:
    """Errors raised within say ``find``'s keyword arguments instead of the CLI's flags;
    an unexpected failure of a library underneath comes out as a ``CepError`` too."""
    try:
        yield
    except QueryError as err:
        raise replace(err, message=for_python(err.message)) from None
    except InputError as err:
        raise replace(err, message=for_python(err.message)) from None
    except OutputError as err:
        raise replace(err, reason=for_python(err.reason)) from None
    except CepError as err:
        raise type(err)(for_python(str(err))) from None
