import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { registerEffectKind } from '../../src/effect/effect.service';
import { gid } from '../../src/kernel/ids';
import { createApp, type App } from '../../src/server/app';
import { type EngineName, type Store, openStore } from '../../src/store/engine';
import { writableTables } from '../../src/store/privileges';
import { inTx } from '../../src/store/tx';
import { coreOf, embedder, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { call, httpClient, stdioClient } from './support';

/**
 * The memory tools, through the MCP SDK's own client over stdio (`retract mcp`, a child process) and
 * Streamable HTTP (the server's /mcp): an agent remembers a premise and what it derives from it,
 * proposes an effect on it, recalls, asks why, previews and retracts the premise (the cascade takes the
 * derived beliefs and cancels the effect), reads what it believed before, and reinstates. A read-only
 * token sees only the read tools and is refused every write, with nothing written.
 */

const WRITE_TOOLS = ['propose_effect', 'reinstate', 'remember', 'retract'];
const MEMORY_TOOLS = [
  'as_of',
  'preview_retraction',
  'propose_effect',
  'recall',
  'reinstate',
  'remember',
  'retract',
  'why',
];

interface Tokens {
  writer: string;
  readOnly: string;
  writeOnly: string;
}

async function setup(store: Store): Promise<Tokens> {
  const ops = await createAgentDirect(store, { fleet: 'acme', name: 'ops', scopes: ['admin'] });
  await registerEffectKind(
    coreOf(store),
    { fleet: 'acme', agentId: ops.agent.id },
    { kind: 'refund', reversible: true },
  );
  const tok = async (name: string, scopes: string[]) =>
    (await createAgentDirect(store, { fleet: 'acme', name, scopes })).token;
  return {
    writer: await tok('memory-agent', [
      'beliefs:read',
      'beliefs:write',
      'beliefs:retract',
      'effects:propose',
      'receipts:read',
    ]),
    readOnly: await tok('auditor', ['beliefs:read', 'receipts:read']),
    writeOnly: await tok('scribe', ['beliefs:write']),
  };
}

async function counts(store: Store) {
  return inTx(store, { fleet: 'acme', readOnly: true }, async (tx) => ({
    beliefs: Number(
      (
        await tx
          .selectFrom('beliefs')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    effects: Number(
      (
        await tx
          .selectFrom('effects')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    retractions: Number(
      (
        await tx
          .selectFrom('retractions')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
    reinstatements: Number(
      (
        await tx
          .selectFrom('reinstatements')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
  }));
}

/** Calls a tool that must fail; returns the whole result (isError, text, _meta). */
async function refused(client: Client, name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  expect(r.isError, `${name} should have been refused`).toBe(true);
  return { text: (r.content as Array<{ text: string }>)[0]!.text, meta: r._meta as Record<string, string> | undefined };
}

/** The whole memory story over one client; `p` keeps claim keys apart between runs. */
async function memoryStory(client: Client, p: string) {
  const tools = (await client.listTools()).tools;
  expect(
    tools
      .map((t) => t.name)
      .filter((n) => MEMORY_TOOLS.includes(n))
      .sort(),
  ).toEqual(MEMORY_TOOLS);
  const ann = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
  expect(ann.retract).toMatchObject({
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: true,
    openWorldHint: false,
  });
  expect(ann.remember).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
  expect(ann.reinstate).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
  expect(ann.propose_effect).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: true });
  for (const n of ['recall', 'why', 'as_of', 'preview_retraction'])
    expect(ann[n], n).toMatchObject({ readOnlyHint: true, destructiveHint: false });
  for (const t of tools) expect(t.outputSchema, `${t.name} declares an output schema`).toBeDefined();

  const passport = await call(client, 'remember', {
    claimKey: `${p}/passport.authentic`,
    statement: `The passport of ${p} is authentic`,
    value: true,
    evidence: 'document check #A-77',
  });
  expect(passport).toMatchObject({
    outcome: 'ASSERTED',
    belief: { status: 'ACTIVE', grounded: true, evidence: 'document check #A-77', value: true },
  });
  // Premises named by plain numeric id (a number) and by global id.
  const identity = await call(client, 'remember', {
    claimKey: `${p}/identity.verified`,
    statement: `The identity of ${p} is verified`,
    value: true,
    derivedFrom: [Number(passport.belief.dbId)],
  });
  expect(identity).toMatchObject({ outcome: 'ASSERTED', belief: { grounded: false } });
  const eligible = await call(client, 'remember', {
    claimKey: `${p}/refund.eligible`,
    statement: `${p} may be refunded`,
    value: { upTo: 124_000 },
    derivedFrom: [identity.belief.id],
  });
  const again = await call(client, 'remember', {
    claimKey: `${p}/refund.eligible`,
    statement: `${p} may be refunded`,
    value: { upTo: 124_000 },
    derivedFrom: [identity.belief.dbId],
  });
  expect(again).toMatchObject({ outcome: 'CORROBORATED', belief: { id: eligible.belief.id } });
  const other = await call(client, 'remember', {
    claimKey: `${p}/refund.eligible`,
    statement: `${p} may not be refunded`,
    value: false,
  });
  expect(other).toMatchObject({ outcome: 'CONTRADICTION', belief: null });
  expect(other.contradictionId).toEqual(expect.any(String));

  const refund = await call(client, 'propose_effect', {
    kind: 'refund',
    amount: { amountMinor: 124_000, currency: 'USD' },
    supportedBy: [Number(eligible.belief.dbId)],
    idempotencyKey: `${p}:refund-1`,
  });
  expect(refund).toMatchObject({
    outcome: 'PROPOSED',
    created: true,
    effect: { status: 'PENDING', amount: { formatted: '$1,240.00' } },
  });
  const refundAgain = await call(client, 'propose_effect', {
    kind: 'refund',
    amount: { amountMinor: 124_000, currency: 'USD' },
    supportedBy: [eligible.belief.id],
    idempotencyKey: `${p}:refund-1`,
  });
  expect(refundAgain).toMatchObject({ created: false, effect: { id: refund.effect.id } });
  const conflict = await refused(client, 'propose_effect', {
    kind: 'refund',
    amount: { amountMinor: 1, currency: 'USD' },
    supportedBy: [eligible.belief.id],
    idempotencyKey: `${p}:refund-1`,
  });
  expect(conflict.text).toMatch(/^CONFLICT: /);
  expect(conflict.meta?.code).toBe('CONFLICT');

  const recalled = await call(client, 'recall', { text: `passport of ${p}`, claimKeyPrefix: p });
  expect(recalled.hits.map((h: any) => h.belief.id)).toContain(passport.belief.id);
  const why = await call(client, 'why', { beliefId: Number(eligible.belief.dbId) });
  expect(why.lineage.beliefs.map((b: any) => [b.id, b.depth])).toEqual([
    [identity.belief.id, 1],
    [passport.belief.id, 2],
  ]);
  expect(why.lineage.justifications.every((j: any) => j.holds)).toBe(true);
  expect(why.effects.map((e: any) => e.id)).toEqual([refund.effect.id]);

  const preview = await call(client, 'preview_retraction', { beliefId: passport.belief.dbId });
  expect(preview.beliefs.items.map((b: any) => [b.id, b.depth])).toEqual([
    [passport.belief.id, 0],
    [identity.belief.id, 1],
    [eligible.belief.id, 2],
  ]);
  expect(preview.pendingEffects.map((e: any) => e.id)).toEqual([refund.effect.id]);
  expect(preview.totals).toMatchObject({ beliefsRetracted: 3, effectsCancelled: 1 });
  const before = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 5));
  expect((await call(client, 'why', { beliefId: passport.belief.id })).belief.status).toBe('ACTIVE');

  const receipt = await call(client, 'retract', {
    beliefId: Number(passport.belief.dbId),
    reason: 'the passport came back forged',
  });
  expect(receipt).toMatchObject({
    alreadyRetracted: false,
    retraction: { reason: 'the passport came back forged', root: { id: passport.belief.id, status: 'RETRACTED' } },
  });
  expect(receipt.beliefs.items.map((b: any) => b.id)).toEqual([
    passport.belief.id,
    identity.belief.id,
    eligible.belief.id,
  ]);
  expect(receipt.cancelledEffects.map((e: any) => [e.id, e.status])).toEqual([[refund.effect.id, 'CANCELLED']]);
  expect((await call(client, 'retract', { beliefId: passport.belief.id, reason: 'again' })).alreadyRetracted).toBe(
    true,
  );
  // Old tools take numeric ids too.
  expect((await call(client, 'get_receipt', { retractionId: Number(receipt.retraction.dbId) })).retraction.id).toBe(
    receipt.retraction.id,
  );
  const fallen = await call(client, 'remember', {
    claimKey: `${p}/refund.approved`,
    statement: 'approved',
    derivedFrom: [eligible.belief.id],
  });
  expect(fallen).toMatchObject({
    outcome: 'PREMISE_RETRACTED',
    premise: { id: eligible.belief.id, status: 'RETRACTED' },
  });

  const then = await call(client, 'as_of', { at: before, claimKeyPrefix: p });
  expect(then.items.map((b: any) => [b.id, b.status, b.statusNow])).toEqual([
    [eligible.belief.id, 'ACTIVE', 'RETRACTED'],
    [identity.belief.id, 'ACTIVE', 'RETRACTED'],
    [passport.belief.id, 'ACTIVE', 'RETRACTED'],
  ]);
  expect((await refused(client, 'as_of', { at: '2026-02-30T00:00:00Z' })).text).toMatch(
    /^BAD_USER_INPUT: at: .*2026-02-30T00:00:00Z is not a date and time of the calendar/,
  );

  const back = await call(client, 'reinstate', {
    retractionId: receipt.retraction.id,
    reason: 'the lab re-checked: authentic',
  });
  expect(back).toMatchObject({
    outcome: 'REINSTATED',
    alreadyReinstated: false,
    reinstatement: { status: 'REINSTATED', retractionId: receipt.retraction.id },
  });
  expect(back.beliefs.items.map((b: any) => b.id)).toEqual([
    passport.belief.id,
    identity.belief.id,
    eligible.belief.id,
  ]);
  expect(back.restorableEffectIds).toEqual([refund.effect.id]);
  expect(
    (await call(client, 'reinstate', { retractionId: Number(receipt.retraction.dbId), reason: 'again' }))
      .alreadyReinstated,
  ).toBe(true);
  expect((await call(client, 'why', { claimKey: `${p}/refund.eligible` })).belief).toMatchObject({
    id: eligible.belief.id,
    status: 'ACTIVE',
  });

  // Errors carry GraphQL's codes.
  expect((await refused(client, 'retract', { beliefId: 987654321, reason: 'x' })).text).toMatch(/^NOT_FOUND: /);
  expect((await refused(client, 'remember', { claimKey: 'not a key!', statement: 'x' })).text).toMatch(
    /^BAD_USER_INPUT: claimKey/,
  );
  const badArgs = await refused(client, 'retract', { beliefId: true, reason: 'x' });
  expect(badArgs.text).toMatch(/^BAD_USER_INPUT: Input validation error/);
  return { passport: passport.belief.id, retraction: receipt.retraction.id };
}

/** A read-only token: no write tool listed, each write refused FORBIDDEN naming the scope, and nothing written. */
async function expectWritesRefused(
  client: Client,
  store: Store | null,
  target: { passport: string; retraction: string },
) {
  const names = (await client.listTools()).tools.map((t) => t.name);
  expect(names.filter((n) => WRITE_TOOLS.includes(n))).toEqual([]);
  expect(names).toEqual(expect.arrayContaining(['recall', 'why', 'as_of', 'preview_retraction']));
  const before = store ? await counts(store) : null;
  const attempts: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'remember',
      { claimKey: 'intruder/x', statement: 'x', evidence: 'none' },
      /^FORBIDDEN: remember needs the scope beliefs:write/,
    ],
    ['retract', { beliefId: target.passport, reason: 'x' }, /^FORBIDDEN: retract needs the scope beliefs:retract/],
    [
      'reinstate',
      { retractionId: target.retraction, reason: 'x' },
      /^FORBIDDEN: reinstate needs the scope beliefs:retract/,
    ],
    [
      'propose_effect',
      { kind: 'refund', supportedBy: [target.passport], idempotencyKey: 'intruder-1' },
      /^FORBIDDEN: propose_effect needs the scope effects:propose/,
    ],
  ];
  for (const [tool, args, want] of attempts) {
    const r = await refused(client, tool, args);
    expect(r.text).toMatch(want);
    expect(r.meta?.code).toBe('FORBIDDEN');
  }
  if (store) expect(await counts(store)).toEqual(before);
}

const silent = pino({ level: 'silent' });

describe.each(engines())('MCP memory tools on %s', { timeout: 300_000 }, (engine: EngineName) => {
  let t: TestDb | null = null;
  let dir: string | null = null;
  let tokens: Tokens;
  let env: Record<string, string>;
  let stdioTarget: { passport: string; retraction: string };

  beforeAll(async () => {
    if (engine === 'pglite') {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-mcp-mem-'));
      const s = await openStore({
        dataDir: dir,
        loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]),
        migrate: false,
      });
      tokens = await setup(s);
      await s.close();
      env = { RETRACT_DATA_DIR: dir };
    } else {
      t = await testStore(engine);
      tokens = await setup(t.store);
      env = { DATABASE_URL: t.url! };
    }
  });

  afterAll(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('over stdio (`retract mcp`): the story, and a read-only token refused every write', async () => {
    const session = await stdioClient({ ...env, RETRACT_TOKEN: tokens.writer });
    try {
      expect(session.stderr()).toMatch(/serving .*remember.* for agent memory-agent/);
      stdioTarget = await memoryStory(session.client, 'stdio:1');
    } finally {
      await session.close();
    }
    const ro = await stdioClient({ ...env, RETRACT_TOKEN: tokens.readOnly });
    try {
      await expectWritesRefused(ro.client, null, stdioTarget);
    } finally {
      await ro.close();
    }
  });

  it('over Streamable HTTP (/mcp): the story, a read-only and a write-only token, and the invariants', async () => {
    const store = dir ? await openStore({ dataDir: dir, migrate: false }) : t!.store;
    const app: App = await createApp({ config: { port: 0, host: '127.0.0.1' }, store, embedder, logger: silent });
    await app.listen();
    try {
      const url = `${app.url()}/mcp`;
      const client = await httpClient(url, tokens.writer);
      const target = await memoryStory(client, 'http:1');
      await client.close();
      const ro = await httpClient(url, tokens.readOnly);
      await expectWritesRefused(ro, store, target);
      await expectWritesRefused(ro, store, stdioTarget);
      await ro.close();
      // beliefs:write alone: remember only; its own belief is readable in its answer, as in GraphQL.
      const scribe = await httpClient(url, tokens.writeOnly);
      expect((await scribe.listTools()).tools.map((x) => x.name)).toEqual(['remember']);
      const mine = await call(scribe, 'remember', {
        claimKey: 'scribe/note',
        statement: 'A note of the scribe',
        evidence: 'seen',
      });
      expect(mine).toMatchObject({
        outcome: 'ASSERTED',
        belief: { id: expect.any(String), statement: 'A note of the scribe' },
      });
      const derived = await call(scribe, 'remember', {
        claimKey: 'scribe/derived',
        statement: 'derived',
        derivedFrom: [target.passport],
      });
      expect(derived.belief.id).toEqual(expect.any(String));
      expect(gid('Belief', derived.belief.dbId)).toBe(derived.belief.id);
      expect((await refused(scribe, 'recall', { text: 'x' })).text).toMatch(
        /^FORBIDDEN: recall needs the scope beliefs:read/,
      );
      // What an agent writes is never taken for a reference, even when it spells one it may not read.
      const spelled = await call(scribe, 'remember', {
        claimKey: 'scribe/odd',
        statement: gid('Reversal', '1'),
        evidence: gid('Retraction', '1'),
      });
      expect(spelled.belief).toMatchObject({ statement: gid('Reversal', '1'), evidence: gid('Retraction', '1') });
      await scribe.close();
      await expectInvariants(store);
      // The MCP write role (retract_mcp) wrote all of it, and may write nothing else: no agents, tokens, fleets, kinds or metadata.
      expect(await writableTables(store.db, 'retract_mcp')).toEqual([
        'belief_status_history',
        'beliefs',
        'claims',
        'contradictions',
        'effect_supports',
        'effects',
        'events',
        'justification_premises',
        'justifications',
        'reinstatement_money',
        'reinstatements',
        'retractions',
        'reversals',
      ]);
      const code = (q: Promise<unknown>) =>
        q.then(
          () => 'committed',
          (e) => (e as { code?: string }).code ?? String(e),
        );
      expect(
        await code(
          inTx(store, { fleet: 'acme', role: 'retract_mcp' }, (tx) =>
            tx.insertInto('effect_kinds').values({ fleet_id: 'acme', kind: 'wire', reversible: true }).execute(),
          ),
        ),
      ).toBe('42501');
      expect(
        await code(
          inTx(store, { fleet: 'acme', role: 'retract_mcp' }, (tx) =>
            tx.updateTable('agents').set({ name: 'x' }).execute(),
          ),
        ),
      ).toBe('42501');
    } finally {
      await app.close();
      if (dir) await store.close();
    }
  });
});
