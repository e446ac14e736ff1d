import { count } from '../kernel/count';
import { CliError, type StoreFlags, envWith, withSpinner } from './common';

/**
 * The CLI's commands that open a store or run a service. Each resolves with the process exit
 * status or throws CliError; heavy modules are imported here, lazily, so `--help` stays fast.
 */

/** Turns the store's expected opening failures into one-line CliErrors. */
async function openFromFlags(flags: StoreFlags, opts: { migrate?: boolean } = {}) {
  const { openStoreFromEnv } = await import('../store/engine');
  const { DataDirLockedError } = await import('../store/lock');
  try {
    return await openStoreFromEnv(envWith(flags), { migrate: opts.migrate ?? true, poolSize: 2 });
  } catch (e) {
    if (e instanceof DataDirLockedError) throw new CliError(e.message);
    throw new CliError(`cannot open the store: ${(e as Error).message}`);
  }
}

/** `retract migrate`: applies every pending migration; says which, or that the store is up to date. */
export async function migrate(flags: StoreFlags): Promise<number> {
  const { migrateToLatest } = await import('../store/migrate');
  const { migrations } = await import('../../db/migrations/index');
  const store = await openFromFlags(flags, { migrate: false });
  try {
    const applied = await withSpinner(
      `migrating ${store.description}`,
      async () => {
        try {
          return await migrateToLatest(store.db);
        } catch (e) {
          throw new CliError((e as Error).message);
        }
      },
      (r) => `migrated ${store.description}`,
    );
    const total = Object.keys(migrations).length;
    process.stdout.write(
      applied.length > 0
        ? `migrated ${store.description}: applied ${applied.join(', ')} (${count(total, 'migration')} in all)\n`
        : `${store.description} is up to date (${count(total, 'migration')} applied)\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}

/** `retract agent create`: creates an agent and prints its token once (stdout), the rest on stderr. */
export async function agentCreate(
  opts: StoreFlags & { name: string; scopes: string; fleet?: string; json?: boolean },
): Promise<number> {
  const { createAgentDirect } = await import('../agent/agent.service');
  const { DomainError } = await import('../errors/domain-error');
  const scopes = opts.scopes
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (scopes.length === 0) throw new CliError('--scopes must name at least one scope (comma-separated)', 2);
  const store = await openFromFlags(opts);
  try {
    const { agent, token } = await createAgentDirect(store, {
      name: opts.name,
      scopes,
      ...(opts.fleet ? { fleet: opts.fleet } : {}),
    });
    if (opts.json) {
      process.stdout.write(
        `${JSON.stringify({ agent: { id: agent.id, name: agent.name, fleet: agent.fleet_id, scopes: agent.scopes }, token })}\n`,
      );
    } else {
      process.stderr.write(
        `created agent ${agent.name} (id ${agent.id}) in fleet ${agent.fleet_id}; scopes: ${agent.scopes.join(', ')}\n`,
      );
      process.stdout.write(`${token}\n`);
      process.stderr.write(
        'Keep this token now: it is shown once, and the store keeps only its hash. Send it as "Authorization: Bearer <token>".\n',
      );
    }
    return 0;
  } catch (e) {
    if (e instanceof DomainError) throw new CliError(e.message, 2);
    throw e;
  } finally {
    await store.close();
  }
}

/** `retract serve`: the server of `npm start` (src/server/main.ts), with --port/--host applied to its environment. */
export async function serve(opts: { port?: number; host?: string } & StoreFlags): Promise<void> {
  if (opts.databaseUrl) process.env.DATABASE_URL = opts.databaseUrl;
  if (opts.dataDir) {
    process.env.RETRACT_DATA_DIR = opts.dataDir;
    if (!opts.databaseUrl) delete process.env.DATABASE_URL;
  }
  if (opts.port !== undefined) process.env.PORT = String(opts.port);
  if (opts.host) process.env.HOST = opts.host;
  const { DataDirLockedError } = await import('../store/lock');
  try {
    await import('../server/main');
  } catch (e) {
    if (e instanceof DataDirLockedError) throw new CliError(e.message);
    throw new CliError(`the server did not start: ${(e as Error).message}`);
  }
  // main.ts keeps serving and exits on SIGTERM/SIGINT itself.
}

/** `retract mcp`: the MCP tools (memory and receipts, as RETRACT_TOKEN's scopes open them) over stdio (default) or Streamable HTTP (--http PORT). */
export async function mcp(opts: { http?: number; host?: string } & StoreFlags): Promise<number> {
  const { McpStartError, runHttp, runStdio } = await import('../mcp/main');
  const env = envWith(opts);
  try {
    return opts.http !== undefined
      ? await runHttp(opts.http, opts.host ?? env.HOST ?? '127.0.0.1', env)
      : await runStdio(env);
  } catch (e) {
    if (e instanceof McpStartError) throw new CliError(e.message, e.exitCode);
    throw e;
  }
}

/** `retract worker executor|dispatcher`: the worker processes of src/worker, exit status passed through. */
export async function worker(role: 'executor' | 'dispatcher'): Promise<number> {
  if (role === 'executor') {
    const { executorMain } = await import('../worker/executor-main');
    return executorMain();
  }
  const { dispatcherMain } = await import('../worker/dispatcher-main');
  return dispatcherMain();
}
