"""Run every bench/bench_*.py in turn (make bench); results go to artifacts/bench/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.name}", file=sys.stderr)
        if subprocess.run([sys.executable, str(script)]).returncode != 0:
            failed.append(script.name)
    print("bench failed: " + ", ".join(failed) if failed else "all benches ran")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
