import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { sql } from 'kysely';
import type { EngineName, Store } from '../../src/store/engine';
import type { Actor, Core } from '../../src/core';
import { actorIn, coreOf, type TestDb, testStore } from './engines';
import { DomainError, type DomainErrorCode } from '../../src/errors/domain-error';
import { inTx } from '../../src/store/tx';
import { registerEffectKind } from '../../src/effect/effect.service';

/**
 * Whole-store snapshots for the core suites: every row of every table in the schema (found in the
 * catalog, so a table a later migration adds is covered too), as the database's own JSON text
 * (row_to_json: a vector is its text form, a timestamp keeps its microseconds), read on the owner
 * connection with row security off so no fleet is hidden. Comparing two snapshots proves "nothing
 * else changed" byte for byte.
 */
/**
 * table → (primary key → the row's JSON text). A table without a primary key is keyed by the row itself; a key of
 * fleet_id and row ids by the ids alone.
 */
export type Dump = Record<string, Map<string, string>>;

/** Every row of every table, keyed by primary key, as JSON text. */
export async function dump(store: Store): Promise<Dump> {
  return store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      const tables = await sql<{ name: string; pk: string[] | null; ids: boolean | null }>`
      SELECT c.relname AS name,
             (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM pg_index i
                CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
               WHERE i.indrelid = c.oid AND i.indisprimary) AS pk,
             (SELECT bool_and(a.atttypid = 'int8'::regtype) FROM pg_index i
                CROSS JOIN LATERAL unnest(i.indkey::int2[]) AS k(attnum)
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
               WHERE i.indrelid = c.oid AND i.indisprimary AND a.attname <> 'fleet_id') AS ids
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
       ORDER BY c.relname`.execute(tx);
      const out: Dump = {};
      for (const { name, pk: fullKey, ids } of tables.rows) {
        // Keys made of row ids (unique across fleets: one identity per table) are given without their fleet.
        const pk = fullKey && ids ? fullKey.filter((c) => c !== 'fleet_id') : fullKey;
        const key = pk ? sql.join(pk.map((c) => sql.ref(`t.${c}`))) : sql`row_to_json(t)::text`;
        const r = await sql<{ k: string; j: string }>`
        SELECT concat_ws('|', ${key}) AS k, row_to_json(t)::text AS j FROM ${sql.table(name)} t ORDER BY ${key}`.execute(
          tx,
        );
        out[name] = new Map(r.rows.map((row) => [row.k, row.j]));
      }
      return out;
    });
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
  for (const table of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const b = before[table] ?? new Map<string, string>();
    const a = after[table] ?? new Map<string, string>();
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
export function summary(
  d: Record<string, TableDiff>,
): Record<string, { added: string[]; removed: string[]; changed: string[] }> {
  return Object.fromEntries(
    Object.entries(d).map(([t, x]) => [
      t,
      { added: [...x.added.keys()], removed: x.removed, changed: [...x.changed.keys()] },
    ]),
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

const fileStores = new Map<EngineName, Promise<TestDb>>();

/**
 * One fresh store per engine for the whole test file (each file runs in its own module scope), so
 * the suites in one file share the cost of opening it. Suites sharing it use their own fleets and
 * run one after another. Call `closeFileStores` from a top-level afterAll.
 */
export function fileStore(engine: EngineName): Promise<TestDb> {
  let s = fileStores.get(engine);
  if (!s) {
    s = testStore(engine);
    fileStores.set(engine, s);
  }
  return s;
}

/** Closes every store fileStore opened in this file. */
export async function closeFileStores(): Promise<void> {
  const all = [...fileStores.values()];
  fileStores.clear();
  for (const s of all) await (await s).close();
}

/** What a per-engine suite works on: its store, the core over it, and (asked for by fleet) an agent of every scope. */
export interface SuiteStore {
  t: TestDb;
  core: Core;
}
type SuiteActor = Actor & { token: string; operator: boolean };

/** How a per-engine suite's store is set up (see storeSuite). */
export interface SuiteOptions {
  /** The file's shared store (see fileStore) instead of the suite's own. */
  shared?: boolean;
  /** A fresh store of the suite's own before each test, closed after it (not with `shared`). */
  each?: boolean;
  /** The fleet the suite's agents are made in, each with every scope. */
  fleet?: string;
  /** The agents' names, in `fleet` (default one, `agent`): `actor` is the first, `agents` holds them all by name. */
  agents?: readonly string[];
  /** Effect kinds `actor` registers before the tests. */
  kinds?: ReadonlyArray<{ kind: string; reversible: boolean }>;
}
type WithActor = SuiteStore & { actor: SuiteActor; agents: Record<string, SuiteActor> };

/**
 * The set-up every per-engine suite repeated: before its tests (or, with `each`, before each test), a store of
 * `engine` (the file's shared one with `shared`, see fileStore; else its own, closed after the suite or the test), the
 * core over it and, given a `fleet`, its agents (each with every scope in it) and the effect kinds it registers.
 * `take` receives them in the suite's beforeAll (or beforeEach), so its tests read them as they did; whatever else the
 * suite sets up it does in `take` (awaited), after them.
 */
export function storeSuite(
  engine: EngineName,
  opts: SuiteOptions & { fleet: string },
  take: (s: WithActor) => unknown,
): void;
export function storeSuite(engine: EngineName, opts: SuiteOptions, take: (s: SuiteStore) => unknown): void;
export function storeSuite(
  engine: EngineName,
  opts: SuiteOptions,
  take: ((s: WithActor) => unknown) | ((s: SuiteStore) => unknown),
): void {
  let own: TestDb | undefined;
  const before = opts.each ? beforeEach : beforeAll;
  const after = opts.each ? afterEach : afterAll;
  before(async () => {
    const t = opts.shared ? await fileStore(engine) : (own = await testStore(engine));
    const core = coreOf(t.store);
    const agents: Record<string, SuiteActor> = {};
    if (opts.fleet)
      for (const name of opts.agents ?? ['agent']) agents[name] = await actorIn(t.store, opts.fleet, name);
    const actor = Object.values(agents)[0];
    for (const k of opts.kinds ?? []) await registerEffectKind(core, actor!, k);
    // The overloads tie `fleet` to `actor`: with a fleet, take is the one that reads it.
    await (take as (s: SuiteStore & Partial<WithActor>) => unknown)({ t, core, actor, agents });
  });
  after(async () => {
    await own?.close();
    own = undefined;
  });
}
