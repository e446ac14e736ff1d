import { ConfigError } from '../kernel/config-error';
import { DataDirLockedError } from '../store/lock';
import { type App, createApp } from './app';

/**
 * Failures an operator fixes by reading one line (the data directory held by another process, a
 * port in use, a bad setting), as opposed to faults whose stack a developer needs.
 */
function startupRefusal(e: unknown): string | null {
  if (e instanceof DataDirLockedError || e instanceof ConfigError) return e.message;
  const err = e as NodeJS.ErrnoException & { port?: number; address?: string };
  if (err?.code === 'EADDRINUSE') return `port ${err.port} on ${err.address} is in use by another process; set PORT to a free port (0 picks one)`;
  if (err?.code === 'EACCES' && err.syscall === 'listen') return `not permitted to listen on port ${err.port}; set PORT to one above 1023`;
  return null;
}

/** `npm start`: serve until SIGTERM/SIGINT, then drain and release the store. */
let app: App | undefined;
try {
  app = await createApp();
  await app.listen();
} catch (e) {
  const refusal = startupRefusal(e);
  if (!refusal) throw e;
  await app?.close().catch(() => {});
  process.stderr.write(`retract: ${refusal}\n`);
  process.exit(1);
}
const served = app;
served.log.info({ url: `${served.url()}/graphql`, engine: served.store.engine, store: served.store.description }, 'RETRACT serving');
let stopping = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    served.log.info({ signal: sig }, 'draining');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await served.close();
    served.log.info('stopped');
    process.exit(0);
  });
}
