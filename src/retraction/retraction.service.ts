import { sql } from 'kysely';
import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import { badInput, notFound } from '../errors/domain-error';
import { cascade, reachEffects, survivorIds } from '../derivation/cascade';
import { appendEvent } from '../event/event.repository';
import { lockBeliefs } from '../belief/belief.repository';
import { type Tx, writeTx, inTx } from '../store/tx';
import * as v from '../validation';
import { type Page, type Totals, decodeDepthCursor, retractedBeliefPage, totalsFor } from './retraction.repository';

export const MAX_PAGE = 500;

/**
 * Retracts a belief and everything that rested on it alone, in the caller's transaction: the
 * receipt row, the belief cascade, cancelled PENDING effects, reached EXECUTING ones, one reversal
 * per EXECUTED one, and the events RetractionStarted … RetractionCommitted. Retracting a belief that
 * is already RETRACTED returns the retraction that took it down and writes nothing.
 */
export async function retractInTx(tx: Tx, actor: Actor, beliefId: string, reason: string): Promise<{ retractionId: string; created: boolean }> {
  const [root] = await lockBeliefs(tx, [beliefId], 'update');
  if (!root) throw notFound('belief', beliefId, 'beliefId');
  if (root.status === 'RETRACTED') return { retractionId: root.retraction_id!, created: false };
  await pausePoint('retract:root-locked');
  const r = await tx
    .insertInto('retractions')
    .values({ fleet_id: actor.fleet, root_id: beliefId, reason, actor_id: actor.agentId })
    .returning('id')
    .executeTakeFirstOrThrow();
  await appendEvent(tx, { fleet: actor.fleet, type: 'RetractionStarted', actorId: actor.agentId, retractionId: r.id, ids: [beliefId], data: { reason } });
  const n = await cascade(tx, actor.fleet, r.id, beliefId, actor.agentId);
  await sql`UPDATE retractions SET beliefs_retracted = ${n} WHERE id = ${r.id}`.execute(tx);
  await pausePoint('retract:cascaded');
  await reachEffects(tx, actor.fleet, r.id, actor.agentId);
  await pausePoint('retract:effects-reached');
  const totals = await totalsFor(tx, r.id);
  await appendEvent(tx, { fleet: actor.fleet, type: 'RetractionCommitted', actorId: actor.agentId, retractionId: r.id, data: totals });
  return { retractionId: r.id, created: true };
}

/** retractBelief: one SERIALIZABLE transaction around retractInTx. */
export async function retractBelief(core: Core, actor: Actor, input: { beliefId: string; reason: string }): Promise<{ retractionId: string; created: boolean }> {
  const beliefId = v.id('beliefId', input.beliefId);
  const reason = v.text('reason', input.reason, v.LIMITS.reasonMax, { multiline: true });
  // A retraction is what stops money moving: under heavy write contention it keeps trying longer
  // than other writes before it answers CONFLICT (backoff is capped at 1 s an attempt).
  return inTx(core.store, { fleet: actor.fleet, maxAttempts: RETRACTION_ATTEMPTS }, (tx) => retractInTx(tx, actor, beliefId, reason));
}

/** Attempts a retraction gets before CONFLICT (other writes get 10). */
export const RETRACTION_ATTEMPTS = 25;

export interface Preview {
  rootId: string;
  beliefs: Page<{ id: string; depth: number }>;
  survivors: string[];
  pendingEffects: string[];
  executingEffects: string[];
  executedEffects: string[];
  totals: Totals;
}

class Rollback {
  constructor(readonly value: Preview) {}
}

/**
 * What retractBelief would do, computed by running the very same cascade in a transaction that is
 * then rolled back: the preview cannot drift from the retraction. Nothing is changed and no event
 * is published. A root that is already retracted previews as an empty cascade.
 */
export async function previewRetraction(core: Core, actor: Actor, input: { beliefId: string; first?: number; after?: string | null }): Promise<Preview> {
  const beliefId = v.id('beliefId', input.beliefId);
  const first = pageSize('first', input.first);
  if (input.after) decodeDepthCursor('after', input.after);
  try {
    // REPEATABLE READ, not SERIALIZABLE: the transaction never commits, so serializable conflict
    // detection could only make it fail; one snapshot is what a preview needs.
    await inTx(core.store, { fleet: actor.fleet, isolation: 'repeatable read', maxAttempts: RETRACTION_ATTEMPTS }, async (tx) => {
      const [root] = await lockBeliefs(tx, [beliefId], 'share');
      if (!root) throw notFound('belief', beliefId, 'beliefId');
      if (root.status === 'RETRACTED') {
        throw new Rollback({
          rootId: beliefId,
          beliefs: { items: [], hasNextPage: false, endCursor: null, totalCount: 0 },
          survivors: [], pendingEffects: [], executingEffects: [], executedEffects: [],
          totals: emptyTotals(),
        });
      }
      const { retractionId } = await retractInTx(tx, actor, beliefId, 'preview');
      const affected = await sql<{ id: string; status: string }>`
        SELECT e.id::text AS id, e.status FROM effects e
         WHERE e.cancelled_by = ${retractionId} OR e.reached_by = ${retractionId}
            OR e.id IN (SELECT effect_id FROM reversals WHERE retraction_id = ${retractionId})
         ORDER BY e.id`.execute(tx);
      throw new Rollback({
        rootId: beliefId,
        beliefs: await retractedBeliefPage(tx, retractionId, first, input.after ?? null),
        survivors: await survivorIds(tx, retractionId, 10_000),
        pendingEffects: affected.rows.filter((e) => e.status === 'CANCELLED').map((e) => e.id),
        executingEffects: affected.rows.filter((e) => e.status === 'EXECUTING').map((e) => e.id),
        executedEffects: affected.rows.filter((e) => e.status === 'EXECUTED').map((e) => e.id),
        totals: await totalsFor(tx, retractionId),
      });
    });
  } catch (e) {
    if (e instanceof Rollback) return e.value;
    throw e;
  }
  throw new Error('preview transaction committed; it must always roll back');
}

export function emptyTotals(): Totals {
  return { beliefsRetracted: 0, effectsCancelled: 0, effectsReached: 0, reversalsOwed: 0, unreachable: 0, exposure: [], owed: [], unreachableAmount: [], settled: [] };
}

/** Validates a page size: 1…MAX_PAGE, default 50. */
export function pageSize(field: string, first: number | null | undefined, dflt = 50): number {
  if (first === undefined || first === null) return dflt;
  if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE) throw badInput(field, `must be an integer from 1 to ${MAX_PAGE}`);
  return first;
}
