"""cepcli ships itself to the executors: a zip of the ``cepcli`` and ``lark`` packages (pure
Python) that Spark puts first on the executors' Python path (``SparkContext.addPyFile``). So
the executors run the driver's cepcli, whatever is installed on them, and need only what
PySpark's Arrow needs anyway: pyarrow and numpy (and pandas).
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from cepcli.spark.classes import process_alive

_SHIPPED: set[tuple[int, str]] = set()  # (SparkContext, zip) pairs already added
_MADE: dict[tuple[int, str, tuple[tuple[str, int, int], ...]], str] = {}  # by process, folder, stamps


def ship(context: Any) -> str:
    """Add the zip to the context's Python files (once per context); its path."""
    path = package_zip()
    key = (id(context), path)
    if key not in _SHIPPED:
        context.addPyFile(path)
        _SHIPPED.add(key)
    return path


def package_zip() -> str:
    """The zip of cepcli and lark, in the temporary directory, named by its content (so a
    session that lives on, as in the tests or the Python API, adds each version once);
    made again only when a file's modification time or size changed; removed when the
    process ends."""
    import lark

    package = Path(__file__).resolve().parents[1]  # cepcli/ (this is cepcli/spark/ship.py)
    files = _files([package, Path(str(lark.__file__)).parent])
    folder = Path(tempfile.gettempdir())
    key = (os.getpid(), str(folder), tuple((str(f), *_stamp(f)) for f, _ in files))
    made = _MADE.get(key)
    if made is not None and os.path.exists(made):  # the files as they were: no new zip (50 ms)
        return made
    data = _zip_bytes(files)
    digest = hashlib.sha256(data).hexdigest()[:16]
    _sweep(folder)
    path = folder / f"cepcli-executors-{os.getpid()}-{digest}.zip"
    if not path.exists():
        path.write_bytes(data)
        atexit.register(_remove, path)
    _MADE[key] = str(path)
    return str(path)


def _files(packages: list[Path]) -> list[tuple[Path, str]]:
    """The packages' source files (no byte code), each with its name in the zip."""
    return [
        (file, str(file.relative_to(root.parent)))
        for root in packages
        for file in sorted(root.rglob("*"))
        if file.is_file() and "__pycache__" not in file.parts and file.suffix != ".pyc"
    ]


def _stamp(file: Path) -> tuple[int, int]:
    """A file's modification time and size: what says it changed."""
    info = file.stat()
    return info.st_mtime_ns, info.st_size


def _zip_bytes(files: list[tuple[Path, str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for file, name in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(info, file.read_bytes())
    return buffer.getvalue()


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _sweep(folder: Path) -> None:
    """Remove the zips of processes that are gone (killed before their exit handler ran)."""
    for path in folder.glob("cepcli-executors-*-*.zip"):
        pid = path.name.split("-")[2]
        if pid.isdigit() and not process_alive(int(pid)):
            path.unlink(missing_ok=True)
