"""Exercise 07.4: from a delta to an end state (chapter 07)."""

from __future__ import annotations

from pathlib import Path

from crashcourse.plan import Step  # noqa: F401  (return one)
from crashcourse.services import drive  # noqa: F401  (drive.lookup, by path)


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    """A ``rename`` Step that adds ``suffix`` before the extension, stated as
    the end state: ``{"file_id": ..., "name": <the full new name>}``.

    ``drive_path`` is the drive's address (the path of its file).
    ``scan-001.pdf`` with ``-signed`` becomes ``scan-001-signed.pdf``.
    """
    raise NotImplementedError("exercise 07.4: compute the name once")
