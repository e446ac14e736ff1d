import { randomUUID } from 'node:crypto';
import { GraphQLError } from 'graphql';
import { type Plugin, createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import type { AgentRow } from '../agent/agent.repository';
import { authenticate } from '../agent/agent.service';
import { ReadGrants } from '../agent/access';
import type { Adjudicator } from '../adjudication/adjudicator';
import type { Core } from '../core';
import { DomainError } from '../errors/domain-error';
import type { Waker } from '../event/tailer';
import type { Context } from '../api/builder';
import { schema } from '../api/schema';
import { DEFAULT_LIMITS, type Limits } from './config';
import { costLimitPlugin } from './cost';
import { GRAPHIQL_OPTIONS, renderGraphiQL } from './graphiql';
import { introspectionDepthPlugin } from './introspection';
import {
  armorPlugin,
  codedParseAndValidationPlugin,
  isGraphQLError,
  limitError,
  subscriptionCapPlugin,
} from './refusals';
import { hideSuggestionsPlugin, toClientError } from './client-error';
import { introspectionGatePlugin } from './introspection-gate';
import { bearer } from './ws-auth';

export { isGraphQLError };

/** The default limits enforced on every operation, over HTTP, SSE and WebSocket alike. Not echoed to clients. */
export const LIMITS: Readonly<Limits> = DEFAULT_LIMITS;

const TOKEN_CACHE_MS = 5_000;

/**
 * HTTP status per error code. Marked `spec: true`, so application/json responses stay 200 as the
 * GraphQL-over-HTTP spec asks, and application/graphql-response+json ones carry the status.
 */
const HTTP_STATUS: Record<DomainError['code'], number> = {
  BAD_USER_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
};

export interface YogaDeps {
  core: Core;
  adjudicator: Adjudicator;
  waker: Waker;
  log: Logger;
  production: boolean;
  /** Introspection without a token (RETRACT_ANONYMOUS_INTROSPECTION); null: only outside production. */
  anonymousIntrospection?: boolean | null;
  /** GraphiQL at GET /graphql (its assets at /graphiql/, served by src/server/app.ts). */
  graphiql?: boolean;
  limits?: Limits;
  /** Plugins that run before all others (tracing's, src/server/use-tracing.ts). */
  firstPlugins?: Plugin[];
  /** More envelop plugins, after the built-in ones (GET /metrics' useMetrics). */
  plugins?: Plugin[];
}

/**
 * The GraphQL server: schema, auth (bearer token → agent, cached briefly by token hash), armor
 * limits, and masking — an expected DomainError keeps its message and code; anything else is
 * logged with the request id and answered "Unexpected error." with that id.
 */
export function buildYoga(deps: YogaDeps): YogaServerInstance<Record<string, unknown>, Context> {
  const limits = deps.limits ?? DEFAULT_LIMITS;
  const cache = new Map<string, { agent: AgentRow | null; at: number }>();
  async function agentFor(token: string | null): Promise<{ agent: AgentRow | null; badToken: boolean }> {
    if (!token) return { agent: null, badToken: false };
    const hit = cache.get(token);
    if (hit && Date.now() - hit.at < TOKEN_CACHE_MS) return { agent: hit.agent, badToken: !hit.agent };
    const agent = await authenticate(deps.core.store, token);
    if (cache.size > 10_000) cache.clear();
    cache.set(token, { agent, at: Date.now() });
    return { agent, badToken: !agent };
  }

  /**
   * An expected DomainError keeps its message and code; graphql-js's and scope-auth's refusals get
   * theirs; anything else is logged with a request id and answered "Unexpected error." with that id.
   */
  function mask(error: unknown, message: string): GraphQLError {
    const original = isGraphQLError(error) ? error.originalError : error;
    const ctx = isGraphQLError(error) ? error : null;
    if (original instanceof DomainError) {
      return new GraphQLError(original.message, {
        nodes: ctx?.nodes,
        path: ctx?.path,
        originalError: undefined,
        extensions: {
          ...original.extensions,
          code: original.code,
          ...(original.field ? { field: original.field } : {}),
          http: { status: HTTP_STATUS[original.code], spec: true },
        },
      });
    }
    if (
      isGraphQLError(error) &&
      !error.originalError &&
      !error.extensions?.code &&
      error.message.startsWith('Variable "$')
    ) {
      // graphql-js's own variable refusals (a required one not given or null, an unknown input field) have no
      // originalError and no code; they are the client's input at fault, like a scalar's coercion error below.
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: { code: 'BAD_USER_INPUT', http: { status: 400, spec: true } },
      });
    }
    if (isGraphQLError(error) && !error.originalError) return error;
    if (isGraphQLError(error) && isGraphQLError(original) && original.extensions?.code === 'LIMIT_EXCEEDED') {
      // A limit met while resolving (a relation list over its bound, src/api/list-bounds.ts) keeps its code.
      return new GraphQLError(original.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: original.extensions,
      });
    }
    const knownCode = isGraphQLError(original)
      ? (original.extensions?.code as DomainError['code'] | undefined)
      : undefined;
    if (isGraphQLError(error) && knownCode && knownCode in HTTP_STATUS) {
      // A refusal raised as a GraphQLError with its own code (scope-auth: UNAUTHENTICATED, FORBIDDEN) keeps it.
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: { ...(original as GraphQLError).extensions, http: { status: HTTP_STATUS[knownCode], spec: true } },
      });
    }
    if (isGraphQLError(error) && (isGraphQLError(original) || error.message.startsWith('Variable "$'))) {
      // Input coercion (variables, scalars): the client's input is at fault; the message names the path.
      return new GraphQLError(error.message, {
        nodes: error.nodes,
        path: error.path,
        extensions: {
          ...(isGraphQLError(original) ? original.extensions : {}),
          code: 'BAD_USER_INPUT',
          http: { status: 400, spec: true },
        },
      });
    }
    const requestId = randomUUID();
    deps.log.error({ err: original, requestId, path: ctx?.path }, 'unexpected error (masked)');
    return new GraphQLError(`${message} (request id ${requestId})`, {
      nodes: ctx?.nodes,
      path: ctx?.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR', requestId, http: { status: 500 } },
    });
  }

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
    context: async (init): Promise<Context> => {
      const i = init as unknown as {
        request?: Request;
        connectionParams?: Record<string, unknown>;
        requestId?: string;
      };
      const header = i.request?.headers.get('authorization') ?? null;
      // Over WebSocket, src/server/ws-auth.ts found the header where the client put it and passes it here.
      const wsAuth = i.connectionParams?.authorization;
      const { agent, badToken } = await agentFor(bearer(header ?? wsAuth ?? null));
      const requestId = i.requestId ?? i.request?.headers.get('x-request-id')?.slice(0, 64) ?? randomUUID();
      return {
        core: deps.core,
        adjudicator: deps.adjudicator,
        waker: deps.waker,
        agent,
        badToken,
        requestId,
        log: deps.log.child({ requestId }),
        grants: new ReadGrants(),
      } as Context;
    },
    maskedErrors: {
      maskError: (error, message) => toClientError(mask(error, message), deps.production),
    },
    plugins: [
      ...(deps.firstPlugins ?? []),
      // Runs before Yoga's own batching check, whose message would state the limit.
      {
        onRequestParse() {
          return {
            onRequestParseDone({ requestParserResult }) {
              if (Array.isArray(requestParserResult) && requestParserResult.length > limits.batch) {
                throw limitError(
                  'batch',
                  'too many operations in one batched request; send them in several requests',
                  413,
                  false,
                );
              }
            },
          };
        },
      },
      costLimitPlugin(limits.cost),
      armorPlugin(limits, deps.production),
      introspectionDepthPlugin(limits.depth),
      // After armor, whose field-suggestion masking rewrites graphql-js's own errors in place.
      codedParseAndValidationPlugin,
      ...(deps.production ? [hideSuggestionsPlugin] : []),
      introspectionGatePlugin(deps.anonymousIntrospection ?? !deps.production),
      subscriptionCapPlugin(limits.subscriptionsPerToken),
      ...(deps.plugins ?? []),
    ],
  });
}
