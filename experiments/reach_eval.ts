/**
 * Reach: what a retraction reaches, compared with a naive agent memory.
 *
 *   tsx experiments/reach_eval.ts [--out FILE] [--told-timeout-ms N]
 *
 * The passport story, end to end, run twice by the same script of agent actions:
 *  (a) RETRACT, through the GraphQL API of a server started in this process (createApp) on an
 *      in-memory PGlite, or on DATABASE_URL when set; 8 agents, each with its own token and scopes,
 *      each holding a graphql-ws subscription to retractionEvents;
 *  (b) a control arm: a minimal in-memory agent memory modelled generously — it stores provenance,
 *      raises contradictions, refuses to act on a belief that is itself marked retracted, marks the
 *      retracted belief and keeps an audit trail. Nothing more: it does not follow provenance, cancel
 *      anything, or reach what was executed.
 * After the forged result the story goes on in both arms (the executor keeps running, a second
 * refund request arrives, every agent reads what is believed), and every figure is measured from each
 * arm's own state after the run. Prints the arms side by side and writes results/reach_eval.json.
 *
 * "Who was told" waits up to --told-timeout-ms (default 60 s) for each subscription. The stream never
 * reads past the oldest transaction still running; on PostgreSQL that horizon is cluster-wide, so a
 * long transaction in any database of the server delays delivery. The check names that transaction
 * and, when it belongs to another database, reports INCONCLUSIVE instead of failing.
 *
 * Exit codes: 0 the RETRACT arm shows every expected figure; 1 it does not (the failed checks are
 * printed); 2 the run itself failed; 3 bad arguments.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pino from 'pino';
import { createApp, type App } from '../src/server/app';
import { encodeCursor, START } from '../src/event/event.repository';
import { checkInvariants, type Violation } from '../src/invariants/check';
import { openStore, type Store } from '../src/store/engine';
import { LocalEmbedder } from '../src/embedding/local';
import { nodeClient, type Json, type RetractClient, type ResultOf } from '../src/client/node';
import { subscribe, type Subscription } from './lib/graphql';
import * as Op from './lib/reach-operations';
import { environment, environmentLines, money, repoRoot, table, writeJson } from './lib/report';

// ---------------------------------------------------------------------------------------------
// The cast: 8 agents and what each may do. Everyone may read beliefs and receipts (and so follow
// the retraction stream); write scopes follow the role.

const AGENTS = {
  'fleet-admin': { scopes: ['admin'], role: "creates the fleet's agents and registers effect kinds" },
  'kyc-verifier': { scopes: ['beliefs:read', 'beliefs:write', 'receipts:read'], role: 'verifies the passport' },
  'identity-resolver': {
    scopes: ['beliefs:read', 'beliefs:write', 'receipts:read'],
    role: 'derives identity.verified',
  },
  'refund-assessor': { scopes: ['beliefs:read', 'beliefs:write', 'receipts:read'], role: 'derives refund.eligible' },
  'risk-scorer': { scopes: ['beliefs:read', 'beliefs:write', 'receipts:read'], role: 'derives kyc.tier' },
  'payments-agent': {
    scopes: ['beliefs:read', 'effects:propose', 'receipts:read'],
    role: 'proposes refunds, charges and payouts',
  },
  executor: {
    scopes: ['beliefs:read', 'effects:execute', 'receipts:read'],
    role: 'claims and executes whatever is pending',
  },
  'fraud-analyst': {
    scopes: ['beliefs:read', 'beliefs:retract', 'receipts:read'],
    role: 'receives the forged result and retracts',
  },
} as const;
type AgentName = keyof typeof AGENTS;
const AGENT_NAMES = Object.keys(AGENTS) as AgentName[];

const CUSTOMER = 'customer:4411';
const CLAIMS = {
  passport: `${CUSTOMER}/passport.authentic`,
  identity: `${CUSTOMER}/identity.verified`,
  refundEligible: `${CUSTOMER}/refund.eligible`,
  kycTier: `${CUSTOMER}/kyc.tier`,
} as const;
const KINDS = [
  { kind: 'refund', reversible: true },
  { kind: 'card_charge', reversible: false },
  { kind: 'payout', reversible: true },
] as const;

// ---------------------------------------------------------------------------------------------
// What an agent can do with a memory, and what we can observe of it afterwards.

interface BeliefView {
  id: string;
  claimKey: string;
  value: unknown;
  status: 'ACTIVE' | 'RETRACTED';
}
interface EffectView {
  id: string;
  kind: string;
  status: string;
  amountMinor: number;
  currency: string;
  idempotencyKey: string;
}
interface ReversalView {
  effectId: string;
  status: string;
  idempotencyKey: string;
  amountMinor: number;
  currency: string;
  reason: string | null;
}
interface Observation {
  beliefs: BeliefView[];
  effects: EffectView[];
  reversals: ReversalView[];
}
interface AssertInput {
  claimKey: string;
  statement: string;
  value: unknown;
  evidence?: string;
  derivedFrom?: string[];
}
interface ProposeInput {
  kind: string;
  amountMinor: number;
  supportedBy: string[];
  idempotencyKey: string;
}
/** Per agent: the cascade events it received (RETRACT), or the retraction audit entries that name it (control). */
type Told = Record<AgentName, { told: boolean; events: Record<string, number>; latencyMs: number | null }>;

interface Memory {
  readonly arm: 'retract' | 'control';
  registerKind(agent: AgentName, kind: string, reversible: boolean): Promise<void>;
  assert(agent: AgentName, input: AssertInput): Promise<{ outcome: string; id: string | null }>;
  /** What the agent reads as believed for a claim: the ACTIVE belief, or null. */
  believed(agent: AgentName, claimKey: string): Promise<BeliefView | null>;
  propose(agent: AgentName, input: ProposeInput): Promise<{ outcome: string; id: string | null }>;
  /** Takes the next effect the memory lets an executor run, or null. */
  claim(agent: AgentName): Promise<EffectView | null>;
  complete(agent: AgentName, effectId: string, ref: string): Promise<void>;
  retract(agent: AgentName, beliefId: string, reason: string): Promise<{ receipt: string }>;
  observe(): Promise<Observation>;
  /** Who was told of the retraction, after the run settles. */
  told(receipt: string): Promise<Told>;
}

// ---------------------------------------------------------------------------------------------
// The script: the same agent actions, in the same order, against either memory.

interface StoryLog {
  derived: string[];
  passport: string;
  refund: string;
  charge: string;
  payout: string;
  before: Observation;
  after: Observation;
  receipt: string;
  retryReceipt: string;
  secondRequest: { believed: boolean; outcome: string; id: string | null };
  reads: Array<{ agent: AgentName; claimKey: string; active: boolean; restsOnPassport: boolean }>;
  executed: Array<{ phase: 'before' | 'after'; effectId: string; kind: string }>;
}

async function drain(mem: Memory, phase: 'before' | 'after', executed: StoryLog['executed']): Promise<void> {
  for (let n = 0; n < 20; n++) {
    const e = await mem.claim('executor');
    if (!e) return;
    await mem.complete('executor', e.id, `${e.kind}-ref-${executed.length + 1}`);
    executed.push({ phase, effectId: e.id, kind: e.kind });
  }
  throw new Error('executor: more than 20 effects ready; the story has gone wrong');
}

function need<T>(v: T | null | undefined, what: string): T {
  if (v === null || v === undefined) throw new Error(`story: ${what}`);
  return v;
}

async function story(mem: Memory): Promise<StoryLog> {
  const executed: StoryLog['executed'] = [];
  for (const k of KINDS) await mem.registerKind('fleet-admin', k.kind, k.reversible);

  const passport = need(
    (
      await mem.assert('kyc-verifier', {
        claimKey: CLAIMS.passport,
        statement: 'The passport of customer 4411 is authentic',
        value: true,
        evidence: 'document check #A-77',
      })
    ).id,
    'passport not asserted',
  );
  const p1 = need(
    await mem.believed('identity-resolver', CLAIMS.passport),
    'identity-resolver cannot read the passport',
  );
  const identity = need(
    (
      await mem.assert('identity-resolver', {
        claimKey: CLAIMS.identity,
        statement: 'Customer 4411 is who they claim to be',
        value: true,
        derivedFrom: [p1.id],
      })
    ).id,
    'identity not asserted',
  );
  const i1 = need(await mem.believed('refund-assessor', CLAIMS.identity), 'refund-assessor cannot read identity');
  const refundEligible = need(
    (
      await mem.assert('refund-assessor', {
        claimKey: CLAIMS.refundEligible,
        statement: 'Customer 4411 is eligible for a refund',
        value: true,
        derivedFrom: [i1.id],
      })
    ).id,
    'refund.eligible not asserted',
  );
  const p2 = need(await mem.believed('risk-scorer', CLAIMS.passport), 'risk-scorer cannot read the passport');
  const kycTier = need(
    (
      await mem.assert('risk-scorer', {
        claimKey: CLAIMS.kycTier,
        statement: 'Customer 4411 is in KYC tier gold',
        value: 'gold',
        derivedFrom: [p2.id],
      })
    ).id,
    'kyc.tier not asserted',
  );

  const re = need(
    await mem.believed('payments-agent', CLAIMS.refundEligible),
    'payments-agent cannot read refund.eligible',
  );
  const refund = need(
    (
      await mem.propose('payments-agent', {
        kind: 'refund',
        amountMinor: 124_000,
        supportedBy: [re.id],
        idempotencyKey: `${CUSTOMER}:refund-1`,
      })
    ).id,
    'refund not proposed',
  );
  const tier = need(await mem.believed('payments-agent', CLAIMS.kycTier), 'payments-agent cannot read kyc.tier');
  const charge = need(
    (
      await mem.propose('payments-agent', {
        kind: 'card_charge',
        amountMinor: 8_900,
        supportedBy: [tier.id],
        idempotencyKey: `${CUSTOMER}:charge-1`,
      })
    ).id,
    'charge not proposed',
  );
  await drain(mem, 'before', executed);
  // The payout is proposed after the executor's run: it waits for the next one.
  const id1 = need(await mem.believed('payments-agent', CLAIMS.identity), 'payments-agent cannot read identity');
  const payout = need(
    (
      await mem.propose('payments-agent', {
        kind: 'payout',
        amountMinor: 50_000,
        supportedBy: [id1.id],
        idempotencyKey: `${CUSTOMER}:payout-1`,
      })
    ).id,
    'payout not proposed',
  );
  const before = await mem.observe();

  // The passport comes back forged.
  const reason = 'issuing authority reports passport A-77 forged (check #F-19)';
  const { receipt } = await mem.retract('fraud-analyst', passport, reason);
  // The analyst's client times out and sends the same retraction again.
  const { receipt: retryReceipt } = await mem.retract('fraud-analyst', passport, reason);

  // The story goes on. The executor's next scheduled run takes whatever is ready.
  await drain(mem, 'after', executed);
  // A second refund request arrives; the payments agent acts on what is believed.
  const again = await mem.believed('payments-agent', CLAIMS.refundEligible);
  let secondRequest: StoryLog['secondRequest'] = {
    believed: false,
    outcome: 'not proposed: refund.eligible not believed',
    id: null,
  };
  if (again && again.value === true) {
    const r = await mem.propose('payments-agent', {
      kind: 'refund',
      amountMinor: 31_000,
      supportedBy: [again.id],
      idempotencyKey: `${CUSTOMER}:refund-2`,
    });
    secondRequest = { believed: true, outcome: r.outcome, id: r.id };
  }
  await drain(mem, 'after', executed);
  // Every agent reads what is believed about the customer.
  const derived = [identity, refundEligible, kycTier];
  const reads: StoryLog['reads'] = [];
  for (const agent of AGENT_NAMES) {
    for (const claimKey of [CLAIMS.identity, CLAIMS.refundEligible, CLAIMS.kycTier]) {
      const b = await mem.believed(agent, claimKey);
      reads.push({ agent, claimKey, active: b !== null, restsOnPassport: b !== null && derived.includes(b.id) });
    }
  }
  const after = await mem.observe();
  return {
    derived,
    passport,
    refund,
    charge,
    payout,
    before,
    after,
    receipt,
    retryReceipt,
    secondRequest,
    reads,
    executed,
  };
}

// ---------------------------------------------------------------------------------------------
// Arm (a): RETRACT through its GraphQL API.

interface FeedEvent {
  type: string;
  retractionId: string;
  receivedAt: number;
}
type EffectNode = NonNullable<ResultOf<typeof Op.CLAIM>['claimEffect']>;
type ReceiptDoc = NonNullable<ResultOf<typeof Op.RECEIPT>['retraction']>;
type Money = ReceiptDoc['totals']['exposure'][number];

const view = (e: EffectNode): EffectView => ({
  id: e.id,
  kind: e.kind,
  status: e.status,
  amountMinor: e.amount?.amountMinor ?? 0,
  currency: e.amount?.currency ?? 'USD',
  idempotencyKey: e.idempotencyKey,
});

class RetractMemory implements Memory {
  readonly arm = 'retract' as const;
  /** When the first retraction request was sent: delivery latency is measured from here. */
  private retractSentAt: number | null = null;
  private constructor(
    private readonly clients: Record<AgentName, RetractClient>,
    private readonly feeds: Record<AgentName, Subscription<FeedEvent>>,
    private readonly toldTimeoutMs: number,
  ) {}

  /** Creates the fleet's 8 agents through the API (the operator makes the fleet admin, who makes the rest) and opens each one's subscription. */
  static async open(url: string, bootstrapToken: string, fleet: string, toldTimeoutMs: number): Promise<RetractMemory> {
    const endpoint = `${url}/graphql`;
    const operator = nodeClient({ url: endpoint, token: bootstrapToken });
    const tokens = {} as Record<AgentName, string>;
    const admin = await operator.request(Op.CREATE_AGENT, {
      input: { fleet, name: 'fleet-admin', scopes: [...AGENTS['fleet-admin'].scopes] },
    });
    tokens['fleet-admin'] = admin.createAgent.token;
    const adminClient = nodeClient({ url: endpoint, token: admin.createAgent.token });
    for (const name of AGENT_NAMES.filter((n) => n !== 'fleet-admin')) {
      const r = await adminClient.request(Op.CREATE_AGENT, { input: { name, scopes: [...AGENTS[name].scopes] } });
      if (r.createAgent.agent.fleet !== fleet) throw new Error(`${name} landed in fleet ${r.createAgent.agent.fleet}`);
      tokens[name] = r.createAgent.token;
    }
    const clients = Object.fromEntries(
      AGENT_NAMES.map((n) => [n, nodeClient({ url: endpoint, token: tokens[n] })]),
    ) as Record<AgentName, RetractClient>;
    // Each agent follows the stream from the start of its fleet's log: lossless whenever the socket
    // comes up, so no event depends on a race between subscribing and retracting.
    const after = encodeCursor(START);
    const feeds = Object.fromEntries(
      AGENT_NAMES.map((n) => [
        n,
        subscribe(endpoint, tokens[n], Op.FEED, { after }, (d): FeedEvent => {
          const e = d.retractionEvents;
          return { type: e.__typename, retractionId: e.retraction.id, receivedAt: performance.now() };
        }),
      ]),
    ) as Record<AgentName, Subscription<FeedEvent>>;
    return new RetractMemory(clients, feeds, toldTimeoutMs);
  }

  async registerKind(agent: AgentName, kind: string, reversible: boolean) {
    await this.clients[agent].request(Op.REGISTER_KIND, { input: { kind, reversible } });
  }
  async assert(agent: AgentName, input: AssertInput) {
    const r = (await this.clients[agent].request(Op.ASSERT, { input: { ...input, value: input.value as Json } }))
      .assertBelief;
    return { outcome: r.__typename, id: 'belief' in r ? r.belief.id : null };
  }
  async believed(agent: AgentName, claimKey: string) {
    const r = await this.clients[agent].request(Op.BELIEVED, { claimKey });
    return r.beliefByClaim;
  }
  async propose(agent: AgentName, input: ProposeInput) {
    const r = (
      await this.clients[agent].request(Op.PROPOSE, {
        input: {
          kind: input.kind,
          amount: { amountMinor: input.amountMinor, currency: 'USD' },
          supportedBy: input.supportedBy,
          idempotencyKey: input.idempotencyKey,
        },
      })
    ).proposeEffect;
    return { outcome: r.__typename, id: r.__typename === 'EffectProposed' ? r.effect.id : null };
  }
  async claim(agent: AgentName) {
    const r = await this.clients[agent].request(Op.CLAIM);
    return r.claimEffect ? view(r.claimEffect) : null;
  }
  async complete(agent: AgentName, effectId: string, ref: string) {
    await this.clients[agent].request(Op.COMPLETE, { input: { effectId, externalRef: ref } });
  }
  async retract(agent: AgentName, beliefId: string, reason: string) {
    this.retractSentAt ??= performance.now();
    const r = await this.clients[agent].request(Op.RETRACT, { input: { beliefId, reason } });
    return { receipt: r.retractBelief.id };
  }
  async observe(): Promise<Observation> {
    const r = await this.clients['fleet-admin'].request(Op.OBSERVE);
    if (r.beliefs.totalCount > r.beliefs.edges.length || r.effects.totalCount > r.effects.edges.length)
      throw new Error('observe: more than one page');
    return {
      beliefs: r.beliefs.edges.map((e) => e.node),
      effects: r.effects.edges.map((e) => view(e.node)),
      reversals: r.effects.edges.flatMap(({ node: e }) =>
        e.reversal
          ? [
              {
                effectId: e.id,
                status: e.reversal.status,
                idempotencyKey: e.reversal.idempotencyKey,
                amountMinor: e.reversal.amount?.amountMinor ?? 0,
                currency: e.reversal.amount?.currency ?? 'USD',
                reason: e.reversal.reason,
              },
            ]
          : [],
      ),
    };
  }
  /** Waits (up to `ms`) for every agent's subscription to deliver the receipt's RetractionCommitted. */
  async told(receipt: string): Promise<Told> {
    await Promise.allSettled(
      AGENT_NAMES.map((n) =>
        this.feeds[n].waitFor(
          (e) => e.type === 'RetractionCommitted' && e.retractionId === receipt,
          this.toldTimeoutMs,
        ),
      ),
    );
    const out = {} as Told;
    for (const n of AGENT_NAMES) {
      const mine = this.feeds[n].received.filter((e) => e.retractionId === receipt);
      const events: Record<string, number> = {};
      for (const e of mine) events[e.type] = (events[e.type] ?? 0) + 1;
      const committed = mine.find((e) => e.type === 'RetractionCommitted');
      out[n] = {
        told: committed !== undefined,
        events,
        latencyMs:
          committed && this.retractSentAt !== null ? Math.round(committed.receivedAt - this.retractSentAt) : null,
      };
    }
    return out;
  }
  receipt(id: string) {
    return this.clients['fraud-analyst'].request(Op.RECEIPT, { id }).then((r) => {
      if (!r.retraction) throw new Error(`receipt ${id} not found`);
      return r.retraction;
    });
  }
  async close() {
    await Promise.all(AGENT_NAMES.map((n) => this.feeds[n].close()));
  }
}

// ---------------------------------------------------------------------------------------------
// Arm (b): the control — a naive agent memory, modelled generously.

interface NaiveBelief {
  id: string;
  claimKey: string;
  statement: string;
  value: unknown;
  evidence: string | null;
  derivedFrom: string[];
  author: AgentName;
  status: 'ACTIVE' | 'RETRACTED';
}
interface NaiveEffect {
  id: string;
  kind: string;
  amountMinor: number;
  currency: string;
  supportedBy: string[];
  idempotencyKey: string;
  status: 'PENDING' | 'EXECUTING' | 'EXECUTED';
  ref: string | null;
}
interface AuditEntry {
  seq: number;
  agent: AgentName;
  action: string;
  target: string;
  detail: string;
}

/**
 * A key-value agent memory with provenance and an audit trail. What it does: one ACTIVE belief
 * per claim (a different value is refused as a contradiction); provenance (`derivedFrom`) stored
 * with each belief; idempotency keys on effects; an executor that will not take an effect whose
 * own supporting belief is marked retracted; a retraction that marks its belief and writes an
 * audit entry. What it does not: follow provenance, cancel queued effects, reach executed ones, or
 * tell anyone. Its reads and figures come from its own state.
 */
class NaiveMemory implements Memory {
  readonly arm = 'control' as const;
  private nextId = 1;
  readonly beliefs = new Map<string, NaiveBelief>();
  readonly effects = new Map<string, NaiveEffect>();
  readonly kinds = new Map<string, boolean>();
  readonly audit: AuditEntry[] = [];

  private log(agent: AgentName, action: string, target: string, detail = '') {
    this.audit.push({ seq: this.audit.length + 1, agent, action, target, detail });
  }
  async registerKind(agent: AgentName, kind: string, reversible: boolean) {
    this.kinds.set(kind, reversible);
    this.log(agent, 'registerKind', kind, `reversible=${reversible}`);
  }
  async assert(agent: AgentName, input: AssertInput) {
    const active = [...this.beliefs.values()].find((b) => b.claimKey === input.claimKey && b.status === 'ACTIVE');
    if (active) {
      const same = JSON.stringify(active.value) === JSON.stringify(input.value);
      this.log(agent, same ? 'corroborate' : 'contradiction', active.id);
      return { outcome: same ? 'BeliefCorroborated' : 'ContradictionRaised', id: same ? active.id : null };
    }
    const id = `b${this.nextId++}`;
    this.beliefs.set(id, {
      id,
      claimKey: input.claimKey,
      statement: input.statement,
      value: input.value,
      evidence: input.evidence ?? null,
      derivedFrom: [...(input.derivedFrom ?? [])],
      author: agent,
      status: 'ACTIVE',
    });
    this.log(agent, 'assert', id, input.claimKey);
    return { outcome: 'BeliefAsserted', id };
  }
  async believed(_agent: AgentName, claimKey: string) {
    const b = [...this.beliefs.values()].find((x) => x.claimKey === claimKey && x.status === 'ACTIVE');
    return b ? { id: b.id, claimKey: b.claimKey, value: b.value, status: b.status } : null;
  }
  private supportsStand(ids: readonly string[]) {
    return ids.every((id) => this.beliefs.get(id)?.status === 'ACTIVE');
  }
  async propose(agent: AgentName, input: ProposeInput) {
    const existing = [...this.effects.values()].find((e) => e.idempotencyKey === input.idempotencyKey);
    if (existing) return { outcome: 'EffectProposed', id: existing.id };
    if (!this.kinds.has(input.kind)) throw new Error(`control: kind ${input.kind} not registered`);
    if (!this.supportsStand(input.supportedBy)) return { outcome: 'PremiseRetracted', id: null };
    const id = `e${this.nextId++}`;
    this.effects.set(id, {
      id,
      kind: input.kind,
      amountMinor: input.amountMinor,
      currency: 'USD',
      supportedBy: [...input.supportedBy],
      idempotencyKey: input.idempotencyKey,
      status: 'PENDING',
      ref: null,
    });
    this.log(agent, 'propose', id, `${input.kind} ${input.amountMinor}`);
    return { outcome: 'EffectProposed', id };
  }
  async claim(agent: AgentName) {
    const e = [...this.effects.values()].find((x) => x.status === 'PENDING' && this.supportsStand(x.supportedBy));
    if (!e) return null;
    e.status = 'EXECUTING';
    this.log(agent, 'claim', e.id);
    return this.effectView(e);
  }
  async complete(agent: AgentName, effectId: string, ref: string) {
    const e = this.effects.get(effectId);
    if (!e || e.status !== 'EXECUTING') throw new Error(`control: effect ${effectId} is not EXECUTING`);
    e.status = 'EXECUTED';
    e.ref = ref;
    this.log(agent, 'complete', effectId, ref);
  }
  async retract(agent: AgentName, beliefId: string, reason: string) {
    const b = this.beliefs.get(beliefId);
    if (!b) throw new Error(`control: belief ${beliefId} not found`);
    const first = b.status === 'ACTIVE';
    b.status = 'RETRACTED';
    this.log(agent, first ? 'retract' : 'retract (repeat)', beliefId, reason);
    return { receipt: `audit:${beliefId}` };
  }
  private effectView(e: NaiveEffect): EffectView {
    return {
      id: e.id,
      kind: e.kind,
      status: e.status,
      amountMinor: e.amountMinor,
      currency: e.currency,
      idempotencyKey: e.idempotencyKey,
    };
  }
  async observe(): Promise<Observation> {
    return {
      beliefs: [...this.beliefs.values()].map((b) => ({
        id: b.id,
        claimKey: b.claimKey,
        value: b.value,
        status: b.status,
      })),
      effects: [...this.effects.values()].map((e) => this.effectView(e)),
      // The memory records no compensation of any kind: there is nothing to list.
      reversals: [],
    };
  }
  /** Told: the agents named in the audit trail's retraction entries for this belief — whoever wrote them. */
  async told(receipt: string): Promise<Told> {
    const beliefId = receipt.replace(/^audit:/, '');
    const out = {} as Told;
    for (const n of AGENT_NAMES) {
      const mine = this.audit.filter((a) => a.agent === n && a.target === beliefId && a.action.startsWith('retract'));
      out[n] = {
        told: mine.length > 0,
        events: mine.length > 0 ? { AuditEntry: mine.length } : {},
        latencyMs: mine.length > 0 ? 0 : null,
      };
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Figures, measured from an arm's state after the run — the same computation for both arms.

interface Figures {
  beliefsRestingOnPassport: number;
  beliefsStillActive: number;
  beliefsStillActiveIds: string[];
  pendingAtRetraction: number;
  pendingStillRan: number;
  pendingCancelled: number;
  pendingMoneyMovedMinor: number;
  proposedAfterOnFallenGround: number;
  proposedAfterExecuted: number;
  proposedAfterMoneyMovedMinor: number;
  executedAtRetraction: number;
  executedMoneyMinor: number;
  executedReached: number;
  executedMoneyReachedMinor: number;
  owedMinor: number;
  owedKeys: string[];
  owedReversalsForRefund: number;
  unreachableMinor: number;
  unreachableKinds: string[];
  settledMinor: number;
  staleReads: number;
  reads: number;
  told: AgentName[];
  toldEvents: Told;
  sameReceiptOnRetry: boolean;
}

async function figures(mem: Memory, log: StoryLog): Promise<Figures> {
  const status = (obs: Observation, id: string) => obs.effects.find((e) => e.id === id)?.status;
  const amount = (id: string) => log.after.effects.find((e) => e.id === id)?.amountMinor ?? 0;
  const pending = log.before.effects.filter((e) => e.status === 'PENDING').map((e) => e.id);
  const executed = log.before.effects.filter((e) => e.status === 'EXECUTED').map((e) => e.id);
  const newIds = log.after.effects.filter((e) => !log.before.effects.some((b) => b.id === e.id)).map((e) => e.id);
  const stillActive = log.derived.filter((id) => log.after.beliefs.find((b) => b.id === id)?.status === 'ACTIVE');
  const ran = pending.filter((id) => status(log.after, id) === 'EXECUTED');
  const newRan = newIds.filter((id) => status(log.after, id) === 'EXECUTED');
  const reversalOf = (id: string) => log.after.reversals.filter((r) => r.effectId === id);
  const reached = executed.filter((id) => reversalOf(id).length > 0);
  const owed = log.after.reversals.filter((r) => r.status !== 'UNREACHABLE');
  const unreachable = log.after.reversals.filter((r) => r.status === 'UNREACHABLE');
  const toldEvents = await mem.told(log.receipt);
  return {
    beliefsRestingOnPassport: log.derived.length,
    beliefsStillActive: stillActive.length,
    beliefsStillActiveIds: stillActive,
    pendingAtRetraction: pending.length,
    pendingStillRan: ran.length,
    pendingCancelled: pending.filter((id) => status(log.after, id) === 'CANCELLED').length,
    pendingMoneyMovedMinor: ran.reduce((s, id) => s + amount(id), 0),
    proposedAfterOnFallenGround: newIds.length,
    proposedAfterExecuted: newRan.length,
    proposedAfterMoneyMovedMinor: newRan.reduce((s, id) => s + amount(id), 0),
    executedAtRetraction: executed.length,
    executedMoneyMinor: executed.reduce((s, id) => s + amount(id), 0),
    executedReached: reached.length,
    executedMoneyReachedMinor: reached.reduce((s, id) => s + amount(id), 0),
    owedMinor: owed.reduce((s, r) => s + r.amountMinor, 0),
    owedKeys: owed.map((r) => r.idempotencyKey),
    owedReversalsForRefund: reversalOf(log.refund).length,
    unreachableMinor: unreachable.reduce((s, r) => s + r.amountMinor, 0),
    unreachableKinds: unreachable.map((r) => log.after.effects.find((e) => e.id === r.effectId)?.kind ?? '?'),
    settledMinor: log.after.reversals.filter((r) => r.status === 'CONFIRMED').reduce((s, r) => s + r.amountMinor, 0),
    staleReads: log.reads.filter((r) => r.restsOnPassport).length,
    reads: log.reads.length,
    told: AGENT_NAMES.filter((n) => toldEvents[n].told),
    toldEvents,
    sameReceiptOnRetry: log.receipt === log.retryReceipt,
  };
}

// ---------------------------------------------------------------------------------------------

/** The events each told agent received, written once when they all received the same. */
function describeEvents(told: Told, names: AgentName[]): string {
  const text = (n: AgentName) =>
    Object.entries(told[n].events)
      .map(([t, c]) => `${t}×${c}`)
      .join(' ');
  const all = new Set(names.map(text));
  return all.size === 1 ? `[${[...all][0]}]` : names.map((n) => `${n} [${text(n)}]`).join('; ');
}

function usage(message: string): never {
  console.error(`reach_eval: ${message}\nusage: tsx experiments/reach_eval.ts [--out FILE] [--told-timeout-ms N]`);
  process.exit(3);
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        out: { type: 'string', default: path.join(repoRoot, 'results/reach_eval.json') },
        'told-timeout-ms': { type: 'string', default: '60000' },
      },
    }).values;
  } catch (e) {
    usage((e as Error).message);
  }
  const toldTimeoutMs = Number(args['told-timeout-ms']);
  if (!Number.isInteger(toldTimeoutMs) || toldTimeoutMs < 100)
    usage('--told-timeout-ms must be an integer of at least 100');
  const started = performance.now();
  const store: Store = process.env.DATABASE_URL
    ? await openStore({ databaseUrl: process.env.DATABASE_URL })
    : await openStore({ dataDir: 'memory://' });
  const fleet = `reach-${randomBytes(4).toString('hex')}`;
  const bootstrapToken = `reach-eval-${randomBytes(16).toString('hex')}`;
  let app: App | null = null;
  let retract: RetractMemory | null = null;
  try {
    const env = await environment(store);
    app = await createApp({
      config: { port: 0, host: '127.0.0.1', bootstrapToken, production: false },
      store,
      embedder: new LocalEmbedder(),
      logger: pino({ level: 'warn' }, pino.destination(2)),
    });
    await app.listen();

    // Arm (a): RETRACT.
    const t0 = performance.now();
    retract = await RetractMemory.open(app.url(), bootstrapToken, fleet, toldTimeoutMs);
    const rLog = await story(retract);
    const rFig = await figures(retract, rLog);
    const receipt = await retract.receipt(rLog.receipt);
    const violations: Violation[] = await checkInvariants(store);
    // The event stream never reads past the oldest transaction still running, and on PostgreSQL
    // that horizon is cluster-wide: name what holds it when a subscription came up short.
    let horizon: string | null = null;
    let heldElsewhere = false;
    if (rFig.told.length < AGENT_NAMES.length && store.engine === 'postgres') {
      const r = await sql<{ datname: string; here: boolean; age: string; query: string }>`
        SELECT datname, datname = current_database() AS here, (now() - xact_start)::text AS age, left(query, 60) AS query FROM pg_stat_activity
         WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start LIMIT 1`.execute(store.db);
      const o = r.rows[0];
      heldElsewhere = o !== undefined && !o.here;
      horizon = o
        ? `oldest open transaction in the cluster: database ${o.datname}, open for ${o.age} (${o.query.replace(/\s+/g, ' ').trim()})`
        : 'no open transaction found now';
    }
    const retractMs = performance.now() - t0;

    // Arm (b): the control, driven by the same script.
    const t1 = performance.now();
    const control = new NaiveMemory();
    const cLog = await story(control);
    const cFig = await figures(control, cLog);
    const controlMs = performance.now() - t1;

    // What RETRACT must show.
    const usd = (m: Money[]) => m.filter((x) => x.currency === 'USD').reduce((s, x) => s + x.amountMinor, 0);
    const refundKey = `reversal:${CUSTOMER}:refund-1`;
    const checks: Array<{ check: string; ok: boolean; inconclusive?: boolean; measured: unknown }> = [
      {
        check: 'all three derived beliefs retracted',
        ok: rFig.beliefsRestingOnPassport === 3 && rFig.beliefsStillActive === 0,
        measured: `${rFig.beliefsStillActive} of ${rFig.beliefsRestingOnPassport} still ACTIVE`,
      },
      {
        check: 'the pending payout cancelled, and nothing pending ran',
        ok:
          rFig.pendingAtRetraction === 1 &&
          rFig.pendingCancelled === 1 &&
          rFig.pendingStillRan === 0 &&
          rFig.proposedAfterExecuted === 0,
        measured: `${rFig.pendingCancelled} cancelled, ${rFig.pendingStillRan} ran, ${rFig.proposedAfterExecuted} new ran`,
      },
      {
        check: 'both executed effects reached',
        ok: rFig.executedAtRetraction === 2 && rFig.executedReached === 2,
        measured: `${rFig.executedReached} of ${rFig.executedAtRetraction}`,
      },
      {
        check: `$1,240.00 owed under one idempotency key (${refundKey})`,
        ok:
          rFig.owedMinor === 124_000 &&
          rFig.owedKeys.length === 1 &&
          rFig.owedKeys[0] === refundKey &&
          rFig.owedReversalsForRefund === 1,
        measured: `${money(rFig.owedMinor)} under ${JSON.stringify(rFig.owedKeys)}`,
      },
      {
        check: '$89.00 named unreachable (card_charge)',
        ok: rFig.unreachableMinor === 8_900 && rFig.unreachableKinds.join() === 'card_charge',
        measured: `${money(rFig.unreachableMinor)} ${JSON.stringify(rFig.unreachableKinds)}`,
      },
      { check: '$0 settled', ok: rFig.settledMinor === 0, measured: money(rFig.settledMinor) },
      {
        check: "the receipt's own totals agree",
        ok:
          usd(receipt.totals.owed) === rFig.owedMinor &&
          usd(receipt.totals.unreachableAmount) === rFig.unreachableMinor &&
          usd(receipt.totals.settled) === 0 &&
          receipt.totals.beliefsRetracted === 4 &&
          receipt.totals.effectsCancelled === 1 &&
          receipt.totals.effectsReached === 2,
        measured: receipt.totals,
      },
      {
        check: 'a retried retraction returns the same receipt',
        ok: rFig.sameReceiptOnRetry,
        measured: rFig.sameReceiptOnRetry,
      },
      // Inconclusive, not failed, when another database's transaction holds the cluster-wide horizon:
      // then the delay is that server's, and the log will still deliver once it ends.
      {
        check: `every agent's subscription delivered the cascade within ${toldTimeoutMs} ms`,
        ok: rFig.told.length === AGENT_NAMES.length,
        inconclusive: rFig.told.length < AGENT_NAMES.length && heldElsewhere,
        measured: `${rFig.told.length} of ${AGENT_NAMES.length}${horizon ? `; ${horizon}` : ''}`,
      },
      { check: 'checkInvariants: no violation', ok: violations.length === 0, measured: violations },
    ];
    const passed = checks.every((c) => c.ok || c.inconclusive);

    // Print.
    const lines: string[] = [];
    lines.push('reach_eval — the passport story through the GraphQL API, RETRACT against a naive agent memory');
    lines.push(...environmentLines(env));
    lines.push(`fleet:    ${fleet}; 8 agents (${AGENT_NAMES.join(', ')}), each with its own token`);
    lines.push(
      `story:    passport verified; 3 beliefs derived; refund $1,240.00 and card charge $89.00 executed; payout $500.00 pending;`,
    );
    lines.push(
      `          passport retracted as forged (and the retraction retried); then the executor runs, a $310.00 refund request arrives, every agent reads`,
    );
    lines.push('');
    const row = (label: string, f: (x: Figures) => string) => [label, f(rFig), f(cFig)];
    lines.push(
      table([
        ['after the forged passport is retracted', 'RETRACT', 'control (naive memory)'],
        row(
          'beliefs resting on the passport still ACTIVE',
          (x) => `${x.beliefsStillActive} of ${x.beliefsRestingOnPassport}`,
        ),
        row('stale reads (agent read a belief resting on it)', (x) => `${x.staleReads} of ${x.reads}`),
        row(
          'pending effects that still ran',
          (x) => `${x.pendingStillRan} of ${x.pendingAtRetraction} (${money(x.pendingMoneyMovedMinor)})`,
        ),
        row('pending effects cancelled', (x) => `${x.pendingCancelled} of ${x.pendingAtRetraction}`),
        row(
          'new effects on fallen ground that ran',
          (x) =>
            `${x.proposedAfterExecuted} of ${x.proposedAfterOnFallenGround} (${money(x.proposedAfterMoneyMovedMinor)})`,
        ),
        row('executed effects reached', (x) => `${x.executedReached} of ${x.executedAtRetraction}`),
        row('executed money reached', (x) => `${money(x.executedMoneyReachedMinor)} of ${money(x.executedMoneyMinor)}`),
        row('owed', (x) => `${money(x.owedMinor)} (${x.owedKeys.length} key${x.owedKeys.length === 1 ? '' : 's'})`),
        row(
          'unreachable',
          (x) =>
            `${money(x.unreachableMinor)}${x.unreachableKinds.length ? ` (${x.unreachableKinds.join(', ')})` : ''}`,
        ),
        row('settled', (x) => money(x.settledMinor)),
        row('who was told', (x) => `${x.told.length} of ${AGENT_NAMES.length}`),
      ]),
    );
    lines.push('');
    lines.push(`owed key (RETRACT):   ${rFig.owedKeys.join(', ') || 'none'}`);
    const latencies = rFig.told.map((n) => rFig.toldEvents[n].latencyMs ?? 0);
    lines.push(
      `told (RETRACT):       ${rFig.told.join(', ') || 'nobody'}; each received ${describeEvents(rFig.toldEvents, rFig.told)}; RetractionCommitted within ${latencies.length ? Math.max(...latencies) : '—'} ms of the request`,
    );
    lines.push(
      `told (control):       ${cFig.told.join(', ') || 'nobody'} (the retracting agent's own audit entries; no one else hears of it)`,
    );
    lines.push(
      `second refund:        RETRACT ${rLog.secondRequest.outcome}; control ${cLog.secondRequest.outcome}${cLog.secondRequest.believed ? ' and executed' : ''}`,
    );
    lines.push(
      `runtime:              RETRACT arm ${retractMs.toFixed(0)} ms, control arm ${controlMs.toFixed(1)} ms, total ${(performance.now() - started).toFixed(0)} ms`,
    );
    lines.push('');
    lines.push('RETRACT checks:');
    for (const c of checks)
      lines.push(
        `  ${c.ok ? 'PASS' : c.inconclusive ? 'INCONCLUSIVE' : 'FAIL'}  ${c.check}${c.ok ? '' : ` — measured ${JSON.stringify(c.measured)}`}`,
      );
    lines.push(passed ? 'result: PASS' : 'result: FAIL');
    console.log(lines.join('\n'));

    const strip = (f: Figures) => ({
      ...f,
      toldEvents: Object.fromEntries(
        AGENT_NAMES.map((n) => [n, { events: f.toldEvents[n].events, latencyMs: f.toldEvents[n].latencyMs }]),
      ),
    });
    writeJson(args.out!, {
      experiment: 'reach_eval',
      description:
        "The passport story run through the RETRACT GraphQL API and through a naive agent memory by the same script; every figure is measured from each arm's state after the run.",
      environment: env,
      fleet,
      agents: AGENTS,
      control: {
        model:
          'in-memory key-value memory: one ACTIVE belief per claim (contradictions refused), provenance stored, effect idempotency keys, executor refuses an effect whose own support is marked retracted, retraction marks the belief and writes an audit entry; it does not follow provenance, cancel, reach or notify',
        auditTrail: control.audit,
      },
      arms: { retract: strip(rFig), control: strip(cFig) },
      story: {
        retract: { secondRequest: rLog.secondRequest, executed: rLog.executed, before: rLog.before, after: rLog.after },
        control: { secondRequest: cLog.secondRequest, executed: cLog.executed, before: cLog.before, after: cLog.after },
      },
      receipt,
      invariantViolations: violations,
      checks,
      passed,
      runtimeMs: {
        retract: Math.round(retractMs),
        control: Math.round(controlMs * 10) / 10,
        total: Math.round(performance.now() - started),
      },
    });
    console.log(`wrote ${path.relative(process.cwd(), args.out!) || args.out}`);
    return passed ? 0 : 1;
  } finally {
    await retract?.close().catch(() => {});
    await app?.close().catch(() => {});
    await store.close().catch(() => {});
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`reach_eval: the run failed: ${(e as Error).stack ?? e}`);
    process.exit(2);
  },
);
