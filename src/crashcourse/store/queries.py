"""SQL kept as named queries, read by name (issue 33).

A query file holds one backend's SQL for one topic (``claims/postgres.sql``).
Each query starts at a header line ``-- name: NAME`` and runs to the next
header; what comes before the first header is the file's own comment. The
text is taken as written (trimmed), never assembled: what the file says is
what the database runs.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["named_queries"]

HEADER = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.M)


def named_queries(path: str | Path) -> dict[str, str]:
    """The queries of ``path`` by name; ``ValueError`` for a name given twice
    or a file with none."""
    text = Path(path).read_text()
    found = HEADER.split(text)[1:]  # name, text, name, text, ...
    names = found[0::2]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"{path}: each query needs one '-- name: NAME' header")
    return {name: body.strip()
            for name, body in zip(names, found[1::2], strict=True)}
