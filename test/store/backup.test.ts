import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core';
import { retractBelief } from '../../src/retraction/retraction.service';
import { readReceipt } from '../../src/retraction/receipt';
import { backupDataDir, restoreDataDir } from '../../src/store/backup';
import { type Store, openStore } from '../../src/store/engine';
import { subscribeWs } from '../support/api-client';
import { startApiServer } from '../support/api-server';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../support/engines';
import { read } from '../support/helpers';
import { passportStory } from '../support/story';

/**
 * Backup and restore (docs/backup.md), on each engine with its own tool: PGlite's dump through
 * src/store/backup.ts, PostgreSQL's pg_dump / pg_restore binaries into a fresh database. Each backs up
 * a store with a retraction, writes more (a second retraction a subscriber sees), restores, and checks
 * what an operator relies on: the invariants, the receipt as it was, the later retraction gone, and the
 * subscriber's cursor from after the backup refused by name rather than resumed past missing events.
 */

const PG_BIN = '/usr/lib/postgresql/15/bin';
const run = promisify(execFile);
const temps: string[] = [];
afterAll(() => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-backup-'));
  temps.push(d);
  return d;
}

const FLEET = 'backup';
const EVENTS = 'subscription($after: String) { retractionEvents(after: $after) { __typename cursor } }';

/** The receipt of a retraction, with its totals checked against its own rows. */
async function receiptOf(store: Store, retractionId: string) {
  const r = (await read(store, FLEET, (tx) => readReceipt(tx, FLEET, retractionId, 1000, null)))!;
  expect(r.totals.beliefsRetracted).toBe(r.beliefs.items.length);
  expect(r.totals.effectsCancelled).toBe(r.cancelledEffects.length);
  expect(r.totals.effectsReached).toBe(r.reversals.length);
  return {
    totals: r.totals,
    beliefs: r.beliefs.items.map((b) => b.id),
    reversals: r.reversals.map((x) => [x.id, x.status]),
  };
}

/** The story and its retraction: what the backup holds. */
async function before(store: Store) {
  const actor = await actorIn(store, FLEET);
  const story = await passportStory(coreOf(store), actor);
  const { retractionId } = await retractBelief(coreOf(store), actor, { beliefId: story.passport.id, reason: 'forged' });
  await expectInvariants(store);
  const receipt = await receiptOf(store, retractionId);
  expect(receipt.totals.owed).toEqual([{ amountMinor: '124000', currency: 'USD' }]);
  expect(receipt.totals.unreachableAmount).toEqual([{ amountMinor: '8900', currency: 'USD' }]);
  return { actor, retractionId, receipt };
}

/** After the backup: a second retraction, seen by a subscriber; returns the cursor of its last event. */
async function after(db: TestDb, actor: Actor & { token: string }): Promise<string> {
  const server = await startApiServer(db.store.engine, { db });
  try {
    const sub = subscribeWs(server.ws, EVENTS, {}, actor.token);
    await sub.connected;
    await new Promise((r) => setTimeout(r, 300));
    const story = await passportStory(server.core, actor, 'customer:5522');
    await retractBelief(server.core, actor, { beliefId: story.passport.id, reason: 'also forged' });
    await sub.until(
      (c) => c.events.some((e) => e.retractionEvents.__typename === 'RetractionCommitted'),
      20_000,
      "the later retraction's commit",
    );
    await sub.close();
    await expectInvariants(db.store);
    return sub.events.at(-1)!.retractionEvents.cursor as string;
  } finally {
    await server.close();
  }
}

/** The restored store: invariants, the one retraction and its receipt as backed up, the later cursor refused. */
async function restored(
  db: TestDb,
  actor: Actor & { token: string },
  was: Awaited<ReturnType<typeof before>>,
  cursor: string,
): Promise<void> {
  const store = db.store;
  await expectInvariants(store);
  const ids = await read(store, FLEET, (tx) =>
    tx.selectFrom('retractions').select('id').where('fleet_id', '=', FLEET).execute(),
  );
  expect(ids.map((r) => r.id)).toEqual([was.retractionId]);
  expect(await receiptOf(store, was.retractionId)).toEqual(was.receipt);
  // Carry the transaction counter past the cursor's transaction, without writing an event: the cursor
  // is then neither ahead of this database nor a row of its log.
  const tx = BigInt(Buffer.from(cursor, 'base64url').toString().split(':')[1]!);
  for (let i = 0; i < 10_000; i++) {
    const xmax = await sql<{ x: string }>`SELECT pg_current_xact_id()::text AS x`.execute(store.db);
    if (BigInt(xmax.rows[0]!.x) > tx + 1n) break;
  }
  const server = await startApiServer(store.engine, { db });
  try {
    const sub = subscribeWs(server.ws, EVENTS, { after: cursor }, actor.token);
    await sub.until((c) => c.errors.length > 0 || c.completed, 10_000, 'a refusal of the cursor');
    expect(sub.errors.map((e) => [e.extensions?.code, e.extensions?.field])).toEqual([['BAD_USER_INPUT', 'after']]);
    expect(sub.errors[0]!.message).toMatch(
      /^after: names event .* which this fleet's log does not hold \(a cursor from before a restore/,
    );
    await sub.close();
    // Without the cursor, the subscriber starts from now and sees the next retraction.
    const fresh = subscribeWs(server.ws, EVENTS, {}, actor.token);
    await fresh.connected;
    await new Promise((r) => setTimeout(r, 300));
    const story = await passportStory(server.core, actor, 'customer:6633');
    await retractBelief(server.core, actor, { beliefId: story.passport.id, reason: 'forged again' });
    await fresh.until((c) => c.events.length > 0, 20_000, 'a retraction after the restore');
    expect(fresh.errors).toEqual([]);
    await fresh.close();
    await expectInvariants(store);
  } finally {
    await server.close();
  }
}

describe('backup and restore', { timeout: 180_000 }, () => {
  it('pglite: retract backup / retract restore (the data directory dump)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'store.tar.gz');
    const dataDir = path.join(dir, 'data');
    const open = async (): Promise<TestDb> => {
      const store = await openStore({ dataDir, maintenanceMs: 0 });
      return { store, close: () => store.close() };
    };
    let db = await open();
    const was = await before(db.store);
    // (A store open in another process is refused: test/cli/backup.test.ts.)
    await db.close();
    await backupDataDir(dataDir, file);

    db = await open();
    const cursor = await after(db, was.actor);
    await db.close();

    await expect(restoreDataDir(file, dataDir)).rejects.toThrow(/already holds a store; pass --replace/);
    const { keptAside } = await restoreDataDir(file, dataDir, { replace: true });
    expect(keptAside && fs.existsSync(path.join(keptAside, 'PG_VERSION'))).toBe(true);
    db = await open();
    try {
      await restored(db, was.actor, was, cursor);
    } finally {
      await db.close();
    }
  });

  it.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)(
    'postgres: pg_dump -Fc, then pg_restore into a fresh database (skipped without RETRACT_TEST_DATABASE_URL)',
    async () => {
      const file = path.join(tempDir(), 'store.dump');
      const source = await testStore('postgres');
      let target: TestDb | null = null;
      const base = process.env.RETRACT_TEST_DATABASE_URL!;
      const name = `retract_restored_${process.pid}_${randomBytes(4).toString('hex')}`;
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      try {
        const was = await before(source.store);
        await run(`${PG_BIN}/pg_dump`, ['--format=custom', `--file=${file}`, source.url!]);
        const cursor = await after(source, was.actor);

        await admin.query(`CREATE DATABASE ${name} TEMPLATE template0`);
        const url = new URL(base);
        url.pathname = `/${name}`;
        await run(`${PG_BIN}/pg_restore`, ['--exit-on-error', `--dbname=${url}`, file]);
        const store = await openStore({ databaseUrl: url.toString() });
        target = { store, url: url.toString(), close: () => store.close() };
        // The restored database shares the server's transaction counter, so the cursor is not ahead of
        // it: only its absence from the log tells it apart.
        await restored(target, was.actor, was, cursor);
      } finally {
        await target?.close();
        await source.close();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
        await admin.end();
      }
    },
  );
});
