// Processes that stop cleanly, as a supervisor stops them: SIGTERM to the real `npm start` (npm, its shell, the
// server) and SIGINT to `retract serve`. Open subscriptions (graphql-ws and SSE) are sent `complete`, a request in
// flight is answered, /ready says 503 while the server drains, and the process exits 0 within
// RETRACT_SHUTDOWN_TIMEOUT_MS. A server whose stderr has lost its reader still stops (issue 33). The start-up line
// names every URL and whether an operator token is set, never the token.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ROOT, childEnv } from '../mcp/support';
import { openStore } from '../../src/store/engine';
import { startBuilt } from '../support/built-server';
import { engines, expectInvariants, testStore } from '../support/engines';

const TOKEN = 'shutdown-operator-token-0123456789';
const MAIN = path.join(ROOT, 'build/src/server/main.js');

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** The start-up line, parsed, once the server listens. */
  started: Promise<Record<string, string>>;
}

function launch(command: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  const started = new Promise<Record<string, string>>((resolve, reject) => {
    const look = () => {
      const line = out.split('\n').find((l) => l.includes('"msg":"RETRACT serving'));
      if (line) resolve(JSON.parse(line) as Record<string, string>);
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    void exited.then(({ code }) => reject(new Error(`exited ${code} before serving:\n${out}`)));
  });
  started.catch(() => {});
  return { child, output: () => out, exited, started };
}

async function gql<T>(base: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const r = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await r.json()) as { data?: T; errors?: unknown };
  if (!body.data) throw new Error(JSON.stringify(body));
  return body.data;
}

const SUBSCRIPTION = 'subscription { retractionEvents { __typename cursor } }';

/** A graphql-ws (graphql-transport-ws) subscription over a raw socket: every message the server sent, in order. */
async function wsSubscribe(
  base: string,
): Promise<{ messages: Array<{ type: string; id?: string }>; closed: Promise<number> }> {
  const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const messages: Array<{ type: string; id?: string }> = [];
  const closed = new Promise<number>((r) => socket.on('close', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('open', () =>
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${TOKEN}` } })),
    );
    socket.on('message', (data) => {
      const m = JSON.parse(String(data)) as { type: string; id?: string };
      messages.push(m);
      if (m.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: 's1', type: 'subscribe', payload: { query: SUBSCRIPTION } }));
        resolve();
      }
    });
  });
  return { messages, closed };
}

/** An SSE subscription (Yoga's distinct-connections mode): the stream's text so far, and its end. */
async function sseSubscribe(base: string): Promise<{ text: () => string; ended: Promise<void> }> {
  const r = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ query: SUBSCRIPTION }),
  });
  expect(r.headers.get('content-type')).toMatch(/text\/event-stream/);
  let text = '';
  const reader = r.body!.getReader();
  const ended = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      text += Buffer.from(value!).toString('utf8');
    }
  })();
  return { text: () => text, ended };
}

/** A POST whose body is only half sent: the request is in flight until `finish()` sends the rest and reads the answer. */
async function halfSent(base: string, body: string): Promise<{ finish(): Promise<{ status: number; body: string }> }> {
  const { hostname, port } = new URL(base);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((r) => socket.once('connect', () => r()));
  let answer = '';
  socket.on('data', (d) => (answer += d));
  const ended = new Promise<void>((r) => socket.once('close', () => r()));
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST /graphql HTTP/1.1\r\nhost: ${hostname}:${port}\r\ncontent-type: application/json\r\nauthorization: Bearer ${TOKEN}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body.slice(0, half)}`,
  );
  return {
    async finish() {
      socket.write(body.slice(half));
      await ended;
      const [head, ...rest] = answer.split('\r\n\r\n');
      return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(head!)?.[1]), body: rest.join('\r\n\r\n') };
    },
  };
}

async function until<T>(what: string, probe: () => T | Promise<T>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Whether anything still accepts connections on the port. */
function listening(base: string): Promise<boolean> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const s = net.connect(Number(port), hostname);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('stopping the server', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-shutdown-'));
  const spawned: ChildProcess[] = [];
  /** Servers' own pids (from their start-up lines): a server left behind npm is not one of `spawned`. */
  const servers: number[] = [];
  afterAll(() => {
    for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    for (const pid of servers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone, as it should be */
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each(engines().filter((e) => e !== 'citus'))(
    'SIGTERM to `npm start` on %s: subscriptions get complete, the request in flight is answered, /ready flips to 503, exit 0 in time',
    async (engine) => {
      if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run node scripts/build.mjs`);
      const timeoutMs = 6_000;
      const db = engine === 'postgres' ? await testStore('postgres') : null;
      const dataDir = path.join(dir, 'npm');
      const storeEnv: Record<string, string> = db
        ? { RETRACT_ENGINE: 'postgres', DATABASE_URL: db.url! }
        : { RETRACT_DATA_DIR: dataDir };
      const p = launch('npm', ['start'], {
        ...storeEnv,
        RETRACT_BOOTSTRAP_TOKEN: TOKEN,
        RETRACT_SHUTDOWN_TIMEOUT_MS: String(timeoutMs),
      });
      spawned.push(p.child);
      const line = await p.started;
      servers.push(Number(line.pid));
      const base = line.url!.replace(/\/graphql$/, '');

      // The start-up line: every door, and that a token is configured, never the token.
      expect(line).toMatchObject({
        graphql: `${base}/graphql`,
        graphiql: `${base}/graphql`,
        dashboard: `${base}/dashboard/`,
        mcp: `${base}/mcp`,
        ready: `${base}/ready`,
        operatorToken: 'configured',
      });
      expect(line.msg).toContain(`GraphQL at ${base}/graphql`);
      expect(line.msg).toContain(`MCP at ${base}/mcp`);

      const ready = await fetch(`${base}/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', database: true, migrations: true, accepting: true });
      // The same answer in GET /metrics (RETRACT_METRICS is on by default), for a dashboard.
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^retract_ready 1$/m);

      // Both subscriptions are live: each sees a retraction made now.
      const ws = await wsSubscribe(base);
      const sse = await sseSubscribe(base);
      const asserted = await gql<{ assertBelief: { belief: { id: string } } }>(
        base,
        'mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { ... on BeliefAsserted { belief { id } } } }',
        { i: { claimKey: 'shutdown:1', statement: 'to be retracted', value: true } },
      );
      await gql(base, 'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }', {
        i: { beliefId: asserted.assertBelief.belief.id, reason: 'shutdown test' },
      });
      await until('the graphql-ws event', () => ws.messages.some((m) => m.type === 'next'));
      await until('the SSE event', () => sse.text().includes('event: next'));

      // A mutation in flight: its body is half sent when the signal comes.
      const inFlight = await halfSent(
        base,
        JSON.stringify({
          query: 'mutation($i: CreateAgentInput!) { createAgent(input: $i) { agent { name } } }',
          variables: { i: { fleet: 'acme', name: 'late-agent', scopes: ['beliefs:read'] } },
        }),
      );
      await new Promise((r) => setTimeout(r, 100));

      const signalled = Date.now();
      p.child.kill('SIGTERM');

      await until(
        'graphql-ws complete',
        () => ws.messages.some((m) => m.type === 'complete' && m.id === 's1'),
        timeoutMs,
      );
      expect(ws.messages.filter((m) => m.type === 'error')).toEqual([]);
      expect(await ws.closed).toBe(1001);
      await sse.ended;
      expect(sse.text()).toMatch(/event: complete\n/);

      // Draining: not ready, no new GraphQL work; the half-sent mutation is still answered and committed.
      const draining = await fetch(`${base}/ready`);
      expect(draining.status).toBe(503);
      expect(await draining.json()).toMatchObject({ status: 'draining', accepting: false });
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^retract_ready 0$/m);
      const refused = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ query: '{ viewer { name } }' }),
      });
      expect(refused.status).toBe(503);
      const answered = await inFlight.finish();
      expect(answered.status).toBe(200);
      expect(JSON.parse(answered.body)).toEqual({ data: { createAgent: { agent: { name: 'late-agent' } } } });

      const exit = await p.exited;
      expect(exit, p.output()).toMatchObject({ code: 0, signal: null });
      expect(exit.at - signalled).toBeLessThan(timeoutMs + 2_000);
      expect(await listening(base), 'no server left behind npm').toBe(false);
      expect(p.output()).toMatch(/"msg":"stopped"/);
      expect(p.output()).not.toContain(TOKEN);

      // What the stop left behind is whole: the late agent, the retraction, every invariant.
      const store = db?.store ?? (await openStore({ dataDir }));
      try {
        await expectInvariants(store);
      } finally {
        if (db) await db.close();
        else await store.close();
      }
    },
    240_000,
  );

  it('SIGINT to `retract serve`: exit 0; the start-up line says no operator token is configured and GraphiQL is off in production', async () => {
    const p = launch(
      process.execPath,
      ['bin/retract.mjs', 'serve', '--port', '0', '--data-dir', path.join(dir, 'serve')],
      { NODE_ENV: 'production' },
    );
    spawned.push(p.child);
    const line = await p.started;
    servers.push(Number(line.pid));
    expect(line).toMatchObject({ operatorToken: 'not configured', graphiql: null, pid: expect.any(Number) });
    expect(line.msg).toContain('no operator token: set RETRACT_BOOTSTRAP_TOKEN');
    expect(line.msg).toContain('GraphiQL off (RETRACT_GRAPHIQL=on)');
    p.child.kill('SIGINT');
    expect(await p.exited, p.output()).toMatchObject({ code: 0, signal: null });
  }, 240_000);

  // Issue 33: pino's destination flushed synchronously at exit and, with EPIPE, retried forever.
  it('a server whose stderr and stdout have lost their reader still stops on SIGTERM', async () => {
    const s = startBuilt({ RETRACT_DATA_DIR: path.join(dir, 'orphan'), RETRACT_SHUTDOWN_TIMEOUT_MS: '3000' });
    spawned.push(s.child);
    await s.url;
    // The reader goes away, as when the process that spawned the server exits.
    s.child.stdout!.destroy();
    s.child.stderr!.destroy();
    await new Promise((r) => setTimeout(r, 100));
    s.child.kill('SIGTERM');
    const code = await Promise.race([
      s.exited,
      new Promise<string>((r) => setTimeout(() => r('still running 10 s after SIGTERM'), 10_000)),
    ]);
    expect(code).toBe(0);
  }, 240_000);
});
