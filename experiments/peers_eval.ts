/**
 * The forged-passport story through RETRACT and through the memories it replaces, measured the same way.
 *
 *   npm run eval:peers            (tsx experiments/peers_eval.ts [--out FILE])
 *
 * A passport is believed authentic; the identity, the refund eligibility and the KYC tier are derived from
 * it; a $1,240.00 refund and an $89.00 card charge are executed on them and a $500.00 payout is pending; an
 * unrelated customer has two memories of their own. Then the passport is found forged and deleted or
 * retracted the way each peer allows. Written through:
 *   (a) @modelcontextprotocol/server-memory, the reference MCP memory server, spawned over stdio;
 *   (b) LangGraph's InMemoryStore (@langchain/langgraph-checkpoint);
 *   (c) RETRACT through its drop-in memory-graph tools (the same nine tools, MCP Streamable HTTP), actions through GraphQL;
 *   (d) RETRACT through GraphQL alone;
 *   (e) Mem0's open-source mem0ai, offline (inference off, a local embedder) when PEERS_MEM0_DIR names an install of it;
 *       otherwise the row says why it was not run.
 * Each cell is read back from the peer after the forgery was handled. Writes results/peers_eval.json.
 * Exit codes: 0 done and RETRACT's rows achieved what they must; 1 a RETRACT row missed; 3 the run failed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryStore } from '@langchain/langgraph-checkpoint';
import pino from 'pino';
import { createAgentDirect } from '../src/agent/agent.service';
import { SCOPES } from '../src/agent/scopes';
import { LocalEmbedder } from '../src/embedding/local';
import { createApp, type App } from '../src/server/app';
import { openStore } from '../src/store/engine';
import { Calls, EXECUTED_MINOR, STORY, type PeerResult, namedMoney } from './lib/peers';
import { environment, environmentLines, money, repoRoot, table, writeJson } from './lib/report';

const usd = (minor: number) => ({ amountMinor: minor, currency: 'USD' });
const actionText = {
  refund: `refund of ${money(STORY.refund.amountMinor)} executed (${STORY.refund.ref})`,
  charge: `card charge of ${money(STORY.charge.amountMinor)} executed (${STORY.charge.ref})`,
  payout: `payout of ${money(STORY.payout.amountMinor)} pending`,
};

// ---------------------------------------------------------------- (a) the reference MCP memory server

async function serverMemory(): Promise<PeerResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peers-server-memory-'));
  const env: Record<string, string> = { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') };
  for (const k of ['PATH', 'HOME']) if (process.env[k]) env[k] = process.env[k]!;
  const bin = new URL(import.meta.resolve('@modelcontextprotocol/server-memory/dist/index.js')).pathname;
  const client = new Client({ name: 'peers-eval', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [bin], env, stderr: 'ignore' }));
  const calls = new Calls();
  const call = async (name: string, args: Record<string, unknown>) => {
    calls.count();
    const r = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`server-memory ${name}: ${JSON.stringify(r.content)}`);
    return r;
  };
  try {
    const { passport, customer, derived, unrelated } = STORY;
    await call('create_entities', {
      entities: [
        { name: passport.entity, entityType: passport.type, observations: [passport.observation] },
        { name: customer.entity, entityType: customer.type, observations: [] },
        { name: unrelated.entity, entityType: unrelated.type, observations: [...unrelated.observations] },
      ],
    });
    await call('create_relations', {
      relations: [{ from: customer.entity, to: passport.entity, relationType: 'identified by' }],
    });
    // The reference has no way to say an observation came from another: the agent can only write the conclusions.
    await call('add_observations', {
      observations: [{ entityName: customer.entity, contents: [derived.identity, derived.eligible, derived.kyc] }],
    });
    await call('add_observations', {
      observations: [
        { entityName: customer.entity, contents: [actionText.refund, actionText.charge, actionText.payout] },
      ],
    });

    calls.phase = 'forgery';
    const deleted = await call('delete_entities', { entityNames: [passport.entity] });

    calls.phase = 'measure';
    const g = (await client.callTool({ name: 'read_graph', arguments: {} })).structuredContent as {
      entities: Array<{ name: string; observations: string[] }>;
    };
    const obs = (name: string) => g.entities.find((e) => e.name === name)?.observations ?? [];
    const told = [
      ...(deleted.content as Array<{ text: string }>).map((c) => c.text),
      ...g.entities.flatMap((e) => e.observations),
    ];
    const named = namedMoney(told);
    return {
      peer: '(a) server-memory',
      how: 'delete_entities(passport)',
      derivedBelieved: Object.values(derived).filter((d) => obs(customer.entity).includes(d)).length,
      pendingLive: obs(customer.entity).includes(actionText.payout) ? 1 : 0,
      owedNamedMinor: named.owed,
      unreachableNamedMinor: named.unreachable,
      unrelatedLost: unrelated.observations.filter((o) => !obs(unrelated.entity).includes(o)).length,
      writeCalls: calls.write,
      forgeryCalls: calls.forgery,
      note: `its answer: "${(deleted.content as Array<{ text: string }>)[0]!.text}"; relations to the passport removed, the customer's observations kept`,
    };
  } finally {
    await client.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- (b) LangGraph's InMemoryStore

async function langGraph(): Promise<PeerResult> {
  const store = new InMemoryStore();
  const calls = new Calls();
  const put = (ns: string[], key: string, value: Record<string, unknown>) => {
    calls.count();
    return store.put(ns, key, value);
  };
  const { passport, derived, unrelated } = STORY;
  const c = ['customers', '4411'];
  await put(c, 'passport.authentic', { text: passport.observation, evidence: 'document check #A-77' });
  // An agent can keep where a memory came from in its value; the store does nothing with it.
  await put(c, 'identity.verified', { text: derived.identity, derivedFrom: ['passport.authentic'] });
  await put(c, 'refund.eligible', { text: derived.eligible, derivedFrom: ['identity.verified'] });
  await put(c, 'kyc.tier', { text: derived.kyc, derivedFrom: ['passport.authentic'] });
  const a = [...c, 'actions'];
  await put(a, 'refund-1', {
    text: actionText.refund,
    status: 'executed',
    amount: usd(STORY.refund.amountMinor),
    supportedBy: 'refund.eligible',
  });
  await put(a, 'charge-1', {
    text: actionText.charge,
    status: 'executed',
    amount: usd(STORY.charge.amountMinor),
    supportedBy: 'kyc.tier',
  });
  await put(a, 'payout-1', {
    text: actionText.payout,
    status: 'pending',
    amount: usd(STORY.payout.amountMinor),
    supportedBy: 'identity.verified',
  });
  for (const [i, o] of unrelated.observations.entries()) await put(['customers', '7788'], `note-${i}`, { text: o });

  calls.phase = 'forgery';
  calls.count();
  await store.delete(c, 'passport.authentic');

  calls.phase = 'measure';
  const items = await store.search(['customers'], { limit: 1000 });
  const texts = items.map((i) => String((i.value as { text?: string }).text));
  const named = namedMoney(items.map((i) => JSON.stringify(i.value)));
  return {
    peer: '(b) LangGraph InMemoryStore',
    how: 'store.delete(passport)',
    derivedBelieved: Object.values(derived).filter((d) => texts.includes(d)).length,
    pendingLive: items.filter((i) => (i.value as { status?: string }).status === 'pending').length,
    owedNamedMinor: named.owed,
    unreachableNamedMinor: named.unreachable,
    unrelatedLost: unrelated.observations.filter((o) => !texts.includes(o)).length,
    writeCalls: calls.write,
    forgeryCalls: calls.forgery,
    note: 'derivedFrom kept in the values, not acted on',
  };
}

// ---------------------------------------------------------------- RETRACT: one in-process server, one fleet per row

interface Fleet {
  url: string;
  token: string;
  calls: Calls;
}

async function gql<T = any>(
  f: Fleet,
  query: string,
  variables: Record<string, unknown> = {},
  counted = true,
): Promise<T> {
  if (counted) f.calls.count();
  const r = await fetch(`${f.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${f.token}` },
    body: JSON.stringify({ query, variables }),
  });
  const j = (await r.json()) as { data?: T; errors?: unknown };
  if (j.errors || !j.data) throw new Error(`GraphQL: ${JSON.stringify(j.errors)}`);
  return j.data;
}

async function fleetOf(app: App, store: Parameters<typeof createAgentDirect>[0], fleet: string): Promise<Fleet> {
  const { token } = await createAgentDirect(store, { fleet, name: 'agent', scopes: SCOPES });
  const f: Fleet = { url: app.url(), token, calls: new Calls() };
  for (const [kind, reversible] of [
    ['refund', true],
    ['card_charge', false],
    ['payout', true],
  ] as const) {
    await gql(
      f,
      'mutation($i: RegisterEffectKindInput!) { registerEffectKind(input: $i) { kind } }',
      { i: { kind, reversible } },
      false,
    );
  }
  return f;
}

/** The three actions on the three derived beliefs (global ids): two proposed, claimed and completed, one left pending. */
async function actions(f: Fleet, on: Record<'identity' | 'eligible' | 'kyc', string>): Promise<{ payout: string }> {
  const propose = async (
    a: { kind: string; amountMinor: number; rests: 'identity' | 'eligible' | 'kyc' },
    key: string,
  ) =>
    (
      await gql(
        f,
        'mutation($i: ProposeEffectInput!) { proposeEffect(input: $i) { __typename ... on EffectProposed { effect { id } } } }',
        { i: { kind: a.kind, amount: usd(a.amountMinor), supportedBy: [on[a.rests]], idempotencyKey: key } },
      )
    ).proposeEffect.effect.id as string;
  for (const a of [STORY.refund, STORY.charge]) {
    await propose(a, `${a.kind}-1`);
    const claimed = await gql(f, 'mutation($i: ClaimEffectInput) { claimEffect(input: $i) { id } }', {
      i: { kinds: [a.kind] },
    });
    await gql(f, 'mutation($i: CompleteEffectInput!) { completeEffect(input: $i) { status } }', {
      i: { effectId: claimed.claimEffect.id, externalRef: a.ref },
    });
  }
  return { payout: await propose(STORY.payout, 'payout-1') };
}

const status = async (f: Fleet, id: string): Promise<string> =>
  ((n) => n.beliefStatus ?? n.effectStatus)(
    (
      await gql(
        f,
        'query($id: ID!) { node(id: $id) { ... on Belief { beliefStatus: status } ... on Effect { effectStatus: status } } }',
        { id },
        false,
      )
    ).node,
  );

/** (c) The nine drop-in tools over MCP Streamable HTTP, exactly as an agent written for server-memory calls them, plus derivedFrom. */
async function dropIn(f: Fleet): Promise<PeerResult> {
  const client = new Client({ name: 'peers-eval', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${f.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${f.token}` } },
    }),
  );
  const call = async (name: string, args: Record<string, unknown>) => {
    f.calls.count();
    const r = await client.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`RETRACT ${name}: ${JSON.stringify(r.content)}`);
    return r.structuredContent as any;
  };
  try {
    const { passport, customer, derived, unrelated } = STORY;
    const made = await call('create_entities', {
      entities: [
        {
          name: passport.entity,
          entityType: passport.type,
          observations: [passport.observation],
          evidence: 'document check #A-77',
        },
        { name: customer.entity, entityType: customer.type, observations: [] },
        { name: unrelated.entity, entityType: unrelated.type, observations: [...unrelated.observations] },
      ],
    });
    await call('create_relations', {
      relations: [{ from: customer.entity, to: passport.entity, relationType: 'identified by' }],
    });
    const obs = async (content: string, from: { entityName: string; content: string }) =>
      (
        await call('add_observations', {
          observations: [{ entityName: customer.entity, contents: [content], derivedFrom: [from] }],
        })
      ).beliefs[0].id as string;
    const onPassport = { entityName: passport.entity, content: passport.observation };
    const ids = {
      identity: await obs(derived.identity, onPassport),
      kyc: await obs(derived.kyc, onPassport),
      eligible: '',
    };
    ids.eligible = await obs(derived.eligible, { entityName: customer.entity, content: derived.identity });
    const unrelatedIds = (made.beliefs as Array<{ entityName: string; content?: string; id: string }>)
      .filter((b) => b.entityName === unrelated.entity && b.content)
      .map((b) => b.id);
    const { payout } = await actions(f, ids);

    f.calls.phase = 'forgery';
    const del = await call('delete_entities', {
      entityNames: [passport.entity],
      reason: 'the passport was found forged',
    });

    f.calls.phase = 'measure';
    const g = (await client.callTool({ name: 'read_graph', arguments: {} })).structuredContent as {
      entities: Array<{ name: string; observations: string[] }>;
    };
    const kept = g.entities.find((e) => e.name === customer.entity)?.observations ?? [];
    const lines = (del.retractions as Array<{ reversals: Array<{ status: string; amount: string }> }>).flatMap(
      (r) => r.reversals,
    );
    const sum = (st: string) =>
      lines.filter((l) => l.status === st).reduce((s, l) => s + Number(l.amount.replace(/[$,.]/g, '')), 0);
    const stillActive = await Promise.all(unrelatedIds.map((id) => status(f, id)));
    return {
      peer: '(c) RETRACT drop-in (MCP)',
      how: 'delete_entities(passport)',
      derivedBelieved: Object.values(derived).filter((d) => kept.includes(d)).length,
      pendingLive: (await status(f, payout)) === 'PENDING' ? 1 : 0,
      owedNamedMinor: sum('OWED'),
      unreachableNamedMinor: sum('UNREACHABLE'),
      unrelatedLost: unrelated.observations.length - stillActive.filter((s) => s === 'ACTIVE').length,
      writeCalls: f.calls.write,
      forgeryCalls: f.calls.forgery,
      note: `its answer: ${(del.retractions as Array<{ fellCount: number }>)[0]?.fellCount ?? 0} beliefs fell, named in the answer with the cancelled payout and the reversals`,
    };
  } finally {
    await client.close();
  }
}

/** (d) GraphQL alone: assertBelief with derivedFrom, proposeEffect, and retractBelief on the passport. */
async function graphQL(f: Fleet): Promise<PeerResult> {
  const assert = async (claimKey: string, statement: string, derivedFrom: string[] = []) =>
    (
      await gql(
        f,
        'mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename ... on BeliefAsserted { belief { id } } } }',
        {
          i: {
            claimKey,
            statement,
            value: true,
            derivedFrom,
            ...(derivedFrom.length ? {} : { evidence: 'document check #A-77' }),
          },
        },
      )
    ).assertBelief.belief.id as string;
  const { derived, unrelated } = STORY;
  const passport = await assert(
    'customer:4411/passport.authentic',
    `The passport of customer 4411 is ${STORY.passport.observation}`,
  );
  const identity = await assert('customer:4411/identity.verified', derived.identity, [passport]);
  const ids = {
    identity,
    eligible: await assert('customer:4411/refund.eligible', derived.eligible, [identity]),
    kyc: await assert('customer:4411/kyc.tier', derived.kyc, [passport]),
  };
  const unrelatedIds = [
    await assert('customer:7788/contact.preference', unrelated.observations[0]),
    await assert('customer:7788/identity.verified', unrelated.observations[1]),
  ];
  const { payout } = await actions(f, ids);

  f.calls.phase = 'forgery';
  const r = await gql(
    f,
    'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { beliefs { totalCount } totals { owed { amountMinor } unreachableAmount { amountMinor } } } }',
    { i: { beliefId: passport, reason: 'the passport was found forged' } },
  );

  f.calls.phase = 'measure';
  const t = r.retractBelief.totals as {
    owed: Array<{ amountMinor: number }>;
    unreachableAmount: Array<{ amountMinor: number }>;
  };
  const derivedStatus = await Promise.all(Object.values(ids).map((id) => status(f, id)));
  const unrelatedStatus = await Promise.all(unrelatedIds.map((id) => status(f, id)));
  return {
    peer: '(d) RETRACT GraphQL',
    how: 'retractBelief(passport)',
    derivedBelieved: derivedStatus.filter((s) => s === 'ACTIVE').length,
    pendingLive: (await status(f, payout)) === 'PENDING' ? 1 : 0,
    owedNamedMinor: t.owed.reduce((s, m) => s + m.amountMinor, 0),
    unreachableNamedMinor: t.unreachableAmount.reduce((s, m) => s + m.amountMinor, 0),
    unrelatedLost: unrelatedStatus.filter((s) => s !== 'ACTIVE').length,
    writeCalls: f.calls.write,
    forgeryCalls: f.calls.forgery,
    note: `the retraction's receipt: ${r.retractBelief.beliefs.totalCount} beliefs`,
  };
}

// ---------------------------------------------------------------- (e) Mem0

/**
 * mem0ai is no dependency of this repository: its open-source `Memory` needs better-sqlite3, a native
 * module whose install downloads a prebuilt binary (not reachable here) or compiles SQLite with node-gyp
 * against Node's headers (about 20 minutes on this 2-core machine; see docs/peers.md). PEERS_MEM0_DIR
 * names a folder where both are installed; without it the row says why it was not run.
 * Run offline: inference off (`infer: false` stores each text as given, no LLM is called; the LLM
 * client is built with a placeholder key and never used), RETRACT's local embedder behind LangChain's
 * Embeddings interface, the SQLite "memory" vector store in a temp dir, history off, telemetry off.
 */
async function mem0(): Promise<PeerResult | string> {
  const from = process.env.PEERS_MEM0_DIR;
  if (!from)
    return 'not installed here: set PEERS_MEM0_DIR to a folder holding mem0ai and a better-sqlite3 built for this Node (docs/peers.md says how)';
  process.env.MEM0_TELEMETRY = 'false';
  let Memory: new (config: Record<string, unknown>) => any;
  let version = 'unknown';
  try {
    const req = createRequire(path.join(path.resolve(from), 'package.json'));
    const entry = req.resolve('mem0ai/oss');
    version =
      `mem0ai ${(JSON.parse(fs.readFileSync(path.join(entry.slice(0, entry.lastIndexOf('/dist/')), 'package.json'), 'utf8')) as { version: string }).version}, ` +
      `better-sqlite3 ${(req('better-sqlite3/package.json') as { version: string }).version}`;
    ({ Memory } = await import(pathToFileURL(entry.replace(/index\.js$/, 'index.mjs')).href));
  } catch (e) {
    return `cannot load mem0ai/oss from ${from}: ${(e as Error).message.split('\n')[0]}`;
  }
  const local = new LocalEmbedder();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peers-mem0-'));
  const memory = new Memory({
    embedder: {
      provider: 'langchain',
      config: {
        model: {
          embedQuery: async (t: string) => (await local.embed([t]))[0],
          embedDocuments: (t: string[]) => local.embed(t),
        },
      },
    },
    vectorStore: {
      provider: 'memory',
      config: { collectionName: 'peers', dimension: local.dimensions, dbPath: path.join(dir, 'vectors.db') },
    },
    llm: { provider: 'openai', config: { apiKey: 'offline-never-called', model: 'none' } },
    disableHistory: true,
  });
  const calls = new Calls();
  const add = async (userId: string, text: string, metadata: Record<string, unknown> = {}) => {
    calls.count();
    return (await memory.add(text, { userId, infer: false, metadata })).results[0].id as string;
  };
  try {
    const { passport, derived, unrelated } = STORY;
    const passportId = await add('customer-4411', `passport ${passport.observation}`);
    // Mem0 keeps metadata with a memory; nothing in it acts on a derivation.
    for (const d of Object.values(derived)) await add('customer-4411', d, { derivedFrom: passportId });
    for (const a of Object.values(actionText)) await add('customer-4411', a);
    for (const o of unrelated.observations) await add('customer-7788', o);

    calls.phase = 'forgery';
    calls.count();
    await memory.delete(passportId);

    calls.phase = 'measure';
    const all = async (userId: string) =>
      ((await memory.getAll({ filters: { user_id: userId }, topK: 100 })).results as Array<{ memory: string }>).map(
        (m) => m.memory,
      );
    const texts = await all('customer-4411');
    const named = namedMoney(texts);
    const other = await all('customer-7788');
    return {
      peer: '(e) Mem0 (mem0ai OSS)',
      how: 'memory.delete(passport)',
      derivedBelieved: Object.values(derived).filter((d) => texts.includes(d)).length,
      pendingLive: texts.includes(actionText.payout) ? 1 : 0,
      owedNamedMinor: named.owed,
      unreachableNamedMinor: named.unreachable,
      unrelatedLost: unrelated.observations.filter((o) => !other.includes(o)).length,
      writeCalls: calls.write,
      forgeryCalls: calls.forgery,
      note: `${version} from ${from}; infer: false (no LLM), local embedder, SQLite vector store; derivedFrom kept as metadata, not acted on`,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ----------------------------------------------------------------

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { out: { type: 'string', default: path.join(repoRoot, 'results/peers_eval.json') } },
  });
  const store = await openStore({ dataDir: 'memory://' });
  const app = await createApp({
    config: { port: 0, host: '127.0.0.1', logLevel: 'silent' },
    store,
    embedder: new LocalEmbedder(),
    logger: pino({ level: 'silent' }),
  });
  await app.listen();
  try {
    const env = await environment(store, [
      '@modelcontextprotocol/sdk',
      '@modelcontextprotocol/server-memory',
      '@langchain/langgraph-checkpoint',
    ]);
    const rows: PeerResult[] = [
      await serverMemory(),
      await langGraph(),
      await dropIn(await fleetOf(app, store, 'dropin')),
      await graphQL(await fleetOf(app, store, 'graphql')),
    ];
    const m0 = await mem0();
    if (typeof m0 !== 'string') rows.push(m0);
    const mem0Why = typeof m0 === 'string' ? m0 : null;

    const out = console.log;
    out('The forged passport through RETRACT and the memories it replaces (experiments/peers_eval.ts)');
    for (const l of environmentLines(env)) out(l);
    out(
      `versions of the peers: @modelcontextprotocol/server-memory ${env.versions['@modelcontextprotocol/server-memory']}, @langchain/langgraph-checkpoint ${env.versions['@langchain/langgraph-checkpoint']}, MCP SDK ${env.versions['@modelcontextprotocol/sdk']}`,
    );
    out('');
    out(
      `Story: passport authentic → identity verified, refund eligible, KYC tier gold; refund ${money(STORY.refund.amountMinor)} and card charge ${money(STORY.charge.amountMinor)} executed, payout ${money(STORY.payout.amountMinor)} pending; customer 7788's 2 memories unrelated. Then the passport is found forged.`,
    );
    out('');
    out(
      table([
        [
          'peer',
          'forgery handled by',
          'derived still believed',
          'pending still live',
          'executed money unaccounted',
          'owed named',
          'unreachable named',
          'unrelated lost',
          'calls (story / forgery)',
        ],
        ...rows.map((r) => [
          r.peer,
          r.how,
          `${r.derivedBelieved}/3`,
          `${r.pendingLive}/1`,
          `${money(EXECUTED_MINOR - r.owedNamedMinor - r.unreachableNamedMinor)} of ${money(EXECUTED_MINOR)}`,
          r.owedNamedMinor ? money(r.owedNamedMinor) : 'none',
          r.unreachableNamedMinor ? money(r.unreachableNamedMinor) : 'none',
          `${r.unrelatedLost}/2`,
          `${r.writeCalls} / ${r.forgeryCalls}`,
        ]),
        ...(mem0Why ? [['(e) Mem0 (mem0ai OSS)', 'not run', '—', '—', '—', '—', '—', '—', '—']] : []),
      ]),
    );
    out('');
    for (const r of rows) if (r.note) out(`${r.peer}: ${r.note}`);
    if (mem0Why) out(`(e) Mem0: ${mem0Why}`);

    const misses = rows
      .filter((r) => r.peer.includes('RETRACT'))
      .flatMap((r) => [
        r.derivedBelieved !== 0 && `${r.peer}: ${r.derivedBelieved} derived memories still believed`,
        r.pendingLive !== 0 && `${r.peer}: the pending payout is still live`,
        r.owedNamedMinor !== STORY.refund.amountMinor &&
          `${r.peer}: owed named ${money(r.owedNamedMinor)}, not the refund's ${money(STORY.refund.amountMinor)}`,
        r.unreachableNamedMinor !== STORY.charge.amountMinor &&
          `${r.peer}: unreachable named ${money(r.unreachableNamedMinor)}, not the charge's ${money(STORY.charge.amountMinor)}`,
        r.unrelatedLost !== 0 && `${r.peer}: lost ${r.unrelatedLost} unrelated memories`,
        r.forgeryCalls !== 1 && `${r.peer}: took ${r.forgeryCalls} calls to handle the forgery`,
      ])
      .filter((x): x is string => !!x);
    writeJson(values.out!, { env, rows, mem0: mem0Why, misses });
    out(`\nwritten: ${path.relative(process.cwd(), values.out!)}`);
    if (misses.length) {
      console.error(`RETRACT missed:\n  ${misses.join('\n  ')}`);
      return 1;
    }
    return 0;
  } finally {
    await app.close().catch(() => {});
    await store.close().catch(() => {});
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(3);
  },
);
