// A throwaway in-memory stand-in for the RETRACT API, for developing the dashboard before the real server
// exists. It executes the dashboard's documents against the shared contract (graphql-js + graphql-ws), serves
// dashboard/dist at /dashboard/, and seeds one small fleet. It is NOT the server and not a test of it.
//   npx vite build --config dashboard/vite.config.ts && npx tsx dashboard/scripts/mock-server.ts [port]
// Tokens: "admin-token" (scopes incl. beliefs:retract), "reader-token" (beliefs:read only).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSchema, graphql, GraphQLError } from 'graphql';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';

const port = Number(process.argv[2] ?? process.env.PORT ?? 4390);
const here = fileURLToPath(new URL('.', import.meta.url));
const dist = join(here, '..', 'dist');
const schema = buildSchema(readFileSync(join(here, '..', '..', '..', 'shared', 'contract', 'schema.graphql'), 'utf8'));

// ------------------------------------------------------------------ data
type Money = { amountMinor: number; currency: string };
interface Agent { id: string; name: string; fleet: string; scopes: string[] }
interface B { id: string; claimKey: string; statement: string; value: unknown; status: 'ACTIVE' | 'RETRACTED'; evidence: string | null; author: Agent; createdAt: string; retractedAt: string | null; retractionId: string | null; justifications: { id: string; premises: string[] }[] }
interface E { id: string; kind: string; status: string; amount: Money | null; idempotencyKey: string; supportedBy: string[]; externalRef: string | null; reversalId: string | null; cancelledBy: string | null; createdAt: string }
interface R { id: string; effectId: string; retractionId: string; status: string; idempotencyKey: string; amount: Money | null; providerRef: string | null; createdAt: string }
interface Rt { id: string; rootId: string; reason: string; actor: Agent; createdAt: string; beliefs: string[]; cancelled: string[]; reversals: string[] }

const admin: Agent = { id: 'QWdlbnQ6MQ==', name: 'ops-admin', fleet: 'acme', scopes: ['beliefs:read', 'beliefs:retract', 'receipts:read', 'admin'] };
const reader: Agent = { id: 'QWdlbnQ6Mg==', name: 'kyc-reader', fleet: 'acme', scopes: ['beliefs:read', 'receipts:read'] };
const tokens: Record<string, Agent> = { 'admin-token': admin, 'reader-token': reader };
const beliefs = new Map<string, B>();
const effects = new Map<string, E>();
const reversals = new Map<string, R>();
const retractions = new Map<string, Rt>();
const reversible: Record<string, boolean> = { refund: true, email: true, wire: false };
let seq = 0;
const now = () => new Date().toISOString();

function belief(n: number, claimKey: string, statement: string, justifications: string[][] = []): string {
  const id = `QmVsaWVmOi${n}`;
  beliefs.set(id, {
    id, claimKey, statement, value: true, status: 'ACTIVE', evidence: justifications.length ? null : 'document scan #A-77',
    author: reader, createdAt: new Date(Date.now() - (100 - n) * 60_000).toISOString(), retractedAt: null, retractionId: null,
    justifications: justifications.map((premises, i) => ({ id: `SnVzdDo${n}${i}`, premises })),
  });
  return id;
}
function effect(n: number, kind: string, status: string, amountMinor: number | null, supportedBy: string[]): void {
  const id = `RWZmZWN0Oi${n}`;
  effects.set(id, {
    id, kind, status, amount: amountMinor === null ? null : { amountMinor, currency: 'USD' }, idempotencyKey: `${kind}:4411:${n}`,
    supportedBy, externalRef: status === 'EXECUTED' ? `prov_${n}` : null, reversalId: null, cancelledBy: null, createdAt: now(),
  });
}
const p1 = belief(1, 'customer:4411/passport.authentic', 'The passport of customer 4411 is authentic.');
const p2 = belief(2, 'customer:4411/address.verified', 'The address of customer 4411 was verified.');
const p3 = belief(3, 'customer:4411/manual-review.passed', 'A human reviewer approved customer 4411.');
const d1 = belief(4, 'customer:4411/kyc.passed', 'Customer 4411 passed KYC.', [[p1, p2], [p3, p2]]);
const d2 = belief(5, 'customer:4411/identity.verified', 'The identity of customer 4411 is verified.', [[p1]]);
const d3 = belief(6, 'customer:4411/refund.eligible', 'Customer 4411 is eligible for a refund.', [[d2]]);
const d4 = belief(7, 'customer:4411/payout.approved', 'A payout to customer 4411 is approved.', [[d2, p2]]);
belief(8, 'customer:9001/email.verified', 'Customer 9001 verified their email.');
effect(1, 'refund', 'EXECUTED', 124000, [d3]);
effect(2, 'email', 'PENDING', null, [d4]);
effect(3, 'wire', 'EXECUTED', 30000, [d4]);
effect(4, 'refund', 'PENDING', 5000, [d1]);

// ------------------------------------------------------------------ views (plain objects; functions are field resolvers)
const conn = <T>(items: T[], args: { first?: number | null; after?: string | null }) => {
  const start = args.after ? Number(args.after) + 1 : 0;
  const first = args.first ?? 50;
  const page = items.slice(start, start + first);
  return {
    totalCount: items.length,
    pageInfo: { hasNextPage: start + first < items.length, endCursor: page.length ? String(start + page.length - 1) : null },
    edges: page.map((node, i) => ({ cursor: String(start + i), node })),
  };
};
const agentView = (a: Agent) => ({ __typename: 'Agent', ...a });
function beliefView(b: B): object {
  return {
    __typename: 'Belief', id: b.id, claimKey: b.claimKey, statement: b.statement, value: b.value, status: b.status,
    evidence: b.evidence, author: agentView(b.author), createdAt: b.createdAt, retractedAt: b.retractedAt,
    retraction: () => (b.retractionId ? retractionView(retractions.get(b.retractionId)!) : null),
    justifications: () => b.justifications.map((j) => ({
      id: j.id, premises: j.premises.map((p) => beliefView(beliefs.get(p)!)),
      holds: j.premises.every((p) => beliefs.get(p)!.status === 'ACTIVE'),
    })),
    dependents: (args: { first?: number; after?: string }) =>
      conn([...beliefs.values()].filter((x) => x.justifications.some((j) => j.premises.includes(b.id))).map(beliefView), args),
    effects: () => [...effects.values()].filter((e) => e.supportedBy.includes(b.id)).map(effectView),
  };
}
function effectView(e: E): object {
  return {
    __typename: 'Effect', ...e, proposedBy: agentView(admin),
    supportedBy: () => e.supportedBy.map((id) => beliefView(beliefs.get(id)!)),
    reversal: () => (e.reversalId ? reversalView(reversals.get(e.reversalId)!) : null),
    cancelledBy: () => (e.cancelledBy ? retractionView(retractions.get(e.cancelledBy)!) : null),
  };
}
function reversalView(r: R): object {
  return {
    __typename: 'Reversal', ...r, reason: null, confirmedAt: null,
    effect: () => effectView(effects.get(r.effectId)!),
    retraction: () => retractionView(retractions.get(r.retractionId)!),
  };
}
function sum(list: (Money | null)[]): Money[] {
  const by = new Map<string, number>();
  for (const m of list) if (m) by.set(m.currency, (by.get(m.currency) ?? 0) + m.amountMinor);
  return [...by].map(([currency, amountMinor]) => ({ amountMinor, currency }));
}
function totals(beliefIds: string[], cancelled: E[], reached: { effect: E; reachable: boolean }[], settled: Money[] = []) {
  return {
    beliefsRetracted: beliefIds.length, effectsCancelled: cancelled.length, effectsReached: reached.length,
    reversalsOwed: reached.filter((r) => r.reachable).length, unreachable: reached.filter((r) => !r.reachable).length,
    exposure: sum(reached.map((r) => r.effect.amount)), owed: sum(reached.filter((r) => r.reachable).map((r) => r.effect.amount)),
    unreachableAmount: sum(reached.filter((r) => !r.reachable).map((r) => r.effect.amount)), settled,
  };
}
function retractionView(rt: Rt): object {
  const revs = rt.reversals.map((id) => reversals.get(id)!);
  return {
    __typename: 'Retraction', id: rt.id, reason: rt.reason, actor: agentView(rt.actor), createdAt: rt.createdAt,
    root: () => beliefView(beliefs.get(rt.rootId)!),
    beliefs: (args: { first?: number; after?: string }) => conn(rt.beliefs.map((id) => beliefView(beliefs.get(id)!)), args),
    cancelledEffects: () => rt.cancelled.map((id) => effectView(effects.get(id)!)),
    reversals: () => revs.map(reversalView),
    totals: () => totals(rt.beliefs, rt.cancelled.map((id) => effects.get(id)!),
      revs.map((r) => ({ effect: effects.get(r.effectId)!, reachable: r.status !== 'UNREACHABLE' })),
      sum(revs.filter((r) => r.status === 'CONFIRMED').map((r) => r.amount))),
  };
}

// ------------------------------------------------------------------ cascade
function closure(rootId: string) {
  const fallen = new Map<string, number>([[rootId, 0]]);
  for (let changed = true; changed; ) {
    changed = false;
    for (const b of beliefs.values()) {
      if (fallen.has(b.id) || b.status !== 'ACTIVE' || !b.justifications.length) continue;
      const holds = b.justifications.some((j) => j.premises.every((p) => !fallen.has(p) && beliefs.get(p)!.status === 'ACTIVE'));
      if (!holds) {
        fallen.set(b.id, 1 + Math.max(...b.justifications.flatMap((j) => j.premises).map((p) => fallen.get(p) ?? -1)));
        changed = true;
      }
    }
  }
  const ids = [...fallen.keys()].sort((a, b) => fallen.get(a)! - fallen.get(b)!);
  const survivors = [...beliefs.values()].filter(
    (b) => !fallen.has(b.id) && b.status === 'ACTIVE' && b.justifications.some((j) => j.premises.some((p) => fallen.has(p))),
  );
  const touched = [...effects.values()].filter((e) => e.supportedBy.some((s) => fallen.has(s)));
  return {
    fallen, ids, survivors,
    pending: touched.filter((e) => e.status === 'PENDING'),
    executed: touched.filter((e) => e.status === 'EXECUTED' && !e.reversalId),
  };
}

type Ev = Record<string, unknown> & { cursor: string };
const log: Ev[] = [];
const listeners = new Set<() => void>();
function emit(type: string, rt: Rt, extra: Record<string, unknown>): void {
  log.push({ __typename: type, cursor: `c${++seq}`, at: now(), retraction: retractionView(rt), ...extra });
}

function retract(beliefId: string, reason: string, actor: Agent): object {
  const root = beliefs.get(beliefId);
  if (!root) throw new GraphQLError('Belief not found');
  if (root.status === 'RETRACTED') return retractionView(retractions.get(root.retractionId!)!);
  const c = closure(beliefId);
  const rt: Rt = { id: `UmV0cmFjdGlvbj${retractions.size + 1}`, rootId: beliefId, reason, actor, createdAt: now(), beliefs: c.ids, cancelled: [], reversals: [] };
  retractions.set(rt.id, rt);
  emit('RetractionStarted', rt, {});
  for (const id of c.ids) {
    const b = beliefs.get(id)!;
    Object.assign(b, { status: 'RETRACTED', retractedAt: now(), retractionId: rt.id });
    emit('BeliefRetracted', rt, { belief: beliefView(b), depth: c.fallen.get(id) });
  }
  for (const e of c.pending) {
    Object.assign(e, { status: 'CANCELLED', cancelledBy: rt.id });
    rt.cancelled.push(e.id);
    emit('EffectCancelled', rt, { effect: effectView(e) });
  }
  for (const e of c.executed) {
    const r: R = { id: `UmV2ZXJzYWw6${reversals.size + 1}`, effectId: e.id, retractionId: rt.id, status: reversible[e.kind] ? 'OWED' : 'UNREACHABLE', idempotencyKey: `reversal:${e.idempotencyKey}`, amount: e.amount, providerRef: null, createdAt: now() };
    reversals.set(r.id, r);
    e.reversalId = r.id;
    rt.reversals.push(r.id);
    emit('ReversalRecorded', rt, { reversal: reversalView(r) });
  }
  const view = retractionView(rt) as { totals: () => unknown };
  emit('RetractionCommitted', rt, { totals: view.totals() });
  listeners.forEach((l) => l());
  return view;
}

async function* tail(after: string | null): AsyncGenerator<{ retractionEvents: Ev }> {
  let i = after ? log.findIndex((e) => e.cursor === after) + 1 : log.length;
  for (;;) {
    while (i < log.length) yield { retractionEvents: log[i++]! };
    await new Promise<void>((r) => {
      const l = () => { listeners.delete(l); r(); };
      listeners.add(l);
    });
  }
}

// ------------------------------------------------------------------ roots
const need = (ctx: { agent?: Agent }) => {
  if (!ctx.agent) throw new GraphQLError('Unauthenticated', { extensions: { code: 'UNAUTHENTICATED' } });
  return ctx.agent;
};
const rootValue = {
  viewer: (_: unknown, ctx: { agent?: Agent }) => agentView(need(ctx)),
  belief: ({ id }: { id: string }, ctx: { agent?: Agent }) => (need(ctx), beliefs.has(id) ? beliefView(beliefs.get(id)!) : null),
  beliefs: (args: { claimKeyPrefix?: string; status?: string; first?: number; after?: string }, ctx: { agent?: Agent }) => {
    need(ctx);
    const list = [...beliefs.values()]
      .filter((b) => (!args.claimKeyPrefix || b.claimKey.startsWith(args.claimKeyPrefix)) && (!args.status || b.status === args.status))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    return conn(list.map(beliefView), args);
  },
  search: ({ input }: { input: { text: string; k?: number; includeRetracted?: boolean } }, ctx: { agent?: Agent }) => {
    need(ctx);
    const words = input.text.toLowerCase().split(/\W+/).filter(Boolean);
    const hits = [...beliefs.values()]
      .filter((b) => input.includeRetracted || b.status === 'ACTIVE')
      .map((b) => ({ belief: beliefView(b), score: words.filter((w) => b.statement.toLowerCase().includes(w)).length / Math.max(1, words.length) }))
      .filter((h) => h.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, input.k ?? 10);
    return { snapshot: `snap-${seq}`, hits };
  },
  previewRetraction: ({ beliefId }: { beliefId: string }, ctx: { agent?: Agent }) => {
    need(ctx);
    if (!beliefs.has(beliefId)) throw new GraphQLError('Belief not found');
    const c = closure(beliefId);
    return {
      root: beliefView(beliefs.get(beliefId)!),
      beliefs: (args: { first?: number; after?: string }) => conn(c.ids.map((id) => beliefView(beliefs.get(id)!)), args),
      survivors: c.survivors.map(beliefView),
      pendingEffects: c.pending.map(effectView),
      executedEffects: c.executed.map(effectView),
      totals: totals(c.ids, c.pending, c.executed.map((e) => ({ effect: e, reachable: !!reversible[e.kind] }))),
    };
  },
  retraction: ({ id }: { id: string }, ctx: { agent?: Agent }) => (need(ctx), retractions.has(id) ? retractionView(retractions.get(id)!) : null),
  retractBelief: ({ input }: { input: { beliefId: string; reason: string } }, ctx: { agent?: Agent }) => {
    const agent = need(ctx);
    if (!agent.scopes.includes('beliefs:retract') && !agent.scopes.includes('admin')) throw new GraphQLError('Forbidden: beliefs:retract');
    if (!input.reason.trim()) throw new GraphQLError('reason must not be empty');
    return retract(input.beliefId, input.reason, agent);
  },
};

const agentFor = (header: unknown) => {
  const m = /^Bearer\s+(.+)$/i.exec(typeof header === 'string' ? header : '');
  return m ? tokens[m[1]!] : undefined;
};

// ------------------------------------------------------------------ http + ws
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.map': 'application/json', '.png': 'image/png' };
const server = createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname.startsWith('/mock/') && req.method === 'POST') return mockControl(url.pathname, res);
  if (url.pathname === '/graphql' && req.method === 'POST') {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw) as { query: string; variables?: Record<string, unknown>; operationName?: string };
    const result = await graphql({ schema, source: body.query, rootValue, variableValues: body.variables, operationName: body.operationName, contextValue: { agent: agentFor(req.headers.authorization) } });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
    return;
  }
  if (url.pathname === '/' || url.pathname === '/dashboard') return void res.writeHead(302, { location: '/dashboard/' }).end();
  if (url.pathname.startsWith('/dashboard/')) {
    const rel = normalize(url.pathname.slice('/dashboard/'.length) || 'index.html').replace(/^(\.\.[/\\])+/, '');
    try {
      const data = await readFile(join(dist, rel));
      res.writeHead(200, { 'content-type': types[extname(rel)] ?? 'application/octet-stream' }).end(data);
    } catch {
      res.writeHead(404).end('not found');
    }
    return;
  }
  res.writeHead(404).end('not found');
});

const wss = new WebSocketServer({ server, path: '/graphql' });
useServer(
  {
    schema,
    roots: { subscription: { retractionEvents: ({ after }: { after?: string | null }) => tail(after ?? null) } },
    onConnect: (ctx) => !!agentFor((ctx.connectionParams as { authorization?: string } | undefined)?.authorization),
    context: (ctx) => ({ agent: agentFor((ctx.connectionParams as { authorization?: string } | undefined)?.authorization) }),
  },
  wss,
);

// POST /mock/drop closes every socket from the server side (to exercise reconnect + resume);
// POST /mock/retract retracts customer 4411's address belief as "another agent" (to exercise the live feed).
function mockControl(path: string, res: import('node:http').ServerResponse): void {
  if (path === '/mock/drop') for (const c of wss.clients) c.terminate();
  if (path === '/mock/retract') {
    const b = [...beliefs.values()].find((x) => x.status === 'ACTIVE' && x.claimKey.startsWith('customer:4411/address'));
    if (b) retract(b.id, 'address proof was forged', admin);
  }
  res.writeHead(204).end();
}

server.listen(port, () => console.log(`mock RETRACT API on http://localhost:${port}/graphql, dashboard at http://localhost:${port}/dashboard/`));
