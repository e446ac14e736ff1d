import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatcherConfigFromEnv, dispatcherMain } from '../../src/worker/dispatcher-main';
import { executorMain, loadAdapters } from '../../src/worker/executor-main';
import { ConfigError } from '../../src/kernel/config-error';
import type { WorkerLogger } from '../../src/kernel/worker-logger';
import { proposeEffect, registerEffectKind } from '../../src/effect/effect.service';
import { inTx } from '../../src/store/tx';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../support/engines';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider';
import { belief } from '../support/story';
import { allReversals, eventually, owedReversals } from '../support/dispatch-fixtures';

function capture() {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg?: string }> = [];
  const at = (level: string) => (obj: object, msg?: string) => {
    lines.push({ level, obj: obj as Record<string, unknown>, ...(msg !== undefined ? { msg } : {}) });
  };
  const logger: WorkerLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, lines };
}

describe('worker entry points: configuration', () => {
  it('reads the dispatcher settings with defaults, and names the variable at fault', () => {
    const cfg = dispatcherConfigFromEnv({});
    expect(cfg).toMatchObject({
      leaseMs: 60_000,
      batch: 10,
      pollMs: 1000,
      graceMs: 5000,
      resendWindowMs: 6 * 3600_000,
      crash: null,
    });
    expect(cfg.holder).toMatch(/^dispatcher@.+:\d+:[0-9a-f]{6}$/);
    expect(
      dispatcherConfigFromEnv({ RETRACT_DISPATCH_CRASH_AT: 'after-send', RETRACT_DISPATCH_CRASH_NTH: '3' }).crash,
    ).toEqual({ at: 'after-send', nth: 3 });
    expect(() => dispatcherConfigFromEnv({ RETRACT_DISPATCH_LEASE_MS: 'soon' })).toThrow(/RETRACT_DISPATCH_LEASE_MS/);
    expect(() => dispatcherConfigFromEnv({ RETRACT_DISPATCH_BATCH: '0' })).toThrow(/RETRACT_DISPATCH_BATCH/);
    expect(() =>
      dispatcherConfigFromEnv({ RETRACT_DISPATCH_LEASE_MS: '600000', RETRACT_DISPATCH_RESEND_WINDOW_MS: '1000000' }),
    ).toThrow(/twice/);
    expect(() => dispatcherConfigFromEnv({ RETRACT_DISPATCH_CRASH_AT: 'mid-send' })).toThrow(ConfigError);
  });

  it('exits 2 with a logged reason when the provider is missing or malformed, before opening any store', async () => {
    for (const env of [
      {},
      { RETRACT_PROVIDER_URL: 'ftp://x' },
      { RETRACT_PROVIDER_URL: 'http://127.0.0.1:1/r', RETRACT_DISPATCH_POLL_MS: '-1' },
    ]) {
      const { logger, lines } = capture();
      expect(await dispatcherMain(env, { logger, signal: AbortSignal.abort() })).toBe(2);
      expect(lines.find((l) => l.level === 'error')?.obj['err']).toMatch(/RETRACT_/);
    }
  });

  it('executor: needs a token and adapters; kinds must be valid', async () => {
    const { logger, lines } = capture();
    expect(await executorMain({}, { logger })).toBe(2);
    expect(String(lines[0]!.obj['err'])).toMatch(/RETRACT_EXECUTOR_TOKEN/);
    await expect(loadAdapters({ RETRACT_EXECUTOR_URL: 'http://127.0.0.1:1' })).rejects.toThrow(
      /RETRACT_EXECUTOR_KINDS/,
    );
    await expect(
      loadAdapters({ RETRACT_EXECUTOR_URL: 'http://127.0.0.1:1', RETRACT_EXECUTOR_KINDS: 'refund,Bad Kind' }),
    ).rejects.toThrow(ConfigError);
    await expect(loadAdapters({ RETRACT_EXECUTOR_MODULE: '/nonexistent/adapters.mjs' })).rejects.toThrow(
      /could not be loaded/,
    );
    expect(
      Object.keys(
        await loadAdapters({ RETRACT_EXECUTOR_URL: 'http://127.0.0.1:1', RETRACT_EXECUTOR_KINDS: ' refund , email ' }),
      ),
    ).toEqual(['refund', 'email']);
  });
});

describe.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)('worker entry points on postgres', () => {
  let t: TestDb;
  let fake: FakeProvider;
  beforeAll(async () => {
    t = await testStore('postgres');
    fake = await startFakeProvider();
  });
  afterAll(async () => {
    await fake?.close();
    await t?.close();
  });

  it('dispatcherMain sends what is owed and stops cleanly (exit 0) on its signal', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'acme');
    const { reversals } = await owedReversals(core, actor, 3, { prefix: 'main' });
    const stop = new AbortController();
    const { logger, lines } = capture();
    const run = dispatcherMain(
      { DATABASE_URL: t.url!, RETRACT_PROVIDER_URL: fake.url, RETRACT_DISPATCH_POLL_MS: '20' },
      { logger, signal: stop.signal },
    );
    await eventually(async () => (await allReversals(t.store)).every((r) => r.status === 'CONFIRMED'));
    stop.abort();
    expect(await run).toBe(0);
    expect(fake.payments.size).toBe(reversals.length);
    expect(lines.some((l) => l.msg === 'dispatcher stopped' && l.obj['confirmed'] === 3)).toBe(true);
    await expectInvariants(t.store);
  });

  it('executorMain authenticates its agent and executes through the HTTP adapter', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'initech');
    await registerEffectKind(core, actor, { kind: 'payout', reversible: true });
    const p = await belief(core, actor, 'main/exec');
    await proposeEffect(core, actor, {
      kind: 'payout',
      supportedBy: [p.id],
      idempotencyKey: 'main-payout-1',
      amount: { amountMinor: 99, currency: 'GBP' },
    });
    const stop = new AbortController();
    const { logger } = capture();
    const run = executorMain(
      {
        DATABASE_URL: t.url!,
        RETRACT_EXECUTOR_TOKEN: actor.token,
        RETRACT_EXECUTOR_URL: fake.url.replace(/\/reversals$/, ''),
        RETRACT_EXECUTOR_KINDS: 'payout',
        RETRACT_EXECUTOR_POLL_MS: '20',
      },
      { logger, signal: stop.signal },
    );
    const effect = () =>
      inTx(t.store, { fleet: 'initech', readOnly: true }, (tx) =>
        tx.selectFrom('effects').selectAll().executeTakeFirstOrThrow(),
      );
    await eventually(async () => (await effect()).status === 'EXECUTED');
    stop.abort();
    expect(await run).toBe(0);
    expect((await effect()).external_ref).toBe(fake.payments.get('main-payout-1')!.reference);
    expect(fake.requests.find((r) => r.key === 'main-payout-1')!.raw).toContain('"kind":"payout"');
    expect(
      await executorMain(
        {
          DATABASE_URL: t.url!,
          RETRACT_EXECUTOR_TOKEN: 'rt_not_a_real_token_at_all',
          RETRACT_EXECUTOR_URL: 'http://127.0.0.1:1',
          RETRACT_EXECUTOR_KINDS: 'payout',
        },
        { logger },
      ),
    ).toBe(2);
    await expectInvariants(t.store);
  });
});
