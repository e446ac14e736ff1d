import type { Actor, Core } from '../core';
import { DomainError, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import type { ReversalStatus } from '../store/schema';
import { writeTx } from '../store/tx';
import * as v from '../validation';
import { assertProvidersOwnRef } from './provider-ref';
import { recordWatchedOutcome, voidedConflict } from '../reinstatement/reinstatement.repository';

export { reversalKey } from '../derivation/cascade';

export interface ReversalRow {
  id: string;
  fleet_id: string;
  effect_id: string;
  retraction_id: string;
  status: ReversalStatus;
  idempotency_key: string;
  amount_minor: string | null;
  currency: string | null;
  reason: string | null;
  provider_ref: string | null;
  attempts: number;
  lease_expires_at: Date | null;
  created_at: Date;
  dispatched_at: Date | null;
  confirmed_at: Date | null;
  failed_at: Date | null;
}

/**
 * Records a provider's confirmation: the reversal becomes CONFIRMED carrying the provider's
 * reference, and only then counts toward settled. Confirming again with the same reference is a
 * no-op; a different reference, or an UNREACHABLE reversal, is a CONFLICT. RETRACT never makes up
 * a reference: `providerRef` must come from the provider, and one RETRACT issued is refused
 * (src/reversal/provider-ref.ts).
 */
export async function confirmReversal(core: Core, actor: Actor, input: { reversalId: string; providerRef: string }): Promise<ReversalRow> {
  const reversalId = v.id('reversalId', input.reversalId);
  const ref = v.text('providerRef', input.providerRef, v.LIMITS.providerRefMax);
  return writeTx(core.store, actor.fleet, async (tx) => {
    const r = (await tx.selectFrom('reversals').selectAll().where('id', '=', reversalId).forUpdate().executeTakeFirst()) as ReversalRow | undefined;
    if (!r) throw notFound('reversal', reversalId, 'reversalId');
    if (r.status === 'CONFIRMED') {
      if (r.provider_ref === ref) return r;
      throw new DomainError('CONFLICT', `reversalId: reversal ${reversalId} is already confirmed under another provider reference`, 'reversalId');
    }
    if (r.status === 'UNREACHABLE') {
      throw new DomainError('CONFLICT', `reversalId: reversal ${reversalId} is UNREACHABLE: no compensation exists for its effect`, 'reversalId');
    }
    if (r.status === 'VOIDED') throw voidedConflict(reversalId);
    await assertProvidersOwnRef(tx, actor.fleet, ref);
    const done = (await tx
      .updateTable('reversals')
      .set({ status: 'CONFIRMED', provider_ref: ref, confirmed_at: new Date(), lease_expires_at: null })
      .where('id', '=', reversalId)
      .returningAll()
      .executeTakeFirstOrThrow()) as ReversalRow;
    await appendEvent(tx, { fleet: actor.fleet, type: 'ReversalConfirmed', actorId: actor.agentId, retractionId: r.retraction_id, ids: [reversalId] });
    await recordWatchedOutcome(tx, actor.fleet, actor.agentId, reversalId, 'CONFIRMED');
    return done;
  });
}
