import pino, { type Logger } from 'pino';
import { createAdjudicator } from '../adjudication/index';
import type { Adjudicator } from '../adjudication/adjudicator';
import { ensureBootstrap } from '../agent/agent.service';
import type { Core } from '../core';
import { createEmbedder } from '../embedding/index';
import type { Embedder } from '../embedding/embedder';
import { Waker } from '../event/tailer';
import { type Store, openStore, storeTarget } from '../store/engine';
import { bindEmbedder } from '../store/meta';
import { type Limits, type ServerConfig, configFromEnv } from './config';
import type { Drain } from './drain';
import { type LogSink, logSink } from './log-sink';
import { type Metrics, createMetrics } from './metrics/metrics';
import { type MetricsSettings, metricsSettingsFromEnv } from './metrics/settings';
import { startTracing } from './plugins/use-tracing';
import { readiness } from './readiness';
import type { Tracing } from './tracing-sdk';

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

/** What a server is built from, opened in order; `close` releases what `openParts` opened (not a store it was given). */
export interface Parts {
  config: ServerConfig;
  log: Logger;
  /** stderr's log sink, when the server logs there (no `logger` given). */
  sink: LogSink | null;
  tracing: Tracing | null;
  store: Store;
  core: Core;
  adjudicator: Adjudicator;
  waker: Waker;
  metrics: Metrics | null;
  close(): Promise<void>;
}

/**
 * The configuration (the environment's with `opts`' overrides), tracing, the logger, the embedder and
 * adjudicator, the store (migrated, its embedder bound, the bootstrap token's agent), the commit waker
 * and metrics. Every setting is read before the store opens, so a mistyped one is refused with nothing
 * opened; a failure after it closes what was opened.
 */
export async function openParts(opts: AppOptions, drain: Drain): Promise<Parts> {
  const env = configFromEnv();
  const config: ServerConfig = { ...env, ...opts.config, limits: { ...env.limits, ...opts.config?.limits } };
  const metricsSettings = { ...metricsSettingsFromEnv(), ...opts.metrics };
  // Tracing (OTEL_EXPORTER_OTLP_ENDPOINT) starts first, so the store's statements and the logger are traced; null when off.
  const tracing = await startTracing();
  // Never pino.destination(2): its exit-time flush spins forever on a pipe whose reader has gone (src/server/log-sink.ts).
  const sink = opts.logger ? null : logSink(2);
  const root = opts.logger ?? pino({ level: config.logLevel, base: { service: 'retract' } }, sink!);
  const log = tracing ? tracing.logger(root) : root;
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
  // retract_ready answers what GET /ready would, draining included.
  const metrics = metricsSettings.enabled
    ? createMetrics(store, metricsSettings, async () => (await readiness(store, drain.draining)).ready)
    : null;
  return {
    config,
    log,
    sink,
    tracing,
    store,
    core,
    adjudicator,
    waker,
    metrics,
    async close() {
      metrics?.close();
      if (!opts.store) await store.close();
      await tracing?.shutdown();
    },
  };
}
