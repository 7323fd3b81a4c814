"""Start a bench child from its module's cached bytecode.

    python bench/child.py journal|dbos|dbos_probe --child kill|steps|same-id ...

A script named on the command line is compiled from source at every start
(about 10 ms for bench_journal.py here); an imported module is read from its
``__pycache__``. A worker starts from bytecode, so the children of every side
start through this file, the same way. Its first line stamps the child's
start (``BENCH_STARTED``), which both sides read as the end of the
interpreter's own start-up.
"""

import os
import time

os.environ["BENCH_STARTED"] = repr(time.time())

import sys  # noqa: E402

if __name__ == "__main__":
    side = sys.argv.pop(1)
    sys.exit(__import__("bench_journal" if side == "journal" else "bench_dbos").main())
