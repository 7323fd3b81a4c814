"""Chapter 10's hosts: what two runs side by side must not share."""

from __future__ import annotations

import fcntl
import os

import pytest

from crashcourse.lab import hosts


def test_a_run_picks_its_subnets_under_the_machine_s_lock(monkeypatch):
    """Two runs at once (a notebook and a test) once picked the same free
    subnet and each one's cut broke the other's connections: the pick and
    the take must be one step, under ``SUBNETS_LOCK``."""
    seen = []

    def free_subnets(count: int) -> list[int]:
        fd = os.open(hosts.SUBNETS_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:  # another open file: refused while the run holds the lock
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append("nobody held it")
        except BlockingIOError:
            seen.append("held")
        finally:
            os.close(fd)
        raise RuntimeError("no namespace made in this test")

    monkeypatch.setattr(hosts, "unavailable", lambda: None)
    monkeypatch.setattr(hosts, "_free_subnets", free_subnets)
    with pytest.raises(RuntimeError, match="no namespace made"):
        hosts.make(("a",), isolate=True)
    assert seen == ["held"]
