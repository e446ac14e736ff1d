import type { Embedder } from './embedding/embedder';
import type { Store } from './store/engine';

/**
 * Terminology: one vocabulary with README's Words table and docs/design.md (test/docs/glossary.test.ts holds them
 * together).
 *  - fleet: a tenant: the agents that share one memory. Every row carries one; a caller sees its own fleet's rows only.
 *  - agent: a caller holding a bearer token and scopes, in one fleet.
 *  - scope: what a token may do and read (beliefs:read, beliefs:retract, receipts:read, …, admin).
 *  - claim key: what a belief is about; at most one ACTIVE belief per claim key per fleet. Never an embedding.
 *  - belief: an assertion on a claim, ACTIVE or RETRACTED: a premise or derived.
 *  - premise: a belief with no justification, grounded in outside evidence.
 *  - justification: one set of premises a derived belief rests on; holds while all are ACTIVE.
 *  - contradiction: an assertion whose value differs from the claim's ACTIVE belief; nothing is written until it is
 *    adjudicated (by a heuristic, a model or an agent).
 *  - turn: how an agent works: READ (a search, returning a snapshot), THINK (outside any transaction), COMMIT
 *    (assertBelief, refused when a premise fell since the READ).
 *  - effect: an action taken on beliefs (a refund); PENDING → EXECUTING → EXECUTED | CANCELLED | FAILED.
 *  - effect kind: an entry of the kinds registry; `reversible` says whether a compensation exists.
 *  - retraction: taking a belief back with everything that rested on it alone, in one SERIALIZABLE transaction (the
 *    cascade, root first); its row is the receipt.
 *  - reversal: compensation owed for an EXECUTED effect whose support fell; OWED → DISPATCHED →
 *    CONFIRMED | FAILED, or UNREACHABLE when its kind has no compensation; VOIDED when a reinstatement takes it back.
 *  - receipt: what a retraction did: the beliefs it took down, the effects it cancelled and reached, the reversals,
 *    and the money (exposure, owed, unreachable, settled). A reinstatement has one too.
 *  - reinstatement: taking a retraction back: what fell in it returns where it is justified again; reversals not yet
 *    sent are VOIDED, a CONFIRMED one becomes a re-execution owed; money is named, never moved.
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
