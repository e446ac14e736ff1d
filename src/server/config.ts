import { onOff } from '../kernel/choice';
import { ConfigError } from '../kernel/config-error';
import { type EngineName, namedEngine } from '../store/engine';

/** Limits on what one client may ask of the server. Each has an environment variable (README, configuration). */
export interface Limits {
  /** Query depth (graphql-armor). */
  depth: number;
  /** Aliases in one operation. */
  aliases: number;
  /** Estimated cost of one operation (src/server/cost.ts). */
  cost: number;
  /** Lexical tokens in one document. */
  tokens: number;
  /** Directives in one operation. */
  directives: number;
  /** Operations in one batched GraphQL request. */
  batch: number;
  /** Open subscriptions (graphql-ws and SSE together) per token. */
  subscriptionsPerToken: number;
  /** JSON-RPC messages in one MCP batch. */
  mcpBatch: number;
  /** Time a client has to send a request's headers, in ms (408 after it). */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, headers and body, in ms (408 after it). */
  requestTimeoutMs: number;
  /** Time a WebSocket has to send `connection_init` after the upgrade, in ms (closed 4408 after it). */
  wsInitTimeoutMs: number;
  /** WebSockets one address may hold open before authenticating (or anonymously); the upgrade is refused 429 above it. */
  wsUnauthenticatedPerAddress: number;
}

/**
 * The defaults. Cost counts every list at its size (a page at its `first`, a list without one at its bound:
 * src/api/list-bounds.ts), so the limit is about the worst case an operation could answer. 2M admits the four
 * root connections at `first: 500` with every scalar field of their nodes in one query, a page of 500 effects
 * with their supports (≈ 250k), or one belief with its justifications' premises and its effects' supports
 * (≈ 290k); it refuses a connection nested in a 500-item page at `first: 500` (≈ 10.9M) and relation lists
 * nested two deep (a belief's effects' supports' effects' supports: ≈ 180M).
 */
export const DEFAULT_LIMITS: Limits = {
  depth: 14,
  aliases: 15,
  cost: 2_000_000,
  tokens: 3_000,
  directives: 20,
  batch: 5,
  subscriptionsPerToken: 100,
  mcpBatch: 5,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  wsInitTimeoutMs: 3_000,
  wsUnauthenticatedPerAddress: 100,
};

const LIMIT_ENV: Record<keyof Limits, string> = {
  depth: 'RETRACT_MAX_DEPTH',
  aliases: 'RETRACT_MAX_ALIASES',
  cost: 'RETRACT_MAX_COST',
  tokens: 'RETRACT_MAX_TOKENS',
  directives: 'RETRACT_MAX_DIRECTIVES',
  batch: 'RETRACT_MAX_BATCH',
  subscriptionsPerToken: 'RETRACT_MAX_SUBSCRIPTIONS_PER_TOKEN',
  mcpBatch: 'RETRACT_MCP_MAX_BATCH',
  headersTimeoutMs: 'RETRACT_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'RETRACT_REQUEST_TIMEOUT_MS',
  wsInitTimeoutMs: 'RETRACT_WS_INIT_TIMEOUT_MS',
  wsUnauthenticatedPerAddress: 'RETRACT_WS_MAX_UNAUTHENTICATED_PER_ADDRESS',
};

/** Server configuration, from the environment. */
export interface ServerConfig {
  port: number;
  host: string;
  /** RETRACT_ENGINE: the engine named outright; null: found from DATABASE_URL. */
  engine: EngineName | null;
  databaseUrl: string | null;
  dataDir: string;
  bootstrapToken: string | null;
  logLevel: string;
  production: boolean;
  maxBodyBytes: number;
  providerSecret: string | null;
  dashboardDir: string;
  /** Origins a browser may call the API from (exact `scheme://host[:port]`, or `*`); none by default. */
  corsOrigins: string[];
  /** RETRACT_WS_ANONYMOUS: WebSocket connections without a token are acknowledged (a bad token never is); off by default. */
  wsAnonymous: boolean;
  /** RETRACT_ANONYMOUS_INTROSPECTION: introspection without a token; null (unset): on in development, off in production. */
  anonymousIntrospection: boolean | null;
  /** RETRACT_GRAPHIQL: GraphiQL at GET /graphql, its assets served by the server; null (unset): on outside production (graphiqlOn). */
  graphiql: boolean | null;
  /** RETRACT_SHUTDOWN_TIMEOUT_MS: how long SIGTERM/SIGINT lets requests and subscriptions finish before cutting them. */
  shutdownTimeoutMs: number;
  limits: Limits;
}

/** A yes/no setting: `true`/`false` (or `1`/`0`); anything else is refused in one line. */
function positiveInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${name} must be a positive integer (got ${raw})`);
  return n;
}

/** Whether GraphiQL is served: as RETRACT_GRAPHIQL says, else outside production only. */
export function graphiqlOn(config: Pick<ServerConfig, 'graphiql' | 'production'>): boolean {
  return config.graphiql ?? !config.production;
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const port = Number(env.PORT ?? 4000);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`PORT must be a port number (got ${env.PORT})`);
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(LIMIT_ENV) as Array<keyof Limits>)
    limits[key] = positiveInt(env, LIMIT_ENV[key], DEFAULT_LIMITS[key]);
  const bootstrapToken = env.RETRACT_BOOTSTRAP_TOKEN || null;
  // Checked here as well as where it is used, so a short one is refused before the store opens.
  if (bootstrapToken && bootstrapToken.length < 16)
    throw new ConfigError('RETRACT_BOOTSTRAP_TOKEN must be at least 16 characters');
  return {
    port,
    host: env.HOST ?? '127.0.0.1',
    engine: namedEngine(env.RETRACT_ENGINE),
    databaseUrl: env.DATABASE_URL || null,
    dataDir: env.RETRACT_DATA_DIR ?? './.retract',
    bootstrapToken,
    logLevel: env.LOG_LEVEL ?? env.RETRACT_LOG_LEVEL ?? 'info',
    production: env.NODE_ENV === 'production',
    maxBodyBytes: positiveInt(env, 'RETRACT_MAX_BODY_BYTES', 1_048_576),
    providerSecret: env.RETRACT_PROVIDER_SECRET || null,
    dashboardDir: env.RETRACT_DASHBOARD_DIR ?? 'dashboard/dist',
    corsOrigins: (env.RETRACT_CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim().replace(/\/+$/, ''))
      .filter(Boolean),
    wsAnonymous: onOff(env, 'RETRACT_WS_ANONYMOUS', false),
    anonymousIntrospection: onOff(env, 'RETRACT_ANONYMOUS_INTROSPECTION', null),
    graphiql: onOff(env, 'RETRACT_GRAPHIQL', null),
    shutdownTimeoutMs: positiveInt(env, 'RETRACT_SHUTDOWN_TIMEOUT_MS', 10_000),
    limits,
  };
}
