"""The pause campaigns' evidence (issue 29), for the chapters to quote.

    python bench/bench_pauses.py [--trials 20] [--forced 3] [--seed 2026]
        [--output FILE]
    python bench/bench_pauses.py --worker workflow [--trials 30] [--forced 3] ...

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

``--worker workflow`` runs ``crashcourse.lab.workflow_pauses`` instead:
chapter 08's workflow worker frozen the same way, a recovery or the
person's cancel and compensation, thawed, judged from the supplier's, the
payment service's and the mail provider's rows, against its draft
``--mode unleased``; it writes ``bench/results/pause_campaign_workflow.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from crashcourse.lab import pauses, workflow_pauses  # noqa: E402

RESULT = ROOT / "bench" / "results" / "pause_campaign.json"
WORKFLOW_RESULT = ROOT / "bench" / "results" / "pause_campaign_workflow.json"


def main(argv: list[str] | None = None) -> int:
    """``--worker journal`` (the default) or ``workflow``, then its options."""
    argv = list(sys.argv[1:] if argv is None else argv)
    worker = "journal"
    if "--worker" in argv:
        at = argv.index("--worker")
        worker = argv[at + 1] if at + 1 < len(argv) else ""
        del argv[at:at + 2]
    if worker not in WORKERS:
        print(f"bench_pauses: --worker must be one of {sorted(WORKERS)}",
              file=sys.stderr)
        return 2
    result, trials, run = WORKERS[worker]
    defaults = {"--trials": trials, "--forced": "3", "--seed": "2026",
                "--output": str(result)}
    for flag, value in defaults.items():
        if flag not in argv:
            argv += [flag, value]
    return run(argv, script=__file__)


# worker -> (its evidence, its trials per mode, its campaign)
WORKERS = {"journal": (RESULT, "20", pauses.main),
           "workflow": (WORKFLOW_RESULT, "30", workflow_pauses.main)}


if __name__ == "__main__":
    sys.exit(main())
