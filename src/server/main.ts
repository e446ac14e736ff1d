import { createApp } from './app';

/** `npm start`: serve until SIGTERM/SIGINT, then drain and release the store. */
const app = await createApp();
await app.listen();
app.log.info({ url: `${app.url()}/graphql`, engine: app.store.engine, store: app.store.description }, 'RETRACT serving');
let stopping = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, async () => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal: sig }, 'draining');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    await app.close();
    app.log.info('stopped');
    process.exit(0);
  });
}
