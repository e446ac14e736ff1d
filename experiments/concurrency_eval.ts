/**
 * Concurrency: does anything short of the explicit claim lock keep concurrent adjacent writes correct?
 *
 *   tsx experiments/concurrency_eval.ts [--trials N] [--attribution-rounds N] [--connections N] [--seed N] [--out FILE]
 *
 * Real PostgreSQL only: the server named by DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * on which this script creates a fresh database and drops it at the end. Three arms, interleaved
 * trial by trial so machine load falls on all of them alike:
 *  A  the product's COMMIT as it is: assertBelief (claim row lock, premises locked FOR SHARE, SERIALIZABLE);
 *  B  the same COMMIT without the claim row lock (Core.skipClaimLock — experiment only);
 *  C  a naive check-then-write at READ COMMITTED, written here: read the premises and the ACTIVE
 *     belief with plain SELECTs; if the claim is free, insert. Same role and fleet setting (inTx).
 * Retractions in every arm are the product's retractBelief. Each trial starts from an emptied store and
 * runs, all at once on a pool of connections: 3 agents writing 3 different values to a new claim, 3 to a
 * claim written before (its claim row exists, its belief was retracted), 3 to adjacent claims
 * (neighbouring keys, near-identical statements), 4 deriving from a premise (2 directly, 2 through a
 * derived belief), and a 14th agent retracting that premise, started at a seeded offset of −100…+100 ms
 * from the writers. Then each group runs alone for a few rounds per arm, to attribute retries and
 * anomalies. Anomalies, counted per trial, from the agents' answers and the store afterwards:
 *  - doubleAccept: more than one different value accepted for one contested claim;
 *  - lostContradiction: a conflicting write that neither was written nor raised a contradiction (an
 *    error reached the agent instead — a unique violation, a conflict given up), or a contradiction
 *    answered without its row;
 *  - adjacentRefused: a write to a free adjacent claim not accepted;
 *  - derivedOnRetracted: a belief left ACTIVE with no justification standing (derived from a premise
 *    retracted before it committed);
 *  - invariantViolation: anything checkInvariants reports.
 * Rates get Wilson 95% intervals; arms are compared with Fisher's exact test and the two-proportion
 * z-test. Null results are results. Prints a table; writes results/concurrency_eval.json (summaries)
 * and results/concurrency_eval.trials.jsonl (one line per trial).
 *
 * Exit codes: 0 arm A showed no anomaly and surfaced no error to an agent; 1 it did; 2 the run
 * failed; 3 bad arguments. --trials defaults to 200 per arm; --attribution-rounds to max(3, trials/20).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import type { Actor, Core } from '../src/core';
import { assertBelief, insertBelief } from '../src/belief/belief.service';
import { activeBeliefForClaim } from '../src/belief/belief.repository';
import { LocalEmbedder } from '../src/embedding/local';
import { appendEvent } from '../src/event/event.repository';
import { checkInvariants } from '../src/invariants/check';
import { retractBelief } from '../src/retraction/retraction.service';
import { openStore, type Store } from '../src/store/engine';
import { inTx } from '../src/store/tx';
import * as v from '../src/validation';
import { environment, environmentLines, repoRoot, table, writeJson } from './lib/report';
import { fisherExact, percentile, twoProportionZ, wilson, type Interval } from './lib/stats';

const ARMS = ['A', 'B', 'C'] as const;
type Arm = (typeof ARMS)[number];
const ARM_LABEL: Record<Arm, string> = {
  A: 'A: full COMMIT (claim lock + SERIALIZABLE)',
  B: 'B: SERIALIZABLE, no claim lock',
  C: 'C: check-then-write, READ COMMITTED',
};
const ANOMALIES = [
  'doubleAccept',
  'lostContradiction',
  'adjacentRefused',
  'derivedOnRetracted',
  'invariantViolation',
] as const;
type Anomaly = (typeof ANOMALIES)[number];

const CONTESTED_WRITERS = 3; // on each of the two contested claims
const ADJACENT_WRITERS = 3;
const DERIVERS = 4; // half from the premise, half from a belief derived from it
/** The retraction starts this many ms after the writers (negative: before them), uniformly from −OFFSET_MAX_MS to +OFFSET_MAX_MS. */
const OFFSET_MAX_MS = 100;
const GROUPS = ['fresh', 'existing', 'adjacent', 'derive'] as const;
type Group = (typeof GROUPS)[number];

interface Outcome {
  kind: 'asserted' | 'corroborated' | 'contradiction' | 'premiseRetracted' | 'claimChanged' | 'ok' | 'error';
  code?: string;
  message?: string;
  id?: string;
  ms: number;
}

const embedder = new LocalEmbedder();

/** Seeded PRNG (mulberry32): the same offset schedule for every arm. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function errorOutcome(e: unknown, t0: number): Outcome {
  const code = (e as { code?: string }).code ?? 'UNKNOWN';
  return { kind: 'error', code, message: String((e as Error).message ?? e).slice(0, 200), ms: performance.now() - t0 };
}

/**
 * Arm C's COMMIT: the obvious check-then-write, at READ COMMITTED, with no lock taken explicitly.
 * Reads the premises and the ACTIVE belief with plain SELECTs and writes when the claim looks free,
 * raising a contradiction (row and event) when it holds another value. The write itself is the
 * product's insertBelief, so rows and events are shaped exactly as the product writes them.
 */
async function naiveAssert(
  core: Core,
  actor: Actor,
  input: { claimKey: string; statement: string; value: unknown; derivedFrom: string[] },
): Promise<Outcome> {
  const t0 = performance.now();
  const value = v.json('value', input.value, v.LIMITS.valueBytesMax);
  const [embedding] = await core.embedder.embed([input.statement]);
  const vector = `[${embedding!.join(',')}]`;
  try {
    return await inTx(core.store, { fleet: actor.fleet, isolation: 'read committed' }, async (tx): Promise<Outcome> => {
      if (input.derivedFrom.length > 0) {
        const premises = await tx
          .selectFrom('beliefs')
          .select(['id', 'status'])
          .where('id', 'in', input.derivedFrom)
          .execute();
        if (premises.some((p) => p.status !== 'ACTIVE'))
          return { kind: 'premiseRetracted', ms: performance.now() - t0 };
      }
      const active = await activeBeliefForClaim(tx, actor.fleet, input.claimKey);
      if (active) {
        const same = await sql<{
          same: boolean;
        }>`SELECT (${value}::jsonb IS NOT DISTINCT FROM value) AS same FROM beliefs WHERE id = ${active.id}`.execute(
          tx,
        );
        if (same.rows[0]!.same) return { kind: 'corroborated', id: active.id, ms: performance.now() - t0 };
        const c = await tx
          .insertInto('contradictions')
          .values({
            fleet_id: actor.fleet,
            claim_key: input.claimKey,
            existing_id: active.id,
            proposed_statement: input.statement,
            proposed_value: value,
            proposed_evidence: null,
            proposed_author_id: actor.agentId,
            proposed_derived_from: input.derivedFrom,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        await appendEvent(tx, {
          fleet: actor.fleet,
          type: 'ContradictionRaised',
          actorId: actor.agentId,
          ids: [c.id],
          data: { claimKey: input.claimKey },
        });
        return { kind: 'contradiction', id: c.id, ms: performance.now() - t0 };
      }
      await tx
        .insertInto('claims')
        .values({ fleet_id: actor.fleet, key: input.claimKey })
        .onConflict((oc) => oc.doNothing())
        .execute();
      const b = await insertBelief(tx, actor, {
        claimKey: input.claimKey,
        statement: input.statement,
        value,
        evidence: null,
        derivedFrom: input.derivedFrom,
        vector,
      });
      return { kind: 'asserted', id: b.id, ms: performance.now() - t0 };
    });
  } catch (e) {
    return errorOutcome(e, t0);
  }
}

/** Arms A and B: the product's assertBelief (B on a Core with the experiment-only skipClaimLock). */
async function productAssert(
  core: Core,
  actor: Actor,
  input: { claimKey: string; statement: string; value: unknown; derivedFrom: string[] },
): Promise<Outcome> {
  const t0 = performance.now();
  try {
    const r = await assertBelief(core, actor, input);
    const ms = performance.now() - t0;
    switch (r.kind) {
      case 'asserted':
      case 'corroborated':
        return { kind: r.kind, id: r.belief.id, ms };
      case 'contradiction':
        return { kind: r.kind, id: r.contradictionId, ms };
      default:
        return { kind: r.kind, ms };
    }
  } catch (e) {
    return errorOutcome(e, t0);
  }
}

interface TrialResult {
  arm: Arm;
  trial: number;
  offsetMs: number;
  /** The one group run alone (attribution runs), or null when all ran together. */
  only: Group | null;
  anomalies: Record<Anomaly, number>;
  /** Lost contradictions per contested claim: the fresh one, and the one whose claim row already existed. */
  lost: { fresh: number; existing: number };
  outcomes: { fresh: Outcome[]; existing: Outcome[]; adjacent: Outcome[]; derived: Outcome[]; retraction: Outcome };
  errorsSurfaced: Record<string, number>;
  retries: number;
  exhausted: number;
  violations: Array<{ invariant: number; rule: string; rows: number }>;
  ms: number;
}

/**
 * Empties every table of the product (the migration bookkeeping stays), so each trial's checks see
 * that trial alone. As a superuser: DELETE with foreign-key triggers off (session_replication_role),
 * milliseconds on tables this small; otherwise TRUNCATE, which is correct but slower.
 */
async function emptyStore(store: Store, tables: string[], superuser: boolean): Promise<void> {
  if (!superuser) {
    await sql.raw(`TRUNCATE ${tables.join(', ')} CASCADE`).execute(store.db);
    return;
  }
  await store.db.transaction().execute(async (tx) => {
    await sql`SET LOCAL session_replication_role = replica`.execute(tx);
    for (const t of tables) await sql.raw(`DELETE FROM ${t}`).execute(tx);
  });
}

async function productTables(store: Store): Promise<{ tables: string[]; superuser: boolean }> {
  const r = await sql<{ t: string }>`
    SELECT quote_ident(tablename) AS t FROM pg_tables
     WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely_%' AND tablename <> 'store_meta' ORDER BY 1`.execute(
    store.db,
  );
  const su = await sql<{ su: boolean }>`SELECT rolsuper AS su FROM pg_roles WHERE rolname = current_user`.execute(
    store.db,
  );
  return { tables: r.rows.map((x) => x.t), superuser: su.rows[0]?.su === true };
}

/** One fleet and `n` agents, written the way the product writes them (role retract_app, fleet set). */
async function seedAgents(store: Store, fleet: string, n: number): Promise<Actor[]> {
  return inTx(store, { fleet }, async (tx) => {
    await tx
      .insertInto('fleets')
      .values({ id: fleet })
      .onConflict((oc) => oc.doNothing())
      .execute();
    const rows = await tx
      .insertInto('agents')
      .values(
        Array.from({ length: n }, (_, i) => ({
          fleet_id: fleet,
          name: `agent-${i}`,
          scopes: ['beliefs:read', 'beliefs:write', 'beliefs:retract'],
        })),
      )
      .returning('id')
      .execute();
    return rows.map((r) => ({ fleet, agentId: r.id }));
  });
}

/**
 * One trial of one arm: empty the store, set up, run every group's writes (or only `only`) and the
 * retraction at once, then judge the agents' answers and the store.
 */
async function runTrial(
  store: Store,
  db: { tables: string[]; superuser: boolean },
  arm: Arm,
  trial: number,
  offsetMs: number,
  only?: Group,
): Promise<TrialResult> {
  const started = performance.now();
  await emptyStore(store, db.tables, db.superuser);
  const fleet = `conc-${arm.toLowerCase()}`;
  const core: Core = { store, embedder };
  const agents = await seedAgents(store, fleet, 2 * CONTESTED_WRITERS + ADJACENT_WRITERS + DERIVERS + 1);
  const prefix = `cust:${trial}`;
  const claims = { fresh: `${prefix}/address`, existing: `${prefix}/phone` };

  // Setup, by the product in every arm: a premise and a belief derived from it; a claim that held a
  // value once (retracted), so its claim row exists and it has no ACTIVE belief.
  const setup = agents[0]!;
  const p = await assertBelief(core, setup, {
    claimKey: `${prefix}/premise`,
    statement: `customer ${trial} passed the document check`,
    value: true,
  });
  if (p.kind !== 'asserted') throw new Error(`setup: premise ${p.kind}`);
  const q = await assertBelief(core, setup, {
    claimKey: `${prefix}/identity`,
    statement: `customer ${trial} is verified`,
    value: true,
    derivedFrom: [p.belief.id],
  });
  if (q.kind !== 'asserted') throw new Error(`setup: derived ${q.kind}`);
  const old = await assertBelief(core, setup, {
    claimKey: claims.existing,
    statement: `customer ${trial} can be reached at +1 555 0100`,
    value: '+1 555 0100',
  });
  if (old.kind !== 'asserted') throw new Error(`setup: old phone ${old.kind}`);
  await retractBelief(core, setup, { beliefId: old.belief.id, reason: 'number disconnected' });

  const write = arm === 'C' ? naiveAssert : productAssert;
  const writer: Core = arm === 'B' ? { ...core, skipClaimLock: true } : core;
  const streets = [
    '12 Elm St',
    '14 Elm St',
    '12 Oak St',
    '21 Elm St',
    '12 Ash St',
    '16 Elm St',
    '12 Elm Rd',
    '18 Elm St',
  ];
  const phones = ['+1 555 0111', '+1 555 0122', '+1 555 0133', '+1 555 0144'];
  const retries0 = store.tx.stats.retries;
  const exhausted0 = store.tx.stats.exhausted;
  let outcomes: TrialResult['outcomes'];
  const on = (g: Group) => only === undefined || only === g;
  // Signed offset: the writers wait when the retraction goes first, and the other way round.
  const writersAt = sleep(Math.max(0, -offsetMs));
  const later = (f: () => Promise<Outcome>) => writersAt.then(f);
  const fresh: Array<Promise<Outcome>> = [];
  const existing: Array<Promise<Outcome>> = [];
  const adjacent: Array<Promise<Outcome>> = [];
  const derived: Array<Promise<Outcome>> = [];
  let a = 0;
  // Interleave the groups so that no group always starts first.
  for (let i = 0; i < Math.max(CONTESTED_WRITERS, ADJACENT_WRITERS, DERIVERS); i++) {
    if (i < CONTESTED_WRITERS && on('fresh')) {
      const agent = agents[a++]!;
      fresh.push(
        later(() =>
          write(writer, agent, {
            claimKey: claims.fresh,
            statement: `customer ${trial} lives at ${streets[i]}`,
            value: streets[i],
            derivedFrom: [],
          }),
        ),
      );
    }
    if (i < CONTESTED_WRITERS && on('existing')) {
      const agent = agents[a++]!;
      existing.push(
        later(() =>
          write(writer, agent, {
            claimKey: claims.existing,
            statement: `customer ${trial} can be reached at ${phones[i]}`,
            value: phones[i],
            derivedFrom: [],
          }),
        ),
      );
    }
    if (i < ADJACENT_WRITERS && on('adjacent')) {
      const agent = agents[a++]!;
      const street = streets[CONTESTED_WRITERS + i];
      adjacent.push(
        later(() =>
          write(writer, agent, {
            claimKey: `${claims.fresh}.${i + 1}`,
            statement: `customer ${trial} lives at ${street}`,
            value: street,
            derivedFrom: [],
          }),
        ),
      );
    }
    if (i < DERIVERS && on('derive')) {
      const agent = agents[a++]!;
      const from = i < DERIVERS / 2 ? p.belief.id : q.belief.id;
      derived.push(
        later(() =>
          write(writer, agent, {
            claimKey: `${prefix}/derived.${i}`,
            statement: `customer ${trial} may use service ${i}`,
            value: true,
            derivedFrom: [from],
          }),
        ),
      );
    }
  }
  const retractor = agents[a++]!;
  const retraction = (async (): Promise<Outcome> => {
    if (!on('derive')) return { kind: 'ok', ms: 0 };
    if (offsetMs > 0) await sleep(offsetMs);
    const t0 = performance.now();
    try {
      await retractBelief(core, retractor, { beliefId: p.belief.id, reason: 'document check reversed' });
      return { kind: 'ok', ms: performance.now() - t0 };
    } catch (e) {
      return errorOutcome(e, t0);
    }
  })();
  outcomes = {
    fresh: await Promise.all(fresh),
    existing: await Promise.all(existing),
    adjacent: await Promise.all(adjacent),
    derived: await Promise.all(derived),
    retraction: await retraction,
  };
  const retries = store.tx.stats.retries - retries0;
  const exhausted = store.tx.stats.exhausted - exhausted0;

  // What the store holds now.
  const rows = await inTx(store, { fleet, readOnly: true }, async (tx) => {
    const contested = async (claimKey: string) => {
      const r = await sql<{ active: number; contradictions: number }>`
        SELECT (SELECT count(*)::int FROM beliefs WHERE claim_key = ${claimKey} AND status = 'ACTIVE') AS active,
               (SELECT count(*)::int FROM contradictions WHERE claim_key = ${claimKey}) AS contradictions`.execute(tx);
      return r.rows[0]!;
    };
    const unsupported = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM beliefs b
       WHERE b.status = 'ACTIVE' AND NOT b.grounded
         AND NOT EXISTS (SELECT 1 FROM justifications j WHERE j.belief_id = b.id
               AND NOT EXISTS (SELECT 1 FROM justification_premises jp JOIN beliefs pb ON pb.id = jp.premise_id
                                WHERE jp.justification_id = j.id AND pb.status <> 'ACTIVE'))`.execute(tx);
    return {
      fresh: await contested(claims.fresh),
      existing: await contested(claims.existing),
      unsupported: unsupported.rows[0]!.n,
    };
  });
  const violations = await checkInvariants(store);

  /** One contested claim: more than one value accepted; writes neither accepted nor answered with a contradiction (or answered without its row). */
  const judge = (os: Outcome[], held: { active: number; contradictions: number }) => {
    const accepted = os.filter((o) => o.kind === 'asserted').length;
    const answered = os.filter((o) => o.kind === 'contradiction').length;
    const unanswered = os.filter(
      (o) => o.kind !== 'asserted' && o.kind !== 'contradiction' && o.kind !== 'corroborated',
    ).length;
    return {
      double: Math.max(0, accepted - 1) + Math.max(0, held.active - 1),
      lost: unanswered + Math.abs(held.contradictions - answered),
    };
  };
  const f = judge(outcomes.fresh, rows.fresh);
  const x = judge(outcomes.existing, rows.existing);
  const anomalies: Record<Anomaly, number> = {
    doubleAccept: f.double + x.double,
    lostContradiction: f.lost + x.lost,
    adjacentRefused: outcomes.adjacent.filter((o) => o.kind !== 'asserted').length,
    derivedOnRetracted: rows.unsupported,
    invariantViolation: violations.reduce((s, v) => s + v.rows.length, 0),
  };
  const errorsSurfaced: Record<string, number> = {};
  for (const o of allOutcomes(outcomes)) {
    if (o.kind === 'error') errorsSurfaced[o.code!] = (errorsSurfaced[o.code!] ?? 0) + 1;
  }
  return {
    arm,
    trial,
    offsetMs,
    only: only ?? null,
    anomalies,
    lost: { fresh: f.lost, existing: x.lost },
    outcomes,
    errorsSurfaced,
    retries,
    exhausted,
    violations: violations.map((v) => ({ invariant: v.invariant, rule: v.rule, rows: v.rows.length })),
    ms: performance.now() - started,
  };
}

const allOutcomes = (o: TrialResult['outcomes']) => [
  ...o.fresh,
  ...o.existing,
  ...o.adjacent,
  ...o.derived,
  o.retraction,
];
const writeOutcomes = (o: TrialResult['outcomes']) => [...o.fresh, ...o.existing, ...o.adjacent, ...o.derived];

interface ArmSummary {
  arm: Arm;
  label: string;
  trials: number;
  anomalousTrials: number;
  anomalousRate: Interval;
  byAnomaly: Record<Anomaly, { trials: number; count: number; trialRate: Interval }>;
  perWrite: {
    /** Conflicting writes to the two contested claims (every writer after the first, on the new / the existing claim). */
    contestedWrites: { fresh: number; existing: number };
    lostContradictions: { fresh: number; existing: number };
    lostContradictionRate: { fresh: Interval; existing: Interval };
    derivations: number;
    derivedOnRetracted: number;
    derivedOnRetractedRate: Interval;
    derivationsAccepted: number;
    derivationsRefusedPremiseRetracted: number;
  };
  errorsSurfaced: Record<string, number>;
  retractionErrors: number;
  retries: { total: number; perTrialMean: number; exhausted: number };
  writeLatencyMs: { p50: number; p95: number; p99: number; max: number };
  retractionLatencyMs: { p50: number; p95: number };
  trialMs: { p50: number; p95: number };
  examples: Array<{
    trial: number;
    offsetMs: number;
    anomalies: Partial<Record<Anomaly, number>>;
    errors: Record<string, number>;
    firstError?: string;
  }>;
}

function summarise(arm: Arm, results: TrialResult[]): ArmSummary {
  const n = results.length;
  const anomalous = results.filter((r) => ANOMALIES.some((a) => r.anomalies[a] > 0));
  const byAnomaly = Object.fromEntries(
    ANOMALIES.map((a) => {
      const t = results.filter((r) => r.anomalies[a] > 0).length;
      return [a, { trials: t, count: results.reduce((s, r) => s + r.anomalies[a], 0), trialRate: wilson(t, n) }];
    }),
  ) as ArmSummary['byAnomaly'];
  const contested = n * (CONTESTED_WRITERS - 1);
  const lostFresh = Math.min(
    contested,
    results.reduce((s, r) => s + r.lost.fresh, 0),
  );
  const lostExisting = Math.min(
    contested,
    results.reduce((s, r) => s + r.lost.existing, 0),
  );
  const derivations = n * DERIVERS;
  const onRetracted = Math.min(derivations, byAnomaly.derivedOnRetracted.count);
  const errorsSurfaced: Record<string, number> = {};
  for (const r of results)
    for (const [k, c] of Object.entries(r.errorsSurfaced)) errorsSurfaced[k] = (errorsSurfaced[k] ?? 0) + c;
  const latencies = results.flatMap((r) => writeOutcomes(r.outcomes).map((o) => o.ms));
  const retries = results.reduce((s, r) => s + r.retries, 0);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    arm,
    label: ARM_LABEL[arm],
    trials: n,
    anomalousTrials: anomalous.length,
    anomalousRate: wilson(anomalous.length, n),
    byAnomaly,
    perWrite: {
      contestedWrites: { fresh: contested, existing: contested },
      lostContradictions: { fresh: lostFresh, existing: lostExisting },
      lostContradictionRate: { fresh: wilson(lostFresh, contested), existing: wilson(lostExisting, contested) },
      derivations,
      derivedOnRetracted: onRetracted,
      derivedOnRetractedRate: wilson(onRetracted, derivations),
      derivationsAccepted: results.reduce(
        (s, r) => s + r.outcomes.derived.filter((o) => o.kind === 'asserted').length,
        0,
      ),
      derivationsRefusedPremiseRetracted: results.reduce(
        (s, r) => s + r.outcomes.derived.filter((o) => o.kind === 'premiseRetracted').length,
        0,
      ),
    },
    errorsSurfaced,
    retractionErrors: results.filter((r) => r.outcomes.retraction.kind === 'error').length,
    retries: {
      total: retries,
      perTrialMean: round(retries / Math.max(1, n)),
      exhausted: results.reduce((s, r) => s + r.exhausted, 0),
    },
    writeLatencyMs: {
      p50: round(percentile(latencies, 0.5)),
      p95: round(percentile(latencies, 0.95)),
      p99: round(percentile(latencies, 0.99)),
      max: round(Math.max(...latencies)),
    },
    trialMs: {
      p50: round(
        percentile(
          results.map((r) => r.ms),
          0.5,
        ),
      ),
      p95: round(
        percentile(
          results.map((r) => r.ms),
          0.95,
        ),
      ),
    },
    retractionLatencyMs: {
      p50: round(
        percentile(
          results.map((r) => r.outcomes.retraction.ms),
          0.5,
        ),
      ),
      p95: round(
        percentile(
          results.map((r) => r.outcomes.retraction.ms),
          0.95,
        ),
      ),
    },
    examples: anomalous.slice(0, 5).map((r) => ({
      trial: r.trial,
      offsetMs: r.offsetMs,
      anomalies: Object.fromEntries(ANOMALIES.filter((a) => r.anomalies[a] > 0).map((a) => [a, r.anomalies[a]])),
      errors: r.errorsSurfaced,
      firstError: allOutcomes(r.outcomes).find((o) => o.kind === 'error')?.message,
    })),
  };
}

function compare(x: ArmSummary, y: ArmSummary) {
  const a = x.anomalousTrials,
    b = x.trials - a,
    c = y.anomalousTrials,
    d = y.trials - c;
  const z = twoProportionZ(a, x.trials, c, y.trials);
  const perType = Object.fromEntries(
    ANOMALIES.map((t) => {
      const k1 = x.byAnomaly[t].trials,
        k2 = y.byAnomaly[t].trials;
      return [t, { fisherP: fisherExact(k1, x.trials - k1, k2, y.trials - k2) }];
    }),
  );
  return {
    arms: `${x.arm} vs ${y.arm}`,
    table: [
      [a, b],
      [c, d],
    ],
    fisherP: fisherExact(a, b, c, d),
    z: z.z,
    zP: z.p,
    perType,
  };
}

const pct = (i: Interval) =>
  `${(i.rate * 100).toFixed(1)}% [${(i.low * 100).toFixed(1)}, ${(i.high * 100).toFixed(1)}]`;
const pval = (p: number) => (p < 1e-4 ? p.toExponential(1) : p.toFixed(4));

function usage(message: string): never {
  console.error(
    `concurrency_eval: ${message}\nusage: tsx experiments/concurrency_eval.ts [--trials N] [--attribution-rounds N] [--connections N] [--seed N] [--out FILE]`,
  );
  process.exit(3);
}

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        trials: { type: 'string', default: '200' },
        connections: { type: 'string', default: '16' },
        seed: { type: 'string', default: '20261201' },
        'attribution-rounds': { type: 'string' },
        out: { type: 'string', default: path.join(repoRoot, 'results/concurrency_eval.json') },
      },
    }).values;
  } catch (e) {
    usage((e as Error).message);
  }
  const trials = Number(args.trials);
  const connections = Number(args.connections);
  const seed = Number(args.seed);
  if (!Number.isInteger(trials) || trials < 1 || trials > 100_000)
    usage('--trials must be an integer from 1 to 100000');
  if (!Number.isInteger(connections) || connections < 2 || connections > 64)
    usage('--connections must be an integer from 2 to 64');
  if (!Number.isInteger(seed)) usage('--seed must be an integer');
  const rounds =
    args['attribution-rounds'] === undefined
      ? Math.max(3, Math.round(trials / 20))
      : Number(args['attribution-rounds']);
  if (!Number.isInteger(rounds) || rounds < 0 || rounds > 10_000)
    usage('--attribution-rounds must be an integer from 0 to 10000');

  const base = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  let baseUrl: URL;
  try {
    baseUrl = new URL(base);
  } catch {
    usage(`DATABASE_URL is not a URL: ${base}`);
  }
  if (!/^postgres(ql)?:$/.test(baseUrl.protocol))
    usage('concurrency_eval needs a real PostgreSQL server (postgres://…)');
  const dbName = `retract_conc_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${dbName}`;
  const started = performance.now();
  let store: Store | null = null;
  try {
    store = await openStore({ databaseUrl: url.toString(), poolSize: connections });
    const env = await environment(store);
    const tables = await productTables(store);
    const rand = rng(seed);
    const offsets = Array.from({ length: trials }, () => Math.floor(rand() * (2 * OFFSET_MAX_MS + 1)) - OFFSET_MAX_MS);

    // Warm the pool so the first trial does not measure connection set-up.
    await Promise.all(Array.from({ length: connections }, () => sql`SELECT pg_sleep(0.01)`.execute(store!.db)));

    const results: Record<Arm, TrialResult[]> = { A: [], B: [], C: [] };
    let lastReport = performance.now();
    for (let t = 0; t < trials; t++) {
      // Rotate the order so no arm always runs first or last in a round.
      for (let k = 0; k < ARMS.length; k++) {
        const arm = ARMS[(t + k) % ARMS.length]!;
        results[arm].push(await runTrial(store, tables, arm, t, offsets[t]!));
      }
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        console.error(
          `concurrency_eval: ${t + 1}/${trials} rounds, ${((performance.now() - started) / 1000).toFixed(0)} s`,
        );
      }
    }
    // Attribution: each group alone, a few rounds per arm, to see where retries and anomalies come from.
    const alone: Record<Arm, Record<Group, TrialResult[]>> = {
      A: { fresh: [], existing: [], adjacent: [], derive: [] },
      B: { fresh: [], existing: [], adjacent: [], derive: [] },
      C: { fresh: [], existing: [], adjacent: [], derive: [] },
    };
    for (let t = 0; t < rounds; t++) {
      for (const g of GROUPS) {
        for (let k = 0; k < ARMS.length; k++) {
          const arm = ARMS[(t + k) % ARMS.length]!;
          alone[arm][g].push(await runTrial(store, tables, arm, trials + t, offsets[t % trials]!, g));
        }
      }
    }
    const attribution = Object.fromEntries(
      ARMS.map((a) => [
        a,
        Object.fromEntries(
          GROUPS.map((g) => {
            const rs = alone[a][g];
            if (rs.length === 0) return [g, { rounds: 0, retriesPerRound: 0, anomalousRounds: 0, errors: {} }];
            const errors: Record<string, number> = {};
            for (const r of rs) for (const [k, c] of Object.entries(r.errorsSurfaced)) errors[k] = (errors[k] ?? 0) + c;
            return [
              g,
              {
                rounds: rs.length,
                retriesPerRound: Math.round((rs.reduce((s, r) => s + r.retries, 0) / rs.length) * 100) / 100,
                anomalousRounds: rs.filter((r) => ANOMALIES.some((x) => r.anomalies[x] > 0)).length,
                errors,
              },
            ];
          }),
        ),
      ]),
    ) as Record<
      Arm,
      Record<
        Group,
        { rounds: number; retriesPerRound: number; anomalousRounds: number; errors: Record<string, number> }
      >
    >;
    // How the race between derivations and the retraction depends on who starts first.
    const buckets = [
      [-OFFSET_MAX_MS, -51],
      [-50, -11],
      [-10, 10],
      [11, 50],
      [51, OFFSET_MAX_MS],
    ] as const;
    const byOffset = Object.fromEntries(
      ARMS.map((a) => [
        a,
        buckets.map(([lo, hi]) => {
          const rs = results[a].filter((r) => r.offsetMs >= lo && r.offsetMs <= hi);
          const bad = rs.reduce((s, r) => s + r.anomalies.derivedOnRetracted, 0);
          const refused = rs.reduce(
            (s, r) => s + r.outcomes.derived.filter((o) => o.kind === 'premiseRetracted').length,
            0,
          );
          return {
            offsetMs: [lo, hi],
            trials: rs.length,
            derivations: rs.length * DERIVERS,
            derivedOnRetracted: bad,
            refusedPremiseRetracted: refused,
          };
        }),
      ]),
    ) as unknown as Record<
      Arm,
      Array<{
        offsetMs: readonly [number, number];
        trials: number;
        derivations: number;
        derivedOnRetracted: number;
        refusedPremiseRetracted: number;
      }>
    >;

    const summaries = Object.fromEntries(ARMS.map((a) => [a, summarise(a, results[a])])) as Record<Arm, ArmSummary>;
    const comparisons = [
      compare(summaries.A, summaries.B),
      compare(summaries.A, summaries.C),
      compare(summaries.B, summaries.C),
    ];
    const runtimeMs = performance.now() - started;

    const lines: string[] = [];
    lines.push(
      'concurrency_eval — concurrent writes to one claim and to adjacent claims, derivations racing a retraction',
    );
    lines.push(...environmentLines(env));
    lines.push(
      `run:      ${trials} trials per arm, interleaved. Per trial, at once on a pool of ${connections} connections: ${CONTESTED_WRITERS} writers with different values on a new claim,`,
    );
    lines.push(
      `          ${CONTESTED_WRITERS} on a claim written before (its claim row exists, no ACTIVE belief), ${ADJACENT_WRITERS} on adjacent claims, ${DERIVERS} derivers (${DERIVERS / 2} from a premise, ${DERIVERS / 2} from a belief derived from it)`,
    );
    lines.push(
      `          and 1 agent retracting that premise, started −${OFFSET_MAX_MS}…+${OFFSET_MAX_MS} ms relative to the writers (seed ${seed}); fresh database ${dbName}, emptied before each trial`,
    );
    lines.push('');
    lines.push(
      table([
        [
          'arm',
          'trials',
          'anomalous trials, rate [95% CI]',
          'lost contradictions new/existing',
          'double accepts',
          'adjacent refused',
          'derived on retracted',
          'invariant rows',
          'errors surfaced',
          'retries/trial',
          'write p50/p95 ms',
        ],
        ...ARMS.map((a) => {
          const s = summaries[a];
          return [
            s.label,
            String(s.trials),
            `${s.anomalousTrials}  ${pct(s.anomalousRate)}`,
            `${s.perWrite.lostContradictions.fresh}/${s.perWrite.contestedWrites.fresh}  ${s.perWrite.lostContradictions.existing}/${s.perWrite.contestedWrites.existing}`,
            String(s.byAnomaly.doubleAccept.count),
            `${s.byAnomaly.adjacentRefused.count}/${s.trials * ADJACENT_WRITERS}`,
            `${s.perWrite.derivedOnRetracted}/${s.perWrite.derivations}`,
            String(s.byAnomaly.invariantViolation.count),
            Object.entries(s.errorsSurfaced)
              .map(([k, c]) => `${k}×${c}`)
              .join(' ') || 'none',
            s.retries.perTrialMean.toFixed(1),
            `${s.writeLatencyMs.p50}/${s.writeLatencyMs.p95}`,
          ];
        }),
      ]),
    );
    lines.push(
      `lost contradictions are counted over conflicting writes: the ${CONTESTED_WRITERS - 1} writers after the first on each contested claim, per trial.`,
    );
    lines.push('');
    lines.push('per-write rates [95% CI]:');
    for (const a of ARMS) {
      const s = summaries[a];
      lines.push(
        `  ${a}: lost contradictions ${pct(s.perWrite.lostContradictionRate.fresh)} of conflicting writes to the new claim, ${pct(s.perWrite.lostContradictionRate.existing)} to the existing one;`,
      );
      lines.push(
        `     derived on a retracted premise ${pct(s.perWrite.derivedOnRetractedRate)} of derivations (${s.perWrite.derivationsAccepted} accepted, ${s.perWrite.derivationsRefusedPremiseRetracted} refused PremiseRetracted);`,
      );
      lines.push(
        `     serialization retries ${s.retries.total} (${s.retries.perTrialMean}/trial), given up ${s.retries.exhausted}, retraction errors ${s.retractionErrors}; write latency p50 ${s.writeLatencyMs.p50} ms, p95 ${s.writeLatencyMs.p95} ms, p99 ${s.writeLatencyMs.p99} ms; retraction p50 ${s.retractionLatencyMs.p50} ms`,
      );
    }
    lines.push('');
    lines.push('between arms (anomalous trials): Fisher exact two-sided p; two-proportion z');
    for (const c of comparisons) {
      lines.push(
        `  ${c.arms}: ${c.table[0]![0]}/${c.table[0]![0]! + c.table[0]![1]!} vs ${c.table[1]![0]}/${c.table[1]![0]! + c.table[1]![1]!}  Fisher p = ${pval(c.fisherP)}; z = ${c.z.toFixed(2)}, p = ${pval(c.zP)}` +
          `  (by type, Fisher p: ${ANOMALIES.map((t) => `${t} ${pval(c.perType[t]!.fisherP)}`).join(', ')})`,
      );
    }
    for (const a of ARMS) {
      for (const ex of summaries[a].examples.slice(0, 2)) {
        lines.push(
          `  example ${a} trial ${ex.trial} (offset ${ex.offsetMs} ms): ${JSON.stringify(ex.anomalies)}${ex.firstError ? ` — first error: ${ex.firstError}` : ''}`,
        );
      }
    }
    lines.push('');
    lines.push(
      `derived on a retracted premise / refused PremiseRetracted, by when the retraction started relative to the writers:`,
    );
    lines.push(
      table([
        ['arm', ...buckets.map(([lo, hi]) => (lo === hi ? `${lo} ms` : `${lo}…${hi} ms`))],
        ...ARMS.map((a) => [
          a,
          ...byOffset[a].map((b) => `${b.derivedOnRetracted}/${b.derivations} · ${b.refusedPremiseRetracted}`),
        ]),
      ]),
    );
    lines.push('');
    lines.push(
      `each group alone (${rounds} rounds per arm): serialization retries per round; anomalous rounds; errors surfaced`,
    );
    lines.push(
      table([
        ['arm', ...GROUPS],
        ...ARMS.map((a) => [
          a,
          ...GROUPS.map((g) => {
            const x = attribution[a][g];
            const errs = Object.entries(x.errors)
              .map(([k, c]) => `${k}×${c}`)
              .join(' ');
            return `${x.retriesPerRound.toFixed(2)}; ${x.anomalousRounds}/${x.rounds}${errs ? `; ${errs}` : ''}`;
          }),
        ]),
      ]),
    );
    const aErrors =
      Object.values(summaries.A.errorsSurfaced).reduce((s, c) => s + c, 0) +
      GROUPS.reduce((s, g) => s + Object.values(attribution.A[g].errors).reduce((x, c) => x + c, 0), 0);
    const productClean =
      summaries.A.anomalousTrials === 0 && GROUPS.every((g) => attribution.A[g].anomalousRounds === 0) && aErrors === 0;
    lines.push('');
    lines.push(
      `arm A (the product): ${productClean ? 'no anomaly, no error surfaced to an agent' : `${summaries.A.anomalousTrials} anomalous trials, ${GROUPS.reduce((s, g) => s + attribution.A[g].anomalousRounds, 0)} anomalous attribution rounds, ${aErrors} errors surfaced`}`,
    );
    lines.push(`runtime: ${(runtimeMs / 1000).toFixed(1)} s`);
    console.log(lines.join('\n'));

    const trialsFile = args.out!.replace(/\.json$/, '') + '.trials.jsonl';
    writeJson(args.out!, {
      experiment: 'concurrency_eval',
      description:
        'Concurrent COMMITs on one claim and on adjacent claims, and derivations racing a retraction of their premise, under three write disciplines.',
      environment: env,
      parameters: {
        trials,
        connections,
        seed,
        offsetMaxMs: OFFSET_MAX_MS,
        attributionRounds: rounds,
        contestedWritersPerClaim: CONTESTED_WRITERS,
        adjacentWriters: ADJACENT_WRITERS,
        derivers: DERIVERS,
        database: dbName,
      },
      arms: ARM_LABEL,
      anomalyDefinitions: {
        doubleAccept:
          'more than one writer told "asserted" for one contested claim, or more than one ACTIVE belief on it',
        lostContradiction:
          'a write to a contested claim that was neither accepted nor answered with a contradiction (an error reached the agent), or a contradiction answer without its row',
        adjacentRefused: 'a write to a free adjacent claim that was not accepted',
        derivedOnRetracted: 'an ACTIVE derived belief with no justification whose premises are all ACTIVE',
        invariantViolation: 'rows reported by checkInvariants after the trial',
      },
      summaries,
      comparisons,
      byOffset,
      attribution,
      productClean,
      runtimeMs: Math.round(runtimeMs),
      trialsFile: path.basename(trialsFile),
    });
    // One line per trial (every arm, then the attribution rounds), for anyone re-analysing the run.
    const line = (r: TrialResult) =>
      JSON.stringify({
        arm: r.arm,
        trial: r.trial,
        only: r.only,
        offsetMs: r.offsetMs,
        anomalies: r.anomalies,
        errors: r.errorsSurfaced,
        retries: r.retries,
        ms: Math.round(r.ms * 10) / 10,
        fresh: r.outcomes.fresh.map((o) => o.kind + (o.code ? `:${o.code}` : '')),
        existing: r.outcomes.existing.map((o) => o.kind + (o.code ? `:${o.code}` : '')),
        adjacent: r.outcomes.adjacent.map((o) => o.kind + (o.code ? `:${o.code}` : '')),
        derived: r.outcomes.derived.map((o) => o.kind + (o.code ? `:${o.code}` : '')),
        retraction: r.outcomes.retraction.kind === 'error' ? `error:${r.outcomes.retraction.code}` : 'ok',
        retractionMs: Math.round(r.outcomes.retraction.ms * 10) / 10,
        derivedMs: r.outcomes.derived.map((o) => Math.round(o.ms * 10) / 10),
      });
    fs.writeFileSync(
      trialsFile,
      [...ARMS.flatMap((a) => results[a]), ...ARMS.flatMap((a) => GROUPS.flatMap((g) => alone[a][g]))]
        .map(line)
        .join('\n') + '\n',
    );
    console.log(`wrote ${path.relative(process.cwd(), trialsFile) || trialsFile}`);
    console.log(`wrote ${path.relative(process.cwd(), args.out!) || args.out}`);
    return productClean ? 0 : 1;
  } finally {
    await store?.close().catch(() => {});
    const a = new pg.Client({ connectionString: base });
    await a.connect();
    await a
      .query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
      .catch((e) => console.error(`concurrency_eval: could not drop ${dbName}: ${(e as Error).message}`));
    await a.end();
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`concurrency_eval: the run failed: ${(e as Error).stack ?? e}`);
    process.exit(2);
  },
);
