import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { ConfigError } from '../kernel/config-error';
import type { WorkerLogger } from '../kernel/worker-logger';

type Env = Record<string, string | undefined>;

/** A positive integer from the environment, or the default when unset/blank; ConfigError names the variable. */
export function intFromEnv(env: Env, name: string, dflt: number, opts: { min?: number; max?: number } = {}): number {
  const raw = env[name]?.trim();
  if (!raw) return dflt;
  const min = opts.min ?? 1;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw.slice(0, 40))}`);
  }
  return Number(raw);
}

/** host:pid:random — unique per process, readable in logs and on lease rows. */
export function defaultHolder(role: string): string {
  return `${role}@${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** JSON lines on stderr, written synchronously so a crash loses no line. Level from RETRACT_LOG_LEVEL (default info). */
export function stderrLogger(env: Env, component: string): WorkerLogger {
  const level = env['RETRACT_LOG_LEVEL']?.trim() || 'info';
  return pino(
    { level, base: { component, pid: process.pid } },
    pino.destination({ dest: 2, sync: true }),
  ) as unknown as WorkerLogger;
}

/** True when the module at `metaUrl` is the script node was started with. */
export function isMainModule(metaUrl: string): boolean {
  const entry = process.argv[1];
  return !!entry && pathToFileURL(path.resolve(entry)).href === metaUrl;
}

/**
 * Stops on the first SIGTERM/SIGINT (aborts the returned signal); a second one exits at once with 130.
 * Returns a function that removes the handlers.
 */
export function stopOnSignals(controller: AbortController, log: WorkerLogger): () => void {
  let seen = 0;
  const handler = (sig: NodeJS.Signals) => {
    seen++;
    if (seen > 1) {
      log.warn({ signal: sig }, 'second stop signal: exiting now');
      process.exit(130);
    }
    log.info({ signal: sig }, 'stop signal received: finishing in-flight work');
    controller.abort(new Error(`stopped by ${sig}`));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  return () => {
    process.off('SIGTERM', handler);
    process.off('SIGINT', handler);
  };
}
