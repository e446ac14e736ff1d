import { observeCascade } from '../store/observe';
import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import { notFound } from '../errors/domain-error';
import { cascade } from './cascade';
import { survivorIds } from '../derivation/justification.repository';
import { effectsTouchedBy } from '../effect/effect.repository';
import { reachEffects } from '../effect/reach';
import { appendEvent } from '../event/event.repository';
import { lockBeliefs } from '../belief/belief.repository';
import { type Totals, emptyTotals } from '../kernel/money';
import { type Page, decodeDepthCursor, pageSize } from '../kernel/page';
import { type Tx, inTx } from '../store/tx';
import * as v from '../validation';
import { insertRetraction, retractedBeliefPage, setBeliefsRetracted, totalsFor } from './retraction.repository';

/**
 * Retracts a belief and everything that rested on it alone, in the caller's transaction: the
 * receipt row, the belief cascade, cancelled PENDING effects, reached EXECUTING ones, one reversal
 * per EXECUTED one, and the events RetractionStarted … RetractionCommitted. Retracting a belief that
 * is already RETRACTED returns the retraction that took it down and writes nothing.
 */
export async function retractInTx(
  tx: Tx,
  actor: Actor,
  beliefId: string,
  reason: string,
): Promise<{ retractionId: string; created: boolean; beliefs: number }> {
  const [root] = await lockBeliefs(tx, actor.fleet, [beliefId], 'update');
  if (!root) throw notFound('belief', beliefId, 'beliefId');
  if (root.status === 'RETRACTED') return { retractionId: root.retraction_id!, created: false, beliefs: 0 };
  await pausePoint('retract:root-locked');
  const id = await insertRetraction(tx, actor.fleet, { rootId: beliefId, reason, actorId: actor.agentId });
  await appendEvent(tx, {
    fleet: actor.fleet,
    type: 'RetractionStarted',
    actorId: actor.agentId,
    retractionId: id,
    ids: [beliefId],
    data: { reason },
  });
  const n = await cascade(tx, actor.fleet, id, beliefId, actor.agentId);
  await setBeliefsRetracted(tx, actor.fleet, id, n);
  await pausePoint('retract:cascaded');
  await reachEffects(tx, actor.fleet, id, actor.agentId);
  await pausePoint('retract:effects-reached');
  const totals = await totalsFor(tx, actor.fleet, id);
  await appendEvent(tx, {
    fleet: actor.fleet,
    type: 'RetractionCommitted',
    actorId: actor.agentId,
    retractionId: id,
    data: totals,
  });
  return { retractionId: id, created: true, beliefs: n };
}

/** retractBelief: one SERIALIZABLE transaction around retractInTx. */
export async function retractBelief(
  core: Core,
  actor: Actor,
  input: { beliefId: string; reason: string },
): Promise<{ retractionId: string; created: boolean }> {
  const beliefId = v.id('beliefId', input.beliefId);
  const reason = v.text('reason', input.reason, v.LIMITS.reasonMax, { multiline: true });
  // A retraction is what stops money moving: under heavy write contention it keeps trying longer
  // than other writes before it answers CONFLICT (backoff is capped at 1 s an attempt).
  const started = performance.now();
  const { beliefs, ...r } = await inTx(
    core.store,
    { fleet: actor.fleet, maxAttempts: RETRACTION_ATTEMPTS, fleetLock: 'exclusive' },
    (tx) => retractInTx(tx, actor, beliefId, reason),
  );
  if (r.created)
    observeCascade(core.store, { kind: 'retraction', seconds: (performance.now() - started) / 1000, beliefs });
  return r;
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
export async function previewRetraction(
  core: Core,
  actor: Actor,
  input: { beliefId: string; first?: number; after?: string | null },
): Promise<Preview> {
  const beliefId = v.id('beliefId', input.beliefId);
  const first = pageSize('first', input.first);
  if (input.after) decodeDepthCursor('after', input.after);
  try {
    // REPEATABLE READ, not SERIALIZABLE: the transaction never commits, so serializable conflict
    // detection could only make it fail; one snapshot is what a preview needs.
    await inTx(
      core.store,
      { fleet: actor.fleet, isolation: 'repeatable read', maxAttempts: RETRACTION_ATTEMPTS },
      async (tx) => {
        const [root] = await lockBeliefs(tx, actor.fleet, [beliefId], 'share');
        if (!root) throw notFound('belief', beliefId, 'beliefId');
        if (root.status === 'RETRACTED') {
          throw new Rollback({
            rootId: beliefId,
            beliefs: { items: [], hasNextPage: false, endCursor: null, totalCount: 0 },
            survivors: [],
            pendingEffects: [],
            executingEffects: [],
            executedEffects: [],
            totals: emptyTotals(),
          });
        }
        const { retractionId } = await retractInTx(tx, actor, beliefId, 'preview');
        const affected = await effectsTouchedBy(tx, actor.fleet, retractionId);
        throw new Rollback({
          rootId: beliefId,
          beliefs: await retractedBeliefPage(tx, actor.fleet, retractionId, first, input.after ?? null),
          survivors: await survivorIds(tx, actor.fleet, retractionId, 10_000),
          pendingEffects: affected.filter((e) => e.status === 'CANCELLED').map((e) => e.id),
          executingEffects: affected.filter((e) => e.status === 'EXECUTING').map((e) => e.id),
          executedEffects: affected.filter((e) => e.status === 'EXECUTED').map((e) => e.id),
          totals: await totalsFor(tx, actor.fleet, retractionId),
        });
      },
    );
  } catch (e) {
    if (e instanceof Rollback) return e.value;
    throw e;
  }
  throw new Error('preview transaction committed; it must always roll back');
}
