// The typed client for Node: the browser-safe core plus the `ws` package as the WebSocket, which
// Node 20 lacks, so subscriptions work without the caller passing one.
import WebSocket from 'ws';
import type { Client, ClientOptions as WsOptions } from 'graphql-ws';
import { RetractClient, wsClient as coreWsClient, type ClientOptions } from './index.js';

export * from './index.js';

/** A RetractClient whose subscriptions use the `ws` package. */
export function nodeClient(opts: ClientOptions): RetractClient {
  return new RetractClient({ webSocketImpl: WebSocket, ...opts });
}

/** A graphql-ws client over the `ws` package, acting with `token`. */
export function wsClient(url: string, token?: string | null, opts: Partial<WsOptions> = {}): Client {
  return coreWsClient(url, token, { webSocketImpl: WebSocket, ...opts });
}
