/**
 * The adjudication contract: given the ACTIVE belief on a claim key and a proposal with a different
 * value, decide which stands — or hand the decision to a person.
 */

/** Outcome of one adjudication. ESCALATE means "a person must decide"; nothing changes automatically. */
export type Verdict = 'KEEP_EXISTING' | 'ACCEPT_PROPOSED' | 'ESCALATE';

/** Every verdict, in a stable order. */
export const VERDICTS: readonly Verdict[] = ['KEEP_EXISTING', 'ACCEPT_PROPOSED', 'ESCALATE'];

/** Narrows an unknown value to a {@link Verdict} (exact, case-sensitive match). */
export function isVerdict(v: unknown): v is Verdict {
  return typeof v === 'string' && (VERDICTS as readonly string[]).includes(v);
}

/** One side of a contradiction: what is asserted, on what evidence, by whom, when. */
export type BeliefSide = {
  statement: string;
  value: unknown;
  /** Free-text description of the evidence, or null when there is none. */
  evidence: string | null;
  /** Agent that asserted it. */
  author: string;
  /** ISO-8601 time the belief was asserted or the evidence observed. */
  at?: string;
  /** Where the evidence came from (system, document, person). */
  source?: string;
  /** Caller's prior on the source, 0 (worthless) … 1 (authoritative). */
  reliability?: number;
};

/** A contradiction on one claim key: the ACTIVE belief and the proposal whose value differs. */
export type AdjudicationCase = {
  claimKey: string;
  existing: BeliefSide;
  proposed: BeliefSide;
};

/** A verdict and a human-readable reason for it. */
export type AdjudicationResult = { verdict: Verdict; rationale: string };

/**
 * Decides contradictions.
 *
 * Guarantee: `adjudicate` always resolves with a known verdict and a non-empty rationale. It never rejects
 * for model trouble (timeouts, throttling, refusals, filtered or malformed output, an aborted `signal`):
 * it resolves ESCALATE with the reason as rationale. It runs outside any database transaction.
 */
export interface Adjudicator {
  readonly id: string;
  adjudicate(c: AdjudicationCase, opts?: { signal?: AbortSignal }): Promise<AdjudicationResult>;
}

/** Shorthand for the ESCALATE result every adjudicator returns when it cannot decide. */
export function escalate(rationale: string): AdjudicationResult {
  return { verdict: 'ESCALATE', rationale: rationale.trim() || 'escalated without a stated reason' };
}
