/**
 * The append of a batch as one server-side function: one round trip (as a plain `INSERT … unnest` costs) that
 * locks the session's counter row, checks the writer's holder epoch, numbers the events, inserts them and moves
 * the counter, all in the caller's one statement, hence one transaction. The lock is held until commit, so one
 * session's batches commit in seq order.
 *
 * Mirrors lib/store.ts `appendBatch` (lib/batch_commit.ts) for one session: a seq already stored is a replay
 * (left out); `agent_start` makes the session running, `agent_end`/`agent_settled`/`bye` idle; `session_info`
 * replaces the snapshot; `info_changed` says either happened.
 */

/** SQLSTATE raised when the session has no row. */
export const PG_UNKNOWN_SESSION = "LV404";
/** SQLSTATE raised when the writer's epoch is not the session's (its DETAIL is the current epoch). */
export const PG_FENCED = "LV409";

/** The function's definition (part of migration 1). */
export const PG_APPEND_FUNCTION = `
CREATE FUNCTION lvmh_append_events(
  p_session text, p_epoch bigint, p_seqs bigint[], p_ts bigint[], p_types text[], p_payloads text[],
  OUT o_after bigint, OUT o_last_seq bigint, OUT o_seqs bigint[], OUT o_inserted bigint[],
  OUT o_info_changed boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  s record;
  n integer := coalesce(array_length(p_seqs, 1), 0);
  counter bigint;
  st text;
  next_st text;
  info_new text;
  latest bigint;
  remaining bigint[];
  all_in boolean;
BEGIN
  SELECT x.last_seq, x.state, x.holder_epoch, x.last_event_at INTO s
    FROM sessions x WHERE x.id = p_session FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '${PG_UNKNOWN_SESSION}', MESSAGE = format('no session row %s', p_session);
  END IF;
  IF s.holder_epoch <> p_epoch THEN
    RAISE EXCEPTION USING ERRCODE = '${PG_FENCED}', DETAIL = s.holder_epoch::text,
      MESSAGE = format('Session "%s" is held by epoch %s, not %s', p_session, s.holder_epoch, p_epoch);
  END IF;
  o_after := s.last_seq;
  counter := s.last_seq;
  o_seqs := p_seqs;
  FOR i IN 1..n LOOP
    IF o_seqs[i] = 0 THEN
      counter := counter + 1;
      o_seqs[i] := counter;
    ELSIF o_seqs[i] > counter THEN
      counter := o_seqs[i];
    END IF;
  END LOOP;
  WITH added AS (
    INSERT INTO events(session_id, seq, ts, type, payload)
      SELECT p_session, u.seq, u.ts, u.type, u.payload
        FROM unnest(o_seqs, p_ts, p_types, p_payloads) AS u(seq, ts, type, payload)
      ON CONFLICT DO NOTHING
      RETURNING events.seq)
  SELECT coalesce(array_agg(added.seq), '{}') INTO o_inserted FROM added;
  all_in := coalesce(array_length(o_inserted, 1), 0) = n;
  remaining := o_inserted;
  st := s.state;
  latest := s.last_event_at;
  o_info_changed := false;
  FOR i IN 1..n LOOP
    IF NOT all_in THEN
      -- Only the first event of a seq that went in counts (a replay or a repeat within the batch does not).
      CONTINUE WHEN NOT (o_seqs[i] = ANY(remaining));
      remaining := array_remove(remaining, o_seqs[i]);
    END IF;
    next_st := CASE WHEN p_types[i] = 'agent_start' THEN 'running'
      WHEN p_types[i] IN ('agent_end', 'agent_settled', 'bye') THEN 'idle' ELSE st END;
    IF next_st <> st OR p_types[i] = 'session_info' THEN o_info_changed := true; END IF;
    st := next_st;
    IF p_types[i] = 'session_info' THEN info_new := (p_payloads[i]::json -> 'session')::text; END IF;
    latest := greatest(coalesce(latest, 0), p_ts[i]);
  END LOOP;
  UPDATE sessions SET last_seq = counter, last_event_at = latest, state = st, info = coalesce(info_new, info)
    WHERE id = p_session;
  o_last_seq := counter;
END
$fn$;`;
