"""The same agent, its tool behind the adapter: key from the action, intent
first, the probe asked on resume."""

from crashcourse.adapters import EffectTool
from tools import mailed, progress, record, send_mail

tool = EffectTool(send_mail, mailed, journal_path="journal.sqlite",
                  task="order-7", ttl=1.0, wait_s=0.5)
if not progress().get("mailed"):
    tool(body="your order is on its way")
    record({"mailed": True})
