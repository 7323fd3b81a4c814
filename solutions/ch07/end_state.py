"""Exercise 07.4, answered: from a delta to an end state (chapter 07)."""

from __future__ import annotations

from pathlib import Path

from crashcourse.journal.plan import Step
from crashcourse.services import drive


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    """Read the name once, at planning time, and state the full new name."""
    current = drive.lookup(drive_path, file_id)["name"]
    stem, dot, extension = current.rpartition(".")
    new_name = f"{stem}{suffix}.{extension}" if dot else f"{current}{suffix}"
    return Step(number, "rename", {"file_id": file_id, "name": new_name})
