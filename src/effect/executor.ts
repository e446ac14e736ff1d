import type { Actor, Core } from '../core';
import { DomainError } from '../errors/domain-error';
import { readTx } from '../store/tx';
import * as v from '../validation';
import { type WorkerLogger, commitWaker, errorText, pause, silentLogger } from '../worker/wake';
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

export interface ExecutorStats {
  claimed: number;
  executed: number;
  failed: number;
  /** Adapter kept throwing: left EXECUTING for an operator. */
  abandoned: number;
  errors: number;
}

/**
 * Executes PENDING effects until `signal` fires: claimEffect (FOR UPDATE SKIP LOCKED, supports re-checked) →
 * the kind's adapter → completeEffect with the adapter's reference, or failEffect with its reason.
 *
 * Guarantees, plainly:
 * - Adapter calls are AT LEAST ONCE per claim while this process lives: an adapter that throws (outcome unknown) is
 *   called again for the same effect, with the same idempotency key, up to `maxAdapterAttempts` times. Adapters must
 *   be idempotent on `effect.idempotency_key`; the effect is EXECUTED once, under the first recorded reference.
 * - A reference the adapter returned is recorded with retries until the store accepts it or the stop signal fires
 *   (then it is logged at error level with the effect id, so it can be recorded by hand).
 * - Not covered: if the process dies between claim and record, the effect stays EXECUTING (the core has no executor
 *   lease, so nothing re-claims it). Such an effect may or may not have happened; an operator resolves it with
 *   completeEffect or failEffect. A retraction that reaches it meanwhile marks it reached, and completeEffect records
 *   its reversal then.
 * - `{ ok: false }` makes the effect FAILED: only return it when the effect certainly did not happen.
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
  const waker = await commitWaker(core.store, signal);
  let errorStreak = 0;
  log.info({ fleet: actor.fleet, agentId: actor.agentId, kinds }, 'executor started');
  try {
    while (!signal.aborted) {
      let effect: EffectRow | null;
      try {
        // A read-only look first: an idle executor commits nothing, so it wakes no one (itself included).
        effect = (await anyPending()) ? await claimEffect(core, actor, { kinds }) : null;
        errorStreak = 0;
      } catch (err) {
        stats.errors++;
        errorStreak++;
        log.error({ err: errorText(err) }, 'claim failed; retrying');
        await pause(Math.min(30_000, opts.pollMs * 2 ** Math.min(errorStreak, 6)), signal);
        continue;
      }
      if (!effect) {
        await waker.wait(opts.pollMs);
        continue;
      }
      stats.claimed++;
      await execute(effect);
    }
  } finally {
    await waker.close();
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
      log.error(ctx, 'effect left EXECUTING: the adapter never gave a definite outcome; an operator must complete or fail it');
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
