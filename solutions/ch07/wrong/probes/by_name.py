"""WRONG ANSWER to exercise 07.1 (chapter 07): the rename probe searches by name.

The mistake: "did the rename happen?" is asked as "is any file called X?".
It answers correctly until someone else files a document under that very
name while the worker is down: then it says "done" for a rename that never
happened, the journal records it, and the invoice keeps its scan name for
good. Caught by ``test_rename_probe_is_not_fooled_by_a_name_collision``.
"""


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID."""
    everyone = drive.names(drive_path, owner=None)  # every file, by name
    for file_id, name in everyone.items():
        if name == args["name"]:
            return True, {"file_id": file_id, "name": name}
    return False, drive.lookup(drive_path, args["file_id"])
