import { afterAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/server/app';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { gid } from '../../src/kernel/ids';
import { embedder, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { digestTables } from '../support/digest';
import { graphql, RetractClient } from '../../src/client';

interface Attack {
  name: string;
  body: string | Uint8Array;
  token?: string | null;
  contentType?: string;
}

const q = (query: string, variables?: unknown) => JSON.stringify({ query, variables });

/** At least 200 hostile requests. None may write anything; each must get a clear, non-masked error. */
function attacks(
  tokens: { all: string; readOnly: string; other: string },
  ids: { belief: string; effect: string; otherFleetBelief: string },
): Attack[] {
  const out: Attack[] = [];
  const add = (
    name: string,
    body: string | Uint8Array,
    token: string | null = tokens.all,
    contentType = 'application/json',
  ) => out.push({ name, body, token, contentType });

  // Malformed JSON and bodies that are not GraphQL requests.
  for (const b of [
    '{',
    '}',
    'null',
    '[]',
    '"query"',
    '{"query": 5}',
    '{"query": null}',
    '{"query": "{"}',
    '{"query": "mutation {"}',
    '{"variables": {}}',
    '{"query": "{ viewer { id } }", "variables": "x"}',
    '{"query": "{ viewer { id } }", "extensions": 7}',
    'query { viewer { id } }',
    '\u0000',
    '{"query":"\\u0000"}',
  ]) {
    add(`malformed body ${JSON.stringify(b).slice(0, 30)}`, b);
  }
  add('invalid utf-8', new Uint8Array([0x7b, 0x22, 0x71, 0xff, 0xfe, 0x22, 0x7d]));
  add(
    'form-encoded body',
    'query=%7B%20viewer%20%7B%20id%20%7D%20%7D',
    tokens.all,
    'application/x-www-form-urlencoded',
  );

  // Wrong types, missing and extra fields, on every write.
  const assert = 'mutation($input: AssertBeliefInput!) { assertBelief(input: $input) { __typename } }';
  const base = { claimKey: 'h:1/ok', statement: 'a statement' };
  const badAsserts: unknown[] = [
    {},
    { claimKey: 'h:1/x' },
    { statement: 's' },
    { ...base, claimKey: 5 },
    { ...base, statement: ['a'] },
    { ...base, derivedFrom: 'x' },
    { ...base, derivedFrom: [1, 2] },
    { ...base, extra: true },
    { ...base, claimKey: '' },
    { ...base, claimKey: ' ' },
    { ...base, claimKey: 'has space' },
    { ...base, claimKey: 'x'.repeat(257) },
    { ...base, statement: '' },
    { ...base, statement: 's'.repeat(4001) },
    { ...base, evidence: 'e'.repeat(4001) },
    { ...base, statement: 'nul \u0000 byte' },
    { ...base, statement: 'lone \ud800 surrogate' },
    { ...base, claimKey: '\u202Eevil' },
    { ...base, claimKey: 'rtl\u200Fmark' },
    { ...base, claimKey: "x'; DROP TABLE beliefs;--" },
    { ...base, claimKey: 'a%_\\' },
    { ...base, claimKey: '../../etc/passwd' },
    { ...base, value: { big: 'v'.repeat(17_000) } },
    { ...base, derivedFrom: ['!!!'] },
    { ...base, derivedFrom: [gid('Effect', ids.effect.split(':')[0]!)] },
    { ...base, derivedFrom: [Buffer.from('Belief:abc').toString('base64')] },
    { ...base, derivedFrom: [gid('Belief', '999999999')] },
    { ...base, derivedFrom: [ids.otherFleetBelief] },
    { ...base, derivedFrom: Array.from({ length: 65 }, (_, i) => gid('Belief', i + 1)) },
    { ...base, basedOn: 'forged' },
    { ...base, basedOn: Buffer.from('{"v":1,"f":"other","s":"1:2:"}').toString('base64url') },
    { ...base, claimKey: '🙂'.repeat(200) },
  ];
  badAsserts.forEach((input, i) => add(`assertBelief bad input #${i}`, q(assert, { input })));
  // The same writes with an under-scoped, a forged and no token.
  for (const [label, tok] of [
    ['read-only token', tokens.readOnly],
    ['forged token', 'rt_forged'],
    ['no token', null],
    ['malformed header', 'a b c'],
  ] as const) {
    add(`assertBelief with ${label}`, q(assert, { input: base }), tok);
    add(
      `retractBelief with ${label}`,
      q('mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }', {
        i: { beliefId: ids.belief, reason: 'x' },
      }),
      tok,
    );
    add(
      `createAgent with ${label}`,
      q('mutation { createAgent(input: {name: "m", scopes: ["admin"]}) { token } }'),
      tok,
    );
    add(
      `registerEffectKind with ${label}`,
      q('mutation { registerEffectKind(input: {kind: "evil", reversible: true}) { kind } }'),
      tok,
    );
  }

  const propose = 'mutation($input: ProposeEffectInput!) { proposeEffect(input: $input) { __typename } }';
  const effBase = { kind: 'refund', supportedBy: [ids.belief], amount: { amountMinor: 100, currency: 'USD' } };
  const badProposals: unknown[] = [
    { ...effBase, amount: { amountMinor: -1, currency: 'USD' } },
    { ...effBase, amount: { amountMinor: 0, currency: 'USD' } },
    { ...effBase, amount: { amountMinor: 1.5, currency: 'USD' } },
    { ...effBase, amount: { amountMinor: '100', currency: 'USD' } },
    { ...effBase, amount: { amountMinor: 2 ** 53, currency: 'USD' } },
    { ...effBase, amount: { amountMinor: 1e300, currency: 'USD' } },
    { ...effBase, amount: { amountMinor: 100, currency: 'usd' } },
    { ...effBase, amount: { amountMinor: 100, currency: 'US' } },
    { ...effBase, amount: { amountMinor: 100, currency: 'USDD' } },
    { ...effBase, amount: { amountMinor: 100 } },
    { ...effBase, kind: 'unregistered' },
    { ...effBase, kind: 'Refund!' },
    { ...effBase, supportedBy: [] },
    { ...effBase, supportedBy: [ids.otherFleetBelief] },
    { ...effBase, idempotencyKey: '' },
    { ...effBase, idempotencyKey: 'k'.repeat(201) },
    { ...effBase, payload: { p: 'x'.repeat(17_000) } },
    { ...effBase, supportedBy: [gid('Reversal', 1)] },
  ];
  badProposals.forEach((input, i) =>
    add(
      `proposeEffect bad input #${i}`,
      q(propose, { input: { idempotencyKey: `hostile-bad-${i}`, ...(input as object) } }),
    ),
  );

  // Ids of every sort on every id-taking operation.
  const badIds = [
    '',
    '!!!',
    'QmVsaWVmOg==',
    Buffer.from('Belief:-1').toString('base64'),
    Buffer.from('Belief:1e9').toString('base64'),
    gid('Belief', '999999999'),
    gid('Agent', 1),
    ids.otherFleetBelief,
    'x'.repeat(5000),
    "1' OR '1'='1",
  ];
  for (const id of badIds) {
    add(
      `retractBelief id ${id.slice(0, 12)}`,
      q('mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }', { i: { beliefId: id, reason: 'r' } }),
    );
    add(
      `addJustification id ${id.slice(0, 12)}`,
      q('mutation($i: AddJustificationInput!) { addJustification(input: $i) { id } }', {
        i: { beliefId: ids.belief, premises: [id] },
      }),
    );
    add(
      `completeEffect id ${id.slice(0, 12)}`,
      q('mutation($i: CompleteEffectInput!) { completeEffect(input: $i) { id } }', {
        i: { effectId: id, externalRef: 'r' },
      }),
    );
    add(
      `failEffect id ${id.slice(0, 12)}`,
      q('mutation($i: FailEffectInput!) { failEffect(input: $i) { id } }', { i: { effectId: id, reason: 'r' } }),
    );
    add(
      `confirmReversal id ${id.slice(0, 12)}`,
      q('mutation($i: ConfirmReversalInput!) { confirmReversal(input: $i) { id } }', {
        i: { reversalId: id, providerRef: 'p' },
      }),
    );
    add(
      `adjudicate id ${id.slice(0, 12)}`,
      q('mutation($id: ID!) { adjudicateContradiction(contradictionId: $id) { id } }', { id }),
    );
    add(`belief id ${id.slice(0, 12)}`, q('query($id: ID!) { belief(id: $id) { id } }', { id }));
    if (!id.startsWith(gid('Agent', 1)))
      add(`node id ${id.slice(0, 12)}`, q('query($id: ID!) { node(id: $id) { id } }', { id }));
    add(
      `previewRetraction id ${id.slice(0, 12)}`,
      q('query($id: ID!) { previewRetraction(beliefId: $id) { totals { beliefsRetracted } } }', { id }),
    );
  }

  // Query shapes: deep, wide, aliased, batched, introspection abuse, unknown fields.
  let deep = 'id';
  for (let i = 0; i < 40; i++) deep = `dependents { edges { node { ${deep} } } }`;
  add('deep query', q(`{ beliefs { edges { node { ${deep} } } } }`));
  add(
    'deep introspection',
    q(
      `{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } } } }`,
    ),
  );
  add('aliased', q(`{ ${Array.from({ length: 200 }, (_, i) => `a${i}: viewer { id }`).join(' ')} }`));
  add(
    'aliased writes',
    q(
      `mutation { ${Array.from({ length: 50 }, (_, i) => `a${i}: registerEffectKind(input: {kind: "k${i}", reversible: true}) { kind }`).join(' ')} }`,
    ),
  );
  // Wide inside a nested page (a flat page of 500 asking its three fields 300 times over is within the cost limit:
  // the fields merge into three).
  add(
    'wide',
    q(
      `{ beliefs(first: 500) { edges { node { dependents(first: 100) { edges { node { ${Array.from({ length: 300 }, () => 'id claimKey statement').join(' ')} } } } } } } }`,
    ),
  );
  add(
    'costly',
    q(
      `{ beliefs(first: 500) { edges { node { dependents(first: 500) { edges { node { dependents(first: 500) { edges { node { effects { supportedBy { effects { id } } } } } } } } } } } } }`,
    ),
  );
  add('many directives', q(`{ viewer { id ${Array.from({ length: 60 }, () => '@include(if: true)').join(' ')} } }`));
  add('batched over the limit', JSON.stringify(Array.from({ length: 10 }, () => ({ query: '{ viewer { id } }' }))));
  add(
    'batched writes over the limit',
    JSON.stringify(
      Array.from({ length: 8 }, (_, i) => ({
        query: `mutation { registerEffectKind(input: {kind: "b${i}", reversible: true}) { kind } }`,
      })),
    ),
  );
  add('unknown field', q('{ viewer { password } }'));
  add('unknown root', q('mutation { dropEverything }'));
  add('first above the maximum', q('{ beliefs(first: 501) { totalCount } }'));
  add('first negative', q('{ beliefs(first: -1) { totalCount } }'));
  add('bad cursor', q('{ beliefs(after: "AAAA") { totalCount } }'));
  add('search empty', q('{ search(input: {text: ""}) { snapshot } }'));
  add('search huge k', q('{ search(input: {text: "x", k: 100000}) { snapshot } }'));
  add('subscription over POST without SSE', q('subscription { retractionEvents(after: "garbage") { cursor } }'));
  add('operation name mismatch', JSON.stringify({ query: 'query A { viewer { id } }', operationName: 'B' }));
  add('two anonymous operations', q('{ viewer { id } } { viewer { name } }'));
  add('fragment cycle', q('{ viewer { ...A } } fragment A on Agent { ...B } fragment B on Agent { ...A }'));
  add('mutation variables type confusion', q('mutation($i: String!) { retractBelief(input: $i) { id } }', { i: 'x' }));
  add(
    'resolve with ESCALATE',
    q('mutation($i: ResolveContradictionInput!) { resolveContradiction(input: $i) { id } }', {
      i: { contradictionId: gid('Contradiction', 1), verdict: 'ESCALATE', rationale: 'x' },
    }),
  );
  add('createAgent unknown scope', q('mutation { createAgent(input: {name: "x", scopes: ["root"]}) { token } }'));
  add(
    'createAgent in another fleet',
    q('mutation { createAgent(input: {name: "x", scopes: ["admin"], fleet: "victim"}) { token } }'),
  );
  add('createAgent no scopes', q('mutation { createAgent(input: {name: "x", scopes: []}) { token } }'));
  add(
    'createAgent long name',
    q('mutation($n: String!) { createAgent(input: {name: $n, scopes: ["beliefs:read"]}) { token } }', {
      n: 'n'.repeat(65),
    }),
  );
  add('claimEffect bad kind', q('mutation { claimEffect(input: {kinds: ["DROP TABLE"]}) { id } }'));
  add('10 MB string', q(assert, { input: { ...base, statement: 'x'.repeat(10 * 1024 * 1024) } }));
  add('just over the body limit', q(assert, { input: { ...base, statement: 'y'.repeat(1024 * 1024) } }));
  return out;
}

describe.each(engines())('hostile input on %s', (engine) => {
  let t: TestDb;
  let app: App;
  let url: string;
  let list: Attack[];
  storeSuite(engine, {}, async (s) => {
    t = s.t;
    app = await createApp({ store: t.store, embedder, config: { port: 0, host: '127.0.0.1', logLevel: 'fatal' } });
    await app.listen();
    url = `${app.url()}/graphql`;
    const all = await createAgentDirect(t.store, { fleet: 'h', name: 'all', scopes: SCOPES });
    const readOnly = await createAgentDirect(t.store, { fleet: 'h', name: 'reader', scopes: ['beliefs:read'] });
    const other = await createAgentDirect(t.store, { fleet: 'other', name: 'other', scopes: SCOPES });
    const c = new RetractClient({ url, token: all.token });
    await c.request(graphql('mutation { registerEffectKind(input: {kind: "refund", reversible: true}) { kind } }'));
    const b = await c.assertBelief({ claimKey: 'h:1/ok', statement: 'a statement', value: 1 });
    const belief = (b as { belief: { id: string } }).belief.id;
    const e = await c.proposeEffect({
      kind: 'refund',
      supportedBy: [belief],
      idempotencyKey: 'hostile-1',
      amount: { amountMinor: 100, currency: 'USD' },
    });
    const effect = (e as { effect: { id: string } }).effect.id;
    const o = new RetractClient({ url, token: other.token });
    const ob = await o.assertBelief({ claimKey: 'h:1/ok', statement: 'other fleet', value: 2 });
    list = attacks(
      { all: all.token, readOnly: readOnly.token, other: other.token },
      { belief, effect, otherFleetBelief: (ob as { belief: { id: string } }).belief.id },
    );
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers at least 200 hostile requests each with a clear error, writes nothing, and keeps serving', async () => {
    expect(list.length).toBeGreaterThanOrEqual(200);
    const before = await digestTables(t.store);
    const unclear: string[] = [];
    const written: string[] = [];
    for (const a of list) {
      const headers: Record<string, string> = { 'content-type': a.contentType ?? 'application/json' };
      if (a.token) headers.authorization = a.token.includes(' ') ? a.token : `Bearer ${a.token}`;
      const res = await fetch(url, { method: 'POST', headers, body: a.body as BodyInit });
      const text = await res.text();
      let body: { errors?: Array<{ message?: string; extensions?: { code?: string } }>; data?: unknown } | null = null;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      const errors = Array.isArray(body)
        ? body.flatMap((b: { errors?: unknown[] }) => b.errors ?? [])
        : (body?.errors ?? []);
      const clear =
        res.status >= 400 ||
        (errors.length > 0 &&
          (errors as Array<{ message?: string }>).every((e) => typeof e.message === 'string' && e.message.length > 0));
      const masked = /Unexpected error/.test(text) || res.status >= 500;
      if (!clear || masked) unclear.push(`${a.name}: HTTP ${res.status} ${text.slice(0, 200)}`);
      if (!masked && res.status < 300 && errors.length === 0) written.push(a.name);
    }
    expect(unclear).toEqual([]);
    expect(written).toEqual([]);
    expect(await digestTables(t.store)).toEqual(before);
    const health = await fetch(`${app.url()}/health`);
    expect(health.status).toBe(200);
    const viewer = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${list.find((x) => x.name === 'aliased')!.token!}`,
      },
      body: q('{ viewer { name } }'),
    });
    expect(await viewer.json()).toEqual({ data: { viewer: { name: 'all' } } });
    await expectInvariants(t.store);
  });
});
