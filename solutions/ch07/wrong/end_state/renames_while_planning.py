"""Planning does the rename. Caught by ``test_the_step_states_the_whole_new_name``."""


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    current = drive.lookup(drive_path, file_id)["name"]
    stem, dot, extension = current.rpartition(".")
    new_name = f"{stem}{suffix}.{extension}" if dot else f"{current}{suffix}"
    drive.rename_to(drive_path, file_id, new_name)  # done, to be sure
    return Step(number, "rename", {"file_id": file_id, "name": new_name})
