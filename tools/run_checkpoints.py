"""Run every checkpoint in full mode, evidence under artifacts/runs/ (make checkpoints).

Each checkpoints/chNN_*.py takes ``--output PATH`` and refuses an existing path;
this runner gives each a fresh name and stops at the first one that fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from crashcourse.evidence import new_run_path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    failed = []
    for script in sorted((ROOT / "checkpoints").glob("ch[0-9][0-9]_*.py")):
        output = new_run_path(ROOT / "artifacts" / "runs", script.stem)
        print(f"== {script.name} -> {output.relative_to(ROOT)}", file=sys.stderr)
        done = subprocess.run([sys.executable, str(script), "--output", str(output)])
        if done.returncode != 0:
            failed.append(script.name)
    summary = "checkpoints failed: " + ", ".join(failed) if failed else "all held"
    print(summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
