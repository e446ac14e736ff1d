import { type RawBuilder, sql } from 'kysely';
import {
  decodeCursor as decodeKernelCursor,
  encodeCursor as encodeKernelCursor,
  tryDecodeCursor,
} from '../kernel/cursor';
import { fleetNode } from '../store/fleet-node';
import { intArray, textArray } from '../store/pg-array';
import type { Db } from '../store/tx';
import { levelRows } from './level-rows';

/**
 * The ordered event log.
 *
 * Writers append in the same transaction as the change. Readers use `tail`, which returns rows in
 * (tx, seq) order and only from transactions below the oldest transaction still running in this
 * database (HORIZON below). Every transaction that could still commit an event has an id at or above that
 * horizon, and every later transaction gets a larger id, so once a reader's cursor passes a row no
 * row can ever appear behind it: a slow writer's event is delivered late, never skipped.
 */
export type EventType =
  | 'AgentCreated'
  | 'BeliefAsserted'
  | 'BeliefCorroborated'
  | 'JustificationAdded'
  | 'ContradictionRaised'
  | 'ContradictionResolved'
  | 'RetractionStarted'
  | 'BeliefRetracted'
  | 'EffectCancelled'
  | 'ReversalRecorded'
  | 'RetractionCommitted'
  | 'EffectKindRegistered'
  | 'EffectProposed'
  | 'EffectClaimed'
  | 'EffectExecuted'
  | 'EffectFailed'
  | 'ReversalDispatched'
  | 'ReversalConfirmed'
  | 'ReversalFailed'
  | 'ReinstatementStarted'
  | 'BeliefReinstated'
  | 'ReversalVoided'
  | 'ReinstatementCommitted'
  | 'EffectRestored';

export interface NewEvent {
  fleet: string;
  type: EventType;
  actorId?: string | null;
  retractionId?: string | null;
  depth?: number | null;
  ids?: string[];
  data?: unknown;
}

/**
 * The columns of new event rows. Each is a value (sent as a parameter) or, for rows selected `from` something, an
 * expression over those rows (`sql\`array_agg(id ORDER BY id)\``).
 */
export interface EventColumns {
  type: EventType;
  actorId: string | null;
  retractionId?: string | null;
  depth?: number | RawBuilder<unknown> | null;
  /** The row's ids: a list of ids, or a bigint[] expression. */
  ids: readonly string[] | RawBuilder<unknown>;
  /** The row's data: JSON text, or a jsonb expression. */
  data?: string | RawBuilder<unknown> | null;
}

/**
 * THE insert of event rows: every writer of the log appends through it, alone (appendEvent) or as a CTE of its own
 * statement, so the change and its event rows cost one round trip. Without `from`, one row of constants (VALUES: on
 * Citus a statement of constants stays on the fleet's worker); with `from` (a FROM clause, with its WHERE, HAVING or
 * ORDER BY), a row per row it selects, RETURNING seq (an INSERT … SELECT without RETURNING is a COPY on Citus, which
 * row-level security refuses).
 */
export function insertEvents(fleet: string, e: EventColumns, from?: RawBuilder<unknown>): RawBuilder<{ seq: string }> {
  const ids = Array.isArray(e.ids) ? [...e.ids] : e.ids;
  const row = sql`${fleet}, ${e.type}, ${e.actorId}, ${e.retractionId ?? null}, ${e.depth ?? null}, ${ids}, ${e.data ?? null}`;
  const columns = sql`INSERT INTO events (fleet_id, type, actor_id, retraction_id, depth, ids, data)`;
  return from ? sql`${columns} SELECT ${row} ${from} RETURNING seq` : sql`${columns} VALUES (${row})`;
}

/**
 * The event rows of a cascade's levels (BeliefRetracted, BeliefReinstated: `levelRows`), in cascade order, as a CTE
 * of the statement that marks the beliefs: `data` (when given) with each row's `levels` added.
 */
export function insertLevelEvents(
  fleet: string,
  e: Omit<EventColumns, 'ids' | 'depth' | 'data'> & { data?: Record<string, unknown> },
  ids: readonly number[],
  levels: readonly number[],
): RawBuilder<{ seq: string }> {
  const rows = levelRows(ids, levels);
  const sized = sql`jsonb_build_object('levels', e.sizes::jsonb)`;
  const data =
    e.data === undefined
      ? sql`CASE WHEN e.sizes IS NULL THEN NULL ELSE ${sized} END`
      : sql`${JSON.stringify(e.data)}::jsonb || CASE WHEN e.sizes IS NULL THEN '{}'::jsonb ELSE ${sized} END`;
  return insertEvents(
    fleet,
    { ...e, depth: sql`e.depth`, ids: sql`e.ids::bigint[]`, data },
    sql`FROM unnest(${intArray(rows.depth)}::int[], ${textArray(rows.ids)}::text[], ${textArray(rows.sizes)}::text[]) WITH ORDINALITY AS e(depth, ids, sizes, ord)
       ORDER BY e.ord`,
  );
}

/** Appends one event row. */
export async function appendEvent(db: Db, e: NewEvent): Promise<void> {
  await insertEvents(e.fleet, {
    type: e.type,
    actorId: e.actorId ?? null,
    retractionId: e.retractionId ?? null,
    depth: e.depth ?? null,
    ids: e.ids ?? [],
    data: e.data === undefined ? null : JSON.stringify(e.data),
  }).execute(db);
}

/**
 * The read horizon: the oldest transaction of this snapshot that might still commit an event in
 * this database (pg_snapshot_xmin, but leaving out transactions positively known to run in another
 * database of the same server: transaction ids are server-wide, so one long transaction anywhere on
 * the server would otherwise stall every subscriber). A running transaction whose database cannot be
 * told (it ended after the snapshot was taken, or is prepared) still holds the horizon, so no event
 * can land behind a cursor. A function (db/migrations/0010_citus.ts), so that on Citus it is evaluated on the
 * worker that holds the fleet's events and stamped their `tx`: one transaction-id space, as on one server.
 */
const HORIZON = sql`retract_event_horizon()`;

export interface EventRow {
  seq: string;
  tx: string;
  type: EventType;
  retraction_id: string | null;
  depth: number | null;
  ids: string[];
  data: unknown;
  at: Date;
}

/** A position in the log: after row (tx, seq), skipping the first `index` ids of that row (-1: whole row done). */
export interface Cursor {
  tx: string;
  seq: string;
  index: number;
}

export const START: Cursor = { tx: '0', seq: '0', index: -1 };

const SHAPE = ['xid8', 'seq', 'index'] as const;

export function encodeCursor(c: Cursor): string {
  return encodeKernelCursor('e1', [c.tx, c.seq, c.index]);
}

/** A log position, or null when `s` is not an event cursor with every component in its column's range. */
export function decodeCursor(s: string): Cursor | null {
  const p = tryDecodeCursor(s, 'e1', SHAPE);
  return p && { tx: p[0]!, seq: p[1]!, index: Number(p[2]) };
}

/** As decodeCursor, but BAD_USER_INPUT naming `field` (and the component out of range) when it is not one. */
export function parseCursor(field: string, s: string): Cursor {
  const p = decodeKernelCursor(field, s, 'e1', SHAPE, 'must be a cursor from a previous event');
  return { tx: p[0]!, seq: p[1]!, index: Number(p[2]) };
}

/**
 * Whether a cursor names a transaction this database has not reached (at or past the current
 * snapshot's xmax): one issued before a restore, or by another database. Tailing from it would
 * wait, silently, until the transaction counter caught up — possibly forever.
 */
export async function isAhead(db: Db, fleet: string, c: Cursor): Promise<boolean> {
  const r = await sql<{
    ahead: boolean;
  }>`SELECT ${c.tx}::xid8 >= pg_snapshot_xmax(pg_current_snapshot()) AS ahead FROM ${fleetNode(fleet)}`.execute(db);
  return r.rows[0]!.ahead;
}

/**
 * Whether a cursor names a row of this fleet's log (or the log's origin). Every cursor a subscriber is
 * given names the row its event came from, so one naming no row comes from another history: a store
 * restored from a backup taken before the row was written (docs/backup.md), or another database.
 * Tailing from it would skip, silently, whatever the restored log appends below the cursor's position.
 */
export async function isKnown(db: Db, fleet: string, c: Cursor): Promise<boolean> {
  if (c.tx === START.tx && c.seq === START.seq) return true;
  const r = await sql<{ known: boolean }>`
    SELECT EXISTS (SELECT 1 FROM events WHERE fleet_id = ${fleet} AND tx = ${c.tx}::xid8 AND seq = ${c.seq}::bigint) AS known`.execute(
    db,
  );
  return r.rows[0]!.known;
}

/**
 * Rows at or after the cursor's row (the cursor's own row is included when it was only partly
 * consumed), oldest first, never past the horizon of transactions that might still commit.
 * `types` filters by event type (the filter is applied after ordering, so cursors stay valid).
 */
export async function tail(
  db: Db,
  fleet: string,
  after: Cursor,
  limit: number,
  types?: readonly EventType[],
): Promise<EventRow[]> {
  const r = await sql<EventRow>`
    SELECT seq::text AS seq, tx::text AS tx, type, retraction_id::text AS retraction_id, depth,
           ids::text[] AS ids, data, at
      FROM events
     WHERE fleet_id = ${fleet} AND (tx, seq) ${after.index >= 0 ? sql`>=` : sql`>`} (${after.tx}::xid8, ${after.seq}::bigint)
       AND tx < ${HORIZON}
       ${types ? sql`AND type = ANY(${types as string[]}::text[])` : sql``}
     ORDER BY events.tx, events.seq
     LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** The cursor that means "from now": just past everything currently readable. */
export async function headCursor(db: Db, fleet: string): Promise<Cursor> {
  const r = await sql<{ tx: string; seq: string }>`
    SELECT tx::text AS tx, seq::text AS seq FROM events
     WHERE fleet_id = ${fleet} AND tx < ${HORIZON} ORDER BY events.tx DESC, events.seq DESC LIMIT 1`.execute(db);
  const row = r.rows[0];
  return row ? { tx: row.tx, seq: row.seq, index: -1 } : START;
}
