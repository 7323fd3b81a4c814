"""The claim on a PostgreSQL server: ``claims``' rules with many claimers at
once (chapter 10).

On SQLite one writer at a time decides a claim (``BEGIN IMMEDIATE``), so the
chapter 05 rules hold by taking turns. On a server the claimers of several
hosts run side by side, each under the store's lock SHARED (an operator's
cancel or pause still takes it EXCLUSIVE, and waits for them). What keeps the
rules there:

* the pick is ``claims.PICK`` itself, with the few words that differ on a
  server put in (``POSTGRES``): it locks the row it picks ``FOR UPDATE SKIP
  LOCKED``, so two claimers never take one turn and neither waits for a row
  the other holds (a claimer still waits for the store's lock while an
  operator's write holds it EXCLUSIVE, and may find nothing while the only
  eligible row is locked by a transaction that then rolls back);
* a turn waits for its session's turns before it that the pass would take
  (``FIRST``): a claimer that finds one of them locked by another claimer
  never skips on to the next turn of that session;
* one live holder per session: the ONE picked row's session is taken with
  ``pg_try_advisory_xact_lock`` (busy: another claimer is deciding that
  session; pass it, never wait), and the grant reads the rule again, in a
  snapshot taken after that lock (``GRANT``);
* leases are read by the DATABASE's clock (``clock_timestamp()``, after the
  lock, as ``store.now`` reads it), so a worker's own clock changes nothing;
  a lease starts at its grant;
* the pick stays small and is planned once per connection: queued turns down
  one index; held turns whose lease ran out only when a probe of another
  index finds one; a named pass (``work_id``, ``among``) looks at those
  turns alone. (No psycopg here: the connection, ``pgstore``, brings it.)
"""

from __future__ import annotations

from functools import lru_cache

from crashcourse import claims, control
from crashcourse.claims import OPEN, READY, RUNNING, Claim
from crashcourse.store import immediate, sql_list
from crashcourse.validate import clock

# claims.PICK's words that only SQLite understands (its rowid, the walk's
# candidates, optional filters written as ":x IS NULL OR") ...
SQLITE = {
    "looks": "-- where this claim looks: the turns the walk found (crashcourse.turns)"
             "\n        item.rowid IN (SELECT value FROM json_each(:candidates))",
    "work_id": "\n    AND (:work_id IS NULL OR item.id = :work_id)",
    "control_only": "\n    AND (:control_only = 0 OR item.control = 1)",
    "rule": "AND other.expires > :now)",
    "order": "-- operator control work first, then the oldest",
    "tie_break": "item.rowid ASC",
    "limit": "LIMIT 1\n",
}
# ... and what a server reads in their place: where a pass looks, a filter
# only when it applies, the claim order's last tie-break (seq: the order rows
# were queued in), and the row lock.
POSTGRES = {
    "queued": "-- where this claim looks: queued turns (work_queued_in_order)"
              f"\n        item.status = '{READY}'",
    "lapsed": "-- where this claim looks: held turns whose lease ran out"
              f"\n        item.status = '{RUNNING}' AND item.expires <= :now",
    "work_id": "-- where this claim looks: the named work\n        item.id = :work_id",
    "among": "-- where this claim looks: the work the pass names"
             "\n        item.id IN ({among})",
    "passed": "\n    AND item.session <> ALL (:passed)  -- sessions this claim passed",
    "control_only": "\n    AND item.control = 1",
    # OFFSET 0 keeps the session rule a lookup per row read, down
    # work_in_session: joined instead, a plan made while nothing was held
    # reads every live lease for every claim, once there are thousands
    "rule": "AND other.expires > :now\n        OFFSET 0)",
    "order": "{first}-- operator control work first, then the oldest",
    "tie_break": "item.seq ASC",
    "limit": "LIMIT 1\nFOR UPDATE OF item SKIP LOCKED\n",
}
# A turn must be the FIRST of its session's turns this pass would take
# ({rules}: the pass's own but the session rule, which the turn just passed).
# Without it a claimer skips a turn another claimer has locked and takes the
# next one of that session: a conversation out of order. The inner query
# reads the session's turns in claim order down work_in_session and stops at
# the first the rules admit (OFFSET 0: no rule is pushed in, no index added).
FIRST = """    -- a turn waits for its session's turns before it that this pass takes
    AND item.id = (
        SELECT earlier.id FROM (
            SELECT * FROM work AS turn
            WHERE turn.session = item.session
              AND {looks}
            ORDER BY turn.control DESC, turn.created, turn.seq
            OFFSET 0) AS earlier
        WHERE true
        {rules}
        LIMIT 1)
"""
# What the shared claims.SCHEMA lacks on a server: seq (SQLite's rowid), the
# indexes the picks go down (the session rule goes down work_in_session), and
# the trigger that keeps assignments fixed (a function of its own here). The
# indexes hold every row, not only the queued or held ones: a plan is made
# once per connection and kept, and a partial index still empty when it was
# made looks free to read whole for any question about held work.
SCHEMA = """
ALTER TABLE work ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE;
CREATE INDEX work_queued_in_order ON work (role, status, control DESC, created, seq);
CREATE INDEX work_held_by_lease ON work (role, status, expires)
"""
FIXED_ASSIGNMENT = (
    """CREATE FUNCTION work_assignment_is_fixed() RETURNS trigger
    LANGUAGE plpgsql AS $$ BEGIN
        RAISE EXCEPTION 'assignment fields are immutable'
            USING ERRCODE = 'integrity_constraint_violation';
    END $$""",
    f"""CREATE TRIGGER work_assignment_is_fixed
    BEFORE UPDATE OF {", ".join(("id", "origin", *claims.ASSIGNMENT))} ON work
    FOR EACH ROW EXECUTE FUNCTION work_assignment_is_fixed()""",
    # no DELETE either (an upsert's update path meets the trigger above)
    """CREATE TRIGGER work_assignment_is_kept BEFORE DELETE ON work
    FOR EACH ROW EXECUTE FUNCTION work_assignment_is_fixed()""")

# The transaction's first round trip: BEGIN, the store's lock SHARED, then
# the lease clock, read after the lock: the database's own (or a test's
# instant). The claim's statements run on plans made once per connection: no
# parameter of theirs changes the best plan (an index in claim order, one
# row), and PostgreSQL would otherwise plan some of them again every time.
CLOCK = """SET LOCAL plan_cache_mode = force_generic_plan;
SELECT coalesce(CAST(:now AS float8),
    extract(epoch FROM clock_timestamp())::float8) AS now"""
# The second: the pick and ITS session's lock (taken for that one row), with
# the pause flag and the epoch: one row, none while the flag is set (nothing
# is picked then), its id NULL when nothing is eligible. {lapsed} is the
# ordinary pass's probe: has a lease of this role run out?
DECIDE = """
WITH first AS MATERIALIZED ({pick})
SELECT first.id, first.session, first.prompt, first.subject, first.role,
    pg_try_advisory_xact_lock(hashtextextended(first.session, :store_lock))
        AS session_free,
    switches.epoch, {lapsed} AS lapsed
FROM runtime_control AS switches LEFT JOIN first ON true
WHERE switches.id = 1 AND switches.paused = 0"""
PROBE = f"""EXISTS (  -- down work_held_by_lease
        SELECT 1 FROM work
        WHERE status = '{RUNNING}' AND role = :role AND expires <= :now)"""
# Only when the probe found one: queued and lapsed, the first in claim order.
EITHER = """WITH queued AS MATERIALIZED ({queued}),
     lapsed AS MATERIALIZED ({lapsed})
SELECT * FROM queued UNION ALL SELECT * FROM lapsed
ORDER BY control DESC, created, seq LIMIT 1"""
_RULE = claims.PICK[claims.PICK.index("    -- one live holder per session"):
                    claims.PICK.index(SQLITE["order"])
                    ].replace(SQLITE["rule"], POSTGRES["rule"])
# The grant, one statement. The pick read the session rule in a snapshot
# taken before the session's lock was ours: the rule (PICK's own text) is
# read again here, after it. The lease starts at the grant (``:at``: a test's
# instant): other claimers ran meanwhile, and a claim's row must not say it
# began before a write this grant has seen.
GRANT = f"""
WITH clock AS MATERIALIZED (SELECT coalesce(CAST(:at AS float8),
        extract(epoch FROM clock_timestamp())::float8) AS at),
    granted AS (
    UPDATE work AS item SET status = '{RUNNING}', owner = :owner,
        generation = item.generation + 1, expires = (SELECT at FROM clock) + :ttl
    WHERE item.id = :id
{_RULE}    RETURNING item.id, item.generation, item.expires)
INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
SELECT granted.id, granted.generation, :owner, clock.at, granted.expires
FROM granted, clock
RETURNING generation, expires"""


def install(conn) -> None:
    """``claims.install`` on a server: the shared tables, then ``SCHEMA`` and
    the trigger, once, in one transaction (DDL is transactional here).
    Introduced in chapter 10."""
    control.install(conn)
    with immediate(conn):
        if conn.execute("SELECT to_regclass('claims') AS found").fetchone()[0]:
            return  # installed: DDL again would lock out every live claimer
        for statement in (*claims.SCHEMA.split(";"), *SCHEMA.split(";"),
                          *FIXED_ASSIGNMENT):
            if statement.strip():
                conn.execute(statement)


@lru_cache(maxsize=64)
def pick_sql(eligible: str, looks: str, control_only: bool, passed: bool,
             among: str | None = None, lapsing: bool = False) -> str:
    """``claims.PICK`` for one pass on a server: ``looks`` is where it looks
    (a key of ``POSTGRES``; ``"either"``: queued and lapsed, two picks);
    ``lapsing``: leases of this role have run out, so a session's first turn
    may be a held one. Introduced in chapter 10."""
    if looks == "either":
        return EITHER.format(
            queued=pick_sql(eligible, "queued", control_only, passed, lapsing=True),
            lapsed=pick_sql(eligible, "lapsed", control_only, passed))
    server = {"looks": POSTGRES[looks].format(among=among)
              + (POSTGRES["passed"] if passed else ""), "work_id": "",
              "control_only": POSTGRES["control_only"] if control_only else ""}
    query = claims.PICK.format(eligible=eligible)
    for name, words in SQLITE.items():
        if words not in query:
            raise AssertionError(f"claims.PICK changed: {words!r} is gone")
        query = query.replace(words, server.get(name, POSTGRES.get(name)))
    rules = query[query.index("    -- which work this pass"):  # for its session's
                  query.index("    -- one live holder per session")]  # turns
    first = "" if looks == "work_id" else FIRST.format(  # one turn: no other
        looks=f"turn.id IN ({among})" if looks == "among"  # what the walk offers:
        else f"turn.status = '{READY}'" if looks == "queued" and not lapsing
        else f"turn.status IN {sql_list(OPEN)}",  # queued turns, lapsed leases
        rules=rules.replace("item.", "earlier.").strip().replace("\n", "\n    "))
    query = query.replace("{first}", first)
    if ";" in query:  # pgstore would bind it on the client, planned every time
        raise ValueError("a pick is one statement: no ';', not even in a comment")
    return query


@lru_cache(maxsize=64)
def decide_sql(eligible: str, looks: str, control_only: bool, passed: bool,
               among: str | None) -> str:
    """``DECIDE`` around ``pick_sql``: one text per kind of pass."""
    return DECIDE.format(
        pick=pick_sql(eligible, looks, control_only, passed, among),
        lapsed=PROBE if looks == "queued" else "false")


def claim(conn, owner: str, ttl: float, now: float | None, role: str,
          work_id: str | None, control_only: bool, eligible: str,
          among: str | None) -> Claim | None:
    """``claims.claim`` on a server (its arguments, checked there): four round
    trips, BEGIN with the lock and the clock, pick, grant, COMMIT; a lapsed
    lease, or a session passed, adds a pick. Introduced in chapter 10."""
    from crashcourse import pgstore  # loaded already: the connection is one

    looks = ("work_id" if work_id is not None else "among" if among is not None
             else "queued")
    at = None if now is None else clock(now)
    with pgstore.immediate(conn, shared=True, then=CLOCK,
                           parameters={"now": at}) as found:
        rules = {"role": role, "now": found.fetchone()[0], "work_id": work_id,
                 "owner": owner, "at": at, "ttl": ttl,
                 "store_lock": conn.store_lock, "passed": []}
        while True:
            row = conn.execute(decide_sql(eligible, looks, control_only,
                                          bool(rules["passed"]), among),
                               rules).fetchone()
            if row is None or (row["id"] is None and not row["lapsed"]):
                return None  # paused, or nothing eligible
            if row["lapsed"]:  # a lease ran out: look at both, in claim order
                looks = "either"
                continue
            granted = row["session_free"] and conn.execute(
                GRANT, rules | {"id": row["id"]}).fetchone()
            if granted:
                return Claim(row["id"], row["session"], row["prompt"],
                             row["subject"], row["role"], owner, *granted,
                             row["epoch"])
            # another claimer is deciding its session, or a holder came since
            # the pick: pass the SESSION (its next turn may not go first)
            rules["passed"].append(row["session"])
