"""The runtime's own probes, called."""


def probe_rename(drive_path: str | Path, args: dict, operation_key: str):
    return drive.probe_rename(drive_path, args["file_id"], args["name"])


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    return mail.probe_sent(mail_path, operation_key)
