import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { registerEffectKind } from '../../src/effect/effect.service';
import { gid } from '../../src/kernel/ids';
import { gql, gqlRaw, type GqlResponse, type WireError } from '../support/api-client';
import { type ApiServer, startApiServer, tableDigests } from '../support/api-server';
import { coreOf, engines, expectInvariants } from '../support/engines';
import { belief } from '../support/story';

/**
 * Issue 29, Broken 5 and the lenient-input Rough items: client input that reached the database and answered
 * 500, or was accepted in a form that could pass for something else. Each refusal is one error with
 * extensions.code naming the field and the rule, and writes nothing.
 */
const FLEET = 'rules';
const ASSERT =
  'mutation($input: AssertBeliefInput!) { assertBelief(input: $input) { __typename ... on BeliefAsserted { belief { id claimKey } } ... on ClaimChangedSinceRead { claimKey } } }';
const PROPOSE =
  'mutation($input: ProposeEffectInput!) { proposeEffect(input: $input) { __typename ... on EffectProposed { effect { id } } } }';
const SEARCH =
  'query($at: DateTime) { search(input: { text: "the passport is authentic", k: 3, asOf: $at }) { snapshot hits { score } } }';
const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe.each(engines())('input rules, second hostile pass, on %s', (engine) => {
  let s: ApiServer;
  let token: string;
  let premise: string;

  const one = (r: GqlResponse): WireError => {
    expect(r.errors, JSON.stringify(r.errors)).toHaveLength(1);
    expect(r.status, JSON.stringify(r.errors)).not.toBe(500);
    return r.errors![0]!;
  };
  /** BAD_USER_INPUT naming `field`, its message starting with the field and matching `rule`. */
  const refused = (r: GqlResponse, field: string, rule: RegExp) => {
    const e = one(r);
    expect(e.extensions, e.message).toMatchObject({ code: 'BAD_USER_INPUT', field });
    expect(e.message.startsWith(`${field}: `), e.message).toBe(true);
    expect(e.message).toMatch(rule);
  };
  /** Runs `body` and checks that no table changed and the invariants hold. */
  const writesNothing = async (body: () => Promise<void>) => {
    const before = await tableDigests(s.db.store);
    await body();
    expect(await tableDigests(s.db.store)).toEqual(before);
    await expectInvariants(s.db.store);
  };

  beforeAll(async () => {
    s = await startApiServer(engine, { config: { logLevel: 'fatal' } });
    const a = await createAgentDirect(s.db.store, { fleet: FLEET, name: 'rules', scopes: SCOPES });
    token = a.token;
    const core = coreOf(s.db.store);
    const actor = { fleet: FLEET, agentId: a.agent.id };
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    premise = gid('Belief', (await belief(core, actor, 'rules/premise')).id);
    await belief(core, actor, 'rules/passport.authentic');
  });
  afterAll(async () => {
    await s?.close();
  });

  it('forged basedOn snapshots are refused naming basedOn before PostgreSQL parses them; a real one still works', async () => {
    // The fleet's node's own clock of transaction ids (on Citus a worker's, not the coordinator's), from a real read point.
    const snapshot = (await gql(s.http, SEARCH, {}, token)).data.search.snapshot;
    const xmax = (JSON.parse(Buffer.from(snapshot, 'base64url').toString()) as { s: string }).s.split(':')[1]!;
    const forged: Array<[string, RegExp]> = [
      [b64({ v: 1, f: FLEET, s: '1000:10:' }), /xmin is after its xmax/],
      [b64({ v: 1, f: FLEET, s: '0:0:' }), /all positive/],
      [b64({ v: 1, f: FLEET, s: '5:10:12' }), /in-progress ids/],
      [b64({ v: 1, f: FLEET, s: '5:10:7,6' }), /in-progress ids/],
      [b64({ v: 1, f: FLEET, s: '1:18446744073709551616:' }), /below 2\^64/],
      [b64({ v: 1, f: FLEET, s: '1:2:x' }), /snapshot returned by search/],
      [b64({ v: 1, f: 'another', s: '1:2:' }), /your own fleet/],
      [b64({ v: 1, f: FLEET, s: `${BigInt(xmax) + 1_000_000n}:${BigInt(xmax) + 1_000_000n}:` }), /from the future/],
      [b64({ v: 1, f: FLEET, s: '18446744073709551615:18446744073709551615:' }), /from the future/],
    ];
    await writesNothing(async () => {
      for (const [basedOn, rule] of forged) {
        refused(
          await gql(s.http, ASSERT, { input: { claimKey: 'rules/based', statement: 's', value: 1, basedOn } }, token),
          'basedOn',
          rule,
        );
      }
    });
    const r = await gql(
      s.http,
      ASSERT,
      { input: { claimKey: 'rules/based', statement: 's', value: 1, basedOn: snapshot } },
      token,
    );
    expect(r.data?.assertBelief.__typename, JSON.stringify(r.errors)).toBe('BeliefAsserted');
    await expectInvariants(s.db.store);
  });

  it('DateTime: instants no engine can hold and impossible dates are refused; the ends of the range are read on every engine', async () => {
    const inline = await gql(s.http, '{ beliefs(asOf: "0000-01-01T00:00:00Z") { totalCount } }', {}, token);
    const e = one(inline);
    expect(e.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(e.message).toMatch(/between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z/);
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      [
        'query($at: DateTime) { beliefs(asOf: $at) { totalCount } }',
        { at: '0000-01-01T00:00:00Z' },
        '0000-01-01',
        /between 0001/,
      ],
      [
        'query($at: DateTime) { beliefByClaim(claimKey: "rules/premise", asOf: $at) { id } }',
        { at: '+275760-09-13T00:00:00.000Z' },
        '+275760',
        /RFC 3339/,
      ],
      [SEARCH, { at: '-271821-04-20T00:00:00.000Z' }, '-271821', /RFC 3339/],
      [SEARCH, { at: '2026-02-30T00:00:00Z' }, '2026-02-30', /not a date and time of the calendar/],
      [
        'query($at: DateTime) { beliefs(asOf: $at) { totalCount } }',
        { at: '2026-12-01T24:00:00Z' },
        '24:00',
        /not a date and time/,
      ],
      [
        'query($at: DateTime) { beliefs(asOf: $at) { totalCount } }',
        { at: '9999-12-31T23:59:59-00:01' },
        '10000',
        /between/,
      ],
      ['query($at: DateTime) { beliefs(asOf: $at) { totalCount } }', { at: '2026-12-01' }, 'no time', /RFC 3339/],
    ];
    for (const [query, vars, what, rule] of cases) {
      const err = one(await gql(s.http, query, vars, token));
      expect(err.extensions?.code, what).toBe('BAD_USER_INPUT');
      expect(err.message, what).toMatch(/\$at/);
      expect(err.message, what).toMatch(rule);
    }
    for (const at of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '2024-02-29T12:00:00+14:00']) {
      for (const [query, vars] of [
        ['query($at: DateTime) { beliefs(asOf: $at) { totalCount } }', { at }],
        ['query($at: DateTime) { beliefByClaim(claimKey: "rules/premise", asOf: $at) { id } }', { at }],
        [SEARCH, { at }],
      ] as Array<[string, Record<string, unknown>]>) {
        const r = await gql(s.http, query, vars, token);
        expect(r.errors, `${at}: ${JSON.stringify(r.errors)}`).toBeUndefined();
      }
    }
  });

  it('a reason needs a visible character; statements too', async () => {
    await writesNothing(async () => {
      for (const reason of [' \u200b ', '\u00ad', '\u3164\u3164', '\u2066\u2069', '\ufeff\n']) {
        refused(
          await gql(
            s.http,
            'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }',
            { i: { beliefId: premise, reason } },
            token,
          ),
          'reason',
          /visible character/,
        );
      }
      refused(
        await gql(s.http, ASSERT, { input: { claimKey: 'rules/empty', statement: '\u200b\u200d', value: 1 } }, token),
        'statement',
        /visible character/,
      );
    });
  });

  it('a JSON number beyond a double (1e400, -1e400) is refused, not stored as null', async () => {
    await writesNothing(async () => {
      const body = (value: string) =>
        `{"query":${JSON.stringify(ASSERT)},"variables":{"input":{"claimKey":"rules/huge","statement":"s","value":${value}}}}`;
      for (const value of ['1e400', '-1e400', '[1, {"x": 1e999}]']) {
        refused(await gqlRaw(s.http, body(value), token), 'value', /finite/);
      }
      refused(
        await gql(
          s.http,
          'mutation { assertBelief(input: { claimKey: "rules/huge", statement: "s", value: { n: 1e400 } }) { __typename } }',
          {},
          token,
        ),
        'value',
        /finite/,
      );
      const payload = `{"query":${JSON.stringify(PROPOSE)},"variables":{"input":{"kind":"refund","supportedBy":[${JSON.stringify(premise)}],"idempotencyKey":"rules:huge","payload":{"amount":1e400}}}}`;
      refused(await gqlRaw(s.http, payload, token), 'payload', /finite/);
    });
  });

  it('claim keys with invisible characters, compatibility forms or ASCII look-alikes are refused; the real claim is untouched', async () => {
    await writesNothing(async () => {
      const twins: Array<[string, RegExp]> = [
        ['rules/passport.\u0430uthentic', /look-alikes.*U\+0430/], // Cyrillic а
        ['rules/passport.authentic\u0441', /look-alikes/], // Cyrillic с at the end
        ['rules/passp\u03bfrt.authentic', /look-alikes.*U\+03BF/], // Greek ο
        ['rules/passport.\u0251uthentic', /look-alikes/], // Latin alpha ɑ
        ['rules/passport.\uff41\uff55\uff54\uff48\uff45\uff4e\uff54\uff49\uff43', /compatibility.*U\+FF41/], // fullwidth
        ['rules/passport.authentic\u3164', /invisible.*U\+3164/],
        ['rules/passport.\u3164authentic', /invisible.*U\+3164/],
        ['rules/passport.authentic\u{e0041}', /invisible/],
        ['rules/\u0441\u043e\u0441\u043e', /look-alikes/], // "сосо" reads as "coco"
        ['rules/\ufb01le', /compatibility/],
      ];
      for (const [claimKey, rule] of twins) {
        refused(
          await gql(
            s.http,
            ASSERT,
            { input: { claimKey, statement: 'the passport is a forgery', value: false } },
            token,
          ),
          'claimKey',
          rule,
        );
      }
      for (const mark of ['\u200e', '\u202e', '\u2066', '\u00ad']) {
        const e = one(
          await gql(
            s.http,
            ASSERT,
            { input: { claimKey: `rules/passport.authentic${mark}`, statement: 's', value: false } },
            token,
          ),
        );
        expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'claimKey' });
      }
    });
    // Reads keep the plain key rule: a look-alike key names nothing (or a claim stored before the rule), it is not an error.
    const read = await gql(
      s.http,
      'query($k: String!, $p: String) { beliefByClaim(claimKey: $k) { id } beliefs(claimKeyPrefix: $p) { totalCount } }',
      { k: 'rules/passport.\u0430uthentic', p: 'rules/\u0441\u043e' },
      token,
    );
    expect(read.errors).toBeUndefined();
    expect(read.data).toEqual({ beliefByClaim: null, beliefs: { totalCount: 0 } });
    // Words of other scripts are keys like any other.
    for (const claimKey of [
      'rules/\u043c\u043e\u0441\u043a\u0432\u0430',
      'rules/\u03c3\u03bf\u03c6\u03af\u03b1',
      'rules/\u6771\u4eac/tier',
      'rules/caf\u00e9',
    ]) {
      const r = await gql(s.http, ASSERT, { input: { claimKey, statement: 's', value: 1 } }, token);
      expect(r.data?.assertBelief.__typename, `${claimKey}: ${JSON.stringify(r.errors)}`).toBe('BeliefAsserted');
    }
    await expectInvariants(s.db.store);
  });

  it('agent names refuse invisible, format and bidi characters', async () => {
    await writesNothing(async () => {
      for (const name of ['admin\u202egnp.exe', 'bot\u200b', '\u2067ops\u2069', 'x\u3164']) {
        refused(
          await gql(
            s.http,
            'mutation($i: CreateAgentInput!) { createAgent(input: $i) { token } }',
            { i: { name, scopes: ['beliefs:read'] } },
            token,
          ),
          'name',
          /invisible/,
        );
      }
    });
  });

  it('idempotency keys must be NFC, trimmed and free of invisible characters; a normal key still proposes', async () => {
    const propose = (idempotencyKey: string) =>
      gql(
        s.http,
        PROPOSE,
        {
          input: {
            kind: 'refund',
            supportedBy: [premise],
            idempotencyKey,
            amount: { amountMinor: 100, currency: 'USD' },
          },
        },
        token,
      );
    const made = await propose('idem-\u00e9');
    expect(made.data?.proposeEffect.__typename, JSON.stringify(made.errors)).toBe('EffectProposed');
    await writesNothing(async () => {
      refused(await propose('idem-1 '), 'idempotencyKey', /white space/);
      refused(await propose(' idem-1'), 'idempotencyKey', /white space/);
      refused(await propose('idem-e\u0301'), 'idempotencyKey', /NFC/);
      refused(await propose('idem-\u00e9\u200e'), 'idempotencyKey', /invisible/);
      // The NFC spelling again is the same effect, not a new one.
      expect((await propose('idem-\u00e9')).data?.proposeEffect.effect.id).toBe(made.data!.proposeEffect.effect.id);
    });
  });
});
