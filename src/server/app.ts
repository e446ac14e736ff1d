import http from 'node:http';
import type { Logger } from 'pino';
import type { Core } from '../core';
import type { Store } from '../store/engine';
import { closeServer } from './close-server';
import { type ServerConfig, graphiqlOn } from './config';
import { Drain } from './drain';
import { corsPolicy, refuseClientErrors, timeoutOptions } from './edge';
import { type AppOptions, openParts } from './open-parts';
import { dashboardRoute } from './routes/dashboard';
import { graphiqlAssetsRoute } from './routes/graphiql-assets';
import { graphqlRoute } from './routes/graphql';
import { graphqlWsRoute } from './routes/graphql-ws';
import { healthRoute } from './routes/health';
import { mcpRoute } from './routes/mcp';
import { metricsRoute } from './routes/metrics';
import { providerCallbackRoute } from './routes/provider-callback';
import { readyRoute } from './routes/ready';
import { serveRoutes } from './serve-routes';
import { buildYoga } from './yoga';

export type { AppOptions };

export interface App {
  server: http.Server;
  store: Store;
  core: Core;
  log: Logger;
  /** The configuration in force (the environment's, with createApp's overrides). */
  config: ServerConfig;
  /** The bound address (after listen). */
  url(): string;
  listen(): Promise<void>;
  /**
   * Drains: /ready answers 503 and new work is refused; open subscriptions are sent `complete`; requests
   * in flight (their transactions) get until `graceMs` (default RETRACT_SHUTDOWN_TIMEOUT_MS) to finish,
   * then their connections are cut; then the database is closed and the data directory released.
   */
  close(graceMs?: number): Promise<void>;
  /** Waits (at most `timeoutMs`) for log lines still queued for stderr; never longer, whatever the reader does. */
  flushLogs(timeoutMs: number): Promise<void>;
}

/** Builds the whole server (database, GraphQL over HTTP/SSE/WebSocket, health, dashboard, provider callback) without listening. */
export async function createApp(opts: AppOptions = {}): Promise<App> {
  const drain = new Drain();
  const parts = await openParts(opts, drain);
  const { config, store, core, log, tracing, metrics } = parts;
  const yoga = buildYoga({
    ...parts,
    production: config.production,
    anonymousIntrospection: config.anonymousIntrospection,
    graphiql: graphiqlOn(config),
    limits: config.limits,
    firstPlugins: tracing ? [tracing.plugin] : [],
    plugins: metrics ? [metrics.plugin] : [],
  });
  // In order: the first route that matches answers; any other path is a coded 404.
  const routes = [
    healthRoute(store, drain),
    readyRoute(store, drain),
    ...(graphiqlOn(config) ? [graphiqlAssetsRoute] : []),
    ...(metrics ? [metricsRoute(metrics)] : []),
    dashboardRoute(config.dashboardDir),
    providerCallbackRoute(core, config.providerSecret, log),
    // Read-only receipts and the memory tools over MCP Streamable HTTP (src/mcp): its own auth and roles.
    mcpRoute({
      store,
      embedder: core.embedder,
      maxBodyBytes: config.maxBodyBytes,
      maxBatch: config.limits.mcpBatch,
      onUnexpected: (err, requestId, tool) => log.error({ err, requestId, tool }, 'mcp tool failed (masked)'),
    }),
    graphqlRoute(yoga, drain, config.maxBodyBytes),
  ];
  const handle = serveRoutes(routes, { cors: corsPolicy(config.corsOrigins), drain, log });
  const server = http.createServer(timeoutOptions(config.limits), tracing ? tracing.http(handle) : handle);
  server.keepAliveTimeout = 5_000;
  refuseClientErrors(server, log);
  // WebSocket subscriptions on /graphql, through the same envelop (auth, limits, masking).
  const subscriptions = graphqlWsRoute(server, { yoga, store, config, drain, log });
  return {
    server,
    store,
    core,
    log,
    config,
    url: () => addressOf(server),
    listen: () =>
      new Promise((resolve, reject) => server.once('error', reject).listen(config.port, config.host, resolve)),
    async close(graceMs = config.shutdownTimeoutMs) {
      const deadline = Date.now() + graceMs;
      drain.start(); // /ready answers 503 and new GraphQL work is refused; the server still listens, so probes see it
      await parts.waker.stop(); // every subscription's stream ends: graphql-ws sends `complete`, SSE `event: complete`
      await subscriptions.dispose(deadline);
      await drain.settled(deadline); // requests in flight (a mutation's transaction, an SSE stream's `complete`)
      await closeServer(server, deadline);
      await parts.close();
    },
    flushLogs: (timeoutMs) => parts.sink?.flush(timeoutMs) ?? Promise.resolve(),
  };
}

/** `http://host:port` of a listening server ('' before it listens). */
function addressOf(server: http.Server): string {
  const a = server.address();
  if (!a || typeof a === 'string') return '';
  return `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`;
}
