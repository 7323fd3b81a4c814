"""The agent as first written: mail, then remember that it mailed."""

import os

from tools import progress, record, send_mail

if not progress().get("mailed"):
    send_mail("your order is on its way", operation_key="k-" + os.urandom(4).hex())
    record({"mailed": True})
