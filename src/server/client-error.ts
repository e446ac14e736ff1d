import { GraphQLError } from 'graphql';

/**
 * The last word on a GraphQL error before it leaves: only the codes docs/security.md lists, nothing
 * of the request echoed back, and no schema hints where they are not wanted.
 */

/**
 * GraphQL Yoga's own codes for a request it could not read (invalid JSON, no query, a mutation over
 * GET, a body too large). To a client they are all its request at fault: BAD_USER_INPUT, as the
 * server's own HTTP refusals say (the status stays Yoga's: 400, 405, 413).
 */
const REQUEST_CODES = new Set(['BAD_REQUEST', 'OPERATION_RESOLUTION_FAILURE', 'REQUEST_ENTITY_TOO_LARGE']);

/** graphql-js's "Did you mean …?" (fields, arguments, types, enum values): it spells out the schema to anyone. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

/** Removes graphql-js's suggestions from a message. */
function withoutSuggestions(message: string): string {
  return message.replace(SUGGESTION, '').trim();
}

/**
 * The error as a client receives it: Yoga's request codes become BAD_USER_INPUT; Yoga's
 * `extensions.originalError` (the JSON parser's message, which quotes the body it failed on: a 1 MB
 * malformed body came back as a 6 MB answer) is dropped; with `hideSuggestions`, so are suggestions.
 */
export function toClientError(e: GraphQLError, hideSuggestions: boolean): GraphQLError {
  const { originalError: echoed, ...extensions } = e.extensions ?? {};
  const code = extensions.code;
  const recoded = typeof code === 'string' && REQUEST_CODES.has(code);
  const message = hideSuggestions ? withoutSuggestions(e.message) : e.message;
  if (echoed === undefined && !recoded && message === e.message) return e;
  return new GraphQLError(message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    originalError: e.originalError,
    extensions: { ...extensions, ...(recoded ? { code: 'BAD_USER_INPUT' } : {}) },
  });
}
