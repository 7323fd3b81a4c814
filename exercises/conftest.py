"""Grading for the exercises: which answers to load, and the stub check.

Tests ask for an answer module with the ``answer`` fixture::

    def test_replay(answer):
        mod = answer("ch01", "apply_checked")

It loads ``exercises/ch01/apply_checked.py`` (the learner's copy) by default, or
``solutions/ch01/apply_checked.py`` when ``CRASHCOURSE_ANSWERS=solutions``.

``pytest exercises --stubs-must-fail`` turns every test into a strict xfail: run
against the untouched stubs, each test must FAIL. A test that a stub passes
asserts nothing, and a stub solved by accident is caught the same way.

``--grade-both`` (what ``make verify`` uses) runs every test twice in one
session: ``[solutions]`` must pass and ``[stubs]`` is a strict xfail against the
untouched ``exercises/`` copy.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHOICES = ("exercises", "solutions")


def answers_dir() -> Path:
    choice = os.environ.get("CRASHCOURSE_ANSWERS", "exercises")
    if choice not in CHOICES:
        raise pytest.UsageError(f"CRASHCOURSE_ANSWERS must be one of {CHOICES}")
    return ROOT / choice


def pytest_addoption(parser):
    parser.addoption(
        "--stubs-must-fail", action="store_true",
        help="every test must fail (run against the untouched stubs)",
    )
    parser.addoption(
        "--grade-both", action="store_true",
        help="run each test on the solutions (must pass) and the stubs (must fail)",
    )


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


@pytest.fixture
def tree() -> Path:
    """The answers to grade: CRASHCOURSE_ANSWERS, or one side of --grade-both."""
    return answers_dir()


@pytest.fixture
def answer(tree):
    """Load an answer module from the selected tree, fresh for each test."""
    directory = {"solutions": ROOT / "solutions", "stubs": ROOT / "exercises"}.get(
        tree, tree)

    def load(chapter: str, module: str):
        path = directory / chapter / f"{module}.py"
        name = f"_answer_{directory.name}_{chapter}_{module}"
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return loaded

    return load
