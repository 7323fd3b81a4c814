"""The rename probe searches by name. Caught by
``test_rename_probe_is_not_fooled_by_a_name_collision``."""


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    everyone = drive.names(drive_path, owner=None)  # every file, by name
    for file_id, name in everyone.items():
        if name == args["name"]:
            return True, {"file_id": file_id, "name": name}
    return False, drive.lookup(drive_path, args["file_id"])
