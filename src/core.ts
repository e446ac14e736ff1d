import type { Embedder } from './embedding/embedder';
import type { Store } from './store/engine';

/**
 * Terminology
 *  - fleet: a tenant. Every row carries one; a caller sees its own fleet's rows only.
 *  - agent: a caller holding a bearer token and scopes, in one fleet.
 *  - claim key: what a belief is about; at most one ACTIVE belief per claim key per fleet.
 *  - belief: an assertion on a claim. grounded (a premise, outside evidence) or derived.
 *  - justification: one set of premises a derived belief rests on; holds while all are ACTIVE.
 *  - effect: an action taken on beliefs (a refund); PENDING → EXECUTING → EXECUTED | CANCELLED | FAILED.
 *  - reversal: compensation owed for an EXECUTED effect whose support fell; OWED → DISPATCHED →
 *    CONFIRMED | FAILED, or UNREACHABLE when its kind has no compensation.
 *  - retraction: the receipt of one cascade, root first.
 *  - event: one row of the ordered log, appended in the same transaction as the change it records.
 */
export interface Core {
  store: Store;
  embedder: Embedder;
  /**
   * EXPERIMENT ONLY (experiments/concurrency_eval.ts, arm B); never set by the product, the server or tests of the
   * product. With it, a turn's COMMIT (assertBelief) still creates the claim row and bumps its version, but does not
   * take the claim row lock (`SELECT … FOR UPDATE`) that serialises writers on one claim, so the experiment can
   * measure what SERIALIZABLE alone does without it. A field of the Core the experiment builds, not a module flag:
   * no other caller in the process can see it.
   */
  skipClaimLock?: boolean;
}

/** Who is acting: the agent and its fleet. Every service call takes one. */
export interface Actor {
  fleet: string;
  agentId: string;
}
