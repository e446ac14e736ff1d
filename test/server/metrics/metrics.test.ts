import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/kernel/config-error';
import { OperationNames } from '../../../src/server/metrics/graphql';
import { metricsSettingsFromEnv } from '../../../src/server/metrics/settings';
import { assertBelief } from '../../../src/belief/belief.service';
import { actorIn, engines, expectInvariants } from '../../support/engines';
import { type ApiServer, startApiServer } from '../../support/api-server';
import { passportRetractedOverApi, samples, scrape } from '../../support/metrics';

const TOKEN = 'metrics-scrape-token-0123456789';

describe.each(engines())('GET /metrics on %s', (engine) => {
  let s: ApiServer;
  let fleetLabelled: ApiServer;
  beforeAll(async () => {
    s = await startApiServer(engine, { metrics: { token: TOKEN } });
    fleetLabelled = await startApiServer(engine, { db: s.db, metrics: { fleetLabel: true } });
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await fleetLabelled?.close();
    await s?.close();
  });

  it('refuses a scrape without the configured token (401) and answers the Prometheus text format with it', async () => {
    expect((await scrape(s.base)).status).toBe(401);
    expect((await scrape(s.base, 'wrong-token-0123456789')).status).toBe(401);
    const r = await scrape(s.base, TOKEN);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = samples(r.text);
    // Node's process metrics, and the database read answered.
    // The process counters count from the first scrape (src/server/metrics/metrics.ts), so this one may still be 0.
    expect(m.get('process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
    expect(m.get('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(m.get('retract_metrics_database_up')).toBe(1);
    expect(m.get('retract_oldest_owed_reversal_age_seconds')).toBe(0);
  });

  it('after the passport retraction: the operation, the turn counts, the retraction with its cascade, and the open money by status in minor units', async () => {
    const actor = await actorIn(s.store, 'metrics-passport');
    const before = samples((await scrape(s.base, TOKEN)).text);
    await passportRetractedOverApi(s.base, s.core, actor);
    const m = samples((await scrape(s.base, TOKEN)).text);
    expect(m.get('retract_graphql_operations_total{operation="RetractPassport",type="mutation",outcome="ok"}')).toBe(1);
    expect(
      m.get(
        'retract_graphql_operation_duration_seconds_count{operation="RetractPassport",type="mutation",outcome="ok"}',
      ),
    ).toBe(1);
    expect(m.get('retract_retractions_total')).toBe(1);
    expect(m.get('retract_retraction_duration_seconds_count')).toBe(1);
    expect(m.get('retract_retraction_cascade_beliefs_sum')).toBe(4);
    expect(m.get('retract_retraction_cascade_beliefs_bucket{le="2"}')).toBe(0);
    expect(m.get('retract_retraction_cascade_beliefs_bucket{le="5"}')).toBe(1);
    // The story's writes (3 kinds, 4 beliefs, 3 proposals, 2 claims, 2 completions) and the retraction: 15 turns.
    expect(
      m.get('retract_turns_total{outcome="committed"}')! -
        (before.get('retract_turns_total{outcome="committed"}') ?? 0),
    ).toBeGreaterThanOrEqual(15);
    expect(m.get('retract_turns_total{outcome="given_up"}')).toBe(0);
    expect(m.get('retract_open_money_minor_units{status="owed",currency="USD"}')).toBe(124000);
    expect(m.get('retract_open_money_minor_units{status="unreachable",currency="USD"}')).toBe(8900);
    expect(m.get('retract_open_reversals{status="owed",currency="USD"}')).toBe(1);
    expect(m.get('retract_open_reversals{status="unreachable",currency="USD"}')).toBe(1);
    expect(m.get('retract_oldest_owed_reversal_age_seconds')).toBeGreaterThanOrEqual(0);
    // The payout that was still pending was cancelled with the retraction: the executor has nothing waiting.
    expect(m.get('retract_pending_effects')).toBe(0);
    expect(m.get('retract_db_pool_connections{state="max"}')).toBeGreaterThanOrEqual(1);
    await expectInvariants(s.db.store);

    // The fleet is a label only on the server configured for it; the figures are the same.
    const f = samples((await scrape(fleetLabelled.base)).text);
    expect(f.get('retract_open_money_minor_units{fleet="metrics-passport",status="owed",currency="USD"}')).toBe(124000);
    expect(m.has('retract_open_money_minor_units{fleet="metrics-passport",status="owed",currency="USD"}')).toBe(false);
  });

  it('labels a refused operation by its code and an unnamed one as anonymous', async () => {
    const actor = await actorIn(s.store, 'metrics-refusals');
    const post = (body: unknown) =>
      fetch(s.http, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${actor.token}` },
        body: JSON.stringify(body),
      });
    await post({
      operationName: 'RetractMissing',
      query:
        'mutation RetractMissing { retractBelief(input: { beliefId: "QmVsaWVmOjk5OTk5OTk=", reason: "x" }) { id } }',
    });
    await post({ query: '{ viewer { id } }' });
    const m = samples((await scrape(s.base, TOKEN)).text);
    const refused = [...m.entries()].filter(([k]) =>
      k.startsWith('retract_graphql_operations_total{operation="RetractMissing"'),
    );
    expect(refused).toHaveLength(1);
    expect(refused[0]![0]).toMatch(/outcome="(not_found|bad_user_input)"/);
    expect(
      m.get('retract_graphql_operations_total{operation="anonymous",type="query",outcome="ok"}'),
    ).toBeGreaterThanOrEqual(1);
  });

  it('counts retried attempts by reason', async () => {
    const actor = await actorIn(s.store, 'metrics-retries');
    s.store.tx.faults.serializationFailures += 2;
    await assertBelief(s.core, actor, { claimKey: 'retry/claim', statement: 'retried twice', value: true });
    const m = samples((await scrape(s.base, TOKEN)).text);
    expect(m.get('retract_tx_retries_total{reason="serialization_failure"}')).toBeGreaterThanOrEqual(2);
    expect(m.get('retract_tx_retries_total{reason="citus_commit_conflict"}')).toBe(0);
    await expectInvariants(s.db.store);
  });

  it('counts a turn given up once every attempt conflicted, and retries for lack of shared memory under their reason', async () => {
    const actor = await actorIn(s.store, 'metrics-given-up');
    const before = samples((await scrape(s.base, TOKEN)).text);
    // Ten attempts (the bound in src/store/tx.ts), each failing: the client gets CONFLICT and nothing is written.
    s.store.tx.faults.serializationFailures += 10;
    await expect(
      assertBelief(s.core, actor, { claimKey: 'given-up/claim', statement: 'never written', value: true }),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    s.store.tx.faults.sharedMemoryFailures += 1;
    await assertBelief(s.core, actor, { claimKey: 'shared-memory/claim', statement: 'retried once', value: true });
    const m = samples((await scrape(s.base, TOKEN)).text);
    const delta = (k: string) => m.get(k)! - (before.get(k) ?? 0);
    expect(delta('retract_turns_total{outcome="given_up"}')).toBe(1);
    expect(delta('retract_tx_retries_total{reason="serialization_failure"}')).toBe(9);
    expect(delta('retract_tx_retries_total{reason="out_of_shared_memory"}')).toBe(1);
    expect(delta('retract_turns_total{outcome="committed"}')).toBeGreaterThanOrEqual(1);
    await expectInvariants(s.db.store);
  });
});

describe('GET /metrics switched off', () => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer('pglite', { metrics: { enabled: false } });
  });
  afterAll(async () => s?.close());
  it('is not served (404) when RETRACT_METRICS=off', async () => {
    expect((await scrape(s.base)).status).toBe(404);
  });
});

describe('metrics settings and labels', () => {
  it('reads the documented settings and refuses a mistyped one', () => {
    expect(metricsSettingsFromEnv({})).toEqual({ enabled: true, token: null, fleetLabel: false, maxOperations: 100 });
    expect(
      metricsSettingsFromEnv({
        RETRACT_METRICS: 'off',
        RETRACT_METRICS_FLEET_LABEL: 'on',
        RETRACT_METRICS_MAX_OPERATIONS: '7',
        RETRACT_METRICS_TOKEN: TOKEN,
      }),
    ).toEqual({ enabled: false, token: TOKEN, fleetLabel: true, maxOperations: 7 });
    expect(() => metricsSettingsFromEnv({ RETRACT_METRICS: 'maybe' })).toThrow(ConfigError);
    expect(() => metricsSettingsFromEnv({ RETRACT_METRICS: 'maybe' })).toThrow(/RETRACT_METRICS must be on or off/);
    expect(() => metricsSettingsFromEnv({ RETRACT_METRICS_MAX_OPERATIONS: '0' })).toThrow(
      /RETRACT_METRICS_MAX_OPERATIONS/,
    );
    expect(() => metricsSettingsFromEnv({ RETRACT_METRICS_TOKEN: 'short' })).toThrow(/at least 16/);
  });

  it('bounds the operation-name label: anonymous, a cap on distinct names, then other', () => {
    const names = new OperationNames(2);
    expect(names.label(undefined)).toBe('anonymous');
    expect(names.label('A')).toBe('A');
    expect(names.label('B')).toBe('B');
    expect(names.label('C')).toBe('other');
    expect(names.label('A')).toBe('A');
    expect(names.label('x'.repeat(65))).toBe('other');
  });
});
