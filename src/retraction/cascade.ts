import { markRetracted } from '../belief/belief.repository';
import { closure } from '../derivation/justification.repository';
import { settle } from '../derivation/settle';
import type { Tx } from '../store/tx';

/**
 * The JTMS cascade in a constant number of statements, whatever the depth of the blast radius.
 *
 * 1. One statement reads the closure (derivation/justification.repository.ts `closure`): every ACTIVE,
 *    non-grounded belief reachable from the root through justification premises, with each of its
 *    justifications and each premise's status.
 * 2. `settle` (derivation/settle.ts) computes in memory which of them fall and at which level, exactly as a
 *    level-by-level evaluation would; survivors and what rests only on them stay.
 * 3. One statement (belief.repository `markRetracted`) marks the fallen beliefs with the retraction
 *    and their level, and writes their BeliefRetracted event rows in cascade order (event.repository
 *    `insertLevelEvents`, composed into the same statement: whole levels, small ones together).
 *
 * The walk visits each edge of the closure once (UNION keeps one row per belief), and every lookup
 * goes through an index on the id it follows: cost grows with the blast radius, not with the store
 * nor with the depth (a statement per level would add a round trip and a plan per level, so a deep
 * chain would pay for its depth).
 */
export async function cascade(
  tx: Tx,
  fleet: string,
  retractionId: string,
  rootId: string,
  actorId: string,
): Promise<number> {
  const { ids, levels } = settle(Number(rootId), await closure(tx, fleet, rootId));
  const n = await markRetracted(tx, fleet, retractionId, actorId, ids, levels);
  // The closure was read in this transaction's snapshot; a concurrent change that slipped between
  // the two statements would have failed the transaction, so a shortfall is a bug, never a race.
  if (n !== ids.length) throw new Error(`cascade: ${ids.length} beliefs settled to fall but ${n} were ACTIVE to mark`);
  return n;
}
