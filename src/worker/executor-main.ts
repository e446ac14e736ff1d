import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { authenticate } from '../agent/agent.service';
import { LocalEmbedder } from '../embedding/local';
import * as v from '../validation';
import { ConfigError } from '../kernel/config-error';
import { intFromEnv } from './env';
import { type EffectAdapter, runExecutor } from '../effect/executor';
import { httpExecutorAdapter } from '../effect/http-executor';
import { exitWithMain, runWorkerProcess } from './process';
import { type WorkerLogger, errorText } from '../kernel/worker-logger';

/**
 * The effect executor as its own process (`retract worker executor`). Environment:
 * - DATABASE_URL (or RETRACT_DATA_DIR when nothing else has it open).
 * - RETRACT_EXECUTOR_TOKEN (required): the bearer token of the executing agent; it needs the `effects:execute` scope,
 *   and effects are claimed in its fleet.
 * - Adapters, one of:
 *   - RETRACT_EXECUTOR_URL + RETRACT_EXECUTOR_KINDS (comma-separated): each kind is POSTed to
 *     `<RETRACT_EXECUTOR_URL>/<kind>` under the effect's Idempotency-Key (src/effect/http-executor.ts);
 *     RETRACT_EXECUTOR_TIMEOUT_MS (default 10000).
 *   - RETRACT_EXECUTOR_MODULE: path of an ES module whose `adapters` export (or default export) is a
 *     `Record<kind, EffectAdapter>`.
 * - RETRACT_EXECUTOR_POLL_MS (default 1000), RETRACT_LOG_LEVEL (default info).
 * Logs JSON lines to stderr. SIGTERM/SIGINT stop it after the effect in hand (exit 0); bad configuration exits 2.
 */
export async function loadAdapters(env: Record<string, string | undefined>): Promise<Record<string, EffectAdapter>> {
  const modulePath = env['RETRACT_EXECUTOR_MODULE']?.trim();
  const url = env['RETRACT_EXECUTOR_URL']?.trim();
  if (modulePath && url) throw new ConfigError('set either RETRACT_EXECUTOR_MODULE or RETRACT_EXECUTOR_URL, not both');
  if (modulePath) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(path.resolve(modulePath)).href)) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`RETRACT_EXECUTOR_MODULE could not be loaded: ${errorText(err)}`);
    }
    const adapters = (mod['adapters'] ?? mod['default']) as Record<string, unknown> | undefined;
    if (!adapters || typeof adapters !== 'object')
      throw new ConfigError('RETRACT_EXECUTOR_MODULE must export `adapters` (or a default) mapping kinds to functions');
    for (const [k, fn] of Object.entries(adapters)) {
      if (typeof fn !== 'function')
        throw new ConfigError(`RETRACT_EXECUTOR_MODULE: adapter for kind ${JSON.stringify(k)} is not a function`);
    }
    return adapters as Record<string, EffectAdapter>;
  }
  if (!url)
    throw new ConfigError('RETRACT_EXECUTOR_URL (with RETRACT_EXECUTOR_KINDS) or RETRACT_EXECUTOR_MODULE is required');
  const kinds = (env['RETRACT_EXECUTOR_KINDS'] ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (kinds.length === 0)
    throw new ConfigError('RETRACT_EXECUTOR_KINDS must name the effect kinds to execute (comma-separated)');
  let adapter: EffectAdapter;
  try {
    adapter = httpExecutorAdapter({ baseUrl: url, timeoutMs: intFromEnv(env, 'RETRACT_EXECUTOR_TIMEOUT_MS', 10_000) });
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`RETRACT_EXECUTOR_URL: ${errorText(err)}`);
  }
  const out: Record<string, EffectAdapter> = {};
  for (const k of kinds) {
    try {
      out[v.kind('RETRACT_EXECUTOR_KINDS', k)] = adapter;
    } catch (err) {
      throw new ConfigError(errorText(err));
    }
  }
  return out;
}

/** Runs the executor until `signal` (default: SIGTERM/SIGINT); returns the exit status (0 clean, 2 config, 1 fatal). */
export function executorMain(
  env: Record<string, string | undefined> = process.env,
  opts: { signal?: AbortSignal; logger?: WorkerLogger } = {},
): Promise<number> {
  return runWorkerProcess('executor', env, opts, async ({ signal, log, openStore }) => {
    const token = env['RETRACT_EXECUTOR_TOKEN']?.trim();
    if (!token) throw new ConfigError("RETRACT_EXECUTOR_TOKEN is required: the executing agent's bearer token");
    const adapters = await loadAdapters(env);
    const pollMs = intFromEnv(env, 'RETRACT_EXECUTOR_POLL_MS', 1000);
    const store = await openStore();
    const agent = await authenticate(store, token);
    if (!agent) throw new ConfigError('RETRACT_EXECUTOR_TOKEN does not belong to any agent');
    if (!agent.scopes.includes('effects:execute'))
      throw new ConfigError(`agent ${agent.name} lacks the effects:execute scope`);
    log.info(
      { store: store.description, fleet: agent.fleet_id, agent: agent.name, kinds: Object.keys(adapters) },
      'executor process ready',
    );
    return runExecutor({
      core: { store, embedder: new LocalEmbedder() },
      actor: { fleet: agent.fleet_id, agentId: agent.id },
      adapters,
      pollMs,
      signal,
      logger: log,
    });
  });
}

exitWithMain(import.meta.url, () => executorMain());
