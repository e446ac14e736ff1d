import { ConfigError } from '../kernel/config-error';
import { DataDirLockedError } from '../store/lock';
import { announce } from './announce';
import { type App, createApp } from './app';

/**
 * Failures an operator fixes by reading one line (the data directory held by another process, a
 * port in use, a bad setting), as opposed to faults whose stack a developer needs.
 */
function startupRefusal(e: unknown): string | null {
  if (e instanceof DataDirLockedError || e instanceof ConfigError) return e.message;
  const err = e as NodeJS.ErrnoException & { port?: number; address?: string };
  if (err?.code === 'EADDRINUSE')
    return `port ${err.port} on ${err.address} is in use by another process; set PORT to a free port (0 picks one)`;
  if (err?.code === 'EACCES' && err.syscall === 'listen')
    return `not permitted to listen on port ${err.port}; set PORT to one above 1023`;
  return null;
}

/** How much longer than RETRACT_SHUTDOWN_TIMEOUT_MS the store's close and the last log lines may take before the process exits anyway. */
const CLOSE_MARGIN_MS = 2_000;

/**
 * `npm start` (and `retract serve`): serve until SIGTERM or SIGINT, then drain (src/server/app.ts close)
 * and exit 0; a stop that overruns RETRACT_SHUTDOWN_TIMEOUT_MS by CLOSE_MARGIN_MS exits 1. Nothing on the
 * way out waits on stderr's reader (src/server/log-sink.ts). A repeated signal changes nothing: npm
 * forwards the terminal's Ctrl-C, so the server gets SIGINT twice.
 */
let app: App | undefined;
try {
  app = await createApp();
  await app.listen();
} catch (e) {
  const refusal = startupRefusal(e);
  if (!refusal) throw e;
  await app?.close(0).catch(() => {});
  process.stderr.write(`retract: ${refusal}\n`);
  process.exit(1);
}
const served = app;

async function stop(signal: NodeJS.Signals): Promise<never> {
  const timeoutMs = served.config.shutdownTimeoutMs;
  served.log.info({ signal, timeoutMs }, 'draining');
  const force = setTimeout(() => {
    served.log.error({ timeoutMs }, 'did not stop in time; exiting');
    void served.flushLogs(200).then(() => process.exit(1));
  }, timeoutMs + CLOSE_MARGIN_MS);
  force.unref();
  let code = 0;
  try {
    await served.close(timeoutMs);
    served.log.info('stopped');
  } catch (err) {
    served.log.error({ err }, 'stopping failed');
    code = 1;
  }
  await served.flushLogs(1_000);
  process.exit(code);
}

let stopping = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    void stop(sig);
  });
}
// Announced only once a stop signal is handled: a supervisor (or a test) that signals as soon as it reads the
// start-up line must get the drain, not the default exit by signal.
announce(served);
