import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLObjectType } from 'graphql';
import { schema } from '../../src/api/schema';
import { SCOPES, type Scope } from '../../src/agent/scopes';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { type Fixture, fleetFixture } from '../support/api-fixture';
import { codes, gql, subscribeSse, subscribeWs, type WireError } from '../support/api-client';
import { documentedScopes } from '../support/api-docs';
import { OPERATIONS, type Operation, grantingScopes } from '../support/api-operations';
import { type ApiServer, agentWith, NON_ADMIN_SCOPES, startApiServer, tableDigests } from '../support/api-server';

/** What the code declares for a root field: 'authenticated', or every scope that grants it. */
function declaredScopes(type: GraphQLObjectType, field: string): 'authenticated' | string[] {
  const auth = (type.getFields()[field]!.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions
    ?.authScopes;
  const found: string[] = [];
  let authenticated = false;
  const walk = (a: unknown) => {
    if (!a || typeof a !== 'object') return;
    for (const [k, v] of Object.entries(a as Record<string, unknown>)) {
      if (k === 'scope') found.push(String(v));
      else if (k === 'authenticated' && v === true) authenticated = true;
      else if (k === '$any') walk(v);
      else throw new Error(`${type.name}.${field}: unexpected authScopes key ${k}`);
    }
  };
  walk(auth);
  if (!auth) throw new Error(`${type.name}.${field} declares no authScopes`);
  return authenticated && found.length === 0 ? 'authenticated' : found.sort();
}

function rootFields(): Array<{ root: Operation['root']; field: string; type: GraphQLObjectType }> {
  const out: Array<{ root: Operation['root']; field: string; type: GraphQLObjectType }> = [];
  for (const [root, type] of [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ] as const) {
    for (const field of Object.keys(type!.getFields())) out.push({ root, field, type: type! });
  }
  return out;
}

/**
 * Calls an operation over HTTP (queries, mutations) or over both graphql-ws and SSE (the subscription); returns every
 * error seen. A socket without a valid token is closed 4403 before connection_ack (src/server/ws-auth.ts): `wsClosed`.
 */
async function call(
  s: ApiServer,
  o: Operation,
  fx: Fixture,
  token: string | null,
): Promise<{ errors: WireError[]; data: unknown; wsClosed?: number }> {
  if (o.root !== 'subscription') {
    const r = await gql(s.http, o.document, o.variables(fx), token);
    return { errors: r.errors ?? [], data: r.data };
  }
  const ws = subscribeWs(s.ws, o.document, o.variables(fx), token);
  const sse = subscribeSse(s.http, o.document, o.variables(fx), token);
  try {
    await ws.until(
      (c) => c.errors.length > 0 || c.events.length > 0 || c.failures.length > 0,
      10_000,
      'the websocket subscription to answer',
    );
    await sse.until((c) => c.errors.length > 0 || c.events.length > 0, 10_000, 'the SSE subscription to answer');
    const closed = ws.failures.map((f) => (f as { code?: number }).code).find((c) => typeof c === 'number');
    if (closed !== undefined) return { errors: sse.errors, data: null, wsClosed: closed };
    // The same refusal on both transports.
    expect(codes(sse.errors)).toEqual(codes(ws.errors));
    return { errors: ws.errors, data: ws.events[0] ?? null };
  } finally {
    await ws.close();
    await sse.close();
  }
}

describe.each(engines())('scope matrix on %s', (engine) => {
  let s: ApiServer;
  let fx: Fixture;
  const tokens = new Map<string, string>();
  /** A token holding exactly `scopes` in fleet acme (one agent per distinct set). */
  async function tokenWith(scopes: readonly Scope[]): Promise<string> {
    const key = [...scopes].sort().join(',');
    if (!tokens.has(key)) tokens.set(key, (await agentWith(s.db.store, 'acme', scopes, 'scoped')).token);
    return tokens.get(key)!;
  }

  beforeAll(async () => {
    s = await startApiServer(engine);
    const actor = await actorIn(s.db.store, 'acme', 'owner');
    fx = await fleetFixture(s.core, actor, 'acme-fx');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('the table lists every root field of the schema exactly once, with the scopes the code declares', () => {
    const fields = rootFields();
    expect(OPERATIONS.map((o) => `${o.root}.${o.field}`).sort()).toEqual(
      fields.map((f) => `${f.root}.${f.field}`).sort(),
    );
    expect(new Set(OPERATIONS.map((o) => o.field)).size).toBe(OPERATIONS.length);
    for (const f of fields) {
      const o = OPERATIONS.find((x) => x.field === f.field && x.root === f.root)!;
      expect({ field: f.field, scopes: declaredScopes(f.type, f.field) }).toEqual({
        field: f.field,
        scopes: o.scopes === 'authenticated' ? 'authenticated' : [...o.scopes].sort(),
      });
      // Every declared scope is a real scope, and the table's nullability matches the schema's.
      if (o.scopes !== 'authenticated') for (const sc of o.scopes) expect(SCOPES).toContain(sc);
      // String(type) is its SDL form ("Belief", "Belief!"); graphql's own predicates would trip over the
      // second copy of graphql-js a test runner can load (see src/server/yoga.ts).
      const t = String(f.type.getFields()[f.field]!.type);
      expect({ field: f.field, nullable: !t.endsWith('!') }).toEqual({ field: f.field, nullable: o.nullable });
    }
    // The contract's scopes are DESIGN's list.
    expect([...SCOPES].sort()).toEqual([
      'admin',
      'beliefs:read',
      'beliefs:retract',
      'beliefs:write',
      'contradictions:adjudicate',
      'effects:execute',
      'effects:propose',
      'receipts:read',
    ]);
  });

  it("docs/api.md's scope table names exactly the schema's root fields, each with the scopes the server enforces", () => {
    const readme = documentedScopes();
    expect([...readme.keys()].sort()).toEqual(
      rootFields()
        .map((f) => f.field)
        .sort(),
    );
    for (const o of OPERATIONS) {
      expect({ field: o.field, scopes: readme.get(o.field) }).toEqual({
        field: o.field,
        scopes: o.scopes === 'authenticated' ? 'authenticated' : [...o.scopes].sort(),
      });
    }
  });

  describe.each(OPERATIONS.filter((o) => o.scopes !== 'authenticated').map((o) => [o.field, o] as const))(
    '%s',
    (_name, o) => {
      it('a token holding every other scope is FORBIDDEN and nothing is written', async () => {
        const lacking = NON_ADMIN_SCOPES.filter((x) => !grantingScopes(o).includes(x));
        const token = await tokenWith(lacking);
        const before = await tableDigests(s.db.store);
        const r = await call(s, o, fx, token);
        expect(codes(r.errors)).toEqual(['FORBIDDEN']);
        // The refusal names the scopes that would allow the operation, in words and in extensions.requiredScopes.
        const wanted = [
          ...new Set(grantingScopes(o).filter((x) => x !== 'admin' || o.scopes.includes('admin'))),
        ].sort();
        expect([...(r.errors[0]!.extensions?.requiredScopes as string[])].sort()).toEqual(wanted);
        for (const sc of wanted) expect(r.errors[0]!.message).toContain(sc);
        expect(r.errors[0]!.message).toMatch(
          new RegExp(`^the (query|mutation|subscription) ${o.field} needs the scope `),
        );
        if (o.root !== 'subscription')
          expect(r.data === null || (r.data as Record<string, unknown>)[o.field] === null).toBe(true);
        expect(await tableDigests(s.db.store)).toEqual(before);
      });
    },
  );

  it.each(OPERATIONS.map((o) => [o.field, o] as const))(
    '%s: no token and a forged token are UNAUTHENTICATED and nothing is written',
    async (_name, o) => {
      const before = await tableDigests(s.db.store);
      const none = await call(s, o, fx, null);
      expect(codes(none.errors)).toEqual(['UNAUTHENTICATED']);
      expect(none.errors[0]!.message).toMatch(/bearer token is required/);
      const forged = await call(s, o, fx, `rt_${randomBytes(32).toString('base64url')}`);
      expect(codes(forged.errors)).toEqual(['UNAUTHENTICATED']);
      expect(forged.errors[0]!.message).toMatch(/not valid/);
      // Over graphql-ws neither gets as far as an operation: the socket is closed 4403 (Forbidden) before connection_ack.
      expect([none.wsClosed, forged.wsClosed]).toEqual(
        o.root === 'subscription' ? [4403, 4403] : [undefined, undefined],
      );
      expect(await tableDigests(s.db.store)).toEqual(before);
    },
  );

  it('each granting scope alone is enough for its operation (the table is not stricter than the server)', async () => {
    // Order so that every call still finds its object in a state it accepts; retraction last.
    const ordered = [
      ...OPERATIONS.filter((o) => o.field !== 'retractBelief' && o.root !== 'subscription'),
      OPERATIONS.find((o) => o.field === 'retractBelief')!,
    ];
    const sub = OPERATIONS.find((o) => o.root === 'subscription')!;
    const subscriber = subscribeWs(s.ws, sub.document, {}, await tokenWith(['receipts:read']));
    // Let the subscription reach the server before the retraction at the end.
    await new Promise((r) => setTimeout(r, 500));
    const before = await tableDigests(s.db.store);
    for (const o of ordered) {
      const grants: Scope[][] =
        o.scopes === 'authenticated' ? [['receipts:read'], ['beliefs:write']] : o.scopes.map((x) => [x]);
      for (const g of o.root === 'query' ? grants : grants.slice(0, 1)) {
        const r = await call(s, o, fx, await tokenWith(g));
        expect({ field: o.field, scopes: g, errors: r.errors }).toEqual({ field: o.field, scopes: g, errors: [] });
        expect((r.data as Record<string, unknown>)[o.field] ?? null).not.toBeNull();
      }
    }
    // claimEffect found a ready refund, and the retraction reached the receipts:read subscriber.
    await subscriber.until(
      (c) =>
        c.events.some(
          (e) =>
            (e as { retractionEvents: { __typename: string } }).retractionEvents.__typename === 'RetractionCommitted',
        ),
      10_000,
      'RetractionCommitted',
    );
    expect(subscriber.errors).toEqual([]);
    await subscriber.close();
    // The digests do see writes (so the refusals above, which left them equal, wrote nothing).
    const after = await tableDigests(s.db.store);
    const changed = Object.keys(after)
      .filter((t) => after[t] !== before[t])
      .sort();
    expect(changed).toEqual(
      expect.arrayContaining([
        'agents',
        'beliefs',
        'contradictions',
        'effect_kinds',
        'effects',
        'events',
        'retractions',
        'reversals',
      ]),
    );
  });
});
