"""Run every bench/bench_*.py in turn (make bench); results go to artifacts/bench/.

    python bench/run_all.py [NAME ...]    e.g. harness pg_queues: those alone

A bench that fails stops nothing; each one that failed is named at the end.
Exit status: 0 all ran, 1 one or more failed, 2 bad input (an unknown name).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from crashcourse.validate import argument_parser  # one-line errors, exit 2

HERE = Path(__file__).resolve().parent


def chosen(argv: list[str] | None) -> list[Path]:
    """The benches the command line names (every one when it names none)."""
    scripts = {script.stem.removeprefix("bench_"): script
               for script in sorted(HERE.glob("bench_*.py"))}
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"which benches: {', '.join(scripts)} (default: all)")
    names = parser.parse_args(argv).names
    unknown = sorted(set(names) - set(scripts))
    if unknown:
        parser.error(f"no bench named {', '.join(unknown)}")
    return [script for name, script in scripts.items() if not names or name in names]


def main(argv: list[str] | None = None) -> int:
    failed = []
    for script in chosen(argv):
        print(f"== {script.name}", file=sys.stderr)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    print("bench failed: " + ", ".join(failed) if failed else "all benches ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
