import { recordReversals } from '../reversal/reversal.repository';
import type { Tx } from '../store/tx';
import { cancelPendingOn, markReachedBy, restingOnRetraction } from './effect.repository';

/**
 * What a retraction does to the effects resting on the beliefs it took down, after they fell:
 * PENDING ones are cancelled (they can never run), EXECUTING ones are marked reached
 * (completeEffect records their reversal), and each EXECUTED one gets its one reversal — OWED under
 * the reversal key, or UNREACHABLE when its kind is not reversible. The reversal repository is handed the
 * effects as effect.repository's subquery: reversals know no effect statement (effect → reversal, one way).
 */
export async function reachEffects(tx: Tx, fleet: string, retractionId: string, actorId: string): Promise<void> {
  await cancelPendingOn(tx, fleet, retractionId, actorId);
  await markReachedBy(tx, fleet, retractionId);
  await recordReversals(tx, fleet, retractionId, actorId, restingOnRetraction(fleet, retractionId));
}
