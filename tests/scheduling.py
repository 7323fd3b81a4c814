"""How `make check` shares its tests between its xdist workers.

`make check` runs tests, notebooks and graders in one session with ``-n 6
--dist loadscope --no-loadscope-reorder``; tests/conftest.py refines the
scopes with these hooks. A notebook's cells share one kernel: they go to one
worker, in order. So do the tests of a file with a module-scoped fixture (set
up once per scope), one scope per value where that fixture is parametrized.
Every other test is a scope of its own, so every worker stays busy until the
end. What takes longest is started first, or the session waits for it at the
end: ``RUN_FIRST``.

The workers collect; the controller schedules. Each worker writes the scope of
every test id to a file the controller named (``GROUPS_ENV``); the controller's
scheduler reads it once all have collected. (pytest-xdist's own
``xdist_group`` marks would carry this, but xdist 3.8 writes the group into a
node id field pytest 9.2 no longer reads: pytest-xdist#1386.) Without the
file, or without this conftest (``pytest book`` alone), a scope is a file, as
plain ``loadscope`` has it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GROUPS_ENV = "CRASHCOURSE_XDIST_SCOPES"

# The scopes and tests matching these (fnmatch on test ids) run first, in this
# order, then everything else as collected. Known from --durations (tens of
# seconds each); a stale entry costs time, never a result.
RUN_FIRST = (
    "tests/checkpoints/test_ch07_random_kill_campaign.py::test_correct_probe*",
    # each checkpoint's quick run, shared with the chapter's own checkpoint
    # tests, which come later and find it made
    "tests/checkpoints/test_quick.py::*[[]ch08_*",
    "tests/checkpoints/test_quick.py::*[[]ch12_*",
    "tests/checkpoints/test_quick.py::*[[]ch09_*",
    "tests/checkpoints/test_quick.py::*[[]ch10_*",
    "tests/checkpoints/test_quick.py::*[[]ch06_*",
    "tests/checkpoints/test_quick.py::*[[]ch07_*",
    "tests/checkpoints/test_quick.py::*",
    # Restate's and the OpenAI Agents SDK's kills (a checkpoint run each)
    "tests/checkpoints/test_ch12_more_frameworks.py::test_*_resumed_*",
    # chapter 12's real kills, measured once for the session (measured_once):
    # the solutions' run makes them; the wrong answers' runs, later, reuse them
    # (one of those started now would wait for the same lock)
    "exercises/ch12/test_ch12_predict.py::*[[]solutions[]]",
    "book/08_*", "book/07_*", "book/10_*", "book/09_*", "book/12_*", "book/06_*",
    "book/11_*",
    "tests/book/test_wrong_answers.py::*[[]ch11/*",
    "tests/book/test_wrong_answers.py::*[[]ch09/*",
    "exercises/ch11/test_ch11_one_fsync.py::*",
    "exercises/ch08/test_ch08_predict.py::*",
    "tests/book/test_exercises.py::*",
)


def scope_of(item) -> str:
    """The scope ``item`` is scheduled in: its notebook, its file (and the
    value of a parametrized module-scoped fixture), or its own id."""
    path = item.path.relative_to(ROOT).as_posix()
    if item.path.suffix == ".ipynb":
        return path
    shared = [d for defs in item._fixtureinfo.name2fixturedefs.values()
              for d in defs if d.scope in ("module", "class", "package")]
    if not shared:
        return item.nodeid
    spec = getattr(item, "callspec", None)
    by_value = [f"{d.argname}={spec.indices[d.argname]}" for d in shared
                if d.params is not None and spec and d.argname in spec.indices]
    return "::".join([path, *by_value])


FOLDER = pytest.StashKey[str]()


def pytest_configure(config):
    """In the controller of a ``loadscope`` run: name the scopes' file."""
    if (hasattr(config, "workerinput") or not config.getoption("numprocesses", None)
            or config.getoption("dist", "no") != "loadscope"):
        return
    folder = tempfile.mkdtemp(prefix="crashcourse-scopes-")
    config.stash[FOLDER] = folder
    os.environ[GROUPS_ENV] = os.path.join(folder, "scopes.json")  # workers inherit


def pytest_unconfigure(config):
    folder = config.stash.get(FOLDER, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(GROUPS_ENV, None)


@pytest.hookimpl(trylast=True)  # after every other reordering
def pytest_collection_modifyitems(config, items):
    """In a worker: the longest first, each scope in its collected order; the
    scopes written for the controller."""
    target = os.environ.get(GROUPS_ENV)
    if not target or not hasattr(config, "workerinput"):
        return
    rank, scopes = {}, {}
    for item in items:
        scope = scopes[item.nodeid] = scope_of(item)
        mine = next((n for n, pattern in enumerate(RUN_FIRST)
                     if fnmatch.fnmatchcase(item.nodeid, pattern)), len(RUN_FIRST))
        rank[scope] = min(rank.get(scope, mine), mine)
    items.sort(key=lambda item: rank[scopes[item.nodeid]])  # stable
    written = Path(f"{target}.{config.workerinput['workerid']}")
    written.write_text(json.dumps(scopes))
    written.replace(target)  # whole, whichever worker is last: they agree


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist", "no") != "loadscope" or GROUPS_ENV not in os.environ:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scopes(LoadScopeScheduling):
        """loadscope, with the scopes the workers wrote."""

        scopes: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.scopes is None:
                try:
                    self.scopes = json.loads(Path(os.environ[GROUPS_ENV]).read_text())
                except (OSError, ValueError):  # plain loadscope: by file
                    self.scopes = {}
            return self.scopes.get(nodeid) or super()._split_scope(nodeid)

    return Scopes(config, log)
