import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { gid } from '../../src/kernel/ids';
import { createApp } from '../../src/server/app';
import { actorIn, coreOf, embedder, expectInvariants } from '../support/engines';
import { passportStory } from '../support/story';
import { ROOT, TSX_CLI, childEnv } from '../mcp/support';

/**
 * Traces (docs/tracing.md): with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver on
 * loopback (this file's, decoding the exporter's JSON), one retraction arrives as one trace: the HTTP
 * request's span → the GraphQL operation → the root field's resolver → each SQL statement; a failing
 * statement's span is marked as an error and the log line of the masked error carries its trace id.
 * Without the variable no OpenTelemetry module is loaded at all (a child process, watched by V8's debugger).
 */

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number };
  attributes?: Array<{ key: string; value: { stringValue?: string } }>;
}

/** An OTLP/HTTP trace receiver: every span of every JSON export POSTed to /v1/traces. */
async function receiver() {
  const spans: OtlpSpan[] = [];
  const contentTypes = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.add(String(req.headers['content-type']));
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
        };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as { port: number };
  return {
    spans,
    contentTypes,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const temps: string[] = [];
afterAll(() => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-tracing-'));
  temps.push(d);
  return d;
}

function probe(env: Record<string, string>): Promise<{ status: number; otel: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [TSX_CLI, 'test/server/fixtures/tracing-probe.ts', path.join(tempDir(), 'data')],
      {
        cwd: ROOT,
        env: childEnv(env),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`probe exited ${code}: ${err}`)),
    );
  });
}

const RETRACT = 'mutation retractBelief($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }';
/** A caller's trace context, sent as traceparent with the second retraction. */
const CALLER = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };
const attr = (s: OtlpSpan, key: string) => s.attributes?.find((a) => a.key === key)?.value.stringValue;

describe('tracing', { timeout: 180_000 }, () => {
  // @opentelemetry/api alone is prom-client's (GET /metrics reads a span context for exemplars through it): the API is a
  // no-op without an SDK registered, so "costless" means no SDK, exporter or context manager loaded.
  it('without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry SDK module is loaded (only the no-op API, which prom-client uses); with it, the SDK is', async () => {
    const [off, on] = await Promise.all([
      probe({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }),
      // Nothing listens on port 9: the export fails, the server does not.
      probe({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_TIMEOUT: '500' }),
    ]);
    expect({ status: off.status, otel: off.otel.filter((u) => !u.includes('/@opentelemetry/api/')) }).toEqual({
      status: 200,
      otel: [],
    });
    expect(on.status).toBe(200);
    expect(on.otel.some((u) => u.includes('/@opentelemetry/sdk-trace/'))).toBe(true);
  });

  it('one retraction is one trace: HTTP → operation → resolver → SQL statements; a failing statement is an error span, and the log line has its trace id', async () => {
    const otlp = await receiver();
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _e, cb) {
          for (const l of chunk.toString('utf8').split('\n'))
            if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
          cb();
        },
      }),
    );
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    let app: Awaited<ReturnType<typeof createApp>> | undefined;
    try {
      app = await createApp({
        config: {
          port: 0,
          host: '127.0.0.1',
          dataDir: path.join(tempDir(), 'data'),
          databaseUrl: null,
          engine: null,
          production: false,
        },
        embedder,
        adjudicator: new HeuristicAdjudicator(),
        logger,
      });
      await app.listen();
      const actor = await actorIn(app.store, 'tracing');
      const story = await passportStory(coreOf(app.store), actor);
      const post = (beliefId: string, headers: Record<string, string> = {}) =>
        fetch(`${app!.url()}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${actor.token}`, ...headers },
          body: JSON.stringify({
            query: RETRACT,
            variables: { i: { beliefId: gid('Belief', beliefId), reason: 'forged' } },
            operationName: 'retractBelief',
          }),
        }).then(
          (r) =>
            r.json() as Promise<{
              data?: { retractBelief: { id: string } };
              errors?: Array<{ extensions: { code: string } }>;
            }>,
        );
      const ok = await post(story.passport.id);
      expect(ok.errors).toBeUndefined();
      await expectInvariants(app.store);

      // A statement that fails: the receipts' table is gone, so the next retraction is an unexpected error.
      await sql`ALTER TABLE retractions RENAME TO retractions_away`.execute(app.store.db);
      const other = await passportStory(coreOf(app.store), actor, 'customer:7744');
      // A caller's trace continues here (W3C traceparent).
      const bad = await post(other.passport.id, { traceparent: `00-${CALLER.traceId}-${CALLER.spanId}-01` });
      expect(bad.errors?.[0]?.extensions.code).toBe('INTERNAL_SERVER_ERROR');
      await sql`ALTER TABLE retractions_away RENAME TO retractions`.execute(app.store.db);
      await app.close();
      app = undefined;

      expect([...otlp.contentTypes]).toEqual(['application/json']);
      const spans = otlp.spans;
      const ops = spans.filter((s) => s.name === 'mutation retractBelief');
      expect(ops).toHaveLength(2);
      const [first, second] = ops;
      for (const [op, failed] of [
        [first!, false],
        [second!, true],
      ] as const) {
        const inTrace = spans.filter((s) => s.traceId === op.traceId);
        const httpSpan = inTrace.find((s) => s.spanId === op.parentSpanId)!;
        expect(httpSpan).toMatchObject({ name: 'POST /graphql', kind: 2 });
        expect(httpSpan.parentSpanId ?? '').toBe(failed ? CALLER.spanId : '');
        if (failed) expect(op.traceId).toBe(CALLER.traceId);
        const resolver = inTrace.find((s) => s.parentSpanId === op.spanId)!;
        expect(resolver.name).toBe('Mutation.retractBelief');
        const statements = inTrace.filter((s) => s.parentSpanId === resolver.spanId);
        expect(
          statements.every(
            (s) => s.kind === 3 && attr(s, 'db.system.name') === 'postgresql' && attr(s, 'db.query.text'),
          ),
        ).toBe(true);
        if (!failed) {
          expect(statements.map((s) => s.name)).toEqual(
            expect.arrayContaining(['START', 'INSERT retractions', 'INSERT events', 'UPDATE effects', 'COMMIT']),
          );
          expect(statements.filter((s) => s.status?.code === 2)).toEqual([]);
          expect(op.status?.code ?? 0).not.toBe(2);
        } else {
          const broken = statements.filter((s) => s.status?.code === 2);
          expect(broken.map((s) => s.name)).toContain('INSERT retractions');
          expect(op.status?.code).toBe(2);
          const logged = lines.find((l) => l.msg === 'unexpected error (masked)');
          expect(logged).toMatchObject({ trace_id: op.traceId });
        }
      }
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      delete process.env.OTEL_BSP_SCHEDULE_DELAY;
      await app?.close();
      await otlp.close();
    }
  });
});
