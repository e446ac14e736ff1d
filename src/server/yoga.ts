import { randomUUID } from 'node:crypto';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import { GraphQLError } from 'graphql';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { authenticate, type AgentRow } from '../agent/agent.service';
import type { Adjudicator } from '../adjudication/adjudicator';
import type { Core } from '../core';
import { DomainError } from '../errors/domain-error';
import type { Waker } from '../event/tailer';
import type { Context } from '../api/builder';
import { schema } from '../api/schema';

/** Limits enforced on every operation, over HTTP, SSE and WebSocket alike. Not echoed to clients. */
export const LIMITS = { depth: 14, aliases: 15, cost: 20_000, tokens: 3_000, directives: 20, batch: 5 } as const;

const TOKEN_CACHE_MS = 5_000;

/**
 * HTTP status per error code. Marked `spec: true`, so application/json responses stay 200 as the
 * GraphQL-over-HTTP spec asks, and application/graphql-response+json ones carry the status.
 */
const HTTP_STATUS: Record<DomainError['code'], number> = { BAD_USER_INPUT: 400, UNAUTHENTICATED: 401, FORBIDDEN: 403, NOT_FOUND: 404, CONFLICT: 409 };

/** Bearer token from an `Authorization` header value (or WebSocket connectionParams.authorization). */
export function bearer(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m ? m[1]! : null;
}

/**
 * A GraphQLError from any copy of graphql-js. Two copies can be loaded at once (its ESM and CJS
 * builds: a dual-package hazard a bundler or test runner triggers), and an error built by the other
 * copy must still be recognised, not masked as unexpected.
 */
export function isGraphQLError(e: unknown): e is GraphQLError {
  return e instanceof GraphQLError || Object.prototype.toString.call(e) === '[object GraphQLError]';
}

export interface YogaDeps {
  core: Core;
  adjudicator: Adjudicator;
  waker: Waker;
  log: Logger;
  production: boolean;
}

/**
 * The GraphQL server: schema, auth (bearer token → agent, cached briefly by token hash), armor
 * limits, and masking — an expected DomainError keeps its message and code; anything else is
 * logged with the request id and answered "Unexpected error." with that id.
 */
export function buildYoga(deps: YogaDeps): YogaServerInstance<Record<string, unknown>, Context> {
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

  return createYoga<Record<string, unknown>, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: !deps.production,
    landingPage: false,
    batching: { limit: LIMITS.batch },
    logging: false,
    context: async (init): Promise<Context> => {
      const i = init as unknown as { request?: Request; connectionParams?: Record<string, unknown>; requestId?: string };
      const header = i.request?.headers.get('authorization') ?? null;
      const wsAuth = i.connectionParams?.authorization ?? i.connectionParams?.Authorization;
      const { agent, badToken } = await agentFor(bearer(header ?? wsAuth ?? null));
      const requestId = i.requestId ?? i.request?.headers.get('x-request-id')?.slice(0, 64) ?? randomUUID();
      return { core: deps.core, adjudicator: deps.adjudicator, waker: deps.waker, agent, badToken, requestId, log: deps.log.child({ requestId }) } as Context;
    },
    maskedErrors: {
      maskError(error, message) {
        const original = isGraphQLError(error) ? error.originalError : error;
        const ctx = isGraphQLError(error) ? error : null;
        if (original instanceof DomainError) {
          return new GraphQLError(original.message, {
            nodes: ctx?.nodes, path: ctx?.path, originalError: undefined,
            extensions: { ...original.extensions, code: original.code, ...(original.field ? { field: original.field } : {}), http: { status: HTTP_STATUS[original.code], spec: true } },
          });
        }
        if (isGraphQLError(error) && !error.originalError) return error;
        const knownCode = isGraphQLError(original) ? (original.extensions?.code as DomainError['code'] | undefined) : undefined;
        if (isGraphQLError(error) && knownCode && knownCode in HTTP_STATUS) {
          // A refusal raised as a GraphQLError with its own code (scope-auth: UNAUTHENTICATED, FORBIDDEN) keeps it.
          return new GraphQLError(error.message, {
            nodes: error.nodes, path: error.path,
            extensions: { ...(original as GraphQLError).extensions, http: { status: HTTP_STATUS[knownCode], spec: true } },
          });
        }
        if (isGraphQLError(error) && (isGraphQLError(original) || error.message.startsWith('Variable "$'))) {
          // Input coercion (variables, scalars): the client's input is at fault; the message names the path.
          return new GraphQLError(error.message, {
            nodes: error.nodes, path: error.path,
            extensions: { ...(isGraphQLError(original) ? original.extensions : {}), code: 'BAD_USER_INPUT', http: { status: 400, spec: true } },
          });
        }
        const requestId = randomUUID();
        deps.log.error({ err: original, requestId, path: ctx?.path }, 'unexpected error (masked)');
        return new GraphQLError(`${message} (request id ${requestId})`, {
          nodes: ctx?.nodes, path: ctx?.path, extensions: { code: 'INTERNAL_SERVER_ERROR', requestId, http: { status: 500 } },
        });
      },
    },
    plugins: [
      // Runs before Yoga's own batching check, whose message would state the limit.
      {
        onRequestParse() {
          return {
            onRequestParseDone({ requestParserResult }) {
              if (Array.isArray(requestParserResult) && requestParserResult.length > LIMITS.batch) {
                throw new GraphQLError('too many operations in one batched request; send them in several requests', {
                  extensions: { code: 'BAD_USER_INPUT', http: { status: 413 } },
                });
              }
            },
          };
        },
      },
      EnvelopArmorPlugin({
        maxDepth: { n: LIMITS.depth, ignoreIntrospection: false, flattenFragments: true, exposeLimits: false, errorMessage: 'the query is nested too deeply; ask for fewer levels' },
        maxAliases: { n: LIMITS.aliases, exposeLimits: false, errorMessage: 'the query uses too many aliases; split it into several requests' },
        costLimit: { maxCost: LIMITS.cost, exposeLimits: false, errorMessage: 'the query is too expensive; ask for fewer fields or smaller pages' },
        maxTokens: { n: LIMITS.tokens, exposeLimits: false, errorMessage: 'the query has too many tokens; split it into several requests' },
        maxDirectives: { n: LIMITS.directives, exposeLimits: false, errorMessage: 'the query uses too many directives' },
        blockFieldSuggestion: { enabled: deps.production },
      }),
    ],
  });
}
