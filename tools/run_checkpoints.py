"""Run every checkpoint in full mode, evidence under artifacts/runs/ (make checkpoints).

    python tools/run_checkpoints.py [NN ...]    e.g. 05 07: those chapters only

Each checkpoints/chNN_*.py takes ``--output PATH`` and refuses an existing path;
this runner gives each a fresh name, runs them one after the other (a
failure stops nothing), shows each trial's line as it ends (with the time
since that checkpoint started), draws beside each evidence file a timeline
of its trials from the evidence's rows (EVIDENCE.png and .svg, by
crashcourse.figures.evidence; a checkpoint whose evidence records no instant
is said to have none) and names every one that failed at the end.
Exit status: 0 all held, 1 one or more did not, 2 bad input (an unknown
chapter).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from crashcourse.book import start_checkpoint
from crashcourse.lab.evidence import new_run_path
from crashcourse.validate import argument_parser

ROOT = Path(__file__).resolve().parent.parent
# Per script: chapter 12's full matrix ran 72 min here. A hang shows sooner,
# as a silence: every checkpoint prints a line per finished trial, and its
# slowest trial (a framework's whole kill matrix cell) takes minutes, not 20.
FULL_TIMEOUT = 3 * 3600.0
QUIET_TIMEOUT = 20 * 60.0


def run_one(script: Path) -> bool:
    """Run one checkpoint in full mode; say how it ended; True when it held."""
    runs = ROOT / "artifacts" / "runs"
    runs.mkdir(parents=True, exist_ok=True)  # a checkpoint refuses a missing folder
    output = new_run_path(runs, script.stem)
    print(f"== {script.name} -> {output.relative_to(ROOT)}", file=sys.stderr,
          flush=True)
    began = time.monotonic()

    def show(line: str) -> None:
        print(f"   {time.monotonic() - began:7.1f} s  {line}", file=sys.stderr,
              flush=True)

    try:
        done = start_checkpoint(script.stem, output=output, timeout=FULL_TIMEOUT,
                                on_line=show, quiet_timeout=QUIET_TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"   {script.name}: ended after {time.monotonic() - began:.0f} s"
              f" (no exit within {FULL_TIMEOUT:.0f} s, or nothing printed for"
              f" {QUIET_TIMEOUT:.0f} s)", file=sys.stderr, flush=True)
        return False
    if output.exists():
        picture(output)
    if done.returncode == 0:
        return True
    print(f"   {script.name}: exit status {done.returncode}", file=sys.stderr,
          flush=True)
    return False


def picture(evidence: Path) -> None:
    """Draw the evidence's timeline beside it and say where (or why not): a
    picture that cannot be drawn fails nothing, the evidence is what counts."""
    try:
        from crashcourse.figures import evidence as timeline

        written = timeline.write(evidence)
    except ImportError as error:  # matplotlib is the book's, not the runtime's
        print(f"   no picture: {error}", file=sys.stderr, flush=True)
        return
    except (timeline.BadEvidence, OSError, ValueError) as error:
        print(f"   no picture: {error}", file=sys.stderr, flush=True)
        return
    if not written:
        print("   no picture: the evidence records no instant to draw",
              file=sys.stderr, flush=True)
        return
    shown = ", ".join(str(p.relative_to(ROOT)) for p in written)
    print(f"   picture: {shown}", file=sys.stderr, flush=True)


def chosen(argv: list[str] | None) -> list[Path]:
    """The checkpoints the command line names (all when it names none)."""
    scripts = sorted((ROOT / "checkpoints").glob("ch[0-9][0-9]_*.py"))
    parser = argument_parser(__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", metavar="NN",
                        help="chapter numbers, e.g. 05 07 (default: every one)")
    asked = parser.parse_args(argv).chapters
    unknown = sorted(set(asked) - {script.name[2:4] for script in scripts})
    if unknown:
        parser.error(f"no checkpoint for chapter {', '.join(unknown)}")
    return [s for s in scripts if not asked or s.name[2:4] in asked]


def main(argv: list[str] | None = None) -> int:
    scripts = chosen(argv)
    failed = [script.name for script in scripts if not run_one(script)]
    summary = "checkpoints failed: " + ", ".join(failed) if failed else "all held"
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
