import { type Store, openStoreFromEnv } from '../store/engine';
import { ConfigError } from '../kernel/config-error';
import { isMainModule, stderrLogger, stopOnSignals } from './env';
import { type WorkerLogger, errorText } from '../kernel/worker-logger';

type Env = Record<string, string | undefined>;

/** What a worker's body gets from its process: where to stop, where to log, and a store it need not close. */
export interface WorkerProcess {
  signal: AbortSignal;
  log: WorkerLogger;
  /** Opens the configured store once; the process closes it when the body returns or throws. */
  openStore(opts?: { poolSize?: number }): Promise<Store>;
}

/**
 * The one lifecycle of a worker process: stop on `opts.signal` (default SIGTERM/SIGINT), run the
 * body, close the store, and answer the exit status — 0 after a clean stop, 2 for a ConfigError
 * (a configuration mistake, logged as one line), 1 for anything else.
 */
export async function runWorkerProcess(
  role: string,
  env: Env,
  opts: { signal?: AbortSignal; logger?: WorkerLogger },
  body: (p: WorkerProcess) => Promise<unknown>,
): Promise<number> {
  const log = opts.logger ?? stderrLogger(env, role);
  const controller = new AbortController();
  let unhook = () => {};
  if (opts.signal) {
    if (opts.signal.aborted) controller.abort(opts.signal.reason);
    else opts.signal.addEventListener('abort', () => controller.abort(opts.signal!.reason), { once: true });
  }
  let store: Store | null = null;
  try {
    const stats = await body({
      signal: controller.signal,
      log,
      async openStore(o = {}) {
        // Signals are hooked once configuration has been read: a bad setting exits before.
        if (!opts.signal) unhook = stopOnSignals(controller, log);
        store = await openStoreFromEnv(env, o);
        return store;
      },
    });
    log.info({ stats }, `${role} process exiting`);
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      log.error({ err: err.message }, `${role} configuration error`);
      return 2;
    }
    log.error({ err: errorText(err) }, `${role} failed`);
    return 1;
  } finally {
    unhook();
    await (store as Store | null)?.close().catch(() => {});
  }
}

/** Runs `main` and exits with its status when the module at `metaUrl` is the script node was started with. */
export function exitWithMain(metaUrl: string, main: () => Promise<number>): void {
  if (!isMainModule(metaUrl)) return;
  main().then(
    (code) => process.exit(code),
    () => process.exit(1),
  );
}
