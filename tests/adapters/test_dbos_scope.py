"""A DBOS step registered once, before ``DBOS.launch()``, scoped by the
workflow that calls it (``adapters.dbos.workflow_scope``): two workflows
placing the same order send two messages, and a workflow run again under
its own id sends none. Run in a child process: DBOS is one per process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crashcourse.services import mail

WORKER = """
import sys
from dbos import DBOS, SetWorkflowID
from crashcourse.adapters import EffectTool
from crashcourse.adapters.dbos import as_step, workflow_scope
from crashcourse.services import mail

path, book, store, scope = sys.argv[1:5]
DBOS(config={"name": "scope", "log_level": "ERROR",
             "system_database_url": f"sqlite:///{store}"})

def notify(to: str, subject: str, *, operation_key: str) -> dict:
    return mail.submit(path, to, subject, "", {mail.KEY_HEADER: operation_key})

def notified(to, subject, *, operation_key):
    return mail.probe_sent(path, operation_key)

step = as_step(EffectTool(notify, notified, journal_path=book, ttl=2.0, wait_s=1.0,
                          task=workflow_scope if scope == "workflow" else "worker-1"))

@DBOS.workflow()
def order(to: str, subject: str) -> dict:
    return step(to=to, subject=subject)

DBOS.launch()
for workflow in ("order-1", "order-2"):
    with SetWorkflowID(workflow):
        order("owner@shop.example", "flour")
DBOS.destroy()
"""


def run(tmp_path, scope: str, round_: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(tmp_path / "mail.sqlite"),
         str(tmp_path / "effects.sqlite"), str(tmp_path / f"dbos-{round_}.sqlite"),
         scope], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(("scope", "expected"), [("workflow", 2), ("fixed", 1)])
def test_one_step_serves_each_workflow_as_its_own_scope(tmp_path, scope, expected):
    """``fixed`` is the negative control: the scope fixed at construction (what
    the adapter did before) folds two workflows' orders into one message.
    The second round uses a fresh DBOS store, so DBOS's own record cannot
    answer: only the adapter's journal keeps it at one message per workflow."""
    pytest.importorskip("dbos")
    mail.install(str(tmp_path / "mail.sqlite"))
    run(tmp_path, scope, 1)
    run(tmp_path, scope, 2)
    messages = mail.messages(str(tmp_path / "mail.sqlite"))
    assert len(messages) == expected
    scopes = {m["operation_key"].split("/")[0] for m in messages}
    assert scopes == ({"order-1", "order-2"} if scope == "workflow" else {"worker-1"})
