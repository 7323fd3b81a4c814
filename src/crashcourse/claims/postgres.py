"""The claim on a PostgreSQL server: ``claims``' rules with many claimers at
once (chapter 10).

On SQLite one writer at a time decides a claim (``BEGIN IMMEDIATE``), so the
chapter 05 rules hold by taking turns. On a server the claimers of several
hosts run side by side, each under the store's lock SHARED (an operator's
cancel or pause still takes it EXCLUSIVE, and waits for them). What keeps the
rules there:

* the pick (``PICK``) is SQL of its own that keeps the rules of SQLite's
  (``claims.PICK``), each block of predicates one rule, and locks the row it
  picks ``FOR UPDATE SKIP LOCKED``, so two claimers never take one turn and
  neither waits for a row the other holds (a claimer still waits for the
  store's lock while an operator's write holds it EXCLUSIVE, and may find
  nothing while the only eligible row is locked by a transaction that then
  rolls back);
* a turn waits for its session's turns before it that the pass would take
  (``FIRST``): a claimer that finds one of them locked by another claimer
  never skips on to the next turn of that session;
* one live holder per session: the ONE picked row's session is taken with
  ``pg_try_advisory_xact_lock`` (busy: another claimer is deciding that
  session; pass it, never wait), and the grant reads the rule again, in a
  snapshot taken after that lock (``GRANT``, the same ``SESSION_RULE``);
* leases are read by the DATABASE's clock (``clock_timestamp()``, after the
  lock, as ``store.now`` reads it), so a worker's own clock changes nothing;
  a lease starts at its grant;
* the pick stays small and is planned once per connection: queued turns down
  one index; held turns whose lease ran out only when a look down another
  index finds one (``ANY_LAPSED``); a named pass (``work_id``, ``among``) looks at those
  turns alone. (No psycopg here: the connection, ``store.postgres``, brings it.)
* the ordinary pass, every worker's loop, is ONE round trip: the statements
  above, in the same order, in one function installed with the schema
  (``FUNCTION``, written once in ``postgres.sql``), called in autocommit;
  each of its statements still reads a snapshot of its own. The recovery pass
  (``orders.RECOVERY``) sends them one by one (four round trips).

The tests of the claim run on both databases (``store_at``): they are what
says the two claims keep the same rules.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from crashcourse import control
from crashcourse.claims.work import (
    ASSIGNMENT,
    OPEN,
    ORDINARY,
    READY,
    RUNNING,
    SCHEMA,
    Claim,
)
from crashcourse.store import check_backend, immediate, sql_list, table_exists
from crashcourse.store.dialect import POSTGRES
from crashcourse.store.queries import named_queries
from crashcourse.validate import clock

# The databases install() accepts (store.check_backend): a store on any other
# is refused before anything is written.
RUNS_ON = (POSTGRES,)

# Where a pass looks, by kind: queued turns, held turns whose lease ran out,
# the named work, the work a pass names (``{among}``, SQL written in code).
# The ordinary pass looks at the first two, ``ORDINARY``'s two halves: there
# the place it looks IS its rule, and the pick says it once.
LOOKS = {
    "queued": "-- where this claim looks: queued turns (work_queued_in_order)"
              f"\n        item.status = '{READY}'",
    "lapsed": "-- where this claim looks: held turns whose lease ran out"
              f"\n        item.status = '{RUNNING}' AND item.expires <= :now",
    "work_id": "-- where this claim looks: the named work\n        item.id = :work_id",
    "among": "-- where this claim looks: the work the pass names"
             "\n        item.id IN ({among})",
}
PASSED = "\n    AND item.session <> ALL (:passed)  -- sessions this claim passed"
# The pass's own rules ({eligible}: ``claims.ORDINARY`` or
# ``orders.RECOVERY``, comment included), read of ``item``: the turn the pick
# looks at, and in ``FIRST`` each turn of its session before it.
RULES = """    -- which work this pass may look at
    AND item.role = :role{control_only}
    -- its retry delay has passed
    AND item.available_after <= :now
"""
CONTROL_ONLY = "\n    AND item.control = 1"
# One live holder per session: a turn waits for the one before it. OFFSET 0
# keeps the rule a lookup per row read, down work_in_session: joined instead,
# a plan made while nothing was held reads every live lease for every claim,
# once there are thousands.
SESSION_RULE = f"""\
    -- one live holder per session: a turn waits for the one before it
    AND NOT EXISTS (
        SELECT 1 FROM work AS other
        WHERE other.session = item.session
          AND other.id != item.id
          AND other.status = '{RUNNING}'
          AND other.expires > :now
        OFFSET 0)
"""
# A turn must be the FIRST of its session's turns this pass would take (the
# pass's RULES; the session rule the turn just passed). Without it a claimer
# skips a turn another claimer has locked and takes the next one of that
# session: a conversation out of order. So no turn of its session may come
# before it in claim order that the rules admit: one look down
# work_in_session at the session's turns ({looks}: of ``turn``), no sort
# (OFFSET 0: no rule is pushed in, so no other index looks better; and a
# lookup per row read, never a join). The row comparison is
# claim order, control DESC then created then seq: ``turn`` comes first when
# its control is higher, or equal with an earlier (created, seq). Those
# turns are named ``item`` too, so the RULES read them with the words that
# read the picked turn; inside, ``item`` is still the pick's.
FIRST = """    -- a turn waits for its session's turns before it that this pass takes
    AND NOT EXISTS (
        SELECT 1 FROM (
            SELECT * FROM work AS turn
            WHERE turn.session = item.session
              AND {looks}
              AND (item.control, turn.created, turn.seq)
                  < (turn.control, item.created, item.seq)
            OFFSET 0) AS item
        WHERE true
{rules}        )
"""
# The pick: the first turn in claim order that every rule admits, locked;
# a turn another claimer has locked is passed over, never waited for. The
# claim order's last tie-break is seq, the order rows were queued in.
PICK = """
SELECT item.* FROM work AS item
WHERE
    {looks}{passed}
{rules}{session_rule}{first}-- operator control work first, then the oldest
ORDER BY item.control DESC, item.created ASC, item.seq ASC
LIMIT 1
FOR UPDATE OF item SKIP LOCKED
"""
# What the shared ``work.SCHEMA`` lacks on a server: seq (SQLite's rowid),
# the indexes the picks go down (the session rule goes down
# work_in_session), and the trigger that keeps assignments fixed (a function
# of its own here). The indexes hold every row, not only the queued or held
# ones: a plan is made once per connection and kept, and a partial index
# still empty when it was made looks free to read whole for any question
# about held work.
SERVER_SCHEMA = f"""
ALTER TABLE work ADD COLUMN {POSTGRES.insertion_column};
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
    BEFORE UPDATE OF {", ".join(("id", "origin", *ASSIGNMENT))} ON work
    FOR EACH ROW EXECUTE FUNCTION work_assignment_is_fixed()""",
    # no DELETE either (an upsert's update path meets the trigger above)
    """CREATE TRIGGER work_assignment_is_kept BEFORE DELETE ON work
    FOR EACH ROW EXECUTE FUNCTION work_assignment_is_fixed()""")

# A claim's statements, in order (sent one by one by a pass other than the
# ordinary one; ``FUNCTION`` runs the same for the ordinary pass). The first
# round trip: BEGIN, the store's lock SHARED, then the lease clock, read
# after the lock: the database's own (or a test's instant). The claim's
# statements run on plans made once per connection: no parameter of theirs
# changes the best plan (an index in claim order, one row), and PostgreSQL
# would otherwise plan some of them again every time.
CLOCK = """SET LOCAL plan_cache_mode = force_generic_plan;
SELECT coalesce(CAST(:now AS float8),
    extract(epoch FROM clock_timestamp())::float8) AS now"""
# The second: the pick and ITS session's lock (taken for that one row), with
# the pause flag and the epoch: one row, none while the flag is set (nothing
# is picked then), its id NULL when nothing is eligible. {lapsed} asks, for
# the ordinary pass, whether a lease of this role has run out (ANY_LAPSED).
DECIDE = """
WITH first AS MATERIALIZED ({pick})
SELECT first.id, first.session, first.prompt, first.subject, first.role,
    pg_try_advisory_xact_lock(hashtextextended(first.session, :store_lock))
        AS session_free,
    switches.epoch, {lapsed} AS lapsed
FROM runtime_control AS switches LEFT JOIN first ON true
WHERE switches.id = 1 AND switches.paused = 0"""
# Whether a lease of this role has run out: the lease that ends first, read
# down work_held_by_lease in its order. (Written ``EXISTS (... expires <=
# :now)``, its plan made again after ANALYZE has seen many live leases, as
# autovacuum's does mid-run, is a scan of the whole table for a first match
# that never comes: every row, at every claim. tests/claims/test_postgres_plans.py)
ANY_LAPSED = f"""coalesce((  -- down work_held_by_lease: the lease that ends first
        SELECT expires <= :now FROM work
        WHERE status = '{RUNNING}' AND role = :role
        ORDER BY expires LIMIT 1), false)"""
# Only when ANY_LAPSED found one: queued and lapsed, the first in claim order.
EITHER = """WITH queued AS MATERIALIZED ({queued}),
     lapsed AS MATERIALIZED ({lapsed})
SELECT * FROM queued UNION ALL SELECT * FROM lapsed
ORDER BY control DESC, created, seq LIMIT 1"""
# The grant, one statement. The pick read the session rule in a snapshot
# taken before the session's lock was ours: the rule is read again here,
# after it. The lease starts at the grant (``:at``: a test's instant): other
# claimers ran meanwhile, and a claim's row must not say it began before a
# write this grant has seen.
GRANT = f"""
WITH clock AS MATERIALIZED (SELECT coalesce(CAST(:at AS float8),
        extract(epoch FROM clock_timestamp())::float8) AS at),
    granted AS (
    UPDATE work AS item SET status = '{RUNNING}', owner = :owner,
        generation = item.generation + 1, expires = (SELECT at FROM clock) + :ttl
    WHERE item.id = :id
{SESSION_RULE}    RETURNING item.id, item.generation, item.expires)
INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
SELECT granted.id, granted.generation, :owner, clock.at, granted.expires
FROM granted, clock
RETURNING generation, expires"""


# The ordinary pass (``claims.ORDINARY``, every worker's loop) in ONE round
# trip: a function installed with the schema, called in autocommit, so the
# call is the transaction. It is written once, as SQL, in ``postgres.sql``
# (the named query ``claim_next``): the statements above, in the order the
# recovery pass's loop (``claim``, below) sends them, ``:name`` spelled as
# the function's ``_name``. tests/claims/test_postgres_round_trips.py fails
# when the two part.
FUNCTION = "claim_next"
INSTALLED = """SELECT prosrc FROM pg_proc
WHERE proname = :name AND pronamespace = CAST(current_schema() AS regnamespace)"""
CALL = f"""SELECT * FROM {FUNCTION}(CAST(:role AS text), CAST(:owner AS text),
    CAST(:ttl AS float8), CAST(:at AS float8), CAST(:control_only AS boolean),
    CAST(:work_id AS text), CAST(:store_lock AS bigint))"""
QUERIES = named_queries(Path(__file__).with_suffix(".sql"))
FUNCTION_SQL = QUERIES[FUNCTION]  # CREATE OR REPLACE FUNCTION claim_next(...)


def function_body(create: str) -> str:
    """The body of a ``CREATE FUNCTION`` of the claim, as ``pg_proc.prosrc``
    keeps it."""
    return create.split("$claim$")[1]


def install(conn) -> None:
    """``claims.install`` on a server: the shared tables (``work.SCHEMA``),
    then ``SERVER_SCHEMA`` and the trigger, once, in one transaction (DDL is
    transactional here), and the ordinary pass as one function
    (``FUNCTION_SQL``), created or replaced when the store's differs.
    Introduced in chapter 10."""
    check_backend(conn, RUNS_ON, __name__)
    control.install(conn)
    with immediate(conn):
        if not table_exists(conn, "claims"):
            for statement in (*SCHEMA.split(";"), *SERVER_SCHEMA.split(";"),
                              *FIXED_ASSIGNMENT):
                if statement.strip():
                    conn.execute(statement)
        # the function alone, and only when it changed: DDL again on the
        # tables would lock out every live claimer, and a replaced function
        # makes every claimer plan its statements again
        if conn.execute(INSTALLED, {"name": FUNCTION}).fetchone() != (
                function_body(FUNCTION_SQL),):
            conn.execute(FUNCTION_SQL)


@lru_cache(maxsize=64)
def pick_sql(eligible: str, looks: str, control_only: bool, passed: bool,
             among: str | None = None, lapsing: bool = False) -> str:
    """``PICK`` for one pass: ``looks`` is where it looks (a key of
    ``LOOKS``; ``"either"``: queued and lapsed, two picks); ``lapsing``:
    leases of this role have run out, so a session's first turn may be a
    held one. Introduced in chapter 10."""
    if looks == "either":
        return EITHER.format(
            queued=pick_sql(eligible, "queued", control_only, passed, lapsing=True),
            lapsed=pick_sql(eligible, "lapsed", control_only, passed))
    # the ordinary pass looking at queued turns only, or held turns whose
    # lease ran out only: where it looks is its whole rule, said once
    said = eligible == ORDINARY
    rules = RULES.format(control_only=CONTROL_ONLY if control_only else "")
    session = (f"turn.id IN ({among})" if looks == "among"
               else f"turn.status = '{READY}'" if looks == "queued" and not lapsing
               else f"turn.status IN {sql_list(OPEN)}")  # lapsed leases too
    first = "" if looks == "work_id" else FIRST.format(  # one turn: no other
        looks=session, rules="".join("    " + line for line in (
            rules if said and session == f"turn.status = '{READY}'"
            else rules + f"    {eligible}\n").splitlines(True)))
    if not (said and looks in ("queued", "lapsed")):
        rules += f"    {eligible}\n"
    query = PICK.format(looks=LOOKS[looks].format(among=among),
                        passed=PASSED if passed else "", rules=rules,
                        session_rule=SESSION_RULE, first=first)
    if ";" in query:  # pgstore would bind it on the client, planned every time
        raise ValueError("a pick is one statement: no ';', not even in a comment")
    return query


@lru_cache(maxsize=64)
def decide_sql(eligible: str, looks: str, control_only: bool, passed: bool,
               among: str | None) -> str:
    """``DECIDE`` around ``pick_sql``: one text per kind of pass."""
    return DECIDE.format(
        pick=pick_sql(eligible, looks, control_only, passed, among),
        lapsed=ANY_LAPSED if looks == "queued" else "false")


def claim(conn, owner: str, ttl: float, now: float | None, role: str,
          work_id: str | None, control_only: bool, eligible: str,
          among: str | None) -> Claim | None:
    """``claims.claim`` on a server (its arguments, checked there). The
    ordinary pass is one round trip: the call of ``FUNCTION``. Any other
    pass (the recovery pass, ``orders.RECOVERY``) sends the same statements
    one by one: four round trips, BEGIN with the lock and the clock, pick,
    grant, COMMIT; a lapsed lease, or a session passed, adds a pick.
    Introduced in chapter 10."""
    at = None if now is None else clock(now)
    if eligible == ORDINARY and among is None:
        row = conn.first_row(CALL, {
            "role": role, "owner": owner, "ttl": ttl, "at": at,
            "control_only": control_only, "work_id": work_id,
            "store_lock": conn.store_lock})
        return None if row is None else Claim(*row[:5], owner, *row[5:])
    looks = ("work_id" if work_id is not None else "among" if among is not None
             else "queued")
    with immediate(conn, shared=True, then=CLOCK,
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
