"""The pause campaigns' evidence (issue 29), for the chapters to quote.

    python bench/bench_pauses.py [--trials 20] [--forced 3] [--seed 2026] [--output FILE]

Runs ``crashcourse.lab.pauses`` (the journal worker of chapter 07 SIGSTOPped
at seeded instants drawn uniformly over its measured life, each one counted
only when the kernel showed the worker stopped, alive, and a draw that fell
after the run's end redrawn and counted as missed; ``--forced`` more trials
frozen at the first mail's admission; its lease waited out; a replacement,
or a person's cancel; thawed; judged from the drive's and the mail
provider's rows), then the same draws and the forced instant against the
negative control, ``crashcourse.workers.unfenced_journal_worker``. Writes
``bench/results/pause_campaign.json`` unless ``--output`` names another file;
an existing file is never overwritten (remove it to measure again, then
``python tools/bench_sources.py record pause_campaign.json``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from crashcourse.lab import pauses  # noqa: E402

RESULT = ROOT / "bench" / "results" / "pause_campaign.json"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    defaults = {"--trials": "20", "--forced": "3", "--seed": "2026",
                "--output": str(RESULT)}
    for flag, value in defaults.items():
        if flag not in argv:
            argv += [flag, value]
    return pauses.main(argv, script=__file__)


if __name__ == "__main__":
    sys.exit(main())
