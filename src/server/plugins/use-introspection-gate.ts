import { BREAK, type DocumentNode, GraphQLError, visit } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from '../../api/builder';

/** Whether a document asks for the schema (`__schema` or `__type`; `__typename` is not introspection). */
function introspects(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Field(node) {
      if (node.name.value === '__schema' || node.name.value === '__type') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/**
 * Refuses introspection to a request without a valid token (UNAUTHENTICATED), unless anonymous
 * introspection is on (RETRACT_ANONYMOUS_INTROSPECTION; on in development, off in production): in
 * production the schema is for agents of a fleet, not for whoever finds the address. Checked at
 * execution, where the request's agent is known, over HTTP, SSE and WebSocket alike.
 */
export function useIntrospectionGate(anonymous: boolean): Plugin {
  if (anonymous) return {};
  return {
    onExecute({ args, setResultAndStopExecution }) {
      if ((args.contextValue as Partial<Context>).agent || !introspects(args.document)) return;
      setResultAndStopExecution({
        errors: [
          new GraphQLError('introspection needs a bearer token (Authorization: Bearer <token>)', {
            extensions: { code: 'UNAUTHENTICATED', http: { status: 401, spec: true } },
          }),
        ],
      });
    },
  };
}
