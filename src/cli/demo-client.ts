import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** A GraphQL error as the server sent it. */
export class GraphQLRequestError extends Error {
  constructor(readonly errors: Array<{ message: string; extensions?: { code?: string } }>) {
    super(errors.map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('; '));
    this.name = 'GraphQLRequestError';
  }
}

/**
 * The demo's client of the real API: one agent's bearer token, queries and mutations over HTTP
 * (fetch, POST /graphql), subscriptions over graphql-ws on the same path. Throws on any GraphQL error.
 */
export class AgentClient {
  constructor(readonly name: string, readonly token: string, private readonly httpUrl: string) {}

  async request<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const res = await fetch(this.httpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', authorization: `Bearer ${this.token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> };
    if (body.errors?.length) throw new GraphQLRequestError(body.errors);
    if (!body.data) throw new Error(`GraphQL answered ${res.status} with no data`);
    return body.data;
  }

  /** A graphql-ws client authenticated with this agent's token (connectionParams.authorization). */
  ws(): Client {
    return createClient({
      url: this.httpUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${this.token}` },
      retryAttempts: 0,
    });
  }
}
