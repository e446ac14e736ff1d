import { DomainError } from '../errors/domain-error';
import { asDbId, asGlobalId } from '../kernel/provider-ref';
import type { Store } from '../store/engine';
import { type Tx, readTx } from '../store/tx';
import { issuedRefKind } from './reversal.repository';

/**
 * "A reference we issued", the one definition every confirmation path applies (confirmReversal, the signed
 * provider callback, the dispatcher recording a provider's answer): a reversal is CONFIRMED only under the
 * provider's own reference, and `settled` sums only CONFIRMED reversals, so a reference that is one of ours
 * would count money the provider never reported moving.
 *
 * Refused, after the normalisation of src/kernel/provider-ref.ts (NFC, edges trimmed, ASCII case folded; a
 * reference with an invisible code point never gets here: v.providerRef refuses it):
 * - any of our global ids, of any node type, in any letter case, whether or not the node exists;
 * - the id of any agent, belief, justification, effect, reversal, retraction or contradiction of the fleet;
 * - the idempotency key of any effect of the fleet, and the key of any of its reversals.
 * A reference that merely contains one of these is the provider's.
 */
const PROVIDER_REF_RULE =
  "a provider reference must be the provider's own: RETRACT refuses its global ids, the ids of the fleet's rows, and the fleet's effect idempotency keys and reversal keys, compared after Unicode NFC, trimming and ASCII case folding, global ids in any letter case";

/** What `ref` is when it is a reference RETRACT issued in `fleet`; else null. */
async function issuedRef(tx: Tx, fleet: string, ref: string): Promise<string | null> {
  const type = asGlobalId(ref);
  if (type) return `a global id (${type})`;
  return issuedRefKind(tx, fleet, ref, asDbId(ref));
}

/** Throws BAD_USER_INPUT on `providerRef` when `ref` is a reference RETRACT issued in `fleet`. Writes nothing. */
export async function assertProvidersOwnRef(tx: Tx, fleet: string, ref: string): Promise<void> {
  refuseIssuedRef(await issuedRef(tx, fleet, ref));
}

/**
 * What `ref` is (as assertProvidersOwnRef asks), read in a read-only snapshot of its own, for a write
 * transaction to refuse with refuseIssuedRef. What it compares with is written once and never
 * changed, so a snapshot taken just before the write answers as the write's own would, and it takes
 * no predicate locks: under row-level security the folded-key index cannot be probed (its
 * expression is not leakproof), so the lookup reads every effect and reversal of the fleet, and in a
 * SERIALIZABLE write that read made every concurrent effect or reversal write a serialization
 * conflict (FINDINGS §5.2, stress).
 */
export function issuedRefBefore(store: Store, fleet: string, ref: string): Promise<string | null> {
  return readTx(store, fleet, (tx) => issuedRef(tx, fleet, ref));
}

/** Throws BAD_USER_INPUT on `providerRef` when `what` (from issuedRef) names one of RETRACT's references. */
export function refuseIssuedRef(what: string | null): void {
  if (what !== null) {
    throw new DomainError(
      'BAD_USER_INPUT',
      `providerRef: this is ${what}, which RETRACT issued; ${PROVIDER_REF_RULE}`,
      'providerRef',
    );
  }
}
