import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/agent/scopes';
import { gid } from '../../src/kernel/ids';
import { configFromEnv, DEFAULT_LIMITS } from '../../src/server/config';
import { gql, ok, subscribeSse } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';
import { belief } from '../support/story';

const HEADERS_MS = 1_000;
const REQUEST_MS = 2_000;

interface Held {
  /** Everything the server sent, once it closed the connection. */
  closed: Promise<{ text: string; afterMs: number }>;
  socket: net.Socket;
}

/** Opens a raw TCP connection and writes `first`, then nothing more: a client that stalls. */
function stall(port: number, first: string): Held {
  const socket = net.connect(port, '127.0.0.1');
  const started = Date.now();
  socket.setNoDelay(true);
  socket.write(first);
  let text = '';
  socket.on('data', (d) => (text += d.toString('utf8')));
  const closed = new Promise<{ text: string; afterMs: number }>((resolve) => {
    socket.on('close', () => resolve({ text, afterMs: Date.now() - started }));
    socket.on('error', () => {});
  });
  return { closed, socket };
}

/** The JSON body of a raw HTTP response. */
function bodyOf(raw: string): { errors: Array<{ message: string; extensions: { code: string } }> } {
  return JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
}

/** How long a stalled connection may be held: the timeout, plus Node's checking interval and a loaded machine's slack. */
const within = (timeoutMs: number) => timeoutMs + 8_000;

/**
 * Slow clients at the socket level (engine-independent, so PGlite only): a client that stalls in
 * its headers or its body is answered 408 with a JSON body and disconnected once its time is up,
 * however many of them there are; streams that outlive those times (SSE here) are not cut.
 */
describe('slow clients', () => {
  let s: ApiServer;
  let agent: TestAgent;
  let port: number;

  beforeAll(async () => {
    s = await startApiServer('pglite', {
      config: { limits: { headersTimeoutMs: HEADERS_MS, requestTimeoutMs: REQUEST_MS } },
    });
    port = Number(new URL(s.base).port);
    agent = await agentWith(s.db.store, 'slow', SCOPES, 'slow');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('the defaults are documented figures, each settable by its variable', () => {
    expect(DEFAULT_LIMITS.headersTimeoutMs).toBe(10_000);
    expect(DEFAULT_LIMITS.requestTimeoutMs).toBe(30_000);
    const c = configFromEnv({ RETRACT_HEADERS_TIMEOUT_MS: '2500', RETRACT_REQUEST_TIMEOUT_MS: '9000' });
    expect([c.limits.headersTimeoutMs, c.limits.requestTimeoutMs]).toEqual([2_500, 9_000]);
    expect(() => configFromEnv({ RETRACT_REQUEST_TIMEOUT_MS: 'soon' })).toThrow(
      /RETRACT_REQUEST_TIMEOUT_MS must be a positive integer/,
    );
  });

  it('half-sent headers and half-sent bodies, 125 of each (250 held at once), are answered 408 with a JSON body and closed in time; an open SSE stream outlives them; the server keeps serving', async () => {
    const q = 'subscription { retractionEvents { __typename } }';
    const sse = subscribeSse(s.http, q, {}, agent.token);
    try {
      const headers = Array.from({ length: 125 }, () =>
        stall(port, 'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'),
      );
      const bodies = Array.from({ length: 125 }, () =>
        stall(
          port,
          'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"query":',
        ),
      );
      const held = [...headers, ...bodies];
      let timer: NodeJS.Timeout | undefined;
      const results = await Promise.race([
        Promise.all(held.map((h) => h.closed)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`stalled connections still open after ${within(REQUEST_MS)} ms`)),
            within(REQUEST_MS),
          );
        }),
      ]).finally(() => {
        clearTimeout(timer);
        for (const h of held) h.socket.destroy();
      });
      for (const [i, r] of results.entries()) {
        expect(r.text, `connection ${i}`).toMatch(/^HTTP\/1\.1 408 /);
        expect(r.text).toMatch(/content-type: application\/json/i);
        const body = bodyOf(r.text);
        expect(body.errors[0]!.extensions.code).toBe('REQUEST_TIMEOUT');
        expect(body.errors[0]!.message).toMatch(/not received in time/);
        expect(r.afterMs).toBeLessThan(within(i < 125 ? HEADERS_MS : REQUEST_MS));
      }
      // A stream that has been open longer than both timeouts still delivers.
      expect(sse.completed).toBe(false);
      const deadline = Date.now() + 60_000;
      let n = 0;
      while (sse.events.length === 0) {
        expect(Date.now(), 'an event on the SSE stream').toBeLessThan(deadline);
        const b = await belief(s.core, { fleet: 'slow', agentId: agent.id }, `slow/${++n}`);
        ok(
          await gql(
            s.http,
            'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "still streaming?" }) { id } }',
            { b: gid('Belief', b.id) },
            agent.token,
          ),
        );
        await sse.until((c) => c.events.length > 0, 1_000).catch(() => {});
      }
      expect(sse.failures).toEqual([]);
      expect((await fetch(`${s.base}/health`)).status).toBe(200);
      expect(s.logs.lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
    } finally {
      await sse.close();
    }
  });

  it('a request that arrives in pieces but in time is served', async () => {
    const body = JSON.stringify({ query: '{ viewer { name } }' });
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString('utf8')));
    const done = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${agent.token}\r\n`);
    await new Promise((r) => setTimeout(r, HEADERS_MS / 4));
    socket.write(
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, HEADERS_MS / 4));
    socket.end(body.slice(5));
    await done;
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(text).toContain('"name":"slow-');
  });
});
