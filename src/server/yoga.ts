import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { Adjudicator } from '../adjudication/adjudicator';
import type { Context } from '../api/builder';
import { schema } from '../api/schema';
import type { Core } from '../core';
import type { Waker } from '../event/tailer';
import { toClientError } from './client-error';
import { DEFAULT_LIMITS, type Limits } from './config';
import { contextFactory } from './context';
import { GRAPHIQL_OPTIONS, renderGraphiQL } from './graphiql';
import { maskError } from './mask-error';
import { useArmor } from './plugins/use-armor';
import { useBatchLimit } from './plugins/use-batch-limit';
import { useCostLimit } from './plugins/use-cost-limit';
import { useErrorCodes } from './plugins/use-error-codes';
import { useHiddenSuggestions } from './plugins/use-hidden-suggestions';
import { useIntrospectionDepth } from './plugins/use-introspection-depth';
import { useIntrospectionGate } from './plugins/use-introspection-gate';
import { useSubscriptionCap } from './plugins/use-subscription-cap';

/** The default limits enforced on every operation, over HTTP, SSE and WebSocket alike. Not echoed to clients. */
export const LIMITS: Readonly<Limits> = DEFAULT_LIMITS;

export interface YogaDeps {
  core: Core;
  adjudicator: Adjudicator;
  waker: Waker;
  log: Logger;
  production: boolean;
  /** Introspection without a token (RETRACT_ANONYMOUS_INTROSPECTION); null: only outside production. */
  anonymousIntrospection?: boolean | null;
  /** GraphiQL at GET /graphql (its assets at /graphiql/, src/server/routes/graphiql-assets.ts). */
  graphiql?: boolean;
  limits?: Limits;
  /** Plugins that run before all others (tracing's, src/server/plugins/use-tracing.ts). */
  firstPlugins?: Plugin[];
  /** More envelop plugins, after the built-in ones (GET /metrics' useMetrics). */
  plugins?: Plugin[];
}

/**
 * The GraphQL server: the schema, each operation's context (src/server/context.ts: bearer token →
 * agent), its limits and refusals as plugins in the order they apply, and masking
 * (src/server/mask-error.ts: an expected DomainError keeps its message and code; anything else is
 * logged with a request id and answered "Unexpected error." with that id).
 */
export function buildYoga(deps: YogaDeps): YogaServerInstance<Record<string, unknown>, Context> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const mask = maskError(deps.log);
  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: (deps.graphiql ?? !deps.production) ? GRAPHIQL_OPTIONS : false,
    renderGraphiQL,
    // The HTTP edge applies the CORS policy (src/server/edge.ts); Yoga's default would grant every origin.
    cors: false,
    landingPage: false,
    batching: { limit: limits.batch },
    logging: false,
    context: contextFactory(deps),
    maskedErrors: { maskError: (error, message) => toClientError(mask(error, message), deps.production) },
    plugins: [
      ...(deps.firstPlugins ?? []),
      // Runs before Yoga's own batching check, whose message would state the limit.
      useBatchLimit(limits.batch),
      useCostLimit(limits.cost),
      useArmor(limits, deps.production),
      useIntrospectionDepth(limits.depth),
      // After armor, whose field-suggestion masking rewrites graphql-js's own errors in place.
      useErrorCodes,
      ...(deps.production ? [useHiddenSuggestions] : []),
      useIntrospectionGate(deps.anonymousIntrospection ?? !deps.production),
      useSubscriptionCap(limits.subscriptionsPerToken),
      ...(deps.plugins ?? []),
    ],
  });
}
