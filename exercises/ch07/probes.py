"""Exercise 07.1: a probe for every action (chapter 07).

A probe answers "did this step's effect happen?" by asking the target system.
It returns ``(done, observed)``: ``done`` is True when the target shows the
step's end state; ``observed`` is what the target shows now (a dict).

The drive and the mail provider are services: call them by their address, the
path of their file. Write the probes without ``drive.probe_rename`` and
``mail.probe_sent`` (the runtime's own answers: the tests unplug them).
"""

from __future__ import annotations

from pathlib import Path

from crashcourse.services import drive, mail  # noqa: F401  (ask them by path)

ACTIONS = {
    "rename": "make file F be called X on the drive",
    "send_mail": "submit a message to the provider, key in X-Operation-Key",
    "phone_supplier": "read the order aloud to the supplier's answering machine",
}


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID.

    ``observed`` is ``{"file_id": ..., "name": <current name>}``. Another file
    carrying the name proves nothing about this one.
    """
    raise NotImplementedError("exercise 07.1: probe the drive by file id")


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    """Did the provider accept a message whose X-Operation-Key is
    ``operation_key``?

    Queued counts: the question is submission, not delivery. ``observed`` is
    ``{"message_id": ..., "status": ...}`` of the first such message, or
    ``{"message_id": None}``. ``mail.messages`` lists what the provider
    accepted, ``mail.sent_folder`` what it delivered.
    """
    raise NotImplementedError("exercise 07.1: search submitted mail by header")


def unverifiable_action() -> str:
    """The key of ``ACTIONS`` whose completion no system can confirm later."""
    raise NotImplementedError("exercise 07.1: name the action to redesign")
