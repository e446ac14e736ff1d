import { expect } from 'vitest';
import { sql } from 'kysely';
import type { Store } from '../../src/store/engine';
import { DomainError, type DomainErrorCode } from '../../src/errors/domain-error';
import { inTx } from '../../src/store/tx';

/**
 * Whole-store snapshots for the core suites: every row of every table, as the database's own JSON
 * text (row_to_json, so a vector is its text form and a timestamp keeps its microseconds), read on
 * the owner connection with row security off so no fleet is hidden. Comparing two snapshots proves
 * "nothing else changed" byte for byte.
 */
export const TABLES: Record<string, string[]> = {
  kysely_migration: ['name'],
  store_meta: ['key'],
  fleets: ['id'],
  agents: ['id'],
  claims: ['fleet_id', 'key'],
  retractions: ['id'],
  beliefs: ['id'],
  justifications: ['id'],
  justification_premises: ['justification_id', 'premise_id'],
  effect_kinds: ['fleet_id', 'kind'],
  effects: ['id'],
  effect_supports: ['effect_id', 'belief_id'],
  reversals: ['id'],
  contradictions: ['id'],
  adjudication_leases: ['fleet_id', 'claim_key'],
  events: ['seq'],
};

/** table → (primary key → the row's JSON text). */
export type Dump = Record<string, Map<string, string>>;

/** Every row of every table, keyed by primary key, as JSON text. */
export async function dump(store: Store): Promise<Dump> {
  return store.db.transaction().setIsolationLevel('repeatable read').execute(async (tx) => {
    await sql`SET LOCAL row_security = off`.execute(tx);
    const out: Dump = {};
    for (const [table, pk] of Object.entries(TABLES)) {
      const r = await sql<{ k: string; j: string }>`
        SELECT concat_ws('|', ${sql.join(pk.map((c) => sql.ref(`t.${c}`)))}) AS k, row_to_json(t)::text AS j
          FROM ${sql.table(table)} t ORDER BY ${sql.join(pk.map((c) => sql.ref(`t.${c}`)))}`.execute(tx);
      out[table] = new Map(r.rows.map((row) => [row.k, row.j]));
    }
    return out;
  });
}

/** Rows per table. */
export function counts(d: Dump): Record<string, number> {
  return Object.fromEntries(Object.entries(d).map(([t, m]) => [t, m.size]));
}

export interface TableDiff {
  added: Map<string, Record<string, unknown>>;
  removed: string[];
  /** key → { before, after } parsed rows. */
  changed: Map<string, { before: Record<string, unknown>; after: Record<string, unknown> }>;
}

/** What differs between two dumps, table by table (only tables with a difference are listed). */
export function diff(before: Dump, after: Dump): Record<string, TableDiff> {
  const out: Record<string, TableDiff> = {};
  for (const table of Object.keys(TABLES)) {
    const b = before[table]!;
    const a = after[table]!;
    const d: TableDiff = { added: new Map(), removed: [], changed: new Map() };
    for (const [k, j] of a) {
      const old = b.get(k);
      if (old === undefined) d.added.set(k, JSON.parse(j));
      else if (old !== j) d.changed.set(k, { before: JSON.parse(old), after: JSON.parse(j) });
    }
    for (const k of b.keys()) if (!a.has(k)) d.removed.push(k);
    if (d.added.size || d.removed.length || d.changed.size) out[table] = d;
  }
  return out;
}

/** Fails unless the store is byte-for-byte what `before` was. */
export async function expectUnchanged(store: Store, before: Dump): Promise<void> {
  const d = diff(before, await dump(store));
  expect(summary(d)).toEqual({});
}

/** A readable summary of a diff: table → { added, removed, changed } keys. */
export function summary(d: Record<string, TableDiff>): Record<string, { added: string[]; removed: string[]; changed: string[] }> {
  return Object.fromEntries(
    Object.entries(d).map(([t, x]) => [t, { added: [...x.added.keys()], removed: x.removed, changed: [...x.changed.keys()] }]),
  );
}

/** The columns whose values differ between two parsed rows. */
export function changedColumns(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  return Object.keys(after)
    .filter((c) => JSON.stringify(before[c]) !== JSON.stringify(after[c]))
    .sort();
}

/** Awaits `p`, expects a DomainError with this code (and field, when given), and returns it. */
export async function domainError(p: Promise<unknown>, code: DomainErrorCode, field?: string): Promise<DomainError> {
  let caught: unknown;
  try {
    await p;
  } catch (e) {
    caught = e;
  }
  expect(caught, 'expected a DomainError').toBeInstanceOf(DomainError);
  const e = caught as DomainError;
  expect({ code: e.code, field: e.field }).toEqual({ code, field });
  if (field) expect(e.message).toContain(field);
  return e;
}

/** Runs a read in one fleet's snapshot. */
export function read<T>(store: Store, fleet: string, fn: Parameters<typeof inTx<T>>[2]): Promise<T> {
  return inTx(store, { fleet, readOnly: true }, fn);
}
