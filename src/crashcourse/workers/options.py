"""A worker's command line without paying argparse's start-up on every trial.

Importing and building an ``argparse`` parser costs a worker several
milliseconds (argparse, gettext, shutil for the terminal width), and the
harness starts two workers per trial. So a worker declares its options once,
as ``Option`` values, and ``parse`` reads the ordinary case, every option
written ``--name value``, by itself. Anything else (``--help``, a missing or
unknown option, a value argparse would refuse, ``--name=value``, an
abbreviation) goes to the full ``argparse`` parser built from the same
declarations, so help and error messages are argparse's own.

Bad input is refused the same way by every worker (issue 14): ONE line on
stderr, ``prog: error: why``, no traceback, exit status ``BAD_INPUT`` (2, the
status argparse uses), and nothing written: a worker checks its arguments and
the services it needs before it opens its own file.

What the machine refuses once the run has begun (a disk that fills, a file
that cannot be opened or written) ends it the same way: one line, exit status
``IO_ERROR`` (74, ``EX_IOERR`` of sysexits.h), never a traceback
(``one_line_errors``). Whatever committed before stays committed, as after a
kill; a rerun resumes from the durable rows.
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

from crashcourse.store import StoreMissing, opened
from crashcourse.store.dialect import SQLITE
from crashcourse.validate import (  # noqa: F401 -- whole_number: the workers' door
    BAD_INPUT,
    argument_parser,
    check_text,
    whole_number,
)

REQUIRED = object()  # an option with this default must be given
IO_ERROR = 74  # ... for a file the machine would not open or write (EX_IOERR)
# What a worker's own file is, for the RUNS_ON of a worker that installs tables
# in it (store.check_backend): SQLite's; a server's store is refused.
OWN_FILE = (SQLITE,)


class Option:
    """One ``--name value`` option, declared the way ``add_argument`` takes it."""

    __slots__ = ("flag", "help", "type", "choices", "default", "metavar")

    def __init__(self, flag: str, help: str, *, type=None, choices=None,
                 default=REQUIRED, metavar=None) -> None:
        if not flag.startswith("--"):
            raise ValueError(f"an option is spelled --name, not {flag!r}")
        self.flag, self.help, self.type = flag, help, type
        self.choices, self.default, self.metavar = choices, default, metavar

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")

    def convert(self, text: str):
        """The value as argparse would store it; ValueError when it would not."""
        value = text if self.type is None else self.type(text)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{value!r} is not one of {self.choices}")
        return value


def parse(description: str, options: tuple[Option, ...],
          argv: list[str] | None = None, epilog: str | None = None
          ) -> SimpleNamespace:
    """The options as attributes (``--busy-timeout-ms`` is ``busy_timeout_ms``);
    ``epilog`` ends ``--help`` (the exit statuses)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    values = quick(options, argv)
    if values is None:  # help, or something to refuse: argparse says it
        values = vars(full_parser(description, options, epilog).parse_args(argv))
    return SimpleNamespace(**values)


def quick(options: tuple[Option, ...], argv: list[str]) -> dict | None:
    """``--name value`` pairs, each option at most once, every required one
    given; None for anything else, which only argparse answers."""
    by_flag = {option.flag: option for option in options}
    if len(argv) % 2:
        return None
    given = {}
    for flag, text in zip(argv[::2], argv[1::2], strict=True):
        option = by_flag.get(flag)
        # A value starting with "-" may be an option to argparse: let it decide.
        if option is None or option.dest in given or text.startswith("-"):
            return None
        try:
            given[option.dest] = option.convert(text)
        except ValueError:
            return None
    values = {}
    for option in options:
        if option.dest in given:
            values[option.dest] = given[option.dest]
        elif option.default is REQUIRED:
            return None
        elif isinstance(option.default, str) and option.type is not None:
            values[option.dest] = option.type(option.default)  # as argparse does
        else:
            values[option.dest] = option.default
    return values


def refuse(reason: object, prog: str | None = None) -> int:
    """Say on ONE line of stderr why nothing was done; ``BAD_INPUT`` (chapter 00).

    ``prog`` defaults to the script's name, as argparse names it."""
    prog = prog or os.path.basename(sys.argv[0])
    print(f"{prog}: error: {' '.join(str(reason).split())}", file=sys.stderr,
          flush=True)
    return BAD_INPUT


# What SQLite (and the PostgreSQL adapter, ``store.rows.LOCKED``) says of a lock
# another process kept past the busy timeout: "database is locked", or
# "locking protocol" (the WAL index kept busy by a process frozen in its open).
LOCK_KEPT = ("database is locked", "locking protocol")
HELD_LINE = ("another process kept the write lock of a file this run writes"
             " past the busy timeout (a holder paused mid-write?); the"
             " transaction that waited wrote nothing, and what committed"
             " before stays")


def lock_kept(error: BaseException) -> bool:
    """Whether ``error`` is a lock another process kept past the busy timeout:
    a live holder (paused, or slow), not the machine refusing (issue 35)."""
    import sqlite3  # every worker has loaded it already

    return isinstance(error, sqlite3.OperationalError) and any(
        words in str(error) for words in LOCK_KEPT)


def one_line_errors(main=None, *, held: int | None = None):
    """``main`` with what the machine refuses mid-run (an ``OSError`` the
    system raised, with its errno, or an ``sqlite3.Error``: a full disk, a
    read-only mount, a file that is not a database) said on ONE line and ended
    with ``IO_ERROR`` (chapter 00). The runtime's own refusals are
    ``PermissionError``s too (a stale claim, a refused credential): they carry
    no errno, say something else, and pass through untouched. A store refused
    when opened (``StoreMissing``, ``StoreDamaged``: not this program's, 0
    bytes, damaged) is ``BAD_INPUT``, one line, the file untouched. A
    PostgreSQL server unreachable or killed mid-run (psycopg's
    ``OperationalError``) is the machine too: one line, ``IO_ERROR``.

    With ``held`` (``@one_line_errors(held=N)``), a lock another process kept
    past the busy timeout (``lock_kept``: a holder paused mid-write, issue 35)
    is not the machine: the worker's documented "held" status ``N``, and one
    JSON line on stdout, ``{"held": why}``, as its other outcomes are said."""
    import sqlite3  # every worker has loaded it already

    if main is None:  # @one_line_errors(held=N)
        return lambda main: one_line_errors(main, held=held)

    def guarded(argv: list[str] | None = None) -> int:
        try:
            return main(argv)
        except StoreMissing as bad:  # a store not this program's, or damaged:
            return refuse(bad)  # refused before anything was written (issue 35)
        except (OSError, sqlite3.Error) as refused:
            if held is not None and lock_kept(refused):  # a live holder
                print(json.dumps({"held": HELD_LINE}), flush=True)
                return held
            if isinstance(refused, OSError) and refused.errno is None:
                raise  # not the machine: the runtime refusing, or a bug
            refuse(f"the machine refused: {type(refused).__name__}: {refused}")
            return IO_ERROR
        except Exception as refused:
            if not server_unreachable(refused):
                raise
            refuse(f"the machine refused: the PostgreSQL server: {refused}")
            return IO_ERROR

    guarded.__doc__, guarded.__name__ = main.__doc__, main.__name__
    return guarded


def server_unreachable(error: BaseException) -> bool:
    """Whether ``error`` is psycopg's word for a server that cannot be reached
    or went away mid-run (``OperationalError``: refused, killed, the
    connection lost; ``InterfaceError``: a connection already closed). A
    server's refusal of a statement (a syntax error, a broken key) is not:
    that is a bug, and keeps its traceback. psycopg is looked up, never
    imported: the core stays stdlib-only (chapter 10, issue 35)."""
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(
        error, (psycopg.OperationalError, psycopg.InterfaceError))


def text_options(argv: list[str], required: tuple[str, ...],
                 optional: dict[str, str | None], usage: str) -> dict[str, str]:
    """``--name value`` pairs for a worker whose options are all text, each
    given once, none blank; ``optional`` gives defaults (None: absent). Bad
    usage raises ValueError, one line: what is wrong, then ``usage``. The
    workers the harness starts by the hundred read this way: importing
    argparse would cost every start ~20 ms (chapter 07). ``-h`` or ``--help``
    anywhere prints the program's own docstring (its usage, options and exit
    statuses) and exits 0, as argparse would."""
    if "-h" in argv or "--help" in argv:
        program = sys.modules.get("__main__")
        print((getattr(program, "__doc__", None) or usage).strip())
        sys.exit(0)
    flags, values = argv[::2], argv[1::2]
    if len(flags) != len(values) or len(set(flags)) < len(flags) or not all(
            flag.startswith("--") for flag in flags):
        raise ValueError(f"options come as --name value pairs, each once; {usage}")
    given = dict(zip((flag[2:] for flag in flags), values, strict=True))
    problems = [f"unknown option --{name}" for name in sorted(
        set(given) - set(required) - set(optional))]
    problems += [f"--{name} is required" for name in required if name not in given]
    if problems:
        raise ValueError(f"{', '.join(problems)}; {usage}")
    options = {name: value for name, value in optional.items() if value is not None}
    for name, value in (options | given).items():
        check_text(f"--{name}", value)
    return options | given


def launch(module: str) -> list[str]:
    """``sys.executable``'s arguments that run ``module``'s ``main()`` with the
    command line that follows, as ``python -m module`` would, but the way a
    console script starts its program: import the module, call ``main``.
    ``-m`` first loads ``runpy`` and ``importlib.util`` to find the module and
    run it as ``__main__``: about 1 ms of CPU at every start
    (``bench/bench_harness.py``), and a kill trial starts two workers.
    ``sys.argv[0]`` is the module's file, as under ``-m``, so the program's
    messages name it the same (chapter 00)."""
    if not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(f"not a module name: {module!r}")
    return ["-c", f"import sys, {module} as program; sys.argv[0] = program.__file__;"
                  " sys.exit(program.main())"]


def check_installed(*stores: tuple[str, tuple[str, ...]], record: bool = True
                    ) -> None:
    """Each ``(path, tables)`` is an installed, undamaged store, or
    ``StoreMissing`` (``StoreDamaged``): a worker checks the stores it did not
    make before it writes anything. Nothing is created to find out
    (``store.opened``'s ``require``). They are the outside world's records, so
    by default each gets the full integrity check (``record``); a worker's own
    store may pass ``record=False`` for the quick one (chapter 00)."""
    for path, tables in stores:
        with opened(path, require=tables, record=record):
            pass


def full_parser(description: str, options: tuple[Option, ...],
                epilog: str | None = None):
    """The argparse parser the same declarations describe (its ``--help``)."""
    parser = argument_parser(description, epilog)
    for option in options:
        settings = {"help": option.help}
        if option.default is REQUIRED:
            settings["required"] = True
        else:
            settings["default"] = option.default
        for name in ("type", "choices", "metavar"):
            if getattr(option, name) is not None:
                settings[name] = getattr(option, name)
        parser.add_argument(option.flag, **settings)
    return parser
