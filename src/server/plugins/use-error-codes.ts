import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { isGraphQLError } from '../is-graphql-error';

/**
 * Gives every parse and validation error a code: armor's and graphql-js's syntax errors become
 * GRAPHQL_PARSE_FAILED, validation errors GRAPHQL_VALIDATION_FAILED. An error that has a code keeps it.
 */
export const useErrorCodes: Plugin = {
  onParse() {
    return ({ result, replaceParseResult }) => {
      if (isGraphQLError(result) && !result.extensions?.code)
        replaceParseResult(withCode(result, 'GRAPHQL_PARSE_FAILED'));
    };
  },
  onValidate() {
    return ({ result, setResult }) => {
      if (result.some((e) => !e.extensions?.code))
        setResult(result.map((e) => (e.extensions?.code ? e : withCode(e, 'GRAPHQL_VALIDATION_FAILED'))));
    };
  },
};

function withCode(e: GraphQLError, code: string): GraphQLError {
  return new GraphQLError(e.message, {
    nodes: e.nodes,
    source: e.source,
    positions: e.positions,
    path: e.path,
    originalError: e.originalError,
    extensions: { ...e.extensions, code, http: { status: 400, spec: true } },
  });
}
