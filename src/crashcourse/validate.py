"""The checks every module makes at its door, written once (chapters 01-05).

Each runtime function validates its arguments BEFORE it opens a transaction,
so bad input raises and nothing is written. The rules are the same wherever a
value appears, so they live here: whole positive cents, a three-letter
currency, non-blank text, bounded counts, true booleans, a place for a new
file, an injected clock, and one JSON spelling per value. This module imports
only the standard library's ``json``, ``math``, ``os`` and ``time``, and does
no work at import (no regex to compile): workers import it, and start-up is a
trial's cost.
"""

from __future__ import annotations

import json
import math
import os
import time

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["MAX_CENTS", "MAX_COUNT", "canonical", "check_text", "check_flag",
    "check_place", "check_count", "check_amount", "check_currency", "clock",
    "BAD_INPUT", "argument_parser", "check_url", "check_number", "seconds",
    "whole_number"]

MAX_CENTS = 10**12  # far above any invoice; larger is a typo or an overflow probe
MAX_COUNT = 10**6  # far above any campaign or policy version


def canonical(value: object) -> str:
    """One JSON spelling per value: sorted keys, no spaces, no NaN (chapter 01)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def check_text(name: str, value: object, *, empty_ok: bool = False,
               none_ok: bool = False) -> str | None:
    """A string, and not blank unless ``empty_ok``; None only with ``none_ok``
    (an optional field left out) (chapter 01)."""
    if value is None and none_ok:
        return None
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    if not value.isascii():  # bytes that are not UTF-8 arrive as lone surrogates
        try:  # (a Latin-1 terminal's argv): no database could store them
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{name} must be UTF-8 text, got {value!r}") from None
    return value


def check_flag(name: str, value: object) -> bool:
    """``True`` or ``False`` itself: ``"false"``, ``0`` and ``None`` are refused,
    since ``bool("false")`` is True (chapter 05)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def check_place(name: str, path: object) -> str:
    """Where a worker may keep its own file: a non-blank path that is a
    regular file or nothing yet (not a directory, a device such as /dev/null
    or /dev/full, a FIFO), in an existing directory this process may write
    (a read-only mount is refused). Looks, and creates nothing (chapter 00)."""
    check_text(name, path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        raise ValueError(f"{name} {path!r} is not a file in an existing directory")
    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{name} {path!r} is not a regular file")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{name} {path!r}: its directory cannot be written")
    return path


def check_count(name: str, value: object, ceiling: int = MAX_COUNT) -> int:
    """An int from 0 to ``ceiling``; bool, float, str and negatives are refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if not 0 <= value <= ceiling:
        raise ValueError(f"{name} must be between 0 and {ceiling}, got {value}")
    return value


def check_amount(amount_cents: object) -> int:
    """Positive whole cents up to ``MAX_CENTS``; bool, float and NaN are refused.

    Introduced in chapter 02."""
    if isinstance(amount_cents, bool) or not isinstance(amount_cents, int):
        nan = isinstance(amount_cents, float) and math.isnan(amount_cents)
        shown = "NaN" if nan else repr(amount_cents)
        raise TypeError(f"amount must be integer cents, got {shown}")
    if not 0 < amount_cents <= MAX_CENTS:
        raise ValueError(f"amount must be between 1 and {MAX_CENTS} cents")
    return amount_cents


def check_currency(currency: object) -> str:
    """Three upper-case letters, as in ISO 4217 (``USD``, ``EUR``) (chapter 02)."""
    # Three ASCII capitals, as the regex [A-Z]{3} would say, without compiling
    # one at import in every worker: isupper() alone takes "É" and "Ǆ".
    if not (isinstance(currency, str) and len(currency) == 3 and currency.isascii()
            and currency.isalpha() and currency.isupper()):
        raise ValueError(f"currency must be three upper-case letters, got {currency!r}")
    return currency


def clock(now: object = None) -> float:
    """``now`` if given (a test's injected instant), else the wall clock.

    Introduced in chapter 05."""
    if now is None:
        return time.time()
    if isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(
        now
    ):
        raise ValueError(f"now must be a finite number, got {now!r}")
    return float(now)


BAD_INPUT = 2  # every program's exit status for bad input, as argparse's own


def argument_parser(description: str, epilog: str | None = None, **settings):
    """An ``argparse`` parser whose errors are one line and ``BAD_INPUT``
    (argparse's own print the usage first, over several lines); ``settings``
    go to ``ArgumentParser`` (chapter 00). Every program uses it: the
    workers, the supplier's server and the checkpoints."""
    import argparse  # here: only a run that needs help or an error pays for it

    class OneLineErrors(argparse.ArgumentParser):
        def error(self, message: str):
            self.exit(BAD_INPUT, f"{self.prog}: error: {' '.join(message.split())}"
                      " (see --help)\n")

    return OneLineErrors(description=description, epilog=epilog, **settings)


def check_url(name: str, text: object) -> str:
    """An ``http(s)://host[:port][/path]`` address, checked whole before
    anything is written: a port that is not a number from 0 to 65535
    (``http://127.0.0.1:abc``, which ``urlsplit`` accepts and only ``.port``
    refuses), a missing host, another scheme, spaces, control characters or
    non-ASCII text are refused with ValueError, one line (issue 35)."""
    check_text(name, text)
    from urllib.parse import urlsplit  # here: only a program given a URL pays

    problem = not text.isascii() or any(c.isspace() or not c.isprintable()
                                        for c in text)
    try:
        address = urlsplit(text)
        address.port  # noqa: B018 (the check: it raises for a bad port)
    except ValueError:
        problem = True
    else:
        problem = problem or address.scheme not in ("http", "https") \
            or not address.hostname
    if problem:
        raise ValueError(f"{name} {text!r} is not http(s)://host[:port]")
    return text


def check_number(name: str, text: object, low: float, high: float, *,
                 low_open: bool = False) -> float:
    """A command line's number, from ``low`` (excluded with ``low_open``) to
    ``high``, spelled in ASCII: digits, one point, an exponent. ``float``
    alone takes ``inf``, ``nan``, ``1e999`` (which overflows to inf),
    ``1_0``, spaces and other scripts' digits (``٣``); an option taking any
    of them ran its trials and then broke writing the evidence, or waited
    forever. ValueError, one line, before anything runs (issue 35)."""
    spelled = isinstance(text, str) and text.isascii() and bool(text) and all(
        char in "0123456789.eE+-" for char in text)
    try:
        value = float(text) if spelled else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (low < value if low_open else low <= value)
            and value <= high):
        bound = "(" if low_open else "["
        raise ValueError(f"{name} must be a number in {bound}{low:g}, {high:g}]"
                         f" in ASCII digits, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A command line's duration, as ``check_number`` reads it (finite, ASCII,
    0 to a million seconds); each option's own bounds are checked after it.
    An argparse ``type=``: a refusal is one line and exit 2 (issue 35)."""
    return check_number("seconds", text, 0, 1_000_000)


def whole_number(text: str) -> int:
    """A command line's whole number, spelled in ASCII digits only: ``int``
    also takes ``+4000``, ``4_000`` and other scripts' digits, and a count a
    person did not type exactly is refused, not paid (chapter 00)."""
    if not (isinstance(text, str) and text.isascii() and text.isdigit()
            and len(text) <= 19):
        raise ValueError(f"must be a whole number in ASCII digits, got {text!r}")
    return int(text)
