"""Where chapter 12's ``paused_before_mail`` freezes a worker behind the
adapter: after the journal admitted the call, so a late mail can leave.

The matrix freezes the Temporal worker at ``before_request:send_confirmation``,
the shop's own mark inside the tool's body. Behind ``EffectTool`` the body
runs only once chapter 07's journal has committed the intent and ADMITTED the
call (``step-1:admitted``, the last check before the send), so that freeze is
inside the residual window: a holder thawed there sends, whatever its
successor did (run 9e4425c saw it once, 5d09dc2 not: whether the thawed
Temporal worker gets to send is a race of its own). Frozen one mark earlier,
before the admission (``step-1:after_intent``), the same holder is refused
and sends nothing.

Each pair below runs the shop's real ``send_confirmation`` and the real mail
provider: one call is held (a thread blocked at the mark, released by an
event, as SIGSTOP and SIGCONT hold a process), a second owner, as the
server's retry would, waits the first one's lease out, probes, finds nothing
and mails; then the first is released. The messages are counted at the
provider.
"""

from __future__ import annotations

import threading

import pytest

from crashcourse.boundary import observing
from crashcourse.claims.fence import StaleClaim
from crashcourse.services import mail
from crashcourse.workers.frameworks.shop import SCRIPT, ShopTools, build_world

FREEZE = "before_request:send_confirmation"  # the matrix's paused_before_mail
MAIL = dict(SCRIPT[2][1])
LEASE_S, WAIT_S = 0.6, 0.2


def tool(world, owner: str):
    shop = ShopTools(world, wait_s=WAIT_S)
    effect = shop.guarded(ttl=LEASE_S)["send_confirmation"]
    effect.owner = owner
    return effect


@pytest.fixture
def world(tmp_path):
    return build_world(tmp_path / "world", "http://127.0.0.1:9", "t0001-000000")


def test_the_freeze_mark_comes_after_the_admission(world):
    passed: list[str] = []
    with observing(passed.append):
        tool(world, "first")(**MAIL)
    assert passed.index("step-1:after_intent") < passed.index("step-1:admitted") \
        < passed.index(FREEZE) < passed.index("step-1:after_action"), passed


def held_then_replaced(world, mark: str) -> tuple[int, int, BaseException | None]:
    """Hold the first call at ``mark``; let a second owner finish the call;
    release the first. (messages before the release, after it, and what the
    first call raised)."""
    held, release = threading.Event(), threading.Event()
    outcome: dict = {}

    def run() -> None:
        try:
            tool(world, "frozen")(**MAIL)
        except BaseException as error:  # noqa: BLE001 - what it raised is the finding
            outcome["raised"] = error

    frozen = threading.Thread(target=run)

    def observe(name: str) -> None:  # only the first call's thread is held
        if name == mark and threading.current_thread() is frozen:
            held.set()
            assert release.wait(60), "never released"

    with observing(observe):
        frozen.start()
        assert held.wait(60), f"the first call never reached {mark}"
        tool(world, "replacement")(**MAIL)  # waits the lease out, probes, mails
        before = len(mail.messages(world.mail))
        release.set()
        frozen.join(60)
    assert not frozen.is_alive()
    return before, len(mail.messages(world.mail)), outcome.get("raised")


def test_held_after_the_admission_the_late_mail_leaves(world):
    before, after, raised = held_then_replaced(world, FREEZE)
    assert before == 1, "the replacement mailed once"
    assert after == 2, "released past the admission, the first call mails too"
    assert isinstance(raised, StaleClaim)  # its outcome is refused, not its send


def test_held_before_the_admission_the_first_call_is_refused(world):
    before, after, raised = held_then_replaced(world, "step-1:after_intent")
    assert (before, after) == (1, 1), "refused at the admission: nothing sent"
    assert isinstance(raised, StaleClaim)
