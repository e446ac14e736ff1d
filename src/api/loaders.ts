import { sql } from 'kysely';
import { notFound } from '../errors/domain-error';
import { readTx, type Tx } from '../store/tx';
import type { Context } from './builder';

/**
 * Batch loads behind every relation. Each batch is one SQL statement inside one read-only
 * transaction of the caller's fleet, so row-level security applies to every load.
 */
export function fleetRead<T>(ctx: Context, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (!ctx.agent) throw new Error('fleetRead without an authenticated agent');
  return readTx(ctx.core.store, ctx.agent.fleet_id, fn);
}

/** Orders rows to match ids; a missing id yields a NOT_FOUND error in its place. */
export function inOrder<T extends { id: string }>(what: string, ids: readonly string[], rows: T[]): Array<T | Error> {
  const m = new Map(rows.map((r) => [String(r.id), r]));
  return ids.map((id) => m.get(String(id)) ?? notFound(what, id));
}

/** Groups rows by key, in ids' order; every id gets a (possibly empty) list. */
export function grouped<T>(ids: readonly string[], rows: T[], key: (r: T) => string): T[][] {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    if (!m.has(k)) m.set(k, []);
    m.get(k)!.push(r);
  }
  return ids.map((id) => m.get(String(id)) ?? []);
}

const VALID_ID = /^[1-9][0-9]{0,18}$/;

/** Rows of one fleet table by id; ids that cannot be database ids are simply not found. */
export async function loadRows(ctx: Context, table: 'beliefs' | 'agents' | 'effects' | 'reversals' | 'retractions' | 'contradictions', ids: readonly string[]) {
  const valid = ids.map(String).filter((id) => VALID_ID.test(id) && BigInt(id) <= 9223372036854775807n);
  if (valid.length === 0) return [];
  return fleetRead(ctx, async (tx) => {
    const q = tx.selectFrom(table as 'effects').selectAll().where('id', 'in', valid);
    return (await q.execute()) as unknown as Array<Record<string, unknown> & { id: string }>;
  });
}

export interface JustificationShape {
  id: string;
  belief_id: string;
  premise_ids: string[];
  holds: boolean;
}

export async function loadJustifications(ctx: Context, beliefIds: readonly string[]): Promise<JustificationShape[][]> {
  const rows = await fleetRead(ctx, async (tx) =>
    (await sql<JustificationShape>`
      SELECT j.id::text AS id, j.belief_id::text AS belief_id,
             array_agg(p.premise_id::text ORDER BY p.premise_id) AS premise_ids,
             bool_and(pb.status = 'ACTIVE') AS holds
        FROM justifications j
        JOIN justification_premises p ON p.justification_id = j.id
        JOIN beliefs pb ON pb.id = p.premise_id
       WHERE j.belief_id = ANY(${ids(beliefIds)}::bigint[])
       GROUP BY j.fleet_id, j.id ORDER BY j.id`.execute(tx)).rows,
  );
  return grouped(beliefIds, rows, (r) => r.belief_id);
}

export async function loadEffectIdsByBelief(ctx: Context, beliefIds: readonly string[]): Promise<string[][]> {
  const rows = await fleetRead(ctx, async (tx) =>
    (await sql<{ belief_id: string; effect_id: string }>`
      SELECT belief_id::text, effect_id::text FROM effect_supports WHERE belief_id = ANY(${ids(beliefIds)}::bigint[]) ORDER BY effect_supports.effect_id`.execute(tx)).rows,
  );
  return grouped(beliefIds, rows, (r) => r.belief_id).map((g) => g.map((r) => r.effect_id));
}

export async function loadSupportIdsByEffect(ctx: Context, effectIds: readonly string[]): Promise<string[][]> {
  const rows = await fleetRead(ctx, async (tx) =>
    (await sql<{ belief_id: string; effect_id: string }>`
      SELECT belief_id::text, effect_id::text FROM effect_supports WHERE effect_id = ANY(${ids(effectIds)}::bigint[]) ORDER BY effect_supports.belief_id`.execute(tx)).rows,
  );
  return grouped(effectIds, rows, (r) => r.effect_id).map((g) => g.map((r) => r.belief_id));
}

export async function loadReversalIdByEffect(ctx: Context, effectIds: readonly string[]): Promise<Array<string | null>> {
  const rows = await fleetRead(ctx, async (tx) =>
    (await sql<{ id: string; effect_id: string }>`
      SELECT id::text, effect_id::text FROM reversals WHERE effect_id = ANY(${ids(effectIds)}::bigint[])`.execute(tx)).rows,
  );
  const m = new Map(rows.map((r) => [r.effect_id, r.id]));
  return effectIds.map((id) => m.get(String(id)) ?? null);
}

const ids = (xs: readonly string[]) => xs.map(String);
