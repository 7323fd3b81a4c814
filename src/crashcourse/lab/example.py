"""The running example: the stand-in model and the example data (chapters 06-07).

The book follows one small shop. Its assistant orders flour from a supplier
(chapter 06), then tidies the invoice scans on the shared drive, checks the
drive once more and tells people (chapter 07). What the chapters need to act
that out lives here: a scripted stand-in for the reasoning model, a model that
must never be asked, the flour order, the drive's scans and the restock plan.

Runtime modules never import this one; workers and chapters do.
"""

from __future__ import annotations

from crashcourse.claims.orders import Proposal
from crashcourse.journal.plan import Plan, Step, order_plan

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["FLOUR", "ScriptedModel", "NoNewReasoning", "scan_files",
    "restock_plan"]

FLOUR = Proposal("flour-25kg", 6, 2150)  # six 25 kg sacks at 21.50 each


class ScriptedModel:
    """A stand-in reasoning model that always proposes the same order (chapter 06).

    ``calls`` counts how often it was asked."""

    def __init__(self, proposal: Proposal):
        self.proposal, self.calls = proposal, 0

    def propose(self, prompt: str) -> Proposal:
        """The scripted proposal, whatever the prompt (chapter 06)."""
        self.calls += 1
        return self.proposal


class NoNewReasoning:
    """A model that fails if called: recovery continues from records (chapter 06)."""

    def propose(self, prompt: str) -> Proposal:
        """Refuse: a replacement that asks for a new proposal is wrong (chapter 06)."""
        raise AssertionError("recovery asked the model for a new proposal")


def scan_files(count: int = 40) -> dict[str, str]:
    """The drive as the shop left it: {file_id: name} of the scans (chapter 07)."""
    return {f"f{i:03d}": f"scan-{i:03d}.pdf" for i in range(1, count + 1)}


def restock_plan(renames: int = 40, mails: int = 2) -> Plan:
    """Rename the scans, check the drive, then (last) mail the summaries (chapter 07).

    The gate, ``verify_drive``, checks that the plan still fits the drive:
    every file it renames is there and no other file holds a name it gives.
    ``order_plan`` puts it after the renames and before the mails: by default
    40 renames, the gate (step 41) and two mails (42-43).
    ``run_plan`` checks a gate before its intent; chapter 09's resume checks
    every gate again first."""
    steps = [
        Step(0, "rename", {"file_id": file_id, "name": f"invoice-2026-{i:03d}.pdf"})
        for i, file_id in enumerate(scan_files(renames), start=1)
    ]
    names = {s.args["file_id"]: s.args["name"] for s in steps}
    recipients = ["orders@supplier.example", "owner@shop.example"][:mails]
    steps += [
        Step(0, "send_mail", {"to": to, "subject": "restock invoices filed",
                              "body": f"{renames} invoices renamed"},
             irreversible=True)
        for to in recipients
    ]
    steps.append(Step(0, "verify_drive", {"names": names}, gate=True))
    return order_plan("restock", steps)
