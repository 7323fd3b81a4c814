"""Without psycopg, a postgresql:// store is one line naming the extra."""

import subprocess
import sys

PROGRAM = """
import sys
sys.modules["psycopg"] = None  # as if the postgres extra were not installed
from crashcourse import store
try:
    store.connect("postgresql://nobody@127.0.0.1:1/none")
except ModuleNotFoundError as missing:
    print(missing)
"""


def test_a_server_store_without_psycopg_names_the_extra():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "postgres extra" in done.stdout and "psycopg" in done.stdout
