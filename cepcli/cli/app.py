"""The ``cepcli`` command group and its entry point: every ``CepError`` (and anything
unexpected) becomes one message and an exit code here, and nowhere else."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import traceback
from typing import Any, NoReturn

import click

from cepcli import __version__
from cepcli.cli.bench import bench_command
from cepcli.cli.check import check_command
from cepcli.cli.console import error_line, quiet_broken_pipe
from cepcli.cli.explain import explain_command
from cepcli.cli.options import Command
from cepcli.cli.run import run_command
from cepcli.errors import CepError
from cepcli.signals import exit_code


class CepGroup(click.Group):
    """Turns every ``CepError`` (and anything unexpected) into a message and an exit
    code, so that ``CliRunner`` sees what a user sees."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> Any:
        debug = os.environ.get("CEPCLI_DEBUG") == "1"
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except CepError as err:
            if debug:
                traceback.print_exc()
            error_line(err.render())
            ctx.exit(err.exit_code)
        except BrokenPipeError:
            quiet_broken_pipe()
        except KeyboardInterrupt:
            raise
        except Exception as err:
            if debug:
                traceback.print_exc()
            error_line(f"internal error: {type(err).__name__}: {err} (set CEPCLI_DEBUG=1 for a traceback)")
            ctx.exit(1)


@click.group(cls=CepGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cepcli")
def cli() -> None:
    """cepcli: find complex event patterns (SASE+) in event streams (CSV, Parquet, JSON lines).

    \b
    Example:
      cepcli run patterns/stocks_seq.sase --format jsonl > matches.jsonl
    """


for command in (run_command, check_command, explain_command, bench_command):
    cli.add_command(command)


class WithoutPandas:
    """An import finder that says pandas is not installed.

    pyarrow imports pandas, when it can, on its first array or scalar made from Python or
    NumPy data (to recognise pandas objects): a good part of a short run's start-up, and
    every such array costs more after it (BENCHMARKS.md, "Start-up"). A local run never hands pyarrow
    a pandas object (a DataFrame comes only through the Python API), so the program runs as
    if pandas were absent, which pyarrow supports. Not with ``--spark``: PySpark needs it."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (a local run does without it)", name=name)


# The commands that read rows import numpy first, at the top of the call stack. Its import
# makes some thousands of typing objects; made deep in the stack (the reader's import, inside
# click), CPython 3.11 crossed the end of a 16 KB chunk of its frame stack on each of those
# calls, mapping and unmapping the chunk every time: 1,600 mmap/munmap pairs and about 25 ms
# of a 10-row run, 600 pairs in a 3M-row one; 2 and 4 pairs from here (BENCHMARKS.md, "Start-up").
READS_ROWS = (["run"], ["bench"])


def main(argv: list[str] | None = None) -> None:
    """Entry point: the CLI, plus a quiet exit on a closed pipe and 130 on Ctrl-C; a local
    run ends without the interpreter's teardown (``_leave``)."""
    args = sys.argv[1:] if argv is None else argv
    local = "--spark" not in args
    if local and "pandas" not in sys.modules:
        sys.meta_path.insert(0, WithoutPandas())
    if args[:1] in READS_ROWS:
        import numpy  # noqa: F401 - here, at the top of the call stack (see ``READS_ROWS``)
    try:
        _main(argv)
    except SystemExit as done:
        if not local:
            raise
        _leave(done.code)


def _leave(code: object) -> NoReturn:
    """``sys.exit(code)``, without the interpreter's teardown: the exit handlers run and the
    standard streams are flushed (every output file is closed or flushed by then), and the
    process ends (``os._exit``) instead of freeing every module, array and buffer one by
    one: 40 ms of a 10-row run and 60-70 ms of a 3M-row one (BENCHMARKS.md, "Start-up")."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("text"): the text on standard error, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more reaches it
            stream.flush()
    os._exit(status)


def _main(argv: list[str] | None) -> None:
    try:
        code = cli.main(args=argv, prog_name="cepcli", standalone_mode=False)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except KeyboardInterrupt as stop:
        sys.exit(exit_code(stop))
    except BrokenPipeError:
        quiet_broken_pipe()
    sys.exit(code if isinstance(code, int) else 0)
