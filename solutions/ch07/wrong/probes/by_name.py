"""WRONG ANSWER to exercise 07.1 (chapter 07): the rename probe searches by name.

The mistake: "did the rename happen?" is asked as "is any file called X?".
It answers correctly until someone else files a document under that very
name while the worker is down: then it says "done" for a rename that never
happened, the journal records it, and the invoice keeps its scan name for
good. Caught by ``test_rename_probe_is_not_fooled_by_a_name_collision``.
"""

from __future__ import annotations

from pathlib import Path

from crashcourse.services import drive, mail

ACTIONS = {
    "rename": "make file F be called X on the drive",
    "send_mail": "submit a message to the provider, key in X-Operation-Key",
    "phone_supplier": "read the order aloud to the supplier's answering machine",
}


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID."""
    everyone = drive.names(drive_path, owner=None)  # every file, by name
    for file_id, name in everyone.items():
        if name == args["name"]:
            return True, {"file_id": file_id, "name": name}
    return False, drive.lookup(drive_path, args["file_id"])


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    """Did the provider accept a message whose X-Operation-Key is the step's?

    Every accepted message counts, queued or delivered: not the sent folder."""
    for message in mail.messages(mail_path):  # oldest first
        if message["operation_key"] == operation_key:
            return True, {"message_id": message["message_id"],
                          "status": message["status"]}
    return False, {"message_id": None}


def unverifiable_action() -> str:
    """The answering machine keeps no record we can query: redesign that step."""
    return "phone_supplier"
