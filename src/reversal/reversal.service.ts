import type { Actor, Core } from '../core';
import { DomainError, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { writeTx } from '../store/tx';
import * as v from '../validation';
import { issuedRefBefore, refuseIssuedRef } from './provider-ref';
import { type ReversalRow, lockReversal, updateReversal } from './reversal.repository';
import { recordWatchedOutcome, voidedConflict } from '../reinstatement/reinstatement.repository';

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
    if (r.status === 'UNREACHABLE') {
      throw new DomainError(
        'CONFLICT',
        `reversalId: reversal ${reversalId} is UNREACHABLE: no compensation exists for its effect`,
        'reversalId',
      );
    }
    if (r.status === 'VOIDED') throw voidedConflict(reversalId);
    refuseIssuedRef(issued);
    const done = await updateReversal(tx, actor.fleet, reversalId, {
      status: 'CONFIRMED',
      provider_ref: ref,
      confirmed_at: new Date(),
      lease_expires_at: null,
    });
    await appendEvent(tx, {
      fleet: actor.fleet,
      type: 'ReversalConfirmed',
      actorId: actor.agentId,
      retractionId: r.retraction_id,
      ids: [reversalId],
    });
    await recordWatchedOutcome(tx, actor.fleet, actor.agentId, reversalId, 'CONFIRMED');
    return done;
  });
}
