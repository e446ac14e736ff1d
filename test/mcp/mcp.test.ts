import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { assertBelief } from '../../src/belief/belief.service';
import { claimEffect } from '../../src/effect/effect.service';
import { proveReadOnly, readerTx } from '../../src/mcp/reader';
import { retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { createApp, type App } from '../../src/server/app';
import { type EngineName, type Store, openStore } from '../../src/store/engine';
import { inTx } from '../../src/store/tx';
import { coreOf, embedder, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { asserted, passportStory, proposed } from '../support/story';
import { ROOT, TSX_CLI, call, callError, childEnv, httpClient, stdioClient } from './support';

/**
 * The receipt tools, driven by the MCP SDK's own client: over stdio (a real `retract mcp` child
 * process reading the database directly) and over Streamable HTTP (createApp's /mcp). Every figure
 * is checked against the rows themselves; writes through the reader path must fail in the database.
 */

interface World {
  fleet: string;
  retractionId: string;
  ids: {
    passport: string;
    identity: string;
    refundEligible: string;
    kycTier: string;
    forged: string;
    refund: string;
    charge: string;
    payout: string;
    inFlight: string;
  };
  otherPassport: string;
  tokens: { receipts: string; noScope: string; admin: string; otherFleet: string };
}

/** The passport story in fleet acme, retracted, with one refund reached while EXECUTING and a new ACTIVE belief on the claim; and a second fleet. */
async function populate(store: Store): Promise<World> {
  const core = coreOf(store);
  const ops = await createAgentDirect(store, { fleet: 'acme', name: 'ops', scopes: SCOPES });
  const actor = { fleet: 'acme', agentId: ops.agent.id };
  const s = await passportStory(core, actor);
  const inFlight = await proposed(core, actor, 'refund', [s.derived[1]!], 'customer:4411:refund-2', 2_500);
  expect((await claimEffect(core, actor, { kinds: ['refund'] }))?.id).toBe(inFlight.id);
  const { retractionId } = await retractBelief(core, actor, {
    beliefId: s.passport.id,
    reason: 'passport came back forged',
  });
  const forged = asserted(
    await assertBelief(core, actor, {
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is forged',
      value: false,
      evidence: 'forensic report',
    }),
  );

  const otherOps = await createAgentDirect(store, { fleet: 'globex', name: 'ops', scopes: SCOPES });
  const other = await passportStory(core, { fleet: 'globex', agentId: otherOps.agent.id });
  const tok = async (fleet: string, name: string, scopes: string[]) =>
    (await createAgentDirect(store, { fleet, name, scopes })).token;
  return {
    fleet: 'acme',
    retractionId,
    ids: {
      passport: s.passport.id,
      identity: s.derived[0]!.id,
      refundEligible: s.derived[1]!.id,
      kycTier: s.derived[2]!.id,
      forged: forged.id,
      refund: s.refund.id,
      charge: s.charge.id,
      payout: s.pending.id,
      inFlight: inFlight.id,
    },
    otherPassport: other.passport.id,
    tokens: {
      // search_beliefs and explain_belief show ACTIVE beliefs, so checkTools' token also reads beliefs.
      receipts: await tok('acme', 'receipts-reader', ['receipts:read', 'beliefs:read']),
      // Opens no MCP tool: adjudicating contradictions is GraphQL's alone.
      noScope: await tok('acme', 'adjudicator', ['contradictions:adjudicate']),
      admin: await tok('acme', 'admin', ['admin']),
      otherFleet: await tok('globex', 'receipts-reader', ['receipts:read']),
    },
  };
}

/** What the database holds, read through the application path (not the reader), to compare the tools against. */
async function expectedFrom(store: Store, w: World) {
  return inTx(store, { fleet: w.fleet, readOnly: true }, async (tx) => ({
    fallen: await tx
      .selectFrom('beliefs')
      .select(['id', 'claim_key', 'retraction_depth'])
      .where('retraction_id', '=', w.retractionId)
      .orderBy('retraction_depth')
      .orderBy('id')
      .execute(),
    reversals: await tx
      .selectFrom('reversals')
      .select(['id', 'effect_id', 'status', 'idempotency_key', 'amount_minor'])
      .where('retraction_id', '=', w.retractionId)
      .orderBy('id')
      .execute(),
    owed: await tx
      .selectFrom('reversals')
      .select(['id', 'amount_minor'])
      .where('status', 'in', ['OWED', 'DISPATCHED', 'FAILED'])
      .orderBy('id')
      .execute(),
    cancelled: await tx.selectFrom('effects').select('id').where('cancelled_by', '=', w.retractionId).execute(),
    totals: await totalsFor(tx, w.fleet, w.retractionId),
    active: new Set(
      (await tx.selectFrom('beliefs').select('id').where('status', '=', 'ACTIVE').execute()).map((b) => b.id),
    ),
  }));
}
type Expected = Awaited<ReturnType<typeof expectedFrom>>;

/** The same checks over either transport: each tool's answer equals what the database holds. */
async function checkTools(client: Client, db: Expected, w: World) {
  const names = (await client.listTools()).tools.map((t) => t.name).sort();
  // receipts:read and beliefs:read open the receipt tools and the memory tools that only read (the memory graph's three among them); no write tool.
  expect(names).toEqual([
    'as_of',
    'explain_belief',
    'get_receipt',
    'get_reinstatement',
    'list_owed_reversals',
    'open_nodes',
    'preview_retraction',
    'read_graph',
    'recall',
    'search_beliefs',
    'search_nodes',
    'why',
  ]);

  // get_receipt: the newest receipt of the fleet, by default.
  const receipt = await call(client, 'get_receipt');
  expect(receipt.retraction).toMatchObject({
    dbId: w.retractionId,
    id: gid('Retraction', w.retractionId),
    reason: 'passport came back forged',
    actor: { name: 'ops' },
  });
  expect(receipt.retraction.root.dbId).toBe(w.ids.passport);
  expect(receipt.beliefs.totalCount).toBe(db.fallen.length);
  expect(receipt.beliefs.items.map((b: any) => [b.dbId, b.depth])).toEqual(
    db.fallen.map((b) => [b.id, b.retraction_depth]),
  );
  expect(receipt.beliefs.items.map((b: any) => b.depth)).toEqual([0, 1, 1, 2]);
  expect(receipt.cancelledEffects.map((e: any) => e.dbId)).toEqual(db.cancelled.map((e) => e.id));
  expect(receipt.cancelledEffects.map((e: any) => e.dbId)).toEqual([w.ids.payout]);
  expect(receipt.reachedInFlight.map((e: any) => [e.dbId, e.status])).toEqual([[w.ids.inFlight, 'EXECUTING']]);
  expect(
    receipt.reversals.map((r: any) => [r.dbId, r.effect.id, r.status, r.idempotencyKey, r.amount.amountMinor]),
  ).toEqual(
    db.reversals.map((r) => [r.id, gid('Effect', r.effect_id), r.status, r.idempotency_key, Number(r.amount_minor)]),
  );
  const strip = (list: any[]) =>
    list.map(({ amountMinorExact, currency }) => ({ amountMinor: amountMinorExact, currency }));
  expect({
    ...receipt.totals,
    exposure: strip(receipt.totals.exposure),
    owed: strip(receipt.totals.owed),
    unreachableAmount: strip(receipt.totals.unreachableAmount),
    settled: strip(receipt.totals.settled),
  }).toEqual(db.totals);
  expect(receipt.totals.owed[0].formatted).toBe('$1,240.00');
  expect(receipt.totals.unreachableAmount[0].formatted).toBe('$89.00');
  expect(receipt.totals.settled[0].formatted).toBe('$0.00');

  // Named through a dependent it took down, paged two at a time with plain ids.
  const p1 = await call(client, 'get_receipt', { beliefId: gid('Belief', w.ids.kycTier), first: 2 });
  expect(p1.retraction.dbId).toBe(w.retractionId);
  expect(p1.beliefs).toMatchObject({ totalCount: 4, hasNextPage: true });
  const p2 = await call(client, 'get_receipt', { retractionId: w.retractionId, first: 2, after: p1.beliefs.endCursor });
  expect(p2.beliefs.hasNextPage).toBe(false);
  expect([...p1.beliefs.items, ...p2.beliefs.items].map((b: any) => b.dbId)).toEqual(db.fallen.map((b) => b.id));
  expect(await callError(client, 'get_receipt', { beliefId: w.ids.forged })).toMatch(/^NOT_FOUND: .*is ACTIVE/);
  expect(await callError(client, 'get_receipt', { after: 'not-a-cursor' })).toMatch(/^BAD_USER_INPUT: after/);
  expect(await callError(client, 'get_receipt', { first: 0 })).toMatch(/Input validation error/);

  // explain_belief: a dependent two levels down, its lineage, its effects, and the retraction that took it.
  const eligible = await call(client, 'explain_belief', { beliefId: w.ids.refundEligible });
  expect(eligible.belief).toMatchObject({ dbId: w.ids.refundEligible, status: 'RETRACTED', grounded: false });
  expect(eligible.lineage.beliefs.map((b: any) => [b.dbId, b.depth])).toEqual([
    [w.ids.identity, 1],
    [w.ids.passport, 2],
  ]);
  expect(eligible.lineage.justifications.map((j: any) => [j.beliefId, j.holds, j.fallenPremiseIds])).toEqual([
    [gid('Belief', w.ids.refundEligible), false, [gid('Belief', w.ids.identity)]],
    [gid('Belief', w.ids.identity), false, [gid('Belief', w.ids.passport)]],
  ]);
  expect(eligible.dependents.beliefs).toEqual([]);
  expect(eligible.effects.map((e: any) => [e.dbId, e.direct, e.reversal?.status ?? null])).toEqual([
    [w.ids.refund, true, 'OWED'],
    [w.ids.inFlight, true, null],
  ]);
  expect(eligible.retraction).toMatchObject({ dbId: w.retractionId, depth: 2, reason: 'passport came back forged' });
  expect(eligible.retraction.why).toMatch(/depth 2 .*customer:4411\/passport\.authentic/);
  // The root: everything below it and every effect resting on that.
  const root = await call(client, 'explain_belief', { beliefId: gid('Belief', w.ids.passport), maxDepth: 5 });
  expect(root.dependents.beliefs.map((b: any) => [b.dbId, b.depth])).toEqual([
    [w.ids.identity, 1],
    [w.ids.kycTier, 1],
    [w.ids.refundEligible, 2],
  ]);
  expect(root.effects.map((e: any) => e.dbId).sort()).toEqual(
    [w.ids.refund, w.ids.charge, w.ids.payout, w.ids.inFlight].sort(),
  );
  expect(root.effects.every((e: any) => e.direct === false)).toBe(true);
  expect(root.retraction).toMatchObject({ depth: 0 });
  // By claim key: the ACTIVE belief on it now, a premise that stands.
  const now = await call(client, 'explain_belief', { claimKey: 'customer:4411/passport.authentic' });
  expect(now.belief).toMatchObject({ dbId: w.ids.forged, status: 'ACTIVE', grounded: true, value: false });
  expect(now.retraction).toBeNull();
  expect(await callError(client, 'explain_belief', { beliefId: 'not-an-id' })).toMatch(/^BAD_USER_INPUT: beliefId/);
  expect(await callError(client, 'explain_belief', { beliefId: gid('Effect', w.ids.refund) })).toMatch(/^NOT_FOUND/);
  expect(await callError(client, 'explain_belief', {})).toMatch(/^BAD_USER_INPUT/);
  // Another fleet's belief does not exist for this fleet.
  expect(await callError(client, 'explain_belief', { beliefId: w.otherPassport })).toMatch(/^NOT_FOUND: .*not found/);

  // list_owed_reversals: only this fleet's unsettled reversals, with their sum.
  const owed = await call(client, 'list_owed_reversals');
  expect(owed.items.map((r: any) => r.dbId)).toEqual(db.owed.map((r) => r.id));
  expect(owed).toMatchObject({
    totalCount: 1,
    hasNextPage: false,
    owed: [{ amountMinor: 124_000, currency: 'USD', formatted: '$1,240.00' }],
  });
  expect(owed.items[0]).toMatchObject({
    status: 'OWED',
    idempotencyKey: 'reversal:customer:4411:refund-1',
    effect: { kind: 'refund' },
  });
  expect((await call(client, 'list_owed_reversals', { statuses: ['DISPATCHED'] })).totalCount).toBe(0);

  // search_beliefs: ACTIVE only by default; the retracted passport only when asked for.
  const hits = await call(client, 'search_beliefs', { text: 'The passport of customer 4411 is authentic', k: 10 });
  expect(hits.hits.length).toBeGreaterThan(0);
  expect(hits.hits.every((h: any) => h.belief.status === 'ACTIVE' && db.active.has(h.belief.dbId))).toBe(true);
  expect(hits.hits.map((h: any) => h.belief.dbId)).toContain(w.ids.forged);
  expect(hits.snapshot).toEqual(expect.any(String));
  const all = await call(client, 'search_beliefs', {
    text: 'The passport of customer 4411 is authentic',
    includeRetracted: true,
    claimKeyPrefix: 'customer:4411/passport',
  });
  expect(all.hits.map((h: any) => h.belief.dbId).sort()).toEqual([w.ids.passport, w.ids.forged].sort());
  expect(all.hits[0].belief.dbId).toBe(w.ids.passport);
  expect(await callError(client, 'search_beliefs', { text: 'x', claimKeyPrefix: 'bad prefix!' })).toMatch(
    /^BAD_USER_INPUT: claimKeyPrefix/,
  );

  // The text content says the same figures.
  const r = await client.callTool({ name: 'get_receipt', arguments: {} });
  expect((r.content as Array<{ text: string }>)[0]!.text).toMatch(
    /owed \$1,240\.00 \| unreachable \$89\.00 \| settled \$0\.00/,
  );
}

/** A write through the reader path fails in the database: read-only transaction, and a role without write grants. */
async function expectWritesRefused(store: Store, fleet: string, beliefId: string) {
  const code = (p: Promise<unknown>) =>
    p.then(
      () => 'committed',
      (e) => (e as { code?: string }).code ?? String(e),
    );
  expect(
    await code(
      readerTx(store, fleet, (tx) => sql`UPDATE beliefs SET statement = 'tampered' WHERE id = ${beliefId}`.execute(tx)),
    ),
  ).toBe('25006');
  expect(await code(readerTx(store, fleet, (tx) => tx.insertInto('fleets').values({ id: 'intruder' }).execute()))).toBe(
    '25006',
  );
  // Even a statement that switches role inside the transaction stays read-only.
  expect(
    await code(
      readerTx(store, fleet, async (tx) => {
        await sql`SET LOCAL ROLE retract_app`.execute(tx);
        await sql`DELETE FROM adjudication_leases`.execute(tx);
      }),
    ),
  ).toBe('25006');
  expect(
    await code(
      readerTx(store, fleet, async (tx) => {
        await sql`SELECT 1`.execute(tx);
        await sql`SET TRANSACTION READ WRITE`.execute(tx);
      }),
    ),
  ).toBe('25001');
  // And the role itself: in a transaction that is not read-only, retract_reader may not write.
  expect(
    await code(
      inTx(store, { fleet, role: 'retract_reader' }, (tx) =>
        sql`UPDATE beliefs SET statement = 'tampered' WHERE id = ${beliefId}`.execute(tx),
      ),
    ),
  ).toBe('42501');
  expect(
    await code(
      inTx(store, { fleet, role: 'retract_reader' }, (tx) =>
        sql`INSERT INTO store_meta (key, value) VALUES ('x', 'y')`.execute(tx),
      ),
    ),
  ).toBe('42501');
  const stmt = await inTx(store, { fleet, readOnly: true }, (tx) =>
    tx.selectFrom('beliefs').select('statement').where('id', '=', beliefId).executeTakeFirstOrThrow(),
  );
  expect(stmt.statement).not.toBe('tampered');
  expect(await proveReadOnly(store)).toEqual({ refusedWith: '25006', writableTables: [] });
  // retract_reader can read every table the tools read, and write none.
  const grants = await sql<{ t: string; sel: boolean; w: boolean }>`
    SELECT c.relname AS t, has_table_privilege('retract_reader', c.oid, 'SELECT') AS sel,
           has_table_privilege('retract_reader', c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE') AS w
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`.execute(
    store.db,
  );
  for (const t of [
    'agents',
    'beliefs',
    'justifications',
    'justification_premises',
    'effects',
    'effect_supports',
    'reversals',
    'retractions',
    'store_meta',
    'fleets',
  ]) {
    expect(grants.rows.find((g) => g.t === t)?.sel, t).toBe(true);
  }
  expect(grants.rows.filter((g) => g.w).map((g) => g.t)).toEqual([]);
}

/** Runs `retract mcp` and waits for it to exit; for the refusals that happen before any protocol. */
function runMcp(
  env: Record<string, string>,
  input = '',
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX_CLI, 'src/cli/main.ts', 'mcp'], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input);
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d) => (stdout += d));
    child.on('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

const silent = pino({ level: 'silent' });

describe.each(engines())('MCP receipt tools on %s', { timeout: 240_000 }, (engine: EngineName) => {
  let t: TestDb | null = null;
  let dir: string | null = null;
  let store: Store;
  let world: World;
  let expected: Expected;
  let storeEnv: Record<string, string>;
  let app: App;

  beforeAll(async () => {
    if (engine === 'pglite') {
      // A data directory on disk that no server holds: the stdio child opens it itself.
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-mcp-'));
      const s = await openStore({
        dataDir: dir,
        loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]),
        migrate: false,
      });
      world = await populate(s);
      expected = await expectedFrom(s, world);
      await s.close();
      storeEnv = { RETRACT_DATA_DIR: dir };
    } else {
      t = await testStore(engine);
      world = await populate(t.store);
      expected = await expectedFrom(t.store, world);
      storeEnv = { DATABASE_URL: t.url! };
    }
  });

  afterAll(async () => {
    await app?.close();
    if (dir) await store?.close();
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('over stdio (`retract mcp`): every tool answers what the database holds, through a connection that cannot write', async () => {
    const session = await stdioClient({ ...storeEnv, RETRACT_TOKEN: world.tokens.receipts });
    try {
      // The child proved read-only-ness against the database before serving.
      expect(session.stderr()).toMatch(
        /serving get_receipt, .*search_beliefs, .*why.* for agent receipts-reader \(fleet acme\)/,
      );
      expect(session.stderr()).toMatch(
        /a write was refused with SQLSTATE 25006; retract_reader holds no write privilege/,
      );
      await checkTools(session.client, expected, world);
    } finally {
      await session.close();
    }
  });

  it('over stdio: a token that opens no tool, an unknown token, or none is refused with a clear reason', async () => {
    const [noScope, unknown, none] = await Promise.all([
      runMcp({ ...storeEnv, RETRACT_TOKEN: world.tokens.noScope }),
      engine === 'postgres' ? runMcp({ ...storeEnv, RETRACT_TOKEN: 'rt_not-a-real-token-at-all' }) : null,
      runMcp({ ...storeEnv }),
    ]);
    expect(noScope.code).toBe(2);
    expect(noScope.stderr).toMatch(
      /agent adjudicator \(fleet acme\) holds none of the scopes that open an MCP tool \(receipts:read, .*beliefs:write.*\)/,
    );
    expect(noScope.stdout).toBe('');
    if (unknown) {
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/RETRACT_TOKEN does not belong to any agent/);
    }
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/RETRACT_TOKEN is required/);
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('over stdio, piped: requests written before the input ends are all answered, then it exits 0', async () => {
    const lines = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sh', version: '1' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_owed_reversals', arguments: {} } },
    ]
      .map((m) => JSON.stringify(m))
      .join('\n');
    const r = await runMcp({ ...storeEnv, RETRACT_TOKEN: world.tokens.receipts }, `${lines}\n`);
    expect(r.code, r.stderr).toBe(0);
    const answers = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(answers.map((a) => a.id)).toEqual([1, 2]);
    expect(answers[1].result.structuredContent.owed).toEqual([
      {
        amountMinor: 124_000,
        amountMinorExact: '124000',
        amountMinorCapped: false,
        currency: 'USD',
        formatted: '$1,240.00',
      },
    ]);
  });

  it('over Streamable HTTP at /mcp: the same answers, the same refusals, and writes through its path fail in the database', async () => {
    store = dir ? await openStore({ dataDir: dir, migrate: false }) : t!.store;
    app = await createApp({ config: { port: 0, host: '127.0.0.1' }, store, embedder, logger: silent });
    await app.listen();
    const url = `${app.url()}/mcp`;

    const client = await httpClient(url, world.tokens.receipts);
    try {
      await checkTools(client, expected, world);
    } finally {
      await client.close();
    }
    // admin implies receipts:read; another fleet's reader sees only its own receipts.
    const admin = await httpClient(url, world.tokens.admin);
    expect((await call(admin, 'get_receipt')).retraction.dbId).toBe(world.retractionId);
    await admin.close();
    const other = await httpClient(url, world.tokens.otherFleet);
    expect(await callError(other, 'get_receipt', {})).toMatch(/^NOT_FOUND: fleet globex has no retractions yet/);
    expect(await callError(other, 'get_receipt', { retractionId: world.retractionId })).toMatch(/^NOT_FOUND/);
    expect((await call(other, 'list_owed_reversals')).totalCount).toBe(0);
    await other.close();

    await expect(httpClient(url, world.tokens.noScope)).rejects.toThrow(
      /holds none of the scopes that open an MCP tool/,
    );
    await expect(httpClient(url, 'rt_not-a-real-token-at-all')).rejects.toThrow(/the bearer token is not valid/);
    await expect(httpClient(url, null)).rejects.toThrow(/a bearer token is required/);
    const get = await fetch(url, { headers: { authorization: `Bearer ${world.tokens.receipts}` } });
    expect(get.status).toBe(405);

    await expectWritesRefused(store, world.fleet, world.ids.passport);
    await expectInvariants(store);
  });

  it.runIf(engine === 'pglite')(
    'stdio on a data directory a server holds: says it cannot and points at /mcp, exits non-zero',
    async () => {
      expect(app).toBeDefined();
      const r = await runMcp({ ...storeEnv, RETRACT_TOKEN: world.tokens.receipts });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot open .*: process \d+ \(a running RETRACT server\?\) holds it/);
      expect(r.stderr).toMatch(/\/mcp with the header "Authorization: Bearer <token>"/);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    },
  );
});
