import { randomUUID } from 'node:crypto';
import { GraphQLError } from 'graphql';
import type { Logger } from 'pino';
import { DomainError } from '../errors/domain-error';
import { isGraphQLError } from './is-graphql-error';

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

/**
 * An expected DomainError keeps its message and code; graphql-js's and scope-auth's refusals get
 * theirs; anything else is logged with a request id and answered "Unexpected error." with that id.
 */
export function maskError(log: Logger): (error: unknown, message: string) => GraphQLError {
  return (error, message) => {
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
    log.error({ err: original, requestId, path: ctx?.path }, 'unexpected error (masked)');
    return new GraphQLError(`${message} (request id ${requestId})`, {
      nodes: ctx?.nodes,
      path: ctx?.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR', requestId, http: { status: 500 } },
    });
  };
}
