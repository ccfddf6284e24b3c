"""numpy arrays as Arrow arrays (``cepcli.arrays``), and what a short run imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from cepcli.arrays import arrow

DTYPES = st.sampled_from([np.bool_, np.int64, np.int32, np.uint64, np.float64, np.float32])


@given(hnp.arrays(DTYPES, st.integers(0, 70)), st.integers(1, 3))
def test_the_same_array_as_pyarrow_makes(values: np.ndarray, step: int) -> None:
    """Every length (booleans are packed to bits, eight to a byte), strided views, NaN."""
    for view in (values, values[::step]):
        got, want = arrow(view), pa.array(view)
        assert got.type == want.type and got.null_count == 0
        assert got.equals(want) or (
            view.dtype.kind == "f" and np.array_equal(got.to_numpy(), view, equal_nan=True)
        )


def test_other_values_go_through_pyarrow() -> None:
    assert arrow(np.array(["a", None], dtype=object)).to_pylist() == ["a", None]
    assert arrow([1, 2]).to_pylist() == [1, 2]  # type: ignore[arg-type]


def test_a_short_quiet_run_imports_only_what_it_needs(tmp_path: Path) -> None:
    """The start of every run: a quiet run that writes jsonl imports no rich (its console),
    no numpy.ma (pyarrow's check of a numpy array), no OpenSSL hashlib (the query cache's
    key) and, the second time a query runs, no lark (the cached parse; the first parse
    imports lark, and lark hashlib)."""
    data = tmp_path / "ten.csv"
    data.write_text("type,ts,x\n" + "".join(f"{'AB'[i % 2]},{i},{i}\n" for i in range(10)))
    code = (
        "import atexit, sys\n"
        "names = ('rich', 'numpy.ma', '_hashlib', 'lark')\n"
        "atexit.register(lambda: print(*[n for n in names if n in sys.modules], file=sys.stderr))\n"
        "from cepcli.cli import main\n"
        "main()\n"
    )
    args = [
        "run",
        "-e",
        "PATTERN SEQ(A a, B b) WHERE a.x < b.x WITHIN 3",
        "-i",
        str(data),
        "--format",
        "jsonl",
        "-q",
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
        )
        for _ in range(2)
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and len(runs[0].stdout.splitlines()) == 9
    assert "lark" in runs[0].stderr.split() and not {"rich", "numpy.ma"} & set(runs[0].stderr.split())
    assert runs[1].stderr.split() == [], runs[1].stderr
