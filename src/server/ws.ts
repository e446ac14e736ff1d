import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { GraphQLError } from 'graphql';
import { CloseCode, type Context, type ServerOptions, handleProtocols, makeServer } from 'graphql-ws';
import type { Logger } from 'pino';
import type { WebSocket, WebSocketServer } from 'ws';
import { type UnauthenticatedSockets, type WsAuthExtra, remoteAddress } from './ws-auth';

/**
 * graphql-ws accepts refusals from onSubscribe only as instances of the GraphQLError class it
 * imported itself, so refusals are rebuilt with that class (graphql has one instance per process:
 * the bundle's in build/, graphql's CommonJS build under Node, and under vitest too, whose configs
 * resolve `graphql` as Node does); `extensions.http` is dropped, it means nothing on a socket.
 */
export function wireErrors(errors: readonly GraphQLError[]): GraphQLError[] {
  return errors.map((e) => {
    const { http: _http, ...extensions } = e.extensions ?? {};
    return new GraphQLError(e.message, {
      nodes: e.nodes,
      source: e.source,
      positions: e.positions,
      path: e.path,
      extensions,
    });
  });
}

/**
 * The errors of a result that refused the operation before it ran: a GraphQL result without a
 * `data` entry (the spec leaves `data` out exactly when an error was raised before execution
 * began: a limit, a page size, variables, or a subscription whose source stream was refused).
 * graphql-ws's protocol answers those with an `error` message, which ends the operation, as it
 * does validation errors; a `next` and `complete` would tell a client the stream ran and ended.
 */
export function refusedBeforeExecution(result: unknown): readonly GraphQLError[] | null {
  if (!result || typeof result !== 'object' || Symbol.asyncIterator in result || 'data' in result) return null;
  const errors = (result as { errors?: readonly GraphQLError[] }).errors;
  return errors?.length ? errors : null;
}

/** Bytes a socket may hold unsent before a subscription's next message waits for the socket to drain. */
const WS_HIGH_WATER_BYTES = 1 << 20;

export interface WsExtra extends WsAuthExtra {
  socket: WebSocket;
  request: IncomingMessage;
}

/**
 * graphql-ws on a `ws` server: the glue `graphql-ws/use/ws` provides, with sending made cheap for
 * fan-out. There, every message waits for its own write callback, so each message of each
 * subscriber costs one writev system call, and a cascade sends thousands to each subscriber. Here:
 * - a message is handed to the socket and the operation goes on at once while the socket holds
 *   less than {@link WS_HIGH_WATER_BYTES}; above it the operation waits for the socket to drain,
 *   so a slow reader holds up its own subscriptions and no one else's, and its memory is bounded;
 * - the TCP socket is corked on the first frame of an event-loop turn and uncorked on the next
 *   (setImmediate), so every frame written in one turn leaves in one writev.
 * Message order on a socket is unchanged (one socket, written in call order). Keep-alive pings
 * every `keepAliveMs`; a peer that misses a pong for that long is terminated. Each socket counts
 * against its address's cap on `unauthenticated` sockets until it authenticates or closes.
 */
export function serveGraphqlWs(
  options: ServerOptions<Record<string, unknown>, WsExtra>,
  wss: WebSocketServer,
  log: Logger,
  unauthenticated?: UnauthenticatedSockets,
  keepAliveMs = 12_000,
): { dispose(deadline?: number): Promise<void> } {
  /** Each open socket's graphql-ws context: its `subscriptions` are the operations still running on it. */
  const contexts = new Map<WebSocket, Context<Record<string, unknown>, WsExtra>>();
  const server = makeServer({
    ...options,
    onConnect: (ctx) => {
      contexts.set(ctx.extra.socket, ctx);
      return options.onConnect?.(ctx);
    },
  });
  const running = () => [...contexts.values()].some((ctx) => Object.keys(ctx.subscriptions).length > 0);
  wss.options.handleProtocols = handleProtocols;
  wss.on('error', (err) => {
    // ws re-emits the HTTP server's errors; a failed listen is the caller's to report (src/server/main.ts).
    if ((err as NodeJS.ErrnoException).syscall === 'listen') return;
    log.error({ err }, 'websocket server error');
    for (const client of wss.clients) client.close(CloseCode.InternalServerError, 'Internal server error');
  });

  wss.on('connection', (socket, request) => {
    const tcp = request.socket as Socket;
    const release = unauthenticated?.hold(remoteAddress(request)) ?? (() => {});
    let corked = false;
    const uncork = () => {
      corked = false;
      tcp.uncork();
    };
    const corkThisTurn = () => {
      if (corked || tcp.destroyed) return;
      corked = true;
      tcp.cork();
      setImmediate(uncork);
    };
    socket.once('error', (err) => {
      log.warn({ err }, 'websocket error');
      socket.close(CloseCode.InternalServerError, 'Internal server error');
    });

    let pongWait: NodeJS.Timeout | null = null;
    const ping =
      keepAliveMs > 0 && Number.isFinite(keepAliveMs)
        ? setInterval(() => {
            if (socket.readyState !== socket.OPEN) return;
            pongWait = setTimeout(() => socket.terminate(), keepAliveMs);
            socket.once('pong', () => {
              if (pongWait) clearTimeout(pongWait);
              pongWait = null;
            });
            socket.ping();
          }, keepAliveMs)
        : null;

    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) =>
          new Promise<void>((resolve, reject) => {
            if (socket.readyState !== socket.OPEN) return resolve();
            corkThisTurn();
            if (socket.bufferedAmount < WS_HIGH_WATER_BYTES) {
              // A failed write surfaces as the socket's error and close, which ends its operations.
              socket.send(data);
              return resolve();
            }
            socket.send(data, (err) => (err ? reject(err) : resolve()));
          }),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (cb) =>
          socket.on('message', async (event) => {
            try {
              await cb(String(event));
            } catch (err) {
              log.error({ err }, 'websocket message handling failed');
              socket.close(CloseCode.InternalServerError, 'Internal server error');
            }
          }),
      },
      { socket, request, authenticated: release },
    );

    socket.once('close', (code, reason) => {
      release();
      contexts.delete(socket);
      if (pongWait) clearTimeout(pongWait);
      if (ping) clearInterval(ping);
      closed(code, String(reason));
    });
  });

  return {
    /**
     * Stops: waits until `deadline` (epoch ms) for the operations still running to send their last message
     * (a subscription whose stream ended sends `complete`; a mutation its result), then closes every
     * socket with 1001 Going Away; a peer that has not closed by the deadline (or 250 ms) is cut.
     */
    async dispose(deadline = Date.now()) {
      while (running() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      for (const client of wss.clients) client.close(1001, 'Going away');
      const cut = setTimeout(
        () => {
          for (const client of wss.clients) client.terminate();
        },
        Math.max(250, deadline - Date.now()),
      );
      cut.unref();
      wss.removeAllListeners();
      await new Promise<void>((resolve, reject) => wss.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
