import type { Actor, Core } from '../core';
import { DomainError, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { activeRivalOf, bringBack, lockBeliefs } from '../belief/belief.repository';
import { raiseContradictions } from '../contradiction/contradiction.repository';
import { reverseClosure, reverseClosureOfRoot } from '../derivation/justification.repository';
import { resettle } from '../derivation/resettle';
import {
  type EffectRow,
  effectsBackOn,
  firstDownSupport,
  lockEffect,
  reachAgain,
  restorableAfter,
  restoreCancelled,
} from '../effect/effect.repository';
import { lockRetraction, markRetractionReinstated } from '../retraction/retraction.repository';
import { RETRACTION_ATTEMPTS } from '../retraction/retraction.service';
import { recordMoneyLines } from '../reversal/money-line.repository';
import { observeCascade } from '../store/observe';
import { type Tx, inTx, writeTx } from '../store/tx';
import * as v from '../validation';
import * as repo from './reinstatement.repository';

export type ReinstateResult =
  | { kind: 'reinstated'; reinstatementId: string; created: boolean }
  | { kind: 'blocked'; reinstatementId: string; created: boolean; contradictionId: string };

/**
 * Takes a retraction back, in the caller's transaction. The root returns to ACTIVE unless its claim
 * has since gained another ACTIVE belief: then a contradiction is raised between them and nothing
 * else changes (BLOCKED) until it is adjudicated — ACCEPT_PROPOSED retracts the rival and completes
 * this reinstatement in the same transaction (src/adjudication/adjudication.service.ts),
 * KEEP_EXISTING leaves it BLOCKED for good. A second call returns the first receipt and writes
 * nothing. A derived root none of whose justifications holds cannot be ACTIVE: CONFLICT, nothing written.
 */
async function reinstateInTx(
  tx: Tx,
  actor: Actor,
  retractionId: string,
  reason: string,
  moved: { beliefs: number },
): Promise<ReinstateResult> {
  const rt = await lockRetraction(tx, actor.fleet, retractionId);
  if (!rt) throw notFound('retraction', retractionId, 'retractionId');
  const known = await repo.lockReinstatementOf(tx, actor.fleet, retractionId);
  if (known) return answer(known, false);
  const [root] = await lockBeliefs(tx, actor.fleet, [rt.root_id], 'update');
  if (!root || root.retraction_id !== retractionId)
    throw new Error(`retraction ${retractionId} does not hold its root ${rt.root_id}`);
  const { rows } = await reverseClosureOfRoot(tx, actor.fleet, root.id);
  const unsupported = !root.grounded && !rows.some((j) => j.every((p) => p.state === 'active'));
  if (unsupported) {
    throw new DomainError(
      'CONFLICT',
      `retractionId: its root, belief ${root.id}, is derived and none of its justifications holds now (a premise is RETRACTED); reinstate what took that premise down first`,
      'retractionId',
    );
  }
  const id = await repo.insertReinstatement(tx, actor.fleet, { retractionId, reason, actorId: actor.agentId });
  await appendEvent(tx, {
    fleet: actor.fleet,
    type: 'ReinstatementStarted',
    actorId: actor.agentId,
    retractionId,
    ids: [id],
    data: { reinstatementId: id, reason },
  });
  const rival = await activeRivalOf(tx, actor.fleet, root.id);
  if (rival) {
    const premises = root.grounded
      ? []
      : rows.find((j) => j.every((p) => p.state === 'active'))!.map((p) => Number(p.premise));
    const [contradictionId] = await raiseContradictions(
      tx,
      actor.fleet,
      { reinstatementId: id, actorId: actor.agentId },
      [{ belief: Number(root.id), premises }],
    );
    await repo.setBlocked(tx, actor.fleet, id, contradictionId!);
    await commitEvent(tx, actor, id, retractionId);
    return { kind: 'blocked', reinstatementId: id, created: true, contradictionId: contradictionId! };
  }
  moved.beliefs = await bringBackInTx(tx, actor, id, retractionId, root.id);
  return { kind: 'reinstated', reinstatementId: id, created: true };
}

/**
 * The reverse cascade and its money, once the root may come back: one closure read, the fixpoint
 * in memory (src/derivation/resettle.ts), one UPDATE with its events, then the contradictions, the
 * money lines, the effects reached again, the receipt and the commit event: constant statements
 * whatever the depth.
 */
async function bringBackInTx(tx: Tx, actor: Actor, id: string, retractionId: string, rootId: string): Promise<number> {
  const fleet = actor.fleet;
  const by = { reinstatementId: id, retractionId, actorId: actor.agentId };
  await markRetractionReinstated(tx, fleet, retractionId);
  const { rows, blocked } = await reverseClosure(tx, fleet, retractionId, rootId);
  const { ids, levels, contradicted } = resettle(Number(rootId), rows, blocked);
  const n = await bringBack(tx, fleet, by, ids, levels);
  if (n !== ids.length)
    throw new Error(
      `reinstatement: ${ids.length} beliefs settled to return but ${n} were down under retraction ${retractionId}`,
    );
  const contradictionIds = await raiseContradictions(tx, fleet, by, contradicted);
  await recordMoneyLines(tx, fleet, by, effectsBackOn(fleet, ids));
  await reachAgain(tx, fleet, retractionId);
  await repo.recordReceipt(tx, fleet, id, {
    ids,
    levels,
    contradictionIds,
    restorable: restorableAfter(fleet, retractionId),
  });
  await commitEvent(tx, actor, id, retractionId);
  return n;
}

async function commitEvent(tx: Tx, actor: Actor, id: string, retractionId: string): Promise<void> {
  const totals = await repo.reinstatementTotals(tx, actor.fleet, id);
  await appendEvent(tx, {
    fleet: actor.fleet,
    type: 'ReinstatementCommitted',
    actorId: actor.agentId,
    retractionId,
    ids: [id],
    data: { reinstatementId: id, ...totals },
  });
}

function answer(r: repo.ReinstatementRow, created: boolean): ReinstateResult {
  return r.status === 'BLOCKED'
    ? { kind: 'blocked', reinstatementId: r.id, created, contradictionId: r.contradiction_id! }
    : { kind: 'reinstated', reinstatementId: r.id, created };
}

/**
 * After ACCEPT_PROPOSED on the contradiction that blocks a reinstatement (the rival already
 * retracted in the caller's transaction): the root comes back and the reinstatement completes.
 * Returns the root's id (the belief the verdict accepted), or null when `contradiction` blocks none.
 */
export async function resumeBlocked(
  tx: Tx,
  actor: Actor,
  contradiction: { id: string; reinstatement_id: string | null },
): Promise<string | null> {
  if (!contradiction.reinstatement_id) return null;
  const [r] = await repo.reinstatementsByIds(tx, actor.fleet, [contradiction.reinstatement_id]);
  if (!r || r.status !== 'BLOCKED' || r.contradiction_id !== contradiction.id) return null;
  const rt = await lockRetraction(tx, actor.fleet, r.retraction_id);
  await repo.setBlocked(tx, actor.fleet, r.id, null);
  await bringBackInTx(tx, actor, r.id, r.retraction_id, rt!.root_id);
  return rt!.root_id;
}

/** reinstateRetraction: one SERIALIZABLE transaction under the fleet's exclusive lock, like a retraction. */
export async function reinstateRetraction(
  core: Core,
  actor: Actor,
  input: { retractionId: string; reason: string },
): Promise<ReinstateResult> {
  const retractionId = v.id('retractionId', input.retractionId);
  const reason = v.text('reason', input.reason, v.LIMITS.reasonMax, { multiline: true });
  const started = performance.now();
  const moved = { beliefs: 0 };
  const r = await inTx(
    core.store,
    { fleet: actor.fleet, maxAttempts: RETRACTION_ATTEMPTS, fleetLock: 'exclusive' },
    (tx) => reinstateInTx(tx, actor, retractionId, reason, moved),
  );
  if (r.created)
    observeCascade(core.store, {
      kind: 'reinstatement',
      seconds: (performance.now() - started) / 1000,
      beliefs: moved.beliefs,
    });
  return r;
}

/**
 * Re-queues an effect a reinstated retraction had cancelled: PENDING again under its own key, when
 * the reinstatement lists it as restorable and every support is ACTIVE. The key is unique in the
 * fleet and a cancelled effect never ran, so nothing can have executed under it; restoring twice
 * returns the effect unchanged.
 */
export async function restoreEffect(core: Core, actor: Actor, input: { effectId: string }): Promise<EffectRow> {
  const effectId = v.id('effectId', input.effectId);
  return writeTx(core.store, actor.fleet, async (tx) => {
    const e = await lockEffect(tx, actor.fleet, effectId);
    if (!e) throw notFound('effect', effectId, 'effectId');
    if (e.status !== 'CANCELLED') {
      if (e.restored_by) return e;
      throw new DomainError(
        'CONFLICT',
        `effectId: effect ${effectId} is ${e.status}; only a CANCELLED effect can be restored`,
        'effectId',
      );
    }
    const by = await repo.restorableBy(tx, actor.fleet, e);
    if (!by)
      throw new DomainError(
        'CONFLICT',
        `effectId: effect ${effectId} was cancelled by retraction ${e.cancelled_by}, which no reinstatement took back`,
        'effectId',
      );
    const down = await firstDownSupport(tx, actor.fleet, effectId);
    if (down)
      throw new DomainError(
        'CONFLICT',
        `effectId: effect ${effectId} rests on belief ${down}, which is RETRACTED`,
        'effectId',
      );
    await restoreCancelled(tx, actor.fleet, effectId, {
      reinstatementId: by.reinstatement_id,
      retractionId: by.retraction_id,
      actorId: actor.agentId,
    });
    return (await lockEffect(tx, actor.fleet, effectId))!;
  });
}
