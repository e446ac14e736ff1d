import type { Actor, Core } from '../core';
import { DomainError, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { type Tx, writeTx } from '../store/tx';
import * as v from '../validation';
import { issuedRefBefore, refuseIssuedRef } from './provider-ref';
import { recordWatchedOutcome } from './money-line.repository';
import { type ReversalRow, lockReversal, updateReversal, voidedConflict } from './reversal.repository';

/**
 * Records a provider's confirmation: the reversal becomes CONFIRMED carrying the provider's
 * reference, and only then counts toward settled. Confirming again with the same reference is a
 * no-op; a different reference, or an UNREACHABLE reversal, is a CONFLICT. RETRACT never makes up
 * a reference: `providerRef` must come from the provider, and one RETRACT issued is refused
 * (src/reversal/provider-ref.ts).
 */
export async function confirmReversal(
  core: Core,
  actor: Actor,
  input: { reversalId: string; providerRef: string },
): Promise<ReversalRow> {
  const reversalId = v.id('reversalId', input.reversalId);
  const ref = v.providerRef('providerRef', input.providerRef);
  const issued = await issuedRefBefore(core.store, actor.fleet, ref);
  return writeTx(core.store, actor.fleet, async (tx) => {
    const r = await lockReversal(tx, actor.fleet, reversalId);
    if (!r) throw notFound('reversal', reversalId, 'reversalId');
    if (r.status === 'CONFIRMED') {
      if (r.provider_ref === ref) return r;
      throw new DomainError(
        'CONFLICT',
        `reversalId: reversal ${reversalId} is already confirmed under another provider reference`,
        'reversalId',
      );
    }
    return confirmLocked(tx, actor.fleet, actor.agentId, r, ref, { refuseIssued: () => refuseIssuedRef(issued) });
  });
}

/**
 * The confirmation itself, of a locked reversal not CONFIRMED yet, on every path (confirmReversal, the provider's
 * callback, the dispatcher): refused for an UNREACHABLE or VOIDED reversal and, by `refuseIssued`, for a reference
 * RETRACT issued; else CONFIRMED under `ref`, its ReversalConfirmed row (with `data`), and the reinstatement money
 * line that watches it, if any.
 */
export async function confirmLocked(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  r: ReversalRow,
  ref: string,
  o: { refuseIssued: () => unknown; data?: unknown },
): Promise<ReversalRow> {
  if (r.status === 'UNREACHABLE') {
    throw new DomainError(
      'CONFLICT',
      `reversalId: reversal ${r.id} is UNREACHABLE: no compensation exists for its effect`,
      'reversalId',
    );
  }
  if (r.status === 'VOIDED') throw voidedConflict(r.id);
  await o.refuseIssued();
  const done = await updateReversal(tx, fleet, r.id, {
    status: 'CONFIRMED',
    provider_ref: ref,
    confirmed_at: new Date(),
    lease_expires_at: null,
  });
  await appendEvent(tx, {
    fleet,
    type: 'ReversalConfirmed',
    actorId,
    retractionId: r.retraction_id,
    ids: [r.id],
    data: o.data,
  });
  await recordWatchedOutcome(tx, fleet, actorId, r, 'CONFIRMED');
  return done;
}
