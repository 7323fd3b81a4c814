"""The suffix goes before the first dot. Caught by
``test_the_name_is_read_from_the_drive``."""


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    current = drive.lookup(drive_path, file_id)["name"]
    stem, _, extension = current.partition(".")
    new_name = f"{stem}{suffix}.{extension}"
    return Step(number, "rename", {"file_id": file_id, "name": new_name})
