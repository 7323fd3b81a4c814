"""A test worker with a child of its own (tests/lab/test_harness.py).

It starts one child in its own process group, writes that child's pid to the
file named by its first argument (written whole, then renamed into place),
and reaches the boundary ``child_started``. The child sleeps, bounded: it
would outlive this worker if a kill reached the worker's pid alone.

``--keep-pipes`` lets the child inherit the worker's stdout and stderr, as a
real helper process would: a harness that killed only the worker would then
wait for those pipes to close. ``--hang`` never reaches the boundary (it
sleeps, bounded, instead), for a parent whose wait runs out.
"""

import os
import subprocess
import sys
import time

from crashcourse.boundary import boundary

CHILD_SECONDS = 30  # bounded even if nobody kills it
CHILD_MARK = "crashcourse-test-grandchild"  # so a test can tell it by its command


def main() -> int:
    pid_file = sys.argv[1]
    quiet = {} if "--keep-pipes" in sys.argv else {
        "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    child = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep({CHILD_SECONDS})",
         CHILD_MARK],
        stdin=subprocess.DEVNULL, **quiet)
    with open(pid_file + ".part", "w") as handle:
        handle.write(str(child.pid))
    os.replace(pid_file + ".part", pid_file)
    if "--hang" in sys.argv:
        time.sleep(CHILD_SECONDS)
    boundary("child_started")
    return 0  # released: the child is left running, as a careless worker would


if __name__ == "__main__":
    sys.exit(main())
