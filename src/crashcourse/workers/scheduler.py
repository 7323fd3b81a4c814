"""The scheduler of chapter 09: a process that starts runs while it may.

    python -m crashcourse.workers.scheduler --state PATH --name NAME \\
        [--ticks N] [--interval SECONDS]

Every tick it asks ``control.start_run``: when the newest row of the
scheduler switch says running, a ``runs`` row is added (that is what starting
a run means here); when it says stopped, or when nobody has ever said
anything, nothing is started. The switch lives in ``--state``, the runtime's
own file, so a stop outlives the scheduler: kill it, start it again, and it
still starts nothing until a person starts it with ``control.start_scheduler``.

Bounded: it exits after ``--ticks`` ticks (exit 0), and on SIGTERM at the end
of the current tick. Bad input (usage, a blank name, ticks or an interval out
of range, a ``--state`` with no directory) ends it with exit status 2 and one
line on stderr, before ``--state`` is created; so does a ``--state`` that is
not the scheduler's own store (0 bytes, another program's database, damaged or
cut short), left as it was. What the machine refuses mid-run (a file that is
not a database, a full disk, a read-only mount) ends it with one line and exit
status 74. It prints one JSON line
(ticks, runs it started); graders count the ``runs`` rows.
"""

from __future__ import annotations

import json
import signal
import sys
import time

from crashcourse import control
from crashcourse.store import opened
from crashcourse.validate import check_number, check_place
from crashcourse.workers.options import (
    one_line_errors,
    refuse,
    text_options,
    whole_number,
)

USAGE = ("usage: scheduler --state PATH --name NAME [--ticks N]"
         " [--interval SECONDS]")
MAX_TICKS = 100_000


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, checked; ValueError, one line: what is wrong,
    then the usage. Nothing is created to check (chapter 09)."""
    options = text_options(argv, ("state", "name"),
                           {"ticks": "100", "interval": "0.05"}, USAGE)
    check_place("--state", options["state"])
    try:  # ASCII only, finite: float() alone takes inf, nan and "٣" (issue 35)
        ticks = whole_number(options["ticks"])
        interval = check_number("--interval", options["interval"], 0, 60)
    except ValueError:
        ticks = interval = -1
    if not (0 < ticks <= MAX_TICKS and 0 <= interval <= 60):
        raise ValueError(f"--ticks must be 1 to {MAX_TICKS} and --interval 0 to "
                         f"60 seconds; {USAGE}")
    return {**options, "ticks": ticks, "interval": interval}


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Tick until ``--ticks`` are done or SIGTERM asks to stop (chapter 09)."""
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except ValueError as bad:
        return refuse(bad)
    told = []
    signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))
    started = ticks = 0
    with opened(options["state"], own=tuple(control.TABLES)) as conn:
        control.install(conn)
        while ticks < options["ticks"] and not told:
            started += control.start_run(conn, options["name"]) is not None
            ticks += 1
            time.sleep(options["interval"])
    print(json.dumps({"ticks": ticks, "started": started}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
