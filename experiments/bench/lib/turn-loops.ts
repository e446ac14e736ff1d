import { AsyncLocalStorage } from 'node:async_hooks';
import { assertBelief } from '../../../src/belief/belief.service';
import type { Actor, Core } from '../../../src/core';
import { DomainError } from '../../../src/errors/domain-error';
import { retryReason } from '../../../test/stress/workload';

/** What turnLoops saw: turns by what they did (`given up` after the retry budget), retries by reason. */
export interface TurnLoopsResult {
  /** asserted, contradiction, corroborated, given up. */
  kinds: Record<string, number>;
  /** Turns that committed. */
  turns: number;
  /** Every serialization retry, by SQLSTATE and reason. */
  retries: Record<string, number>;
  /** Each turn given up: why each of its attempts failed, counted. */
  givenUp: Array<Record<string, number>>;
  /** Serialization retries by the attempt that failed (1: a first attempt; 2: the first retry, which runs alone; …). */
  byAttempt: Record<string, number>;
}

/** Counts as `n × reason; …`, for a note. */
export const tally = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([why, n]) => `${n} × ${why}`)
    .join('; ');

const count = (into: Record<string, number>, why: string) => {
  into[why] = (into[why] ?? 0) + 1;
};

/**
 * One loop of assertBelief turns per actor for `seconds`, the i-th turn of actor f on `claimKey(f, i)`. A turn given
 * up after the retry budget is counted and the loop goes on: the figure is reported, not a crash.
 */
export async function turnLoops(
  core: Core,
  actors: readonly Actor[],
  seconds: number,
  claimKey: (f: number, i: number) => string,
): Promise<TurnLoopsResult> {
  const result: TurnLoopsResult = { kinds: {}, turns: 0, retries: {}, givenUp: [], byAttempt: {} };
  // Each turn's failed attempts, so that a turn given up can say why every one of its attempts failed.
  const attempts = new AsyncLocalStorage<Record<string, number>>();
  const observed = core.store.tx.onRetry;
  core.store.tx.onRetry = (e, attempt) => {
    count(result.retries, retryReason(e));
    count(result.byAttempt, String(attempt));
    count(attempts.getStore() ?? {}, retryReason(e));
  };
  const end = Date.now() + seconds * 1000;
  try {
    await Promise.all(
      actors.map(async (actor, f) => {
        for (let i = 0; Date.now() < end; i++) {
          const failed: Record<string, number> = {};
          const kind = await attempts
            .run(failed, () =>
              assertBelief(core, actor, { claimKey: claimKey(f, i), statement: `turn ${i}`, value: { i } }),
            )
            .then(
              (r) => r.kind,
              (e: unknown) => {
                if (!(e instanceof DomainError && e.code === 'CONFLICT')) throw e;
                count(failed, retryReason(e.cause));
                result.givenUp.push(failed);
                return 'given up';
              },
            );
          count(result.kinds, kind);
          if (kind !== 'given up') result.turns++;
        }
      }),
    );
  } finally {
    core.store.tx.onRetry = observed;
  }
  return result;
}
