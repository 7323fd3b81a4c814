"""The probe asks about DELIVERY (the key among ``mail.sent_folder``'s messages). Caught
by ``test_killed_after_the_provider_accepted_the_supplier_gets_one_message``."""


def probe(mail_path, key, recipient):
    delivered = [m for m in mail.sent_folder(mail_path) if m["operation_key"] == key]
    return bool(delivered), delivered[0]["message_id"] if delivered else None
