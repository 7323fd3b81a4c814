"""Where PostgreSQL's programs are, and a copy the server's user can run
(chapter 10): the ``pgserver`` wheel's, else Debian's ``postgresql``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

DEBIAN_BINARIES = Path("/usr/lib/postgresql")


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: the pgserver wheel's,
    else the newest Debian package's, else None (chapter 10)."""
    from importlib.util import find_spec

    spec = find_spec("pgserver")  # found, not imported: importing it has effects
    if spec is not None and spec.origin is not None:
        wheel = Path(spec.origin).parent / "pginstall" / "bin"
        if (wheel / "postgres").is_file():
            return wheel
    installed = sorted(DEBIAN_BINARIES.glob("*/bin/postgres"),
                       key=lambda p: int(p.parent.parent.name))
    return installed[-1].parent if installed else None


def reachable(bin_dir: Path) -> Path:
    """The binaries where the unprivileged server user can run them: a venv
    under a 0700 folder (a fresh clone in mktemp -d) is copied, once, to a
    world-readable one beside it in the temp folder (chapter 10)."""
    if all(part.stat().st_mode & 0o001 for part in bin_dir.parents):
        return bin_dir
    import hashlib

    # the wheel's layout, kept: pgserver/pginstall/bin finds its libraries at
    # $ORIGIN/../../../pgserver.libs (auditwheel's RPATH)
    package = bin_dir.parent.parent
    tag = hashlib.sha256(str(bin_dir).encode()).hexdigest()[:12]
    home = Path(tempfile.gettempdir()) / f"crashcourse-pginstall-{tag}"
    partial = home.with_suffix(".partial")
    if not home.is_dir():
        shutil.rmtree(partial, ignore_errors=True)
        for part in (package, package.with_name(package.name + ".libs")):
            if part.is_dir():
                shutil.copytree(part, partial / part.name, symlinks=True)
        partial.chmod(0o755)
        os.replace(partial, home)  # whole or not at all
    return home / package.name / bin_dir.parent.name / bin_dir.name
