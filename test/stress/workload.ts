import { AsyncLocalStorage } from 'node:async_hooks';
import { sql } from 'kysely';
import type { Actor, Core } from '../../src/core';
import { addJustification, assertBelief } from '../../src/belief/belief.service';
import {
  claimEffect,
  completeEffect,
  failEffect,
  proposeEffect,
  registerEffectKind,
} from '../../src/effect/effect.service';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import { DomainError } from '../../src/errors/domain-error';
import { checkInvariants, type Violation } from '../../src/invariants/check';

export interface WorkloadReport {
  workers: number;
  seconds: number;
  ops: Record<string, number>;
  outcomes: Record<string, number>;
  serializationRetries: number;
  /** Retries by the operation whose transaction retried, and by the database's reason (SQLSTATE and detail). */
  retriesBy: { op: Record<string, number>; reason: Record<string, number> };
  givenUp: number;
  unexpected: string[];
  violations: Violation[];
  extra: Record<string, number>;
}

const OPS = [
  'assert',
  'derive',
  'justify',
  'propose',
  'claim',
  'complete',
  'fail',
  'retract',
  'retractAgain',
  'confirm',
  'preview',
  'reinstate',
] as const;
type Op = (typeof OPS)[number];
const WEIGHTS: Record<Op, number> = {
  assert: 14,
  derive: 16,
  justify: 6,
  propose: 12,
  claim: 12,
  complete: 10,
  fail: 3,
  retract: 10,
  retractAgain: 3,
  confirm: 8,
  preview: 6,
  reinstate: 4,
};

/**
 * SQLSTATE and the first line of PostgreSQL's detail ("Reason code: Canceled on identification as a
 * pivot, during write."), or the message where there is no detail (a Citus worker's conflict at COMMIT
 * names its shard there), numbers (transaction, process and shard ids) replaced by N so that like counts with like.
 */
export function retryReason(e: unknown): string {
  const { code, detail, message } = e as { code?: string; detail?: string; message?: string };
  const why = (detail ? detail.split('\n')[0]!.replace(/^Reason code: /, '') : (message ?? ''))
    .replace(/\.$/, '')
    .replace(/\d+/g, 'N');
  return `${code ?? '?'} ${why}`.trim();
}

/**
 * Many workers against one PostgreSQL database, mixed operations for a fixed time, each retried by
 * the transaction module on serialization failures; then every invariant is checked. Expected
 * domain refusals (CONFLICT for cycles and retracted premises, NOT_FOUND never) are counted apart
 * from unexpected errors, which fail the run.
 */
export async function runWorkload(
  core: Core,
  actor: Actor,
  opts: { workers: number; seconds: number; keys?: number },
): Promise<WorkloadReport> {
  const keys = opts.keys ?? 120;
  await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
  await registerEffectKind(core, actor, { kind: 'card_charge', reversible: false });
  const ops: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  const unexpected: string[] = [];
  const count = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);
  const retriesBy = { op: {} as Record<string, number>, reason: {} as Record<string, number> };
  const running = new AsyncLocalStorage<Op>();
  const observed = core.store.tx.onRetry;
  core.store.tx.onRetry = (e, attempt) => {
    observed?.(e, attempt);
    count(retriesBy.op, running.getStore() ?? 'setup');
    count(retriesBy.reason, retryReason(e));
  };
  const retriesBefore = core.store.tx.stats.retries;
  const givenUpBefore = core.store.tx.stats.exhausted;
  let seq = 0;
  const deadline = Date.now() + opts.seconds * 1000;
  const total = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
  const choose = (): Op => {
    let r = Math.random() * total;
    for (const op of OPS) if ((r -= WEIGHTS[op]) < 0) return op;
    return 'assert';
  };
  const db = core.store.db;
  const randomIds = async (q: ReturnType<typeof sql<{ id: string }>>) => (await q.execute(db)).rows.map((r) => r.id);
  const activeBeliefs = () =>
    randomIds(
      sql<{
        id: string;
      }>`SELECT id::text FROM beliefs WHERE fleet_id = ${actor.fleet} AND status = 'ACTIVE' ORDER BY random() LIMIT 3`,
    );

  async function step(op: Op): Promise<string> {
    switch (op) {
      case 'assert': {
        const r = await assertBelief(core, actor, {
          claimKey: `s:${Math.floor(Math.random() * keys)}/fact`,
          statement: 'a fact',
          value: Math.random() < 0.5,
        });
        return r.kind;
      }
      case 'derive': {
        const premises = (await activeBeliefs()).slice(0, 1 + Math.floor(Math.random() * 3));
        const r = await assertBelief(core, actor, {
          claimKey: `d:${seq++}:${Math.random().toString(36).slice(2, 8)}/derived`,
          statement: 'derived',
          value: 1,
          derivedFrom: premises,
        });
        return r.kind;
      }
      case 'justify': {
        const [b, ...ps] = await activeBeliefs();
        if (!b || ps.length === 0) return 'nothing';
        await addJustification(core, actor, { beliefId: b, premises: ps });
        return 'added';
      }
      case 'propose': {
        const supports = (await activeBeliefs()).slice(0, 2);
        if (supports.length === 0) return 'nothing';
        const r = await proposeEffect(core, actor, {
          kind: Math.random() < 0.7 ? 'refund' : 'card_charge',
          supportedBy: supports,
          idempotencyKey: `k-${seq++}-${Math.random().toString(36).slice(2)}`,
          amount: {
            amountMinor: 100 + Math.floor(Math.random() * 10_000),
            currency: Math.random() < 0.8 ? 'USD' : 'EUR',
          },
        });
        return r.kind;
      }
      case 'claim':
        return (await claimEffect(core, actor)) ? 'claimed' : 'none';
      case 'complete': {
        const [id] = await randomIds(
          sql<{
            id: string;
          }>`SELECT id::text FROM effects WHERE fleet_id = ${actor.fleet} AND status = 'EXECUTING' ORDER BY random() LIMIT 1`,
        );
        if (!id) return 'nothing';
        await completeEffect(core, actor, { effectId: id, externalRef: `ext-${id}` });
        return 'completed';
      }
      case 'fail': {
        const [id] = await randomIds(
          sql<{
            id: string;
          }>`SELECT id::text FROM effects WHERE fleet_id = ${actor.fleet} AND status = 'EXECUTING' ORDER BY random() LIMIT 1`,
        );
        if (!id) return 'nothing';
        await failEffect(core, actor, { effectId: id, reason: 'executor failed' });
        return 'failed';
      }
      case 'retract': {
        const [id] = await activeBeliefs();
        if (!id) return 'nothing';
        return (await retractBelief(core, actor, { beliefId: id, reason: 'stress' })).created ? 'retracted' : 'already';
      }
      case 'retractAgain': {
        const picked = (
          await sql<{ id: string; rid: string }>`SELECT id::text, retraction_id::text AS rid FROM beliefs
          WHERE fleet_id = ${actor.fleet} AND status = 'RETRACTED' ORDER BY random() LIMIT 1`.execute(db)
        ).rows[0];
        if (!picked) return 'nothing';
        if (!(await retractBelief(core, actor, { beliefId: picked.id, reason: 'again' })).created)
          return 'same-receipt';
        // A new receipt is right only when a concurrent reinstatement brought the belief back since it was picked.
        const back = (
          await sql<{ back: boolean }>`SELECT reinstated_at IS NOT NULL AS back FROM retractions
          WHERE fleet_id = ${actor.fleet} AND id = ${picked.rid}`.execute(db)
        ).rows[0]?.back;
        return back ? 'retracted-after-reinstatement' : 'RETRACTED-TWICE';
      }
      case 'confirm': {
        const [id] = await randomIds(
          sql<{
            id: string;
          }>`SELECT id::text FROM reversals WHERE fleet_id = ${actor.fleet} AND status = 'OWED' ORDER BY random() LIMIT 1`,
        );
        if (!id) return 'nothing';
        await confirmReversal(core, actor, {
          reversalId: id,
          providerRef: `prv-${id}-${Math.random().toString(36).slice(2, 8)}`,
        });
        return 'confirmed';
      }
      case 'reinstate': {
        // A retraction not taken back yet; a BLOCKED or refused one is an expected outcome, counted as such.
        const [id] = await randomIds(
          sql<{
            id: string;
          }>`SELECT id::text FROM retractions WHERE fleet_id = ${actor.fleet} AND reinstated_at IS NULL ORDER BY random() LIMIT 1`,
        );
        if (!id) return 'nothing';
        return `reinstate ${(await reinstateRetraction(core, actor, { retractionId: id, reason: 'stress: it was true' })).kind}`;
      }
      case 'preview': {
        const [id] = await activeBeliefs();
        if (!id) return 'nothing';
        await previewRetraction(core, actor, { beliefId: id });
        return 'previewed';
      }
    }
  }

  async function worker() {
    while (Date.now() < deadline) {
      const op = choose();
      count(ops, op);
      try {
        count(outcomes, `${op}:${await running.run(op, () => step(op))}`);
      } catch (e) {
        if (e instanceof DomainError && (e.code === 'CONFLICT' || e.code === 'BAD_USER_INPUT'))
          count(outcomes, `${op}:${e.code}`);
        else if (e instanceof DomainError && e.code === 'NOT_FOUND') count(outcomes, `${op}:NOT_FOUND`);
        else unexpected.push(`${op}: ${(e as Error).message}`);
      }
    }
  }
  await Promise.all(Array.from({ length: opts.workers }, worker));
  core.store.tx.onRetry = observed;

  // Let every effect still running finish, as an executor eventually would.
  for (const id of await randomIds(
    sql<{ id: string }>`SELECT id::text FROM effects WHERE fleet_id = ${actor.fleet} AND status = 'EXECUTING'`,
  )) {
    await completeEffect(core, actor, { effectId: id, externalRef: `ext-${id}` });
  }
  const violations = await checkInvariants(core.store);
  const extra = (
    await sql<Record<string, number>>`
    SELECT
      (SELECT count(*)::int FROM effects e WHERE e.status = 'EXECUTED' AND EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                                                                             WHERE s.fleet_id = e.fleet_id AND s.effect_id = e.id AND b.status = 'RETRACTED')) AS executed_under_retracted,
      -- Reversals of effects resting on a retracted support, none VOIDED (a reinstatement voids or names the others):
      -- exactly one per effect executed under a retracted belief.
      (SELECT count(*)::int FROM reversals r WHERE r.status <> 'VOIDED'
          AND EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                       WHERE s.fleet_id = r.fleet_id AND s.effect_id = r.effect_id AND b.status = 'RETRACTED')) AS reversals,
      (SELECT count(*)::int FROM reinstatements WHERE status = 'REINSTATED') AS reinstatements,
      (SELECT count(*)::int FROM (SELECT effect_id FROM reversals GROUP BY fleet_id, effect_id HAVING count(*) > 1) d) AS effects_with_two_reversals,
      (SELECT count(*)::int FROM (SELECT idempotency_key FROM reversals GROUP BY idempotency_key HAVING count(*) > 1) d) AS duplicate_reversal_keys,
      (SELECT count(*)::int FROM effects WHERE cancelled_by IS NOT NULL AND (executed_at IS NOT NULL OR external_ref IS NOT NULL)) AS cancelled_and_executed,
      (SELECT count(*)::int FROM beliefs) AS beliefs,
      (SELECT count(*)::int FROM beliefs WHERE status = 'RETRACTED') AS retracted,
      (SELECT count(*)::int FROM retractions) AS retractions,
      (SELECT count(*)::int FROM effects) AS effects`.execute(db)
  ).rows[0]!;
  return {
    workers: opts.workers,
    seconds: opts.seconds,
    ops,
    outcomes,
    serializationRetries: core.store.tx.stats.retries - retriesBefore,
    retriesBy,
    givenUp: core.store.tx.stats.exhausted - givenUpBefore,
    unexpected,
    violations,
    extra,
  };
}
