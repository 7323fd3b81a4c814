"""WRONG ANSWER to exercise 09.2: the probe asks "has the supplier been sent a
message?", not "is there one under THIS notice's key?". Once the supplier
holds the notice for an earlier invoice, the next one's probe finds it and
the second notice never goes out: a key names one notice, a recipient many.
Caught by ``test_a_second_invoice_gets_its_own_notice``.
"""


def probe(mail_path, key, recipient):
    theirs = [m for m in mail.messages(mail_path) if m["recipient"] == recipient]
    return bool(theirs), theirs[-1]["message_id"] if theirs else None
