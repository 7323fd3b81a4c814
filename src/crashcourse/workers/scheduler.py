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
of the current tick. It prints one JSON line (ticks, runs it started);
graders count the ``runs`` rows.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import NoReturn

from crashcourse import control
from crashcourse.store import opened

USAGE = ("usage: scheduler --state PATH --name NAME [--ticks N]"
         " [--interval SECONDS]")
MAX_TICKS = 100_000


def bad_usage() -> NoReturn:
    """Say how to call it, on stderr, and exit 2: nothing was done (chapter 09)."""
    print(USAGE, file=sys.stderr)
    raise SystemExit(2)


def parse(argv: list[str]) -> dict:
    """``--name value`` pairs, checked; bad usage exits 2 (chapter 09)."""
    if len(argv) % 2 or not all(a.startswith("--") for a in argv[::2]):
        bad_usage()
    options = {"ticks": "100", "interval": "0.05",
               **dict(zip((a[2:] for a in argv[::2]), argv[1::2], strict=True))}
    if set(options) != {"state", "name", "ticks", "interval"} or not options["name"]:
        bad_usage()
    try:
        ticks, interval = int(options["ticks"]), float(options["interval"])
    except ValueError:
        bad_usage()
    if not (0 < ticks <= MAX_TICKS and 0 <= interval <= 60):
        bad_usage()
    return {**options, "ticks": ticks, "interval": interval}


def main(argv: list[str] | None = None) -> int:
    """Tick until ``--ticks`` are done or SIGTERM asks to stop (chapter 09)."""
    options = parse(sys.argv[1:] if argv is None else argv)
    told = []
    signal.signal(signal.SIGTERM, lambda signum, frame: told.append(signum))
    started = ticks = 0
    with opened(options["state"]) as conn:
        control.install(conn)
        while ticks < options["ticks"] and not told:
            started += control.start_run(conn, options["name"]) is not None
            ticks += 1
            time.sleep(options["interval"])
    print(json.dumps({"ticks": ticks, "started": started}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
