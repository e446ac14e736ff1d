import { GraphQLError } from 'graphql';

/**
 * A GraphQLError from any copy of graphql-js. Two copies can be loaded at once (its ESM and CJS
 * builds: a dual-package hazard a bundler or test runner triggers), and an error built by the other
 * copy must still be recognised, not masked as unexpected.
 */
export function isGraphQLError(e: unknown): e is GraphQLError {
  return e instanceof GraphQLError || Object.prototype.toString.call(e) === '[object GraphQLError]';
}
