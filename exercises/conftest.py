"""Grading for the exercises: which answers to load, and the stub check.

Tests ask for an answer module with the ``answer`` fixture::

    def test_replay(answer):
        mod = answer("ch01", "apply_checked")

It loads ``exercises/ch01/apply_checked.py`` (the learner's copy) by default, or
``solutions/ch01/apply_checked.py`` when ``CRASHCOURSE_ANSWERS=solutions``.

``pytest exercises --stubs-must-fail`` turns every test into a strict xfail: run
against the untouched stubs, each test must FAIL. A test that a stub passes
asserts nothing, and a stub solved by accident is caught the same way.
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


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--stubs-must-fail"):
        return
    if answers_dir().name != "exercises":
        raise pytest.UsageError("--stubs-must-fail grades exercises/, not solutions/")
    for item in items:
        item.add_marker(pytest.mark.xfail(strict=True, reason="stub must fail"))


@pytest.fixture
def answer():
    """Load an answer module from the selected tree, fresh for each test."""

    def load(chapter: str, module: str):
        path = answers_dir() / chapter / f"{module}.py"
        name = f"_answer_{answers_dir().name}_{chapter}_{module}"
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return loaded

    return load
