import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { type ExecutionArgs, GraphQLError, getOperationAST } from 'graphql';
import pino, { type Logger } from 'pino';
import type { OperationResult } from 'graphql-ws';
import { WebSocketServer } from 'ws';
import { createAdjudicator } from '../adjudication/index';
import type { Adjudicator } from '../adjudication/adjudicator';
import { authenticate, ensureBootstrap } from '../agent/agent.service';
import type { Core } from '../core';
import { createEmbedder } from '../embedding/index';
import type { Embedder } from '../embedding/embedder';
import { Waker } from '../event/tailer';
import { createMcpHttpHandler, readBody } from '../mcp/http';
import { type Store, answers, openStore, storeTarget } from '../store/engine';
import { bindEmbedder } from '../store/meta';
import { type Limits, type ServerConfig, configFromEnv, graphiqlOn } from './config';
import {
  DASHBOARD_HEADERS,
  callbackBody,
  corsPolicy,
  normaliseMediaTypes,
  notFound,
  refusalBody,
  refuseClientErrors,
  timeoutOptions,
} from './edge';
import { GRAPHIQL_ASSETS, serveGraphiqlAsset } from './graphiql';
import { answerPost } from './graphql-post';
import { logSink } from './log-sink';
import { readiness } from './readiness';
import { type Metrics, createMetrics } from './metrics/metrics';
import { type MetricsSettings, metricsSettingsFromEnv } from './metrics/settings';
import { startTracing } from './use-tracing';
import { refusedBeforeExecution, serveGraphqlWs, wireErrors } from './ws';
import { UnauthenticatedSockets, wsConnect } from './ws-auth';

/** An operation onSubscribe already ran, carried to graphql-ws's execute/subscribe. */
interface Ran {
  result: OperationResult;
}
import { buildYoga, isGraphQLError } from './yoga';

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

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.ico': 'image/x-icon',
  '.map': 'application/json',
};

function json(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export interface AppOptions {
  /** Overrides of the environment's configuration; `limits` are merged limit by limit. */
  config?: Partial<Omit<ServerConfig, 'limits'>> & { limits?: Partial<Limits> };
  store?: Store;
  embedder?: Embedder;
  adjudicator?: Adjudicator;
  logger?: Logger;
  /** Overrides of the environment's GET /metrics settings (src/server/metrics/settings.ts). */
  metrics?: Partial<MetricsSettings>;
}

/** Builds the whole server (database, GraphQL over HTTP/SSE/WebSocket, health, dashboard, provider callback) without listening. */
export async function createApp(opts: AppOptions = {}): Promise<App> {
  const env = configFromEnv();
  const config: ServerConfig = { ...env, ...opts.config, limits: { ...env.limits, ...opts.config?.limits } };
  const metricsSettings = { ...metricsSettingsFromEnv(), ...opts.metrics };
  // Tracing (OTEL_EXPORTER_OTLP_ENDPOINT) starts first, so the store's statements and the logger are traced; null when off.
  const tracing = await startTracing();
  // Never pino.destination(2): its exit-time flush spins forever on a pipe whose reader has gone (src/server/log-sink.ts).
  const sink = opts.logger ? null : logSink(2);
  const root = opts.logger ?? pino({ level: config.logLevel, base: { service: 'retract' } }, sink!);
  const log = tracing ? tracing.logger(root) : root;
  // Every setting is read before the store opens: a mistyped one is refused with nothing opened.
  const embedder = opts.embedder ?? (await createEmbedder());
  const adjudicator = opts.adjudicator ?? (await createAdjudicator());
  const store =
    opts.store ??
    (await openStore({
      ...storeTarget(config.engine, config.databaseUrl, config.dataDir),
      onQuery: tracing?.onQuery,
    }).catch(async (e) => {
      await tracing?.shutdown();
      throw e;
    }));
  const core: Core = { store, embedder };
  try {
    await bindEmbedder(store, core.embedder);
  } catch (e) {
    if (!opts.store) await store.close();
    throw e;
  }
  if (config.bootstrapToken) await ensureBootstrap(store, config.bootstrapToken);
  const waker = new Waker(store);
  await waker.start();
  const metrics: Metrics | null = metricsSettings.enabled
    ? createMetrics(store, metricsSettings, async () => (await readiness(store, draining)).ready)
    : null;
  const yoga = buildYoga({
    core,
    adjudicator,
    waker,
    log,
    production: config.production,
    anonymousIntrospection: config.anonymousIntrospection,
    graphiql: graphiqlOn(config),
    limits: config.limits,
    firstPlugins: tracing ? [tracing.plugin] : [],
    plugins: metrics ? [metrics.plugin] : [],
  });
  const dashboardDir = path.resolve(config.dashboardDir);
  // Read-only receipts over MCP Streamable HTTP (src/mcp): its own auth, reader role, read-only transactions.
  const mcp = createMcpHttpHandler({
    store,
    embedder: core.embedder,
    maxBodyBytes: config.maxBodyBytes,
    maxBatch: config.limits.mcpBatch,
    onUnexpected: (err, requestId, tool) => log.error({ err, requestId, tool }, 'mcp tool failed (masked)'),
  });
  const cors = corsPolicy(config.corsOrigins);
  let draining = false;
  /** Requests being answered (probes aside): a stop waits for them while it still listens, so /ready can say it is draining. */
  let inFlight = 0;

  const handle: http.RequestListener = async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/health' && url.pathname !== '/ready' && url.pathname !== '/metrics') {
      inFlight++;
      res.once('close', () => inFlight--);
    }
    try {
      normaliseMediaTypes(req.headers);
      if (req.method === 'OPTIONS') return cors.preflight(req, res);
      for (const [k, v] of Object.entries(cors.headers(req.headers.origin))) res.setHeader(k, v);
      if (url.pathname === '/health') {
        if (draining) return json(res, 503, { status: 'draining' });
        const ok = await Promise.race([
          answers(store.db),
          new Promise<boolean>((r) => setTimeout(() => r(false), 2000)),
        ]);
        return json(res, ok ? 200 : 503, {
          status: ok ? 'ok' : 'database unavailable',
          engine: store.engine,
          migrated: true,
        });
      }
      if (url.pathname === '/ready') {
        const r = await readiness(store, draining);
        return json(res, r.ready ? 200 : 503, r.body);
      }
      if (graphiqlOn(config) && url.pathname.startsWith(GRAPHIQL_ASSETS))
        return await serveGraphiqlAsset(url.pathname, req, res);
      if (url.pathname === '/metrics' && metrics) return await metrics.serve(req, res);
      if (url.pathname === '/dashboard' || url.pathname.startsWith('/dashboard/'))
        return serveDashboard(url.pathname, res);
      if (url.pathname === '/providers/callback' && req.method === 'POST') {
        const body = await readBody(req, 65_536);
        if (!body) return json(res, 413, callbackBody(413, { error: 'body too large' }));
        if (!config.providerSecret)
          return json(
            res,
            404,
            callbackBody(404, { error: 'provider callbacks are not configured (RETRACT_PROVIDER_SECRET)' }),
          );
        // Loaded here: its body validation brings zod, which a server without providers never needs.
        const { SIGNATURE_HEADER, handleProviderCallback } = await import('../reversal/callback');
        const r = await handleProviderCallback({
          core,
          secret: config.providerSecret,
          rawBody: body,
          signatureHeader: req.headers[SIGNATURE_HEADER],
          logger: log,
        });
        return json(res, r.status, callbackBody(r.status, r.body));
      }
      if (url.pathname === '/mcp') return await mcp(req, res);
      if (url.pathname !== '/graphql') return json(res, 404, notFound());
      if (draining)
        return json(res, 503, {
          errors: [{ message: 'server is shutting down', extensions: { code: 'UNAVAILABLE' } }],
        });
      let body: Buffer | undefined;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        const b = await readBody(req, config.maxBodyBytes);
        if (!b) {
          return json(res, 413, {
            errors: [
              {
                message: 'the request body is too large; send a smaller request',
                extensions: { code: 'BAD_USER_INPUT' },
              },
            ],
          });
        }
        body = b;
        const type = String(req.headers['content-type'] ?? '')
          .split(';')[0]!
          .trim()
          .toLowerCase();
        if (type !== 'application/json' && type !== 'application/graphql-response+json') {
          return json(res, 415, {
            errors: [{ message: 'content-type must be application/json', extensions: { code: 'BAD_USER_INPUT' } }],
          });
        }
        if (/^\s*\[\s*\]\s*$/.test(body.toString('utf8', 0, Math.min(body.length, 64))) && body.length < 64) {
          return json(res, 400, {
            errors: [{ message: 'an empty batch is not a request', extensions: { code: 'BAD_USER_INPUT' } }],
          });
        }
        // A single operation in JSON: the same envelop without Yoga's fetch-API request pipeline (src/server/graphql-post.ts).
        const answer =
          req.method === 'POST' && type === 'application/json' ? await answerPost(yoga, req.headers, b) : null;
        if (answer) {
          res.writeHead(answer.status, { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)) });
          return res.end(answer.body);
        }
      }
      const request = new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: body && body.length > 0 ? new Uint8Array(body) : undefined,
      });
      const response = await yoga.fetch(request, {});
      const headers: Record<string, string> = {};
      response.headers.forEach((v, k) => (headers[k] = v));
      if (response.status >= 400 && !headers['content-type']) {
        const text = await response.text();
        const body = text || refusalBody(response.status);
        res.writeHead(response.status, {
          ...headers,
          'content-type': text ? 'text/plain; charset=utf-8' : 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        });
        return res.end(body);
      }
      if (req.method !== 'HEAD' && /^application\/(graphql-response\+)?json\b/i.test(headers['content-type'] ?? '')) {
        // A single result: one write with its length (not chunked), so one syscall per answer.
        const buf = Buffer.from(await response.arrayBuffer());
        res.writeHead(response.status, { ...headers, 'content-length': String(buf.length) });
        return res.end(buf);
      }
      res.writeHead(response.status, headers);
      if (!response.body) return res.end();
      // Stream the body (SSE stays open); stop reading when the client goes away.
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      res.on('close', () => void reader.cancel().catch(() => {}));
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (!res.write(value)) await new Promise((r) => res.once('drain', r));
        }
      } catch {
        /* client went away or the stream failed */
      }
      res.end();
    } catch (e) {
      // A client that went away mid-request (or was timed out) needs no answer and is not a server fault.
      if (req.destroyed && !res.headersSent) return void log.debug({ err: e }, 'client went away');
      log.error({ err: e }, 'request failed');
      if (!res.headersSent)
        json(res, 500, { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
      else res.end();
    }
  };
  const server = http.createServer(timeoutOptions(config.limits), tracing ? tracing.http(handle) : handle);
  server.keepAliveTimeout = 5_000;
  refuseClientErrors(server, log);

  function serveDashboard(p: string, res: http.ServerResponse) {
    let rel = p.replace(/^\/dashboard\/?/, '');
    if (rel === '') rel = 'index.html';
    const file = path.resolve(dashboardDir, rel);
    if (!file.startsWith(dashboardDir + path.sep)) return json(res, 404, notFound());
    fs.readFile(file, (err, data) => {
      if (err) {
        if (rel === 'index.html') return json(res, 404, notFound('the dashboard is not built: run npm run build'));
        return json(res, 404, notFound());
      }
      res.writeHead(200, {
        ...DASHBOARD_HEADERS,
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'cache-control': rel === 'index.html' ? 'no-cache' : 'max-age=3600',
      });
      res.end(data);
    });
  }

  // WebSocket subscriptions on the same path, through the same envelop (auth, limits, masking).
  const unauthenticated = new UnauthenticatedSockets(config.limits.wsUnauthenticatedPerAddress);
  const wss = new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: config.maxBodyBytes,
    verifyClient: unauthenticated.verifyClient,
  });
  const wsCleanup = serveGraphqlWs(
    {
      connectionInitWaitTimeout: config.limits.wsInitTimeoutMs,
      onConnect: wsConnect((token) => authenticate(store, token), config.wsAnonymous),
      // onSubscribe has already run the operation (to answer a refusal with an `error` message); this hands its result on.
      execute: (args) => (args as unknown as { rootValue: Ran }).rootValue.result,
      subscribe: (args) => (args as unknown as { rootValue: Ran }).rootValue.result,
      onSubscribe: async (ctx, _id, params) => {
        if (draining)
          return wireErrors([new GraphQLError('server is shutting down', { extensions: { code: 'UNAVAILABLE' } })]);
        const env = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          connectionParams: { authorization: ctx.extra.authorization },
        });
        // A syntax error, or a limit graphql-armor enforces by throwing, refuses this operation alone;
        // thrown out of onSubscribe it would close the whole socket (4500) with every other subscription on it.
        let document: ReturnType<typeof env.parse>;
        let errors: readonly GraphQLError[];
        try {
          document = env.parse(params.query);
          errors = env.validate(env.schema, document);
        } catch (e) {
          if (isGraphQLError(e)) return wireErrors([e]);
          throw e;
        }
        if (errors.length) return wireErrors(errors);
        const contextValue = await env.contextFactory();
        const args = {
          schema: env.schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue,
        };
        // Run here rather than in graphql-ws's execute/subscribe: only onSubscribe can answer with an `error` message.
        const operation = getOperationAST(document, params.operationName)?.operation;
        const result = await (operation === 'subscription'
          ? env.subscribe(args as ExecutionArgs)
          : env.execute(args as ExecutionArgs));
        const refused = refusedBeforeExecution(result);
        if (refused) return wireErrors(refused);
        return { ...args, rootValue: { result: result as OperationResult } satisfies Ran };
      },
    },
    wss,
    log,
    unauthenticated,
  );

  const app: App = {
    server,
    store,
    core,
    log,
    url() {
      const a = server.address();
      if (!a || typeof a === 'string') return '';
      return `http://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`;
    },
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => resolve());
      }),
    config,
    async close(graceMs = config.shutdownTimeoutMs) {
      const deadline = Date.now() + graceMs;
      const until = async (done: () => boolean) => {
        while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      };
      // From here /ready answers 503 and new GraphQL work is refused; the server still listens, so probes see it.
      draining = true;
      // Every subscription's stream ends, so graphql-ws sends `complete` and SSE `event: complete`.
      await waker.stop();
      await wsCleanup.dispose(deadline);
      wss.close();
      // Requests in flight (a mutation's transaction, an SSE stream sending its `complete`) finish.
      await until(() => inFlight === 0);
      await new Promise<void>((r) => {
        server.close(() => r());
        // Keep-alive connections (a probe's) close as they fall idle; at the deadline whatever is left is cut.
        const idle = setInterval(() => server.closeIdleConnections(), 50);
        idle.unref();
        server.once('close', () => clearInterval(idle));
        setTimeout(() => server.closeAllConnections(), Math.max(0, deadline - Date.now())).unref();
      });
      metrics?.close();
      if (!opts.store) await store.close();
      await tracing?.shutdown();
    },
    flushLogs: (timeoutMs) => sink?.flush(timeoutMs) ?? Promise.resolve(),
  };
  return app;
}
