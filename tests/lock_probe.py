"""A write lock's rule, made deterministic (issue 23).

When the code under test reaches the step that must run under the store's
write lock (a clock read, a stamp, a fence read), a spy lets a SECOND
connection try to take that lock and waits, bounded, to see whether it got
in. It never may: the caller holds the lock there. Moved out of its
transaction, the step lets the second writer in at once, every run, with no
race left to luck. No timing is asserted; every wait is bounded.
"""

from __future__ import annotations

import threading

from crashcourse.store import immediate, opened

PROBE_WAIT = 1.0  # seconds: bounded, under a server's 2 s idle-in-transaction cut


def second_writer_got_in(address, monkeypatch, target, name: str, call) -> bool:
    """Run ``call(conn)`` on the store at ``address``; the first time
    ``target.name`` returns inside it, another connection tries to take the
    write lock (for at most ``PROBE_WAIT`` s). Whether it got in."""
    real, got_in, seen, probes = getattr(target, name), threading.Event(), [], []

    def second_writer():
        try:
            with opened(address) as other, immediate(other):
                got_in.set()
        except Exception:  # busy past its timeout: kept out, as it must be
            pass

    def spy(*args, **kwargs):
        answer = real(*args, **kwargs)  # a server's BEGIN goes with this statement
        if not probes:
            probes.append(threading.Thread(target=second_writer, daemon=True))
            probes[0].start()
            seen.append(got_in.wait(PROBE_WAIT))
        return answer

    monkeypatch.setattr(target, name, spy)
    with opened(address) as conn:
        call(conn)
    assert probes, f"{name} was never called"
    probes[0].join(60)
    assert not probes[0].is_alive(), "the second writer is still waiting"
    return seen[0]
