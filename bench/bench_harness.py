"""Chapter 00-02 costs, measured side by side in one run (make bench).

* kill trial: spawn a worker, wait for its boundary marker, SIGKILL it, run the
  replacement; ours (the pay_invoice worker via ``kill_and_resume``) next to a
  raw trial (a bare ``python -c`` that writes the marker, then a bare reader);
* the effect boundary (``effects.apply_once``) per call in WAL+NORMAL and
  WAL+FULL, next to a raw two-commit step (insert, commit, update, commit).

Reported as medians of several repetitions and as ratios; machine, Python and
SQLite versions recorded. Nothing here is asserted by the test suite.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crashcourse import effects
from crashcourse.evidence import manifest, new_run_path, write_exclusive
from crashcourse.harness import Harness, kill_and_resume
from crashcourse.services import payments
from crashcourse.store import connect

ROOT = Path(__file__).resolve().parent.parent
TRIALS = 15
CALLS = 400
RAW_WORKER = (
    "import os,time;os.write(int(os.environ['FD']),b'x\\n');time.sleep(30)"
)


def raw_trial(directory: Path) -> float:
    """Spawn, marker over a pipe, SIGKILL, spawn a reader: no harness, no imports."""
    import os
    import signal

    start = time.perf_counter()
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-c", RAW_WORKER], env={"FD": str(write_end)},
        pass_fds=(write_end,), start_new_session=True,
    )
    os.close(write_end)
    os.read(read_end, 2)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=5)
    os.close(read_end)
    subprocess.run([sys.executable, "-c", "import sqlite3"], check=True, timeout=5)
    return (time.perf_counter() - start) * 1000


def our_trial(directory: Path, n: int) -> float:
    db = directory / f"trial-{n}.sqlite"
    payments.install(db)
    payments.approve(db, "PO-1", 4000, "USD")
    state = directory / f"trial-{n}-worker.sqlite"
    args = ["-m", "crashcourse.workers.pay_invoice", "--payments", str(db),
            "--state", str(state), "--task", "t", "--order", "PO-1",
            "--amount", "4000", "--currency", "USD"]
    start = time.perf_counter()
    with Harness() as harness:
        kill_and_resume(harness, args, "after_payment", lambda: {})
    return (time.perf_counter() - start) * 1000


def effect_calls_us(directory: Path, synchronous: str) -> float:
    conn = connect(directory / f"effects-{synchronous}.sqlite", synchronous=synchronous)
    effects.install(conn)
    conn.execute("CREATE TABLE IF NOT EXISTS notes (body TEXT)")
    start = time.perf_counter()
    for i in range(CALLS):
        effects.apply_once(conn, f"k{i}", {"i": i}, lambda c: c.execute(
            "INSERT INTO notes VALUES ('x')").lastrowid)
    conn.close()
    return (time.perf_counter() - start) * 1e6 / CALLS


def raw_step_us(directory: Path, synchronous: str) -> float:
    conn = connect(directory / f"raw-{synchronous}.sqlite", synchronous=synchronous)
    conn.execute("CREATE TABLE IF NOT EXISTS steps (k TEXT PRIMARY KEY, v TEXT)")
    start = time.perf_counter()
    for i in range(CALLS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO steps VALUES (:k, NULL)", {"k": f"k{i}"})
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE steps SET v = 'done' WHERE k = :k", {"k": f"k{i}"})
        conn.execute("COMMIT")
    conn.close()
    return (time.perf_counter() - start) * 1e6 / CALLS


def fresh(directory: Path) -> Path:
    """A new empty folder, so every repetition starts from an empty database."""
    return Path(tempfile.mkdtemp(dir=directory))


def median_of(runs: int, measure) -> float:
    return round(statistics.median(measure(i) for i in range(runs)), 2)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        results = {
            "raw_trial_ms": median_of(TRIALS, lambda i: raw_trial(directory)),
            "our_trial_ms": median_of(TRIALS, lambda i: our_trial(directory, i)),
        }
        for mode in ("NORMAL", "FULL"):
            results[f"effect_call_us_{mode}"] = median_of(
                5, lambda i, m=mode: effect_calls_us(fresh(directory), m))
            results[f"raw_step_us_{mode}"] = median_of(
                5, lambda i, m=mode: raw_step_us(fresh(directory), m))
    results["trial_ratio_ours_to_raw"] = round(
        results["our_trial_ms"] / results["raw_trial_ms"], 2)
    for mode in ("NORMAL", "FULL"):
        results[f"effect_to_raw_ratio_{mode}"] = round(
            results[f"effect_call_us_{mode}"] / results[f"raw_step_us_{mode}"], 2)
    document = {
        "schema": "crashcourse.bench.harness/1",
        "manifest": manifest(__file__),
        "trials": TRIALS,
        "calls_per_run": CALLS,
        "results": results,
    }
    target = new_run_path(ROOT / "artifacts" / "bench", "harness")
    path = write_exclusive(target, document)
    for name, value in results.items():
        print(f"{name:32} {value}")
    print(f"written to {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
