"""A worker's command line without paying argparse's start-up on every trial.

Importing and building an ``argparse`` parser costs a worker several
milliseconds (argparse, gettext, shutil for the terminal width), and the
harness starts two workers per trial. So a worker declares its options once,
as ``Option`` values, and ``parse`` reads the ordinary case, every option
written ``--name value``, by itself. Anything else (``--help``, a missing or
unknown option, a value argparse would refuse, ``--name=value``, an
abbreviation) goes to the full ``argparse`` parser built from the same
declarations, so help, error messages and exit status 2 are argparse's own.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

REQUIRED = object()  # an option with this default must be given


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
          argv: list[str] | None = None) -> SimpleNamespace:
    """The options as attributes (``--busy-timeout-ms`` is ``busy_timeout_ms``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    values = quick(options, argv)
    if values is None:  # help, or something to refuse: argparse says it
        values = vars(full_parser(description, options).parse_args(argv))
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


def full_parser(description: str, options: tuple[Option, ...]):
    """The argparse parser the same declarations describe (its ``--help``)."""
    import argparse  # here: only a run that needs help or an error pays for it

    parser = argparse.ArgumentParser(description=description)
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
