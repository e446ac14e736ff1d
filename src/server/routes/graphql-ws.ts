import type http from 'node:http';
import { type ExecutionArgs, GraphQLError, getOperationAST } from 'graphql';
import type { OperationResult } from 'graphql-ws';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { authenticate } from '../../agent/agent.service';
import type { Context } from '../../api/builder';
import type { Store } from '../../store/engine';
import type { ServerConfig } from '../config';
import type { Drain } from '../drain';
import { isGraphQLError } from '../is-graphql-error';
import { refusedBeforeExecution, serveGraphqlWs, wireErrors } from '../ws';
import { UnauthenticatedSockets, wsConnect } from '../ws-auth';

/** An operation onSubscribe already ran, carried to graphql-ws's execute/subscribe. */
interface Ran {
  result: OperationResult;
}

export interface GraphqlWsDeps {
  yoga: YogaServerInstance<Record<string, unknown>, Context>;
  store: Store;
  config: Pick<ServerConfig, 'maxBodyBytes' | 'limits' | 'wsAnonymous'>;
  drain: Drain;
  log: Logger;
}

/**
 * GraphQL over WebSocket (graphql-ws) on `server`'s /graphql upgrades, through the same envelop as
 * HTTP (auth, limits, masking). `dispose(deadline)` lets the running operations send their last
 * message, then closes every socket (src/server/ws.ts).
 */
export function graphqlWsRoute(server: http.Server, deps: GraphqlWsDeps): { dispose(deadline: number): Promise<void> } {
  const { yoga, config, drain } = deps;
  const unauthenticated = new UnauthenticatedSockets(config.limits.wsUnauthenticatedPerAddress);
  const wss = new WebSocketServer({
    server,
    path: '/graphql',
    maxPayload: config.maxBodyBytes,
    verifyClient: unauthenticated.verifyClient,
  });
  const sockets = serveGraphqlWs(
    {
      connectionInitWaitTimeout: config.limits.wsInitTimeoutMs,
      onConnect: wsConnect((token) => authenticate(deps.store, token), config.wsAnonymous),
      // onSubscribe has already run the operation (to answer a refusal with an `error` message); this hands its result on.
      execute: (args) => (args as unknown as { rootValue: Ran }).rootValue.result,
      subscribe: (args) => (args as unknown as { rootValue: Ran }).rootValue.result,
      onSubscribe: async (ctx, _id, params) => {
        if (drain.draining)
          return wireErrors([new GraphQLError('server is shutting down', { extensions: { code: 'UNAVAILABLE' } })]);
        const env = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          connectionParams: { authorization: ctx.extra.authorization },
        });
        // A syntax error, or a limit graphql-armor enforces by throwing, refuses this operation alone;
        // thrown out of onSubscribe it would close the whole socket (4500) with every other subscription on it.
        let document: ReturnType<typeof env.parse>;
        let errors: readonly GraphQLError[];
        try {
          document = env.parse(params.query);
          errors = env.validate(env.schema, document);
        } catch (e) {
          if (isGraphQLError(e)) return wireErrors([e]);
          throw e;
        }
        if (errors.length) return wireErrors(errors);
        const contextValue = await env.contextFactory();
        const args = {
          schema: env.schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue,
        };
        // Run here rather than in graphql-ws's execute/subscribe: only onSubscribe can answer with an `error` message.
        const operation = getOperationAST(document, params.operationName)?.operation;
        const result = await (operation === 'subscription'
          ? env.subscribe(args as ExecutionArgs)
          : env.execute(args as ExecutionArgs));
        const refused = refusedBeforeExecution(result);
        if (refused) return wireErrors(refused);
        return { ...args, rootValue: { result: result as OperationResult } satisfies Ran };
      },
    },
    wss,
    deps.log,
    unauthenticated,
  );
  return {
    async dispose(deadline) {
      await sockets.dispose(deadline);
      wss.close();
    },
  };
}
