"""WRONG ANSWER to exercise 07.1 (chapter 07): the runtime's own probes, called.

The mistake is not in what it answers: it delegates to ``drive.probe_rename``
and ``mail.probe_sent``, which the exercise asks you to write yourself. The
tests unplug the runtime's probes while they run (the fixture
``runtime_probes_are_off_limits``), so every probe test fails.
"""


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID."""
    return drive.probe_rename(drive_path, args["file_id"], args["name"])


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    """Did the provider accept a message whose X-Operation-Key is the step's?

    Every accepted message counts, queued or delivered: not the sent folder."""
    return mail.probe_sent(mail_path, operation_key)
