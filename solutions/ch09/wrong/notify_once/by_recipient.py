"""The probe asks "has the supplier been sent a message?", not "is there one under THIS
notice's key?". Caught by ``test_a_second_invoice_gets_its_own_notice``."""


def probe(mail_path, key, recipient):
    theirs = [m for m in mail.messages(mail_path) if m["recipient"] == recipient]
    return bool(theirs), theirs[-1]["message_id"] if theirs else None
