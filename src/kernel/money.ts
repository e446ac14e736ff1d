/**
 * Money as the store sums it: exact integer minor units as a decimal string (PostgreSQL `numeric`
 * sums of bigint amounts), since per-currency totals of amounts up to 2^53−1 each can pass 2^53−1.
 * Adapters that must show a JSON number show it capped (see {@link capped}) beside the exact string.
 */
export interface Money {
  /** Exact integer minor units, e.g. "124000" for $1,240.00. */
  amountMinor: string;
  currency: string;
}

/**
 * A receipt's figures: counts and per-currency sums (exact, any size), computed from the rows
 * themselves. Here rather than beside the retraction because the event log carries them too.
 */
export interface Totals {
  beliefsRetracted: number;
  effectsCancelled: number;
  effectsReached: number;
  reversalsOwed: number;
  unreachable: number;
  exposure: Money[];
  owed: Money[];
  unreachableAmount: Money[];
  settled: Money[];
}

/** The largest integer a JSON number (and the contract's SafeInt) carries exactly: 2^53−1. */
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The exact amount as a bigint. Accepts numbers too: RetractionCommitted events written before
 * totals were exact carry their amounts as JSON numbers (all of them safe integers).
 */
export function exactMinor(amountMinor: string | number | bigint): bigint {
  return BigInt(amountMinor);
}

/** The amount as a safe integer: exact within ±(2^53−1), else clamped to it, with `capped` saying so. */
export function capped(amountMinor: string | number | bigint): { amountMinor: number; capped: boolean } {
  const x = exactMinor(amountMinor);
  if (x > SAFE_MAX) return { amountMinor: Number.MAX_SAFE_INTEGER, capped: true };
  if (x < -SAFE_MAX) return { amountMinor: -Number.MAX_SAFE_INTEGER, capped: true };
  return { amountMinor: Number(x), capped: false };
}

/** The totals of a retraction that took nothing down (a preview of a belief already retracted). */
export function emptyTotals(): Totals {
  return {
    beliefsRetracted: 0,
    effectsCancelled: 0,
    effectsReached: 0,
    reversalsOwed: 0,
    unreachable: 0,
    exposure: [],
    owed: [],
    unreachableAmount: [],
    settled: [],
  };
}
