import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createAgentDirect } from '../../../src/agent/agent.service';
import { claimEffect, completeEffect, registerEffectKind } from '../../../src/effect/effect.service';
import { createApp } from '../../../src/server/app';
import { type EngineName, type Store, openStore } from '../../../src/store/engine';
import { inTx } from '../../../src/store/tx';
import { coreOf, embedder, engines, expectInvariants, testStore, type TestDb } from '../../support/engines';
import { call, httpClient, stdioClient } from '../support';
import { compareTools, compareUsage } from './compare';
import { referenceClient } from './harness';
import { USAGE } from './usage';

/**
 * The drop-in for @modelcontextprotocol/server-memory, through the MCP SDK's own client: the reference
 * server (spawned over stdio, its MEMORY_FILE_PATH in a temp dir) and RETRACT (`retract mcp` over stdio,
 * and the server's /mcp over Streamable HTTP) get the reference's own usage call for call, and every
 * answer RETRACT gives must carry the reference's answer unchanged. Then what only RETRACT does: an
 * observation derived from another falls with it, deleting an entity says what else fell and what
 * money it leaves owed or unreachable, and a read-only token is refused every write with nothing written.
 */

const WRITES: Array<[string, Record<string, unknown>]> = [
  ['create_entities', { entities: [{ name: 'x', entityType: 't', observations: [] }] }],
  ['create_relations', { relations: [{ from: 'John_Smith', to: 'Jane Doe', relationType: 'knows' }] }],
  ['add_observations', { observations: [{ entityName: 'John_Smith', contents: ['new'] }] }],
  ['delete_entities', { entityNames: ['John_Smith'] }],
  ['delete_observations', { deletions: [{ entityName: 'John_Smith', observations: ['Speaks fluent Spanish'] }] }],
  ['delete_relations', { relations: [{ from: 'Jane Doe', to: 'Anthropic', relationType: 'works_at' }] }],
];

interface Agents {
  actorId: Record<string, string>;
  writer: Record<string, string>;
  readOnly: string;
}

async function setup(store: Store): Promise<Agents> {
  const agents: Agents = { actorId: {}, writer: {}, readOnly: '' };
  for (const fleet of ['stdio', 'http']) {
    const a = await createAgentDirect(store, {
      fleet,
      name: 'memory-agent',
      scopes: ['beliefs:read', 'beliefs:write', 'beliefs:retract', 'effects:propose', 'effects:execute'],
    });
    agents.writer[fleet] = a.token;
    agents.actorId[fleet] = a.agent.id;
  }
  const ops = await createAgentDirect(store, { fleet: 'http', name: 'ops', scopes: ['admin'] });
  for (const [kind, reversible] of [
    ['refund', true],
    ['card_charge', false],
    ['payout', true],
  ] as const) {
    await registerEffectKind(coreOf(store), { fleet: 'http', agentId: ops.agent.id }, { kind, reversible });
  }
  agents.readOnly = (
    await createAgentDirect(store, { fleet: 'stdio', name: 'reader', scopes: ['beliefs:read'] })
  ).token;
  return agents;
}

async function sameAsReference(retract: Client) {
  const ref = await referenceClient();
  try {
    await compareTools(ref.client, retract);
    await compareUsage(ref.client, retract, USAGE);
  } finally {
    await ref.close();
  }
}

async function beliefCount(store: Store, fleet: string): Promise<number> {
  return inTx(store, { fleet, readOnly: true }, async (tx) =>
    Number(
      (
        await tx
          .selectFrom('beliefs')
          .select((e) => e.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    ),
  );
}

/** A read-only token is offered only the read tools, and each write is FORBIDDEN naming its scope, with nothing written. */
async function expectWritesRefused(client: Client, store: Store | null) {
  const names = (await client.listTools()).tools.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['read_graph', 'search_nodes', 'open_nodes']));
  for (const [w] of WRITES) expect(names).not.toContain(w);
  const before = store ? await beliefCount(store, 'stdio') : 0;
  for (const [tool, args] of WRITES) {
    const r = await client.callTool({ name: tool, arguments: args });
    expect(r.isError, tool).toBe(true);
    expect((r.content as Array<{ text: string }>)[0]!.text).toMatch(
      new RegExp(`^FORBIDDEN: ${tool} needs the scope beliefs:(write|retract)`),
    );
  }
  // Reading stays open to it.
  expect((await call(client, 'read_graph')).entities).toEqual(expect.any(Array));
  if (store) expect(await beliefCount(store, 'stdio')).toBe(before);
}

/**
 * The passport story through the drop-in: what the derived observations rest on is named with
 * derivedFrom; the actions rest on their beliefs. Deleting the passport takes everything built on it.
 */
async function passportThroughDropIn(client: Client, store: Store, actor: { fleet: string; agentId: string }) {
  const made = await call(client, 'create_entities', {
    entities: [
      {
        name: 'passport of customer 4411',
        entityType: 'document',
        observations: ['authentic'],
        evidence: 'document check #A-77',
      },
      { name: 'customer 4411', entityType: 'customer', observations: [] },
      { name: 'customer 7788', entityType: 'customer', observations: ['prefers email'] },
    ],
  });
  expect(made.beliefs.map((b: any) => [b.entityName, b.content ?? null])).toEqual([
    ['passport of customer 4411', null],
    ['passport of customer 4411', 'authentic'],
    ['customer 4411', null],
    ['customer 7788', null],
    ['customer 7788', 'prefers email'],
  ]);
  await call(client, 'create_relations', {
    relations: [{ from: 'customer 4411', to: 'passport of customer 4411', relationType: 'identified by' }],
  });
  const observe = async (content: string, from: { entityName: string; content?: string }) =>
    (
      await call(client, 'add_observations', {
        observations: [{ entityName: 'customer 4411', contents: [content], derivedFrom: [from] }],
      })
    ).beliefs[0];
  const identity = await observe('identity verified', {
    entityName: 'passport of customer 4411',
    content: 'authentic',
  });
  const kyc = await observe('KYC tier gold', { entityName: 'passport of customer 4411', content: 'authentic' });
  const eligible = await observe('eligible for a refund', {
    entityName: 'customer 4411',
    content: 'identity verified',
  });
  const unknown = await client.callTool({
    name: 'add_observations',
    arguments: {
      observations: [
        {
          entityName: 'customer 4411',
          contents: ['x'],
          derivedFrom: [{ entityName: 'customer 4411', content: 'never said' }],
        },
      ],
    },
  });
  expect((unknown.content as Array<{ text: string }>)[0]!.text).toMatch(
    /^NOT_FOUND: observations\[0\]\.derivedFrom\[0\]: entity customer 4411 has no observation "never said"/,
  );

  // The actions: proposed over MCP on the beliefs the drop-in named; two executed by the executor.
  const propose = async (kind: string, on: { id: string }, amountMinor: number) =>
    (
      await call(client, 'propose_effect', {
        kind,
        supportedBy: [on.id],
        idempotencyKey: `${kind}-1`,
        amount: { amountMinor, currency: 'USD' },
      })
    ).effect;
  for (const [kind, on, amount] of [
    ['refund', eligible, 124_000],
    ['card_charge', kyc, 8_900],
  ] as const) {
    const e = await propose(kind, on, amount);
    expect((await claimEffect(coreOf(store), actor, { kinds: [kind] }))?.id).toBe(e.dbId);
    await completeEffect(coreOf(store), actor, { effectId: e.dbId, externalRef: `${kind}-ref` });
  }
  const payout = await propose('payout', identity, 50_000);

  const del = await client.callTool({
    name: 'delete_entities',
    arguments: { entityNames: ['passport of customer 4411'], reason: 'the passport was found forged' },
  });
  expect(del.isError).toBeFalsy();
  const texts = (del.content as Array<{ text: string }>).map((c) => c.text);
  expect(texts[0]).toBe('Entities deleted successfully');
  expect(texts[1]).toMatch(
    /retracted passport of customer 4411 is an entity of type document; and with it 5 memories resting on it: .*cancelled payout \$500\.00; owed back \$1,240\.00; unreachable \(cannot be undone\) \$89\.00\./,
  );
  const s = del.structuredContent as any;
  expect(s).toMatchObject({ success: true, message: 'Entities deleted successfully' });
  expect(s.retractions).toHaveLength(1);
  const r = s.retractions[0];
  expect(r.fell.map((f: any) => [f.depth, f.memory])).toEqual([
    [0, { entity: 'passport of customer 4411' }],
    [1, { entityName: 'passport of customer 4411', observation: 'authentic' }],
    [1, { from: 'customer 4411', relationType: 'identified by', to: 'passport of customer 4411' }],
    [2, { entityName: 'customer 4411', observation: 'identity verified' }],
    [2, { entityName: 'customer 4411', observation: 'KYC tier gold' }],
    [3, { entityName: 'customer 4411', observation: 'eligible for a refund' }],
  ]);
  expect(r.fellCount).toBe(6);
  expect(r.cancelledEffects).toEqual([
    { effectId: payout.dbId, kind: 'payout', amount: '$500.00', status: 'CANCELLED' },
  ]);
  expect(r.reversals.map((x: any) => [x.kind, x.status, x.amount])).toEqual([
    ['refund', 'OWED', '$1,240.00'],
    ['card_charge', 'UNREACHABLE', '$89.00'],
  ]);
  expect(r).toMatchObject({ owed: ['$1,240.00'], unreachable: ['$89.00'] });

  // What is believed now: the customer keeps nothing derived from the passport; the unrelated customer keeps all.
  const g = await call(client, 'open_nodes', {
    names: ['customer 4411', 'customer 7788', 'passport of customer 4411'],
  });
  expect(g).toEqual({
    entities: [
      { name: 'customer 4411', entityType: 'customer', observations: [] },
      { name: 'customer 7788', entityType: 'customer', observations: ['prefers email'] },
    ],
    relations: [],
  });
  // Deleting what already fell retracts nothing more, and says so.
  const again = await client.callTool({
    name: 'delete_observations',
    arguments: { deletions: [{ entityName: 'customer 4411', observations: ['identity verified'] }] },
  });
  expect(again.structuredContent).toEqual({
    success: true,
    message: 'Observations deleted successfully',
    retractions: [],
  });
  expect((again.content as Array<{ text: string }>)[1]!.text).toMatch(/nothing was retracted/);
}

const silent = pino({ level: 'silent' });

describe.each(engines())('MCP memory-graph drop-in on %s', { timeout: 300_000 }, (engine: EngineName) => {
  let t: TestDb | null = null;
  let dir: string | null = null;
  let agents: Agents;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (engine === 'pglite') {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-mcp-graph-'));
      const s = await openStore({
        dataDir: dir,
        loadDataDir: new Blob([fs.readFileSync(inject('pgliteTemplate'))]),
        migrate: false,
      });
      agents = await setup(s);
      await s.close();
      env = { RETRACT_DATA_DIR: dir };
    } else {
      t = await testStore(engine);
      agents = await setup(t.store);
      env = { DATABASE_URL: t.url! };
    }
  });

  afterAll(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("over stdio (`retract mcp`): the reference's own usage answers as the reference does; a read-only token is refused every write", async () => {
    const session = await stdioClient({ ...env, RETRACT_TOKEN: agents.writer.stdio! });
    try {
      await sameAsReference(session.client);
    } finally {
      await session.close();
    }
    const ro = await stdioClient({ ...env, RETRACT_TOKEN: agents.readOnly });
    try {
      await expectWritesRefused(ro.client, null);
    } finally {
      await ro.close();
    }
  });

  it("over Streamable HTTP (/mcp): the same usage, the passport story's cascade through the nine tools, and the invariants", async () => {
    const store = dir ? await openStore({ dataDir: dir, migrate: false }) : t!.store;
    const app = await createApp({ config: { port: 0, host: '127.0.0.1' }, store, embedder, logger: silent });
    await app.listen();
    try {
      const url = `${app.url()}/mcp`;
      const client = await httpClient(url, agents.writer.http!);
      await sameAsReference(client);
      await passportThroughDropIn(client, store, { fleet: 'http', agentId: agents.actorId.http! });
      await client.close();
      const ro = await httpClient(url, agents.readOnly);
      await expectWritesRefused(ro, store);
      await ro.close();
      await expectInvariants(store);
    } finally {
      await app.close();
      if (dir) await store.close();
    }
  });
});
