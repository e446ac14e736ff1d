import fc from 'fast-check';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import type { Op, Outcome } from './elle';

/**
 * Concurrent clients over the real GraphQL API, recording every operation's invocation and completion. An
 * operation is `fail` only when the server refused it with a domain code (nothing was written); a dropped
 * connection, a timeout or an internal error leaves it `unknown` (it may have committed). fast-check chooses
 * each client's mix of operations from a seed, so a failing run is replayed by its seed.
 */

const FN = ['assert', 'derive', 'retract', 'reinstate', 'propose', 'claimComplete', 'confirm', 'read'] as const;
type Fn = (typeof FN)[number];
const REFUSED = new Set([
  'BAD_USER_INPUT',
  'CONFLICT',
  'NOT_FOUND',
  'FORBIDDEN',
  'UNAUTHENTICATED',
  'PRECONDITION_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
]);

export interface Recorded extends Op {
  invoke: number;
  complete: number;
  error?: string;
}

export interface Shared {
  base: () => string;
  token: string;
  prefix: string;
  keys: number;
  /** Belief and retraction ids (global) some client saw: what the next operations act on. */
  beliefs: string[];
  retractions: string[];
  reversals: string[];
}

async function call(
  s: Shared,
  query: string,
  variables: Record<string, unknown>,
): Promise<{ outcome: Outcome; data?: any; error?: string }> {
  try {
    const r = await fetch(`${s.base()}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${s.token}` },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await r.json()) as {
      data?: any;
      errors?: Array<{ message: string; extensions?: { code?: string } }>;
    };
    if (body.errors?.length) {
      const code = body.errors[0]!.extensions?.code ?? '?';
      return { outcome: REFUSED.has(code) ? 'fail' : 'unknown', error: `${code}: ${body.errors[0]!.message}` };
    }
    return { outcome: 'ok', data: body.data };
  } catch (e) {
    return { outcome: 'unknown', error: String((e as Error).message ?? e) };
  }
}

const pick = <T>(xs: T[], r: number): T | undefined =>
  xs.length ? xs[Math.floor(r * xs.length) % xs.length] : undefined;
const remember = (xs: string[], x: string) => {
  xs.push(x);
  if (xs.length > 40) xs.shift();
};

const READ = `query($p: String!) { beliefs(claimKeyPrefix: $p, first: 500) { edges { node { id claimKey status retraction { id } } } } }`;

/** The id inside a relay global id (base64 of "Type:id"). */
export const rawId = (gid: string) => Buffer.from(gid, 'base64').toString('utf8').split(':').slice(1).join(':');

/** A READ snapshot's answer as register values: claim → its beliefs' states (the checker's `value`). */
function registers(
  edges: Array<{ node: { id: string; claimKey: string; status: string; retraction: { id: string } | null } }>,
): Record<string, string> {
  const byKey = new Map<string, Array<[string, string]>>();
  for (const { node } of edges) {
    const state = node.status === 'ACTIVE' ? 'ACTIVE' : `R${node.retraction ? rawId(node.retraction.id) : '?'}`;
    (byKey.get(node.claimKey) ?? byKey.set(node.claimKey, []).get(node.claimKey)!).push([rawId(node.id), state]);
  }
  const out: Record<string, string> = {};
  for (const [k, list] of byKey)
    out[k] = list
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([b, st]) => `${b}=${st}`)
      .join(',');
  return out;
}

async function step(s: Shared, process: number, n: number, f: Fn, r: number): Promise<Recorded> {
  const tag = `p${process}-${n}`;
  const key = `${s.prefix}${Math.floor(r * s.keys)}`;
  const invoke = Date.now();
  const rec = (outcome: Outcome, writes: boolean, extra: Partial<Recorded> = {}): Recorded => ({
    tag,
    process,
    f,
    outcome,
    writes,
    invoke,
    complete: Date.now(),
    ...extra,
  });
  switch (f) {
    case 'assert':
    case 'derive': {
      const from = f === 'derive' ? pick(s.beliefs, r) : undefined;
      const res = await call(
        s,
        `mutation($k: String!, $s: String!, $from: [ID!]) { assertBelief(input: { claimKey: $k, statement: $s, value: true, derivedFrom: $from }) { __typename ... on BeliefAsserted { belief { id } } } }`,
        { k: key, s: tag, from: from ? [from] : null },
      );
      const a = res.data?.assertBelief;
      if (a?.belief) remember(s.beliefs, a.belief.id);
      return rec(res.outcome, res.outcome !== 'ok' || a?.__typename === 'BeliefAsserted', { error: res.error });
    }
    case 'retract': {
      const b = pick(s.beliefs, r);
      if (!b) return rec('ok', false);
      const op = await retractOp(s, tag, b, process);
      if (op.receipt) remember(s.retractions, Buffer.from(`Retraction:${op.receipt.id}`).toString('base64'));
      // Retracting a belief already down answers its original receipt (another reason) and writes nothing.
      if (op.outcome === 'ok' && !op.mine) return { ...op, f, writes: false, receipt: undefined, invoke };
      return { ...op, f, invoke };
    }
    case 'reinstate': {
      const rt = pick(s.retractions, r);
      if (!rt) return rec('ok', false);
      const res = await call(
        s,
        `mutation($r: ID!, $t: String!) { reinstateRetraction(input: { retractionId: $r, reason: $t }) { __typename ... on RetractionReinstated { reinstatement { reason } } } }`,
        { r: rt, t: tag },
      );
      // Reinstating a retraction already taken back answers the first reinstatement (another reason) and writes nothing.
      return rec(res.outcome, res.outcome !== 'ok' || res.data?.reinstateRetraction?.reinstatement?.reason === tag, {
        error: res.error,
      });
    }
    case 'propose': {
      const b = pick(s.beliefs, r);
      if (!b) return rec('ok', false);
      const res = await call(
        s,
        `mutation($b: ID!, $t: String!, $a: SafeInt!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: $a, currency: "USD" }, supportedBy: [$b], idempotencyKey: $t }) { __typename } }`,
        { b, t: tag, a: 100 + n },
      );
      return rec(res.outcome, res.outcome !== 'ok' || res.data?.proposeEffect?.__typename === 'EffectProposed', {
        error: res.error,
      });
    }
    case 'claimComplete': {
      const c = await call(s, `mutation { claimEffect(input: { kinds: ["refund"] }) { id } }`, {});
      const id = c.data?.claimEffect?.id;
      if (!id) return rec(c.outcome === 'ok' ? 'ok' : c.outcome, false, { error: c.error });
      const res = await call(
        s,
        `mutation($e: ID!, $t: String!) { completeEffect(input: { effectId: $e, externalRef: $t }) { id status } }`,
        { e: id, t: tag },
      );
      return rec(res.outcome, true, { error: res.error });
    }
    case 'confirm': {
      const list = await call(s, `{ reversals(first: 50) { edges { node { id status } } } }`, {});
      for (const e of list.data?.reversals.edges ?? [])
        if (e.node.status === 'OWED' || e.node.status === 'DISPATCHED') remember(s.reversals, e.node.id);
      const v = pick(s.reversals, r);
      if (!v) return rec('ok', false);
      const res = await call(
        s,
        `mutation($r: ID!, $t: String!) { confirmReversal(input: { reversalId: $r, providerRef: $t }) { id status } }`,
        { r: v, t: tag },
      );
      return rec(res.outcome, res.outcome !== 'fail', { error: res.error });
    }
    case 'read': {
      const res = await call(s, READ, { p: s.prefix });
      if (res.outcome !== 'ok') return rec(res.outcome, false, { error: res.error });
      const edges = res.data.beliefs.edges;
      for (const e of edges) if (e.node.status === 'ACTIVE' && Math.random() < 0.3) remember(s.beliefs, e.node.id);
      return rec('ok', false, {
        reads: registers(edges),
        readKeys: Array.from({ length: s.keys }, (_, i) => `${s.prefix}${i}`),
      });
    }
  }
}

/** A retraction of `belief` as one recorded operation (also the fault drills' large cascades); `mine` when it wrote. */
export async function retractOp(
  s: Shared,
  tag: string,
  belief: string,
  process = -1,
): Promise<Recorded & { mine: boolean }> {
  const invoke = Date.now();
  const res = await call(
    s,
    `mutation($b: ID!, $t: String!) { retractBelief(input: { beliefId: $b, reason: $t }) { id reason totals { beliefsRetracted exposure { amountMinor currency } } } }`,
    { b: belief, t: tag },
  );
  const rt = res.data?.retractBelief;
  const money = rt
    ? Object.fromEntries(
        (rt.totals.exposure as Array<{ amountMinor: string; currency: string }>).map((m) => [
          m.currency,
          Number(m.amountMinor),
        ]),
      )
    : {};
  return {
    tag,
    process,
    f: 'retract',
    outcome: res.outcome,
    writes: true,
    invoke,
    complete: Date.now(),
    error: res.error,
    mine: rt?.reason === tag,
    ...(rt ? { receipt: { id: rawId(rt.id), beliefs: rt.totals.beliefsRetracted, money } } : {}),
  };
}

/** The operations one client runs, chosen by fast-check from `seed`: weighted toward writes, with reads between. */
function plan(seed: number, length: number): Array<{ f: Fn; r: number }> {
  const arb = fc.array(
    fc.record({
      f: fc.oneof(
        { arbitrary: fc.constant<Fn>('assert'), weight: 5 },
        { arbitrary: fc.constant<Fn>('derive'), weight: 6 },
        { arbitrary: fc.constant<Fn>('retract'), weight: 3 },
        { arbitrary: fc.constant<Fn>('reinstate'), weight: 1 },
        { arbitrary: fc.constant<Fn>('propose'), weight: 3 },
        { arbitrary: fc.constant<Fn>('claimComplete'), weight: 2 },
        { arbitrary: fc.constant<Fn>('confirm'), weight: 1 },
        { arbitrary: fc.constant<Fn>('read'), weight: 4 },
      ),
      r: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
    }),
    { minLength: length, maxLength: length },
  );
  return fc.sample(arb, { seed, numRuns: 1 })[0]!;
}

/** Runs `clients` processes (numbered from `firstProcess`), each its planned operations one after another. */
export async function runClients(
  s: Shared,
  opts: { clients: number; ops: number; seed: number; firstProcess?: number },
): Promise<Recorded[]> {
  const out: Recorded[] = [];
  await Promise.all(
    Array.from({ length: opts.clients }, async (_, i) => {
      const p = (opts.firstProcess ?? 0) + i;
      const steps = plan(opts.seed + p, opts.ops);
      let unknown = 0;
      for (let n = 0; n < steps.length; n++) {
        const r = await step(s, p, n, steps[n]!.f, steps[n]!.r);
        out.push(r);
        // A client backs off while the server is unreachable (restarting), as a real one would: longer each time,
        // so that its operations are not all spent before a server that takes seconds to start answers again.
        unknown = r.outcome === 'unknown' ? unknown + 1 : 0;
        if (unknown) await new Promise((res) => setTimeout(res, Math.min(4_000, 250 * 2 ** (unknown - 1))));
      }
    }),
  );
  return out;
}

/** A subscriber of the fleet's retraction events, resuming from its last cursor whenever its connection drops. */
export class Subscriber {
  readonly cursors: string[] = [];
  private client: Client | null = null;
  private closed = false;
  constructor(
    readonly name: string,
    private s: Shared,
    private from: string | null,
  ) {}

  start(): void {
    if (this.closed) return;
    const after = this.cursors.length ? this.cursors[this.cursors.length - 1]! : this.from;
    const client = createClient({
      url: `${this.s.base().replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${this.s.token}` },
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => {},
      on: { error: () => {} },
    });
    this.client = client;
    const again = () => {
      if (this.client !== client || this.closed) return;
      this.client = null;
      setTimeout(() => this.start(), 300);
    };
    client.subscribe(
      { query: 'subscription($a: String) { retractionEvents(after: $a) { cursor } }', variables: { a: after } },
      {
        next: (m) => {
          const c = (m.data as { retractionEvents?: { cursor: string } } | null)?.retractionEvents?.cursor;
          if (c) this.cursors.push(c);
        },
        error: again,
        complete: again,
      },
    );
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.client?.dispose();
  }
}

/** The fleet's committed order: a fresh subscriber from the start, until nothing new arrives for `quietMs`. */
export async function committedOrder(s: Shared, from: string, quietMs = 2_000): Promise<string[]> {
  const sub = new Subscriber('reference', s, from);
  sub.start();
  let last = -1;
  for (let i = 0; i < 600; i++) {
    await new Promise((r) => setTimeout(r, quietMs));
    if (sub.cursors.length === last) break;
    last = sub.cursors.length;
  }
  await sub.stop();
  return sub.cursors;
}
