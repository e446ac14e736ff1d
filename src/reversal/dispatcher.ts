import type { Core } from '../core';
import { DomainError } from '../errors/domain-error';
import {
  DEFAULT_RESEND_WINDOW_MS,
  type DispatchItem,
  type RecordResult,
  dispatchableFleets,
  recordOutcome,
  takeOwedReversals,
} from './dispatch.service';
import type { ProviderOutcome, ReversalProvider, ReversalRequest } from './provider/provider';
import { type WorkerLogger, errorText, silentLogger } from '../kernel/worker-logger';
import { pause } from '../kernel/sleep';
import { runRounds } from '../store/rounds';

/** Points a test (or an operator's tracer) can hook; awaited in line with the send. */
export interface DispatcherHooks {
  beforeSend?(item: DispatchItem): void | Promise<void>;
  afterSend?(item: DispatchItem, outcome: ProviderOutcome): void | Promise<void>;
  afterRecord?(item: DispatchItem, outcome: ProviderOutcome, result: RecordResult | null): void | Promise<void>;
}

export interface DispatcherOptions {
  core: Core;
  provider: ReversalProvider;
  /** Names this dispatcher on its leases; unique per process (e.g. host:pid:random). */
  holder: string;
  /**
   * Lease per take. A send still running when its lease is about to run out is aborted (it then counts as
   * retry_later), so set it above the provider adapter's worst-case send time; an unrecorded reversal is re-sent by
   * any dispatcher once its lease expires.
   */
  leaseMs: number;
  /** Reversals taken per fleet per round; a round's sends run concurrently. */
  batch: number;
  /** Idle poll interval; commits (and NOTIFY from other processes) wake the loop sooner. */
  pollMs: number;
  /** Stops the loop: no new take after it fires; sends in flight get `graceMs` to finish, then are aborted. */
  signal: AbortSignal;
  logger?: WorkerLogger;
  /** Re-send only while now() − first dispatch is below this; see docs/guarantees.md. */
  resendWindowMs?: number;
  /** Default 5000. */
  graceMs?: number;
  hooks?: DispatcherHooks;
}

/**
 * What a dispatcher did, counted. `stale`: outcomes refused because the lease had been taken over; `conflicts`:
 * confirmed by the provider but refused by the store (e.g. a second, different reference), so an operator must look.
 */
export type DispatcherStats = Record<
  'rounds' | 'taken' | 'confirmed' | 'failed' | 'retryLater' | 'stale' | 'duplicates' | 'conflicts' | 'errors',
  number
>;

/**
 * Sends owed reversals to a provider, for every fleet, until `signal` fires.
 *
 * Each round: find the fleets with work (retract_dispatch_fleets), take a batch per fleet under a lease
 * (takeOwedReversals), `provider.send` each one with the reversal's own idempotency key, and record the outcome
 * (recordOutcome, fenced by the lease).
 *
 * What it guarantees is stated once, with the test that checks each point, in docs/guarantees.md ("Reversals: sent
 * at least once; outcomes effectively once through the provider's key"): sends at least once, every send under the
 * reversal's one key; CONFIRMED only with the provider's own reference; re-sends stop after `resendWindowMs`.
 * Errors are logged and retried next round; the loop only ends on `signal`.
 */
export async function runDispatcher(opts: DispatcherOptions): Promise<DispatcherStats> {
  const { core, provider, holder, signal } = opts;
  const log = opts.logger ?? silentLogger;
  const leaseMs = opts.leaseMs;
  const resendWindowMs = opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS;
  const graceMs = opts.graceMs ?? 5000;
  if (!Number.isInteger(leaseMs) || leaseMs < 1) throw new Error(`leaseMs must be a positive integer, got ${leaseMs}`);
  if (!Number.isInteger(opts.batch) || opts.batch < 1)
    throw new Error(`batch must be a positive integer, got ${opts.batch}`);
  if (!(opts.pollMs >= 1)) throw new Error(`pollMs must be at least 1, got ${opts.pollMs}`);
  if (resendWindowMs <= 2 * leaseMs) {
    throw new Error(
      `resendWindowMs (${resendWindowMs}) must exceed twice leaseMs (${leaseMs}), or nothing would ever be re-sent`,
    );
  }
  const stats: DispatcherStats = {
    rounds: 0,
    taken: 0,
    confirmed: 0,
    failed: 0,
    retryLater: 0,
    stale: 0,
    duplicates: 0,
    conflicts: 0,
    errors: 0,
  };

  // In-flight sends are aborted `graceMs` after the stop signal.
  const hardStop = new AbortController();
  let graceTimer: NodeJS.Timeout | undefined;
  const onStop = () => {
    graceTimer = setTimeout(() => hardStop.abort(new Error('dispatcher stopping')), graceMs);
  };
  if (signal.aborted) onStop();
  else signal.addEventListener('abort', onStop, { once: true });

  let lastStuck = 0;
  log.info(
    { holder, provider: provider.id, leaseMs, batch: opts.batch, pollMs: opts.pollMs, resendWindowMs },
    'dispatcher started',
  );
  try {
    await runRounds(core.store, {
      signal,
      pollMs: opts.pollMs,
      round: async () => {
        stats.rounds++;
        let worked = 0;
        const fleets = await dispatchableFleets(core, { resendWindowMs });
        const stuck = fleets.reduce((n, f) => n + f.stuck, 0);
        if (stuck !== lastStuck) {
          if (stuck > 0)
            log.warn(
              { stuck, fleets: fleets.filter((f) => f.stuck > 0).map((f) => f.fleetId) },
              'reversals stuck past the resend window: an operator must reconcile them with the provider',
            );
          lastStuck = stuck;
        }
        for (const f of fleets) {
          if (signal.aborted) break;
          if (f.ready === 0) continue;
          const startedAt = Date.now();
          const items = await takeOwedReversals(core, f.fleetId, {
            limit: opts.batch,
            leaseMs,
            holder,
            resendWindowMs,
          });
          stats.taken += items.length;
          worked += items.length;
          if (items.length === 0) continue;
          // Stop sending shortly before the lease runs out: after that, another dispatcher may send too.
          const margin = Math.min(1000, Math.max(5, Math.floor(leaseMs * 0.1)));
          const deadline = AbortSignal.timeout(Math.max(1, startedAt + leaseMs - margin - Date.now()));
          const sendSignal = AbortSignal.any([hardStop.signal, deadline]);
          await Promise.all(items.map((item) => dispatchOne(item, sendSignal)));
        }
        return worked > 0;
      },
      onError: (err) => {
        stats.errors++;
        log.error({ err: errorText(err), holder }, 'dispatch round failed; retrying');
      },
    });
  } finally {
    if (graceTimer) clearTimeout(graceTimer);
    signal.removeEventListener('abort', onStop);
    log.info({ holder, ...stats }, 'dispatcher stopped');
  }
  return stats;

  async function dispatchOne(item: DispatchItem, sendSignal: AbortSignal): Promise<void> {
    const ctx = {
      reversalId: item.id,
      fleet: item.fleetId,
      idempotencyKey: item.idempotencyKey,
      attempt: item.lease.attempt,
    };
    await opts.hooks?.beforeSend?.(item);
    let outcome: ProviderOutcome;
    try {
      outcome = await provider.send(requestOf(item), { signal: sendSignal });
    } catch (err) {
      // The adapter contract says it resolves; if it rejects anyway, the delivery state is unknown.
      outcome = { outcome: 'retry_later', reason: `provider adapter threw: ${errorText(err)}` };
    }
    await opts.hooks?.afterSend?.(item, outcome);
    const result = await record(item, outcome, ctx);
    await opts.hooks?.afterRecord?.(item, outcome, result);
  }

  async function record(item: DispatchItem, outcome: ProviderOutcome, ctx: object): Promise<RecordResult | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await recordOutcome(core, item.fleetId, item.id, outcome, item.lease);
        if (!r.applied) {
          if (r.why === 'duplicate') stats.duplicates++;
          else stats.stale++;
          log.info({ ...ctx, outcome: outcome.outcome, why: r.why, status: r.reversal.status }, 'outcome not applied');
        } else if (r.status === 'CONFIRMED') {
          stats.confirmed++;
          log.info({ ...ctx, providerRef: r.reversal.provider_ref }, 'reversal confirmed');
        } else if (r.status === 'FAILED') {
          stats.failed++;
          log.warn({ ...ctx, reason: r.reversal.reason }, 'reversal failed: the provider refused it');
        } else {
          stats.retryLater++;
          log.warn(
            { ...ctx, reason: (outcome as { reason?: string }).reason, leaseExpiresAt: item.leaseExpiresAt },
            'reversal outcome inconclusive; will re-send under the same key after the lease',
          );
        }
        return r;
      } catch (err) {
        if (err instanceof DomainError) {
          stats.conflicts++;
          log.error(
            { ...ctx, outcome, err: err.message },
            'provider outcome refused by the store: an operator must reconcile',
          );
          return null;
        }
        if (attempt >= 5 || hardStop.signal.aborted) {
          stats.errors++;
          // The lease will run out and the reversal be re-sent under the same key; the provider replays its answer.
          log.error(
            { ...ctx, outcome, err: errorText(err) },
            'could not record the provider outcome; it will be re-sent after the lease',
          );
          return null;
        }
        await pause(50 * 2 ** attempt, hardStop.signal);
      }
    }
  }
}

/** The provider request for a taken reversal: identical on every send (same key, same body). */
export function requestOf(item: DispatchItem): ReversalRequest {
  return {
    idempotencyKey: item.idempotencyKey,
    reversalId: item.id,
    effectId: item.effectId,
    effectKind: item.effect.kind,
    effectExternalRef: item.effect.externalRef,
    amount: item.amount,
    payload: item.effect.payload ?? null,
  };
}
