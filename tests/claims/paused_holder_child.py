"""A holder that writes one fenced transcript row (``fence.observe``) or one
journal intent, for tests/claims/test_paused_holder.py: run with the
boundary ``fenced:<action>`` it holds INSIDE the write transaction, where the
parent freezes it (SIGSTOP) until its lease is over.

usage: paused_holder_child.py DB CLAIM_JSON fence|journal new|old

``old`` replaces the commit-time check with nothing: the behaviour before
issue 29, the negative control. Exit 0: the write committed; 5: refused.
"""

import json
import sys

from crashcourse.claims import Claim, fence
from crashcourse.store import opened

db, given, kind, mode = sys.argv[1:]
if mode == "old":  # the negative control: no check at commit
    fence.lease_held_at_commit = lambda *args, **kwargs: None
with opened(db) as conn:
    claim = Claim(**json.loads(given))
    try:
        if kind == "fence":
            fence.observe(conn, claim, {"kind": "late"})
        else:
            task = claim.session
            with fence.fenced(conn, claim, "intent", record=True):
                conn.execute(
                    "INSERT INTO journal (task, step, operation_key, action, args,"
                    " before_state, generation) VALUES (:task, 1, 'k', 'rename',"
                    " '{}', '{}', :generation)",
                    {"task": task, "generation": claim.generation})
    except fence.StaleClaim as refused:
        print(refused.reason)
        sys.exit(5)
print("committed")
