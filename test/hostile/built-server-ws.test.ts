import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type BuiltServer, startBuilt } from '../support/built-server';

const TOKEN = 'built-server-ws-token-0123';

/**
 * The compiled server, not the source under vitest: graphql-ws takes onSubscribe's refusals only as
 * instances of its own GraphQLError, and the bundle must hold one graphql for that to hold there. With
 * two, every refusal closed the whole socket with 4500 instead of answering one `error` message.
 */
describe('graphql-ws refusals on the compiled server', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-built-ws-'));
  let server: BuiltServer;
  let client: Client;

  beforeAll(async () => {
    server = startBuilt({ RETRACT_DATA_DIR: dir, RETRACT_BOOTSTRAP_TOKEN: TOKEN });
    const url = (await server.url).replace(/^http:/, 'ws:');
    client = createClient({
      url: `${url}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${TOKEN}` },
      retryAttempts: 0,
      lazy: true,
    });
  });
  afterAll(async () => {
    await client?.dispose();
    if (server) {
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Every message kind one operation heard, and its error, until it ended. */
  const hear = (query: string) =>
    new Promise<{ kinds: string[]; error: unknown }>((resolve) => {
      const heard = { kinds: [] as string[], error: undefined as unknown };
      client.subscribe(
        { query },
        {
          next: () => void heard.kinds.push('next'),
          error: (e) => resolve({ kinds: [...heard.kinds, 'error'], error: e }),
          complete: () => resolve({ kinds: [...heard.kinds, 'complete'], error: undefined }),
        },
      );
    });

  it('a syntax error and a bad cursor are each one error message; the socket stays open for the next operation', async () => {
    const syntax = await hear('subscription {');
    expect(syntax.kinds).toEqual(['error']);
    expect(Array.isArray(syntax.error), String(syntax.error)).toBe(true);
    const badCursor = await hear('subscription { retractionEvents(after: "nope") { cursor } }');
    expect(badCursor.kinds).toEqual(['error']);
    expect((badCursor.error as Array<{ extensions?: { code?: string } }>).map((e) => e.extensions?.code)).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(await hear('{ viewer { name } }')).toEqual({ kinds: ['next', 'complete'], error: undefined });
  });
});
