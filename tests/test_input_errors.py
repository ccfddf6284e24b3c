"""Bad rows name the row (0-based data row, as in matches) and exit with code 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cepcli.cli import cli


@pytest.mark.parametrize(
    ("header", "extra", "row"),
    [(True, [], 2), (False, ["--no-header", "--columns", "ts,type,price"], 2)],
)
def test_a_row_with_too_many_fields_is_named(
    tmp_path: Path, header: bool, extra: list[str], row: int
) -> None:
    query, data = tmp_path / "q.sase", tmp_path / "in.csv"
    query.write_text("PATTERN SEQ(A a, B b) WITHIN 10\n")
    lines = ["1,A,1", "2,B,2", "3,C,3,4"]
    data.write_text("\n".join((["ts,type,price"] if header else []) + lines) + "\n")
    result = CliRunner().invoke(cli, ["run", str(query), "-i", str(data), "-q", *extra])
    assert result.exit_code == 1
    assert f"in.csv: row {row}: 4 fields where 3 are expected" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
