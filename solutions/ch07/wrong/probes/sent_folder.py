"""The mail probe reads the sent folder. Caught by
``test_mail_probe_finds_a_queued_message_by_its_header``."""


def probe_mail(mail_path: str | Path, args: dict, operation_key: str):
    for message in mail.sent_folder(mail_path):  # what has gone out
        if message["operation_key"] == operation_key:
            return True, {"message_id": message["message_id"],
                          "status": message["status"]}
    return False, {"message_id": None}
