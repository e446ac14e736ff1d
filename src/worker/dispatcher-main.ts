import { LocalEmbedder } from '../embedding/local';
import { DEFAULT_RESEND_WINDOW_MS } from '../reversal/dispatch.service';
import { createProvider } from '../reversal/provider';
import type { DispatchItem } from '../reversal/dispatch.service';
import { type DispatcherHooks, type DispatcherStats, runDispatcher } from '../reversal/dispatcher';
import { ConfigError } from '../kernel/config-error';
import { defaultHolder, intFromEnv } from './env';
import { exitWithMain, runWorkerProcess } from './process';
import { type WorkerLogger, errorText } from '../kernel/worker-logger';

/**
 * The dispatcher as its own process (`retract worker dispatcher`). Environment:
 * - DATABASE_URL — PostgreSQL (required in practice: the embedded engine is single-process, so a separate dispatcher
 *   can only use RETRACT_DATA_DIR when nothing else has it open).
 * - RETRACT_PROVIDER_URL (required), RETRACT_PROVIDER_TIMEOUT_MS — the provider (src/reversal/provider).
 * - RETRACT_DISPATCH_LEASE_MS (default 60000): above the adapter's worst-case send (5 attempts × timeout + backoff).
 * - RETRACT_DISPATCH_BATCH (default 10), RETRACT_DISPATCH_POLL_MS (default 1000), RETRACT_DISPATCH_GRACE_MS
 *   (default 5000: how long in-flight sends may finish after SIGTERM).
 * - RETRACT_DISPATCH_RESEND_WINDOW_MS (default 6 h): no re-send after this long since the first dispatch; keep it well
 *   below the provider's idempotency-key retention (docs/guarantees.md).
 * - RETRACT_DISPATCH_HOLDER (default dispatcher@host:pid:random), RETRACT_LOG_LEVEL (default info).
 * - Test hook: RETRACT_DISPATCH_CRASH_AT=before-send|after-send|after-record with RETRACT_DISPATCH_CRASH_NTH (default
 *   1): the process SIGKILLs itself at that point on the Nth reversal it handles.
 * Logs JSON lines to stderr. SIGTERM/SIGINT stop it cleanly (exit 0); a bad configuration exits 2; a fatal error 1.
 */
export interface DispatcherMainConfig {
  leaseMs: number;
  batch: number;
  pollMs: number;
  graceMs: number;
  resendWindowMs: number;
  holder: string;
  crash: { at: CrashPoint; nth: number } | null;
}

export type CrashPoint = 'before-send' | 'after-send' | 'after-record';
const CRASH_POINTS: readonly CrashPoint[] = ['before-send', 'after-send', 'after-record'];

/** Reads and checks the dispatcher's settings; throws ConfigError naming the variable. */
export function dispatcherConfigFromEnv(env: Record<string, string | undefined>): DispatcherMainConfig {
  const leaseMs = intFromEnv(env, 'RETRACT_DISPATCH_LEASE_MS', 60_000, { min: 10, max: 24 * 3600 * 1000 });
  const resendWindowMs = intFromEnv(env, 'RETRACT_DISPATCH_RESEND_WINDOW_MS', DEFAULT_RESEND_WINDOW_MS, { min: 1000 });
  if (resendWindowMs <= 2 * leaseMs) {
    throw new ConfigError(
      `RETRACT_DISPATCH_RESEND_WINDOW_MS (${resendWindowMs}) must exceed twice RETRACT_DISPATCH_LEASE_MS (${leaseMs})`,
    );
  }
  const crashAt = env['RETRACT_DISPATCH_CRASH_AT']?.trim();
  if (crashAt && !(CRASH_POINTS as readonly string[]).includes(crashAt)) {
    throw new ConfigError(
      `RETRACT_DISPATCH_CRASH_AT must be one of ${CRASH_POINTS.join(', ')}, got ${JSON.stringify(crashAt.slice(0, 40))}`,
    );
  }
  return {
    leaseMs,
    batch: intFromEnv(env, 'RETRACT_DISPATCH_BATCH', 10, { max: 500 }),
    pollMs: intFromEnv(env, 'RETRACT_DISPATCH_POLL_MS', 1000),
    graceMs: intFromEnv(env, 'RETRACT_DISPATCH_GRACE_MS', 5000, { min: 0 }),
    resendWindowMs,
    holder: env['RETRACT_DISPATCH_HOLDER']?.trim() || defaultHolder('dispatcher'),
    crash: crashAt ? { at: crashAt as CrashPoint, nth: intFromEnv(env, 'RETRACT_DISPATCH_CRASH_NTH', 1) } : null,
  };
}

/** Hooks that SIGKILL this process at `at` on the `nth` reversal reaching that point (a crash-test aid). */
export function crashHooks(crash: { at: CrashPoint; nth: number }, log: WorkerLogger): DispatcherHooks {
  let seen = 0;
  const maybe = (point: CrashPoint, item: DispatchItem) => {
    if (point !== crash.at) return;
    seen++;
    if (seen !== crash.nth) return;
    log.warn(
      { point, reversalId: item.id, idempotencyKey: item.idempotencyKey, attempt: item.lease.attempt },
      'crash hook: SIGKILL',
    );
    process.kill(process.pid, 'SIGKILL');
    return new Promise<void>(() => {}); // never continue past the kill
  };
  return {
    beforeSend: (item) => maybe('before-send', item),
    afterSend: (item) => maybe('after-send', item),
    afterRecord: (item) => maybe('after-record', item),
  };
}

/**
 * Runs the dispatcher until `signal` (default: SIGTERM/SIGINT) and returns the exit status: 0 after a clean stop,
 * 2 for a configuration error, 1 for a fatal one.
 */
export function dispatcherMain(
  env: Record<string, string | undefined> = process.env,
  opts: { signal?: AbortSignal; logger?: WorkerLogger } = {},
): Promise<number> {
  return runWorkerProcess('dispatcher', env, opts, async ({ signal, log, openStore }) => {
    const cfg = dispatcherConfigFromEnv(env);
    let provider;
    try {
      provider = createProvider(env, { logger: log });
    } catch (err) {
      throw new ConfigError(errorText(err));
    }
    if (!provider) throw new ConfigError('RETRACT_PROVIDER_URL is not set: there is nowhere to send reversals');
    const store = await openStore({ poolSize: Math.min(50, cfg.batch + 2) });
    log.info({ store: store.description, holder: cfg.holder, crash: cfg.crash }, 'dispatcher process ready');
    const stats: DispatcherStats = await runDispatcher({
      core: { store, embedder: new LocalEmbedder() },
      provider,
      holder: cfg.holder,
      leaseMs: cfg.leaseMs,
      batch: cfg.batch,
      pollMs: cfg.pollMs,
      graceMs: cfg.graceMs,
      resendWindowMs: cfg.resendWindowMs,
      signal,
      logger: log,
      ...(cfg.crash ? { hooks: crashHooks(cfg.crash, log) } : {}),
    });
    return stats;
  });
}

exitWithMain(import.meta.url, () => dispatcherMain());
