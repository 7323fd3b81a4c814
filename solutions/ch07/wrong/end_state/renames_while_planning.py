"""WRONG ANSWER to exercise 07.4 (chapter 07): planning does the rename.

The mistake: to be sure of the new name, the planner renames the file and
returns the step that states it. The step is an end state and safe to apply
twice, but planning now changes the drive before any intent is journaled: a
crash right after planning leaves a renamed file with no journal row to say
so. Caught by ``test_the_step_states_the_whole_new_name``.
"""


def suffix_step(drive_path: str | Path, number: int, file_id: str, suffix: str):
    """Read the name once, at planning time, and state the full new name."""
    current = drive.lookup(drive_path, file_id)["name"]
    stem, dot, extension = current.rpartition(".")
    new_name = f"{stem}{suffix}.{extension}" if dot else f"{current}{suffix}"
    drive.rename_to(drive_path, file_id, new_name)  # done, to be sure
    return Step(number, "rename", {"file_id": file_id, "name": new_name})
