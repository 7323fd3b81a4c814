"""Grading for the exercises: which answers to load, and the stub check.

Tests ask for an answer module with the ``answer`` fixture::

    def test_replay(answer):
        mod = answer("ch01", "apply_checked")

It loads ``exercises/ch01/apply_checked.py`` (the learner's copy, as edited) by
default, or ``solutions/ch01/apply_checked.py`` when
``CRASHCOURSE_ANSWERS=solutions`` (or any folder laid out the same way, given
by its absolute path: how the recorded wrong answers are graded).

``pytest exercises --stubs-must-fail`` turns every test into a strict xfail: run
against the untouched stubs, each test must FAIL. A test that a stub passes
asserts nothing.

``--grade-both`` (what ``make verify`` uses) runs every test twice in one
session: ``[solutions]`` must pass and ``[stubs]`` is a strict xfail.

The stubs those two options grade are the PRISTINE ones, as committed
(``git show HEAD:exercises/...``), never the learner's working copy: solving an
exercise in place must never turn ``make verify`` red. Outside a git checkout
the files on disk are the stubs.

Two fixtures guard what an answer may touch: ``unchanged_file(path)`` fails a
test when an answer told to read a system of record changed anything in it
(schema, pragmas, any row); ``sealed(chapter, module, *rules)`` loads and
calls an answer with rules in force (read nothing under ``solutions/``; start
no process, open no database), checked by an audit hook.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import inspect
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHOICES = ("exercises", "solutions")


def answers_dir() -> Path:
    """``exercises`` (default), ``solutions``, or a folder laid out like them
    (tests/book/test_wrong_answers.py grades recorded wrong answers that way)."""
    choice = os.environ.get("CRASHCOURSE_ANSWERS", "exercises")
    if choice in CHOICES:
        return ROOT / choice
    if Path(choice).is_absolute() and Path(choice).is_dir():
        return Path(choice)
    raise pytest.UsageError(
        f"CRASHCOURSE_ANSWERS must be one of {CHOICES} or a folder's absolute path")


def pytest_addoption(parser):
    parser.addoption(
        "--stubs-must-fail", action="store_true",
        help="every test must fail (run against the untouched stubs)",
    )
    parser.addoption(
        "--grade-both", action="store_true",
        help="run each test on the solutions (must pass) and the stubs (must fail)",
    )
    parser.addoption(
        "--exercise-summary", action="store_true",
        help="end with one line per exercise: how many of its tests pass",
    )


def pytest_configure(config):
    """Grading many answers at once (``--grade-both``, ``--stubs-must-fail``, a
    recorded wrong answer's folder): Hypothesis skips its *explain* phase,
    which re-runs a failing test hundreds of times to say which arguments did
    not matter. It runs only after a test has failed, so no verdict changes;
    the failing example is still shrunk and shown. So does ``make exercise``,
    whose one line per failure (``--tb=no``) would not show the explanation;
    ``make exercise DETAIL=1`` keeps it."""
    answers = os.environ.get("CRASHCOURSE_ANSWERS", "exercises")
    if not (config.getoption("--grade-both") or config.getoption("--stubs-must-fail")
            or answers not in CHOICES or config.getoption("tbstyle") == "no"):
        return
    try:
        from hypothesis import Phase, settings
    except ImportError:
        return
    settings.register_profile("grading", parent=settings.default, phases=tuple(
        phase for phase in settings.default.phases if phase is not Phase.explain))
    settings.load_profile("grading")


def pytest_terminal_summary(terminalreporter, config):
    """One line per exercise (test file), for ``make exercise``, each followed
    by one line per failing test (``why_it_failed``)."""
    if not config.getoption("--exercise-summary"):
        return
    tally: dict[str, list[int]] = {}
    for outcome in ("passed", "failed", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if report.when != "call" and outcome != "error":
                continue
            path = report.nodeid.split("::")[0]
            counts = tally.setdefault(path, [0, 0])
            counts[0] += outcome == "passed"
            counts[1] += 1
    terminalreporter.section("your exercises")
    failing: dict[str, list[str]] = {}
    for outcome in ("failed", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            failing.setdefault(report.nodeid.split("::")[0], []).append(
                why_it_failed(report))
    for path, (passed, total) in sorted(tally.items()):
        name = Path(path).stem.removeprefix("test_")
        verdict = "solved" if passed == total else "not yet"
        terminalreporter.write_line(
            f"{name}: {passed} of {total} tests pass ({verdict})")
        for line in failing.get(path, []):
            terminalreporter.write_line(f"  {line}")
    if failing and config.getoption("tbstyle") == "no":
        terminalreporter.write_line(
            "pytest's own report of each failure: make exercise CH=NN DETAIL=1")


REASON_WIDTH = 200
STUB_RAISED = re.compile(r"NotImplementedError: (exercise \d\d\.\d+\b[^|\n]*)")
EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def why_it_failed(report) -> str:
    """One line for a failing test, for ``make exercise``: the test's name in
    words, then what went wrong (the assertion's own message, the stub's
    NotImplementedError, the exception), where it was raised."""
    test, _, case = report.nodeid.split("::")[-1].partition("[")
    where = ("set-up of " if report.when == "setup" else "") + test.removeprefix(
        "test_").replace("_", " ") + (f" [{case}" if case else "")
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is None:  # a plain string (a skip reason, a collection error)
        text, place = str(report.longrepr), ""
    else:
        text, place = crash.message, f" ({Path(crash.path).name}:{crash.lineno})"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else "failed"
    if first.endswith("Traceback (most recent call last):"):
        # a child process's traceback in the message: its last words
        raised = next((line for line in lines[1:] if EXCEPTION_LINE.match(line)), "")
        first = first.removesuffix("Traceback (most recent call last):") + raised
    kind, _, said = first.partition(": ")
    stub = STUB_RAISED.search(text)  # a stub's, even in a child's stderr
    if stub:
        first = f"not written yet ({stub.group(1).strip()})"
    elif kind == "AssertionError" and said:
        first = said  # the grader's own words
        # pytest's rewritten assert (``assert [True, True] == [False, True]``)
        # says what was compared: keep it on the same line
        first += next((f" / {line}" for line in lines[1:3]
                       if line.startswith("assert ")), "")
    elif first.startswith("AssertionError"):
        first = next((line for line in lines[1:] if line.startswith("assert ")),
                     "an assertion failed")
    if len(first) > REASON_WIDTH:
        first = first[:REASON_WIDTH - 3] + "..."
    return f"FAILED {where}: {first}{place}"


def pytest_generate_tests(metafunc):
    if metafunc.config.getoption("--grade-both") and "tree" in metafunc.fixturenames:
        metafunc.parametrize("tree", ["solutions", "stubs"])


def pytest_collection_modifyitems(config, items):
    must_fail = pytest.mark.xfail(strict=True, reason="stub must fail")
    if config.getoption("--grade-both"):
        for item in items:
            if getattr(item, "callspec", None) and item.callspec.params.get(
                    "tree") == "stubs":
                item.add_marker(must_fail)
        return
    if not config.getoption("--stubs-must-fail"):
        return
    if answers_dir().name != "exercises":
        raise pytest.UsageError("--stubs-must-fail grades exercises/, not solutions/")
    for item in items:
        if item.path.is_relative_to(ROOT / "exercises"):
            item.add_marker(must_fail)


def committed(relative: str) -> str | None:
    """The text of ``relative`` as committed at HEAD, or None outside git."""
    try:
        shown = subprocess.run(["git", "show", f"HEAD:{relative}"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shown.stdout if shown.returncode == 0 else None


@pytest.fixture(scope="session")
def pristine_stubs(tmp_path_factory) -> Path:
    """A folder of the stubs as committed, whatever the learner did to theirs."""
    folder = tmp_path_factory.mktemp("pristine-stubs")
    for stub in sorted((ROOT / "exercises").glob("ch[0-9][0-9]/*.py")):
        if stub.name.startswith(("test_", "conftest")):
            continue
        relative = stub.relative_to(ROOT).as_posix()
        text = committed(relative)
        target = folder / stub.parent.name / stub.name
        target.parent.mkdir(exist_ok=True)
        target.write_text(stub.read_text() if text is None else text)
    return folder


MEASURED_ONCE_ENV = "CRASHCOURSE_MEASURED_ONCE"


def source_key(*files: Path) -> str:
    """A hash of the runtime's source and ``files``: a measurement made by other
    code is never reused."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "src" / "crashcourse").rglob("*.py")) + list(files):
        digest.update(path.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def measured_once(tmp_path_factory, worker_id):
    """``measured_once(name, measure)`` → ``measure()``, a JSON value that does
    not depend on the answer graded (chapter 12's real kills), measured once
    per test session and reused: by the other xdist worker, and by the wrong
    answers' grading runs, which tests/book/test_wrong_answers.py points at
    the session's folder with CRASHCOURSE_MEASURED_ONCE. The folder is the
    session's own temporary one, and the file name carries a hash of the
    runtime's source and of the file defining ``measure``: nothing outlives the
    session or survives a change to the code that measured it. What is compared
    with the measurement, and how, stays in each test."""
    given = os.environ.get(MEASURED_ONCE_ENV)
    if given:
        folder = Path(given)
    else:
        base = tmp_path_factory.getbasetemp()
        folder = (base if worker_id == "master" else base.parent) / "measured-once"
        folder.mkdir(exist_ok=True)

    def once(name: str, measure):
        key = source_key(Path(inspect.getsourcefile(measure)))
        record = folder / f"{name}-{key}.json"
        with open(folder / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the others wait, then read
            if not record.exists():  # written only once measured in full
                value = measure()
                partial = record.with_suffix(".partial")
                partial.write_text(json.dumps(value))
                partial.replace(record)
        return json.loads(record.read_text())

    return once


@pytest.fixture
def tree() -> Path:
    """The answers to grade: CRASHCOURSE_ANSWERS, or one side of --grade-both."""
    return answers_dir()


@pytest.fixture
def answer(tree, request):
    """Load an answer module from the selected tree, fresh for each test."""
    stubs = tree == "stubs" or request.config.getoption("--stubs-must-fail")
    if stubs:
        directory = request.getfixturevalue("pristine_stubs")
    else:
        directory = {"solutions": ROOT / "solutions"}.get(tree, tree)

    def load(chapter: str, module: str):
        path = directory / chapter / f"{module}.py"
        name = f"_answer_{directory.name}_{chapter}_{module}"
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        # registered before it runs, as an import would: a dataclass in an
        # answer looks its module up in sys.modules while it is being made
        sys.modules[name] = loaded
        # an answer graded from anywhere but solutions/ loads nothing from it
        reference = directory.resolve() == (ROOT / "solutions").resolve()
        try:
            with contextlib.nullcontext() if reference else seal(("solutions",)):
                spec.loader.exec_module(loaded)
        finally:
            sys.modules.pop(name, None)  # fresh for each test, never cached
        return loaded

    return load


_connect = sqlite3.connect


def whole_file(path) -> dict:
    """Everything a SQLite file holds that an answer could change: its schema
    (every table, index, view and trigger, as ``sqlite_master`` keeps their
    SQL), its user_version and application_id, and every row of every table,
    ``sqlite_sequence`` included. Two equal results: the file says the same.
    (A TEMP view or table lives in the connection, never in the file.)"""
    conn = _connect(path)  # sqlite3's own, whatever a test patches later
    try:
        schema = sorted(conn.execute(
            "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master"))
        tables = [name for kind, name, _, _ in schema if kind == "table"]
        return {
            "schema": schema,
            "pragmas": [conn.execute(f"PRAGMA {name}").fetchone()[0]
                        for name in ("user_version", "application_id")],
            "rows": {table: sorted(map(repr, conn.execute(
                f'SELECT * FROM "{table.replace(chr(34), chr(34) * 2)}"')))
                for table in tables},
        }
    finally:
        conn.close()


@pytest.fixture
def unchanged_file():
    """``unchanged_file(path)``: a context manager that fails the test when
    the file says anything else at its end than at its start
    (``whole_file``). For an answer told to read a system of record only."""
    from contextlib import contextmanager

    @contextmanager
    def watch(path):
        before = whole_file(path)
        yield
        after = whole_file(path)
        changed = sorted(part for part in before if before[part] != after[part])
        assert not changed, (
            f"the answer changed {Path(path).name}, which it may only read: its "
            f"{' and '.join(changed)} differ")

    return watch


# --- sealed answers: a prediction is the reader's, not a run or a copy -----

# What an answer may not do while sealed: read the reference answers, or run
# the experiment it is asked to predict (start a process or a thread, open a
# database, open a file under the session's temporary folders, where the
# experiments run and what they measured is kept).
SEALED_EVENTS = {
    "experiment": ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
                   "os.spawn", "os.fork", "os.forkpty", "pty.spawn",
                   "sqlite3.connect", "_thread.start_new_thread"),
}
_seal: dict = {"rules": (), "exempt": (), "seen": [], "outcomes": ()}


def _under_solutions(path) -> Path | None:
    """``path`` resolved, if it lies in this checkout's ``solutions/``."""
    if not isinstance(path, str | bytes | os.PathLike):
        return None  # a file descriptor
    try:
        resolved = Path(os.fsdecode(path)).resolve()
    except (OSError, ValueError):
        return None
    return resolved if resolved.is_relative_to(ROOT / "solutions") else None


def _under(path, roots) -> Path | None:
    """``path`` resolved, if it lies under one of ``roots``."""
    if not roots or not isinstance(path, str | bytes | os.PathLike):
        return None  # a file descriptor
    try:
        resolved = Path(os.fsdecode(path)).resolve()
    except (OSError, ValueError):
        return None
    return resolved if any(resolved.is_relative_to(r) for r in roots) else None


def _exempt(found: Path) -> bool:
    """The graded module itself (and its compiled copy) may be read."""
    return found in _seal["exempt"] or (
        found.parent.name == "__pycache__"
        and found.parent.parent in {p.parent for p in _seal["exempt"]})


def _audit(event: str, args: tuple) -> None:
    rules = _seal["rules"]
    if not rules:
        return
    if event == "open" and "experiment" in rules:
        found = _under(args[0], _seal["outcomes"])
        if found is not None and not _exempt(found):
            _seal["seen"].append(f"opened {found}")
            raise PermissionError(f"{found}: a prediction reads no experiment's "
                                  "files")
    if event == "open" and "solutions" in rules:
        found = _under_solutions(args[0])
        if found is not None and not _exempt(found):
            _seal["seen"].append(f"opened {found.relative_to(ROOT)}")
            raise PermissionError(f"{found.relative_to(ROOT)}: the reference "
                                  "answers are not an answer")
    for rule in rules:
        if event in SEALED_EVENTS.get(rule, ()):
            _seal["seen"].append(f"{event} {args[:1]!r}")
            raise PermissionError(f"{event}: a prediction runs nothing")


sys.addaudithook(_audit)


@contextlib.contextmanager
def seal(rules: tuple[str, ...], exempt: tuple[Path, ...] = ()):
    """``rules`` in force for the block (with any an enclosing seal set);
    then fail if the answer broke one, whatever it did with the refusal."""
    outer = (_seal["rules"], _seal["exempt"], _seal["seen"])
    rules = tuple(dict.fromkeys((*outer[0], *rules)))
    _seal.update(rules=rules, exempt=(*outer[1], *exempt), seen=[])
    try:
        yield
    finally:
        seen = _seal["seen"]
        _seal.update(rules=outer[0], exempt=outer[1], seen=outer[2])
        outer[2].extend(seen)  # the enclosing seal fails too
        assert not seen, f"the answer, sealed ({', '.join(rules)}): {seen[0]}"


PLAIN = (dict, list, tuple, set, frozenset, str, int, float, bool, type(None))


def recorded(value):
    """``value`` copied as it is now, plain data only: what a sealed call
    returned is recorded when it returns, and nothing the answer does later
    (mutating what it returned, an object that computes itself when compared)
    changes it."""
    kind = type(value)
    assert kind in PLAIN, (
        f"a prediction is plain data (dict, list, tuple, set, str, int, float,"
        f" bool, None), recorded when made: not a {kind.__qualname__}")
    if kind is dict:
        return {recorded(k): recorded(v) for k, v in value.items()}
    if kind in (list, tuple, set, frozenset):
        return kind(recorded(item) for item in value)
    return value


@pytest.fixture(scope="session")
def outcome_folders(tmp_path_factory, worker_id) -> tuple[Path, ...]:
    """Where this session's experiments run and keep what they measured: its
    temporary folder (all xdist workers'), and the measured-once folder."""
    base = tmp_path_factory.getbasetemp()
    folders = [(base if worker_id == "master" else base.parent).resolve()]
    if given := os.environ.get(MEASURED_ONCE_ENV):
        folders.append(Path(given).resolve())
    return tuple(folders)


@pytest.fixture
def sealed(tree, request, outcome_folders):
    """``sealed(chapter, module, *rules)``: the answer module loaded, and each
    of its functions called, with ``rules`` in force; a test using it fails if
    the answer broke one, whatever it did with the refusal. Rules:
    ``"solutions"``: open no file under ``solutions/`` (but the graded module
    itself, when the reference is graded); ``"experiment"``: start no process
    or thread, open no database and no file under the session's temporary
    folders (a prediction is made, not measured). What each call returns is
    ``recorded`` (copied, plain data) as it returns: a test calls the answer
    BEFORE it runs the experiment, and compares the record with the outcome."""
    import types

    load = request.getfixturevalue("answer")
    stubs = tree == "stubs" or request.config.getoption("--stubs-must-fail")
    directory = request.getfixturevalue("pristine_stubs") if stubs else Path(
        {"solutions": ROOT / "solutions"}.get(tree, tree))
    _seal["outcomes"] = outcome_folders

    def sealed_module(chapter, module, *rules, lifted=None):
        """``lifted``: {function name: the rules not in force for it} (a
        function that is to read a file, say)."""
        own = ((directory / chapter / f"{module}.py").resolve(),)
        everything = tuple(dict.fromkeys(("solutions", *rules)))
        with seal(everything, exempt=own):  # its module-level code too
            loaded = load(chapter, module)
        wrapped = types.SimpleNamespace(__file__=loaded.__file__)
        for name, value in vars(loaded).items():
            if callable(value) and getattr(value, "__module__", None) == (
                    loaded.__name__):
                kept = tuple(rule for rule in everything
                             if rule not in (lifted or {}).get(name, ()))

                def call(*args, _value=value, _rules=kept, **kwargs):
                    with seal(_rules):
                        return recorded(_value(*args, **kwargs))
                setattr(wrapped, name, call)
            elif not name.startswith("__"):
                setattr(wrapped, name, value)
        return wrapped

    return sealed_module
