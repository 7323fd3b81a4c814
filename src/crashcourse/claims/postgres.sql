-- The claim on a PostgreSQL server, as the database runs it (chapter 10).
-- Named queries (crashcourse.store.queries): each runs from its header to the
-- next. Read by crashcourse.claims.postgres; the recovery pass sends the same
-- statements one by one (DECIDE, GRANT there), and
-- tests/claims/test_postgres_round_trips.py fails when this text and those
-- statements part.

-- name: claim_next
-- The ordinary pass in ONE round trip, called in autocommit (so the call is
-- the transaction): the store's lock SHARED, the lease clock, the pick with
-- its session's try-lock (one branch per place it looks, with and without
-- control_only), then the grant, which reads the session rule again after
-- that lock. Each statement of a VOLATILE function reads a snapshot of its
-- own, taken when it starts; its plans are made once per connection, generic.
CREATE OR REPLACE FUNCTION claim_next(
    _role text, _owner text, _ttl float8, _at float8, _control_only boolean,
    _work_id text, _store_lock bigint,
    OUT claimed_id text, OUT claimed_session text, OUT claimed_prompt text,
    OUT claimed_subject text, OUT claimed_role text,
    OUT claimed_generation integer, OUT claimed_expires float8,
    OUT claimed_epoch text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
AS $claim$
DECLARE
    _now float8;
    _looks text := CASE WHEN _work_id IS NULL THEN 'queued' ELSE 'work_id' END;
    _passed text[] := '{}';  -- sessions this claim passed
    picked record;
BEGIN
    -- the store's lock SHARED: an operator's EXCLUSIVE write waits for it
    -- (tried first: an expression, where a wait is a statement of its own)
    IF NOT pg_try_advisory_xact_lock_shared(_store_lock) THEN
        PERFORM pg_advisory_xact_lock_shared(_store_lock);
    END IF;
    -- the lease clock, read after the lock: the database's, or a test's
    _now := coalesce(_at, extract(epoch FROM clock_timestamp())::float8);
    LOOP
        -- the pick, its session's try-lock, the pause flag and the epoch
        IF _looks = 'queued' AND _control_only = false THEN
            WITH first AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: queued turns (work_queued_in_order)
                    item.status = 'READY'
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status = 'READY'
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, coalesce((  -- down work_held_by_lease: the lease that ends first
                    SELECT expires <= _now FROM work
                    WHERE status = 'RUNNING' AND role = _role
                    ORDER BY expires LIMIT 1), false) AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        ELSIF _looks = 'queued' AND _control_only = true THEN
            WITH first AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: queued turns (work_queued_in_order)
                    item.status = 'READY'
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                AND item.control = 1
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status = 'READY'
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    AND item.control = 1
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, coalesce((  -- down work_held_by_lease: the lease that ends first
                    SELECT expires <= _now FROM work
                    WHERE status = 'RUNNING' AND role = _role
                    ORDER BY expires LIMIT 1), false) AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        ELSIF _looks = 'either' AND _control_only = false THEN
            WITH first AS MATERIALIZED (WITH queued AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: queued turns (work_queued_in_order)
                    item.status = 'READY'
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status IN ('READY', 'RUNNING')
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    -- eligible: queued, or held under a lease that has run out
                    AND item.status IN ('READY', 'RUNNING')
                    AND (item.status = 'READY' OR item.expires <= _now)
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            ),
                 lapsed AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: held turns whose lease ran out
                    item.status = 'RUNNING' AND item.expires <= _now
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status IN ('READY', 'RUNNING')
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    -- eligible: queued, or held under a lease that has run out
                    AND item.status IN ('READY', 'RUNNING')
                    AND (item.status = 'READY' OR item.expires <= _now)
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT * FROM queued UNION ALL SELECT * FROM lapsed
            ORDER BY control DESC, created, seq LIMIT 1)
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, false AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        ELSIF _looks = 'either' AND _control_only = true THEN
            WITH first AS MATERIALIZED (WITH queued AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: queued turns (work_queued_in_order)
                    item.status = 'READY'
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                AND item.control = 1
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status IN ('READY', 'RUNNING')
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    AND item.control = 1
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    -- eligible: queued, or held under a lease that has run out
                    AND item.status IN ('READY', 'RUNNING')
                    AND (item.status = 'READY' OR item.expires <= _now)
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            ),
                 lapsed AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: held turns whose lease ran out
                    item.status = 'RUNNING' AND item.expires <= _now
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                AND item.control = 1
                -- its retry delay has passed
                AND item.available_after <= _now
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                -- a turn waits for its session's turns before it that this pass takes
                AND NOT EXISTS (
                    SELECT 1 FROM (
                        SELECT * FROM work AS turn
                        WHERE turn.session = item.session
                          AND turn.status IN ('READY', 'RUNNING')
                          AND (item.control, turn.created, turn.seq)
                              < (turn.control, item.created, item.seq)
                        OFFSET 0) AS item
                    WHERE true
                    -- which work this pass may look at
                    AND item.role = _role
                    AND item.control = 1
                    -- its retry delay has passed
                    AND item.available_after <= _now
                    -- eligible: queued, or held under a lease that has run out
                    AND item.status IN ('READY', 'RUNNING')
                    AND (item.status = 'READY' OR item.expires <= _now)
                    )
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT * FROM queued UNION ALL SELECT * FROM lapsed
            ORDER BY control DESC, created, seq LIMIT 1)
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, false AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        ELSIF _looks = 'work_id' AND _control_only = false THEN
            WITH first AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: the named work
                    item.id = _work_id
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                -- its retry delay has passed
                AND item.available_after <= _now
                -- eligible: queued, or held under a lease that has run out
                AND item.status IN ('READY', 'RUNNING')
                AND (item.status = 'READY' OR item.expires <= _now)
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, false AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        ELSIF _looks = 'work_id' AND _control_only = true THEN
            WITH first AS MATERIALIZED (
            SELECT item.* FROM work AS item
            WHERE
                -- where this claim looks: the named work
                    item.id = _work_id
                AND item.session <> ALL (_passed)  -- sessions this claim passed
                -- which work this pass may look at
                AND item.role = _role
                AND item.control = 1
                -- its retry delay has passed
                AND item.available_after <= _now
                -- eligible: queued, or held under a lease that has run out
                AND item.status IN ('READY', 'RUNNING')
                AND (item.status = 'READY' OR item.expires <= _now)
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
            -- operator control work first, then the oldest
            ORDER BY item.control DESC, item.created ASC, item.seq ASC
            LIMIT 1
            FOR UPDATE OF item SKIP LOCKED
            )
            SELECT first.id, first.session, first.prompt, first.subject, first.role,
                pg_try_advisory_xact_lock(hashtextextended(first.session, _store_lock))
                    AS session_free,
                switches.epoch, false AS lapsed
            FROM runtime_control AS switches LEFT JOIN first ON true
            WHERE switches.id = 1 AND switches.paused = 0 INTO picked;
        END IF;
        IF NOT FOUND THEN
            RETURN;  -- paused: nothing is picked
        ELSIF picked.lapsed THEN
            _looks := 'either';  -- a lease ran out: queued and lapsed, in order
            CONTINUE;
        ELSIF picked.id IS NULL THEN
            RETURN;  -- nothing eligible
        ELSIF picked.session_free THEN
            -- the grant: the session rule read again, after the session's lock
            WITH clock AS MATERIALIZED (SELECT coalesce(CAST(_at AS float8),
                    extract(epoch FROM clock_timestamp())::float8) AS at),
                granted AS (
                UPDATE work AS item SET status = 'RUNNING', owner = _owner,
                    generation = item.generation + 1, expires = (SELECT at FROM clock) + _ttl
                WHERE item.id = picked.id
                -- one live holder per session: a turn waits for the one before it
                AND NOT EXISTS (
                    SELECT 1 FROM work AS other
                    WHERE other.session = item.session
                      AND other.id != item.id
                      AND other.status = 'RUNNING'
                      AND other.expires > _now
                    OFFSET 0)
                RETURNING item.id, item.generation, item.expires)
            INSERT INTO claims (work_id, generation, owner, claimed_at, expires)
            SELECT granted.id, granted.generation, _owner, clock.at, granted.expires
            FROM granted, clock
            RETURNING generation, expires INTO claimed_generation, claimed_expires;
            IF FOUND THEN
                claimed_id := picked.id;
                claimed_session := picked.session;
                claimed_prompt := picked.prompt;
                claimed_subject := picked.subject;
                claimed_role := picked.role;
                claimed_epoch := picked.epoch;
                RETURN NEXT;
                RETURN;
            END IF;
        END IF;
        -- another claimer is deciding its session, or a holder came since
        -- the pick: pass the SESSION (its next turn may not go first)
        _passed := _passed || picked.session;
    END LOOP;
END
$claim$
