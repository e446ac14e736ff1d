import type { Actor, Core } from '../core';
import { DomainError } from '../errors/domain-error';
import { readTx } from '../store/tx';
import * as v from '../validation';
import { type WorkerLogger, errorText, silentLogger } from '../kernel/worker-logger';
import { pause } from '../kernel/sleep';
import { runRounds } from '../store/rounds';
import { type EffectRow, anyPending as anyPendingIn } from './effect.repository';
import { claimEffect, completeEffect, failEffect } from './effect.service';

/**
 * Carries out one effect of a kind. Resolve `{ ok: true, ref }` with the executing system's own reference once it
 * happened, `{ ok: false, reason }` only when it certainly did not (the effect becomes FAILED and owes nothing).
 * Throw when the outcome is unknown: the call is repeated with the same effect, so the adapter must be idempotent on
 * `effect.idempotency_key`.
 */
export type EffectAdapter = (
  effect: EffectRow,
  ctx: { signal: AbortSignal },
) => Promise<{ ok: true; ref: string } | { ok: false; reason: string }>;

export interface ExecutorOptions {
  core: Core;
  /** The executing agent; effects are claimed in its fleet and recorded under its id. */
  actor: Actor;
  /** One adapter per effect kind; only these kinds are claimed. */
  adapters: Record<string, EffectAdapter>;
  pollMs: number;
  /** Stops the loop: no new claim after it fires. The effect in hand is finished (adapters should honour it). */
  signal: AbortSignal;
  logger?: WorkerLogger;
  /** Calls per effect when the adapter throws (outcome unknown), before it is left EXECUTING. Default 5. */
  maxAdapterAttempts?: number;
  /** Base of the full-jitter backoff between adapter calls and between recording attempts. Default 200. */
  retryDelayMs?: number;
}

/** What an executor did, counted; `abandoned`: the adapter kept throwing, so the effect was left EXECUTING for an operator. */
export type ExecutorStats = Record<'claimed' | 'executed' | 'failed' | 'abandoned' | 'errors', number>;

/**
 * Executes PENDING effects until `signal` fires: claimEffect (FOR UPDATE SKIP LOCKED, supports re-checked) →
 * the kind's adapter → completeEffect with the adapter's reference, or failEffect with its reason.
 *
 * What it guarantees is stated once in docs/guarantees.md ("Effects: executed at least once per claim, not across
 * an executor crash"): an adapter that throws is called again with the same effect, up to `maxAdapterAttempts`
 * times, so adapters must be idempotent on `effect.idempotency_key`; a reference it returned is recorded with
 * retries; `{ ok: false }` makes the effect FAILED, so return it only when the effect certainly did not happen.
 */
export async function runExecutor(opts: ExecutorOptions): Promise<ExecutorStats> {
  const { core, actor, adapters, signal } = opts;
  const log = opts.logger ?? silentLogger;
  const kinds = Object.keys(adapters).map((k, i) => v.kind(`adapters[${i}]`, k));
  if (kinds.length === 0) throw new Error('runExecutor needs at least one adapter');
  if (kinds.length > 64) throw new Error('runExecutor handles at most 64 kinds per process');
  const maxAttempts = opts.maxAdapterAttempts ?? 5;
  const retryDelayMs = opts.retryDelayMs ?? 200;
  const stats: ExecutorStats = { claimed: 0, executed: 0, failed: 0, abandoned: 0, errors: 0 };
  log.info({ fleet: actor.fleet, agentId: actor.agentId, kinds }, 'executor started');
  try {
    await runRounds(core.store, {
      signal,
      pollMs: opts.pollMs,
      round: async () => {
        // A read-only look first: an idle executor commits nothing, so it wakes no one (itself included).
        const effect = (await anyPending()) ? await claimEffect(core, actor, { kinds }) : null;
        if (!effect) return false;
        stats.claimed++;
        await execute(effect);
        return true;
      },
      onError: (err) => {
        stats.errors++;
        log.error({ err: errorText(err) }, 'claim failed; retrying');
      },
    });
  } finally {
    log.info({ fleet: actor.fleet, ...stats }, 'executor stopped');
  }
  return stats;

  async function anyPending(): Promise<boolean> {
    return readTx(core.store, actor.fleet, (tx) => anyPendingIn(tx, actor.fleet, kinds));
  }

  async function execute(effect: EffectRow): Promise<void> {
    const ctx = { effectId: effect.id, kind: effect.kind, idempotencyKey: effect.idempotency_key };
    const adapter = adapters[effect.kind]!;
    let result: Awaited<ReturnType<EffectAdapter>> | null = null;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      try {
        result = await adapter(effect, { signal });
        break;
      } catch (err) {
        log.warn({ ...ctx, attempt, err: errorText(err) }, 'effect adapter failed with an unknown outcome');
        if (attempt < maxAttempts) await pause(Math.random() * retryDelayMs * 2 ** attempt);
      }
    }
    if (!result) {
      stats.abandoned++;
      log.error(
        ctx,
        'effect left EXECUTING: the adapter never gave a definite outcome; an operator must complete or fail it',
      );
      return;
    }
    const ok = result.ok;
    if (ok) log.info({ ...ctx, ref: result.ref }, 'effect executed; recording');
    for (let attempt = 1; ; attempt++) {
      try {
        if (result.ok) await completeEffect(core, actor, { effectId: effect.id, externalRef: result.ref });
        else await failEffect(core, actor, { effectId: effect.id, reason: result.reason });
        if (ok) stats.executed++;
        else stats.failed++;
        return;
      } catch (err) {
        const domain = err instanceof DomainError;
        if (domain || (signal.aborted && attempt >= 3) || attempt >= 1000) {
          stats.errors++;
          log.error({ ...ctx, result, err: errorText(err) }, 'could not record the effect outcome; record it by hand');
          return;
        }
        await pause(Math.min(10_000, Math.random() * retryDelayMs * 2 ** Math.min(attempt, 10)));
      }
    }
  }
}
