import { GraphQLError } from 'graphql';

/** Which limit a LIMIT_EXCEEDED refusal is about (`extensions.limit`); its value is not echoed. */
export type LimitName =
  'depth' | 'aliases' | 'cost' | 'tokens' | 'directives' | 'batch' | 'subscriptionsPerToken' | 'list';

/**
 * A refusal for exceeding a limit: `extensions.code` LIMIT_EXCEEDED and `extensions.limit` naming it.
 * With `spec`, application/json answers stay 200 as the GraphQL-over-HTTP spec asks.
 */
export function limitError(limit: LimitName, message: string, status = 400, spec = true): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'LIMIT_EXCEEDED', limit, http: { status, spec } } });
}
