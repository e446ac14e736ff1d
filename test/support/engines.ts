import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import type { Actor, Core } from '../../src/core';
import { LocalEmbedder } from '../../src/embedding/local';
import { type Store, openStore, type EngineName } from '../../src/store/engine';
import { citusUrl, cloneCitusDatabase, dropCitusDatabase, nodeUrl } from './citus';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { checkInvariants } from '../../src/invariants/check';

/**
 * The engines every suite runs on: PGlite always, PostgreSQL when RETRACT_TEST_DATABASE_URL is set, Citus when
 * RETRACT_TEST_CITUS_URL is. RETRACT_TEST_ENGINES (a comma list) narrows that to the ones it names.
 */
export function engines(): EngineName[] {
  const all: EngineName[] = ['pglite'];
  if (process.env.RETRACT_TEST_DATABASE_URL) all.push('postgres');
  if (citusUrl()) all.push('citus');
  const only = process.env.RETRACT_TEST_ENGINES?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return only?.length ? all.filter((e) => only.includes(e)) : all;
}

export interface TestDb {
  store: Store;
  url?: string;
  close(): Promise<void>;
}

/** A fresh, migrated store of the given engine: a PGlite copy in memory, or a new PostgreSQL database cloned from the template. */
export async function testStore(
  engine: EngineName,
  opts: { poolSize?: number; lazyNotifyMs?: number } = {},
): Promise<TestDb> {
  if (engine === 'pglite') {
    const file = inject('pgliteTemplate');
    const store = await openStore({
      dataDir: 'memory://',
      loadDataDir: new Blob([fs.readFileSync(file)]),
      migrate: false,
    });
    return { store, close: () => store.close() };
  }
  if (engine === 'citus') return citusTestStore(opts);
  const base = process.env.RETRACT_TEST_DATABASE_URL!;
  const name = `retract_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  for (let i = 0; ; i++) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
      break;
    } catch (e) {
      // Two files cloning the template at once: "source database is being accessed by other users".
      if (i > 50 || (e as { code?: string }).code !== '55006') throw e;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  await admin.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  const store = await openStore({
    databaseUrl: u.toString(),
    migrate: false,
    poolSize: opts.poolSize ?? 10,
    lazyNotifyMs: opts.lazyNotifyMs,
  });
  return {
    store,
    url: u.toString(),
    async close() {
      await store.close();
      const a = new pg.Client({ connectionString: base });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
    },
  };
}

async function citusTestStore(opts: { poolSize?: number; lazyNotifyMs?: number }): Promise<TestDb> {
  const { template, nodes } = inject('citus');
  const base = citusUrl()!;
  const name = `retract_ct_${process.pid}_${randomBytes(4).toString('hex')}`;
  await cloneCitusDatabase(base, nodes, template, name);
  const url = nodeUrl(base, nodes[0]!, name);
  const store = await openStore({
    databaseUrl: url,
    engine: 'citus',
    migrate: false,
    poolSize: opts.poolSize ?? 10,
    lazyNotifyMs: opts.lazyNotifyMs,
  });
  return {
    store,
    url,
    async close() {
      await store.close();
      await dropCitusDatabase(base, nodes, name);
    },
  };
}

export const embedder = new LocalEmbedder();

export function coreOf(store: Store): Core {
  return { store, embedder };
}

/** An agent with every scope in the given fleet, as an Actor. */
export async function actorIn(
  store: Store,
  fleet: string,
  name = 'agent',
): Promise<Actor & { token: string; operator: boolean }> {
  const { agent, token } = await createAgentDirect(store, {
    fleet,
    name: `${name}-${randomBytes(3).toString('hex')}`,
    scopes: SCOPES,
  });
  return { fleet, agentId: agent.id, token, operator: false };
}

/** Fails the test with the violations when any invariant is broken. */
export async function expectInvariants(store: Store): Promise<void> {
  const v = await checkInvariants(store);
  if (v.length > 0) throw new Error(`invariants violated:\n${JSON.stringify(v, null, 2)}`);
}
