import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/agent/scopes';
import { codes, gql } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';
import { engines, expectInvariants } from '../support/engines';

const INTROSPECT = '{ __schema { queryType { name } } }';
const TYPE = '{ __type(name: "Belief") { name } }';

/** A POST with a raw body and no token; the answer's status, size and parsed body. */
async function postRaw(url: string, body: BodyInit, contentType = 'application/json') {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': contentType, accept: 'application/graphql-response+json' },
    body,
  });
  const text = await res.text();
  return {
    status: res.status,
    bytes: Buffer.byteLength(text),
    body: JSON.parse(text) as { errors?: Array<{ message: string; extensions?: Record<string, unknown> }> },
  };
}

/**
 * The edges a hostile client probes first, on a production server (NODE_ENV=production): a malformed
 * body is answered without echoing it, every answer's code is one of the documented codes, a 404 has
 * one too, introspection needs a token, and no error suggests names from the schema. The dashboard
 * cannot be framed.
 */
describe.each(engines())('the edges of a production server on %s', (engine) => {
  let s: ApiServer;
  let dev: ApiServer;
  let open: ApiServer;
  let agent: TestAgent;
  const dashboard = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-edges-dashboard-'));

  beforeAll(async () => {
    fs.mkdirSync(path.join(dashboard, 'assets'));
    fs.writeFileSync(path.join(dashboard, 'index.html'), '<!doctype html><title>dashboard</title>');
    fs.writeFileSync(path.join(dashboard, 'assets/app.js'), 'export {};');
    s = await startApiServer(engine, { config: { production: true, dashboardDir: dashboard } });
    dev = await startApiServer(engine, { db: s.db, config: { production: false } });
    open = await startApiServer(engine, { db: s.db, config: { production: true, anonymousIntrospection: true } });
    agent = await agentWith(s.db.store, 'edges', SCOPES, 'edges');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await dev?.close();
    await open?.close();
    await s?.close();
    fs.rmSync(dashboard, { recursive: true, force: true });
  });

  it('a 1 MB malformed body ("{" then NULs) without a token is a small 400 that does not echo it', async () => {
    const body = new Uint8Array(1_000_000);
    body[0] = 0x7b;
    const r = await postRaw(s.http, body);
    expect(r.status).toBe(400);
    expect(r.bytes).toBeLessThan(1_000);
    expect(r.body.errors).toEqual([
      { message: 'POST body sent invalid JSON.', extensions: { code: 'BAD_USER_INPUT' } },
    ]);
  });

  it('requests GraphQL Yoga refuses carry documented codes: a body that is not an object, no query, a mutation over GET', async () => {
    for (const b of ['null', '"query"', '{}', '{"query": 5}']) {
      const r = await postRaw(s.http, b);
      expect({ body: b, codes: codes(r.body.errors as never) }).toEqual({ body: b, codes: ['BAD_USER_INPUT'] });
    }
    const get = await fetch(`${s.http}?query=${encodeURIComponent('mutation { __typename }')}`, {
      headers: { accept: 'application/json', authorization: `Bearer ${agent.token}` },
    });
    expect(get.status).toBe(405);
    expect(codes(((await get.json()) as { errors: never }).errors)).toEqual(['BAD_USER_INPUT']);
  });

  it('a 404 answers with a code, anywhere', async () => {
    for (const p of ['/nope', '/graphql/x', '/dashboard/missing.js', '/dashboard/../../etc/passwd']) {
      const res = await fetch(`${s.base}${p}`);
      expect(res.status, p).toBe(404);
      expect(
        ((await res.json()) as { errors: Array<{ extensions: { code: string } }> }).errors.map(
          (e) => e.extensions.code,
        ),
        p,
      ).toEqual(['NOT_FOUND']);
    }
  });

  it('introspection needs a token in production (UNAUTHENTICATED, nothing answered); with one it answers; __typename is not introspection', async () => {
    for (const q of [
      INTROSPECT,
      TYPE,
      `{ a: __typename ...F } fragment F on Query { __schema { queryType { name } } }`,
    ]) {
      const anonymous = await gql(s.http, q);
      expect({ q, codes: codes(anonymous.errors), data: anonymous.data ?? null }).toEqual({
        q,
        codes: ['UNAUTHENTICATED'],
        data: null,
      });
    }
    const forged = await gql(s.http, INTROSPECT, {}, 'rt_forged_token_0123456789');
    expect(codes(forged.errors)).toEqual(['UNAUTHENTICATED']);
    expect((await gql(s.http, INTROSPECT, {}, agent.token)).data).toEqual({
      __schema: { queryType: { name: 'Query' } },
    });
    expect((await gql(s.http, '{ __typename }')).data).toEqual({ __typename: 'Query' });
    // In development (and with RETRACT_ANONYMOUS_INTROSPECTION=true) a tool may read the schema without a token.
    expect((await gql(dev.http, INTROSPECT)).data).toEqual({ __schema: { queryType: { name: 'Query' } } });
    expect((await gql(open.http, INTROSPECT)).data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });

  it('no error suggests a name from the schema: fields, arguments, enum values in a literal or a variable', async () => {
    const probes: Array<[string, Record<string, unknown>]> = [
      ['{ belif(id: "1") { id } }', {}],
      ['{ beliefs(frist: 1) { totalCount } }', {}],
      ['{ reversals(first: 1, status: OWE) { totalCount } }', {}],
      ['query($s: ReversalStatus) { reversals(first: 1, status: $s) { totalCount } }', { s: 'OWE' }],
      ['{ beliefs(first: 1) { edges { node { statment } } } }', {}],
    ];
    for (const [q, v] of probes) {
      for (const token of [agent.token, null]) {
        const r = await gql(s.http, q, v, token);
        expect(r.errors?.length, q).toBeGreaterThan(0);
        for (const e of r.errors!) expect(e.message, q).not.toMatch(/Did you mean|OWED|belief\b|first|statement/);
      }
      // Development keeps them: they help whoever writes the query.
      expect((await gql(dev.http, q, v, agent.token)).errors!.map((e) => e.message).join(' '), q).toMatch(
        /Did you mean/,
      );
    }
  });

  it("the dashboard sends a strict Content-Security-Policy with frame-ancestors 'none', and X-Frame-Options DENY", async () => {
    for (const p of ['/dashboard/', '/dashboard/assets/app.js']) {
      const res = await fetch(`${s.base}${p}`);
      expect(res.status, p).toBe(200);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, p).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
      expect(csp, p).toMatch(/(^|; )default-src 'none'(;|$)/);
      expect(csp, p).toMatch(/(^|; )script-src 'self'(;|$)/);
      expect(csp, p).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(res.headers.get('x-frame-options'), p).toBe('DENY');
      expect(res.headers.get('x-content-type-options'), p).toBe('nosniff');
    }
  });
});
