"""The runtime's own probes, called."""


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    """Is file ``args["file_id"]`` called ``args["name"]``? Look it up BY ID."""
    return drive.probe_rename(drive_path, args["file_id"], args["name"])


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    """Did the provider accept a message whose X-Operation-Key is the step's?

    Every accepted message counts, queued or delivered: not the sent folder."""
    return mail.probe_sent(mail_path, operation_key)
