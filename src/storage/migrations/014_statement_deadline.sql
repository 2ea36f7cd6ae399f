-- A statement that must take effect only if the database starts it in time
-- (storage/statement-deadline.ts): it calls conduit_before(deadline) with the
-- instant, in this server's clock and in epoch milliseconds, after which its
-- caller may already have been told it failed. Past it, the whole statement
-- fails with SQLSTATE CD001 and stores nothing - a send refused at its
-- deadline while the database was frozen is never stored behind its 503 when
-- the database wakes up. VOLATILE: the clock is read when the row is
-- evaluated, never folded into the plan.
CREATE FUNCTION conduit_before(deadline_ms float8) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF extract(epoch FROM clock_timestamp()) * 1000 >= deadline_ms THEN
    RAISE EXCEPTION 'the statement started after its deadline' USING ERRCODE = 'CD001';
  END IF;
  RETURN true;
END
$$;
