"""The checkpoints' tests. ``script(name)`` loads ``checkpoints/<name>.py`` as
a module, so a test can try its parts without running the experiment."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "checkpoints"


def script(name: str):
    """``checkpoints/<name>.py``, imported (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location(name, FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
