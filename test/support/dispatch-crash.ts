import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { checkInvariants } from '../../src/invariants/check';
import { actorIn, coreOf, testStore } from './engines';
import { startFakeProvider } from './fake-provider';
import { allReversals, eventually, keysByReversal, owedReversals, settledMinor } from './dispatch-fixtures';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = path.join(ROOT, 'src/worker/dispatcher-main.ts');

type CrashPoint = 'before-send' | 'after-send' | 'after-record';
const CRASH_POINTS: readonly CrashPoint[] = ['before-send', 'after-send', 'after-record'];

interface Child {
  proc: ChildProcess;
  lines: Array<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts src/worker/dispatcher-main.ts as its own Node process (through tsx), collecting its JSON log lines. */
function spawnDispatcher(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    cwd: ROOT,
    env: { ...process.env, RETRACT_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (chunk: string) => {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ raw: line });
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { proc, lines, exited };
}

async function within<T>(p: Promise<T>, ms: number, what: string, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          onTimeout();
          reject(new Error(`timed out after ${ms} ms: ${what}`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface CrashReport {
  reversals: number;
  kills: Record<CrashPoint, number>;
  deliveries: number;
  /** Distinct keys delivered more than once (after-send kills, lost replies, 500s). */
  resent: number;
  /** Distinct keys whose dispatcher was killed right after sending, and how many of them were delivered again. */
  afterSendKeys: number;
  resentAfterSend: number;
  ms: number;
}

/**
 * The crash drill on PostgreSQL: `reversals` OWED reversals in two fleets, then `killsPerPoint` runs of the real
 * dispatcher process per crash point, each SIGKILLing itself at that point on its Nth reversal (N varies), then one
 * clean run to the end and a SIGTERM. Asserts every reversal reached the provider and was paid exactly once under its
 * one key, CONFIRMED with the provider's reference, settled equal to the provider's own sum, invariants clean.
 */
export async function crashDrill(opts: {
  killsPerPoint: number;
  reversals: number;
  batch: number;
  leaseMs: number;
}): Promise<CrashReport> {
  const started = Date.now();
  const t = await testStore('postgres');
  const fake = await startFakeProvider();
  const children: Child[] = [];
  try {
    const core = coreOf(t.store);
    const half = Math.ceil(opts.reversals / 2);
    const acme = await actorIn(t.store, 'acme');
    const globex = await actorIn(t.store, 'globex');
    const a = await owedReversals(core, acme, half, { prefix: 'crash-a', amount: (i) => 1_000 + 17 * i });
    const g = await owedReversals(core, globex, opts.reversals - half, {
      prefix: 'crash-g',
      amount: (i) => 50_000 + 3 * i,
    });
    const all = [...a.reversals, ...g.reversals];
    // A little weather on the way: transient errors and lost replies must not change the outcome.
    all.forEach((r, i) => {
      if (i % 7 === 3) fake.script(r.key, '500');
      if (i % 11 === 5) fake.script(r.key, 'accept-then-drop');
    });

    const baseEnv = {
      DATABASE_URL: t.url!,
      RETRACT_PROVIDER_URL: fake.url,
      RETRACT_PROVIDER_TIMEOUT_MS: '1000',
      RETRACT_DISPATCH_LEASE_MS: String(opts.leaseMs),
      RETRACT_DISPATCH_BATCH: String(opts.batch),
      RETRACT_DISPATCH_POLL_MS: '50',
      RETRACT_DISPATCH_GRACE_MS: '2000',
    };
    const kills: Record<CrashPoint, number> = { 'before-send': 0, 'after-send': 0, 'after-record': 0 };
    const checks: Array<() => void> = [];
    const afterSend = new Set<string>();
    for (let round = 0; round < opts.killsPerPoint; round++) {
      for (const point of CRASH_POINTS) {
        const nth = 1 + ((round + kills[point]) % opts.batch);
        const child = spawnDispatcher({
          ...baseEnv,
          RETRACT_DISPATCH_CRASH_AT: point,
          RETRACT_DISPATCH_CRASH_NTH: String(nth),
        });
        children.push(child);
        const exit = await within(child.exited, 60_000, `dispatcher to crash at ${point} (#${nth})`, () =>
          child.proc.kill('SIGKILL'),
        );
        expect(exit, JSON.stringify(child.lines.slice(-5))).toEqual({ code: null, signal: 'SIGKILL' });
        const hook = child.lines.find((l) => l['msg'] === 'crash hook: SIGKILL');
        expect(hook, 'the process died by its crash hook').toMatchObject({ point });
        kills[point]++;
        const key = String(hook!['idempotencyKey']);
        const deliveredAtKill = fake.deliveries(key);
        const rows = await allReversals(t.store);
        const row = rows.find((r) => r.idempotency_key === key)!;
        if (point === 'after-send') {
          // Sent, not recorded: it must be sent again later, under the same key.
          expect(row.status).toBe('DISPATCHED');
          expect(deliveredAtKill).toBeGreaterThanOrEqual(1);
          afterSend.add(key);
          checks.push(() => expect(fake.deliveries(key)).toBeGreaterThan(deliveredAtKill));
        } else if (point === 'after-record') {
          // Recorded: never sent again.
          expect(row.status).toBe('CONFIRMED');
          checks.push(() => expect(fake.deliveries(key)).toBe(deliveredAtKill));
        } else {
          expect(row.status).toBe('DISPATCHED');
          checks.push(() => expect(fake.deliveries(key)).toBeGreaterThan(deliveredAtKill));
        }
        if (rows.every((r) => r.status === 'CONFIRMED'))
          throw new Error('ran out of reversals before the drill ended: raise `reversals`');
      }
    }

    // One clean run to the end, then a clean stop.
    const last = spawnDispatcher(baseEnv);
    children.push(last);
    await eventually(
      async () => (await allReversals(t.store)).every((r) => r.status === 'CONFIRMED'),
      120_000,
      'every reversal CONFIRMED',
    );
    last.proc.kill('SIGTERM');
    expect(await within(last.exited, 20_000, 'clean stop on SIGTERM', () => last.proc.kill('SIGKILL'))).toEqual({
      code: 0,
      signal: null,
    });
    expect(last.lines.some((l) => l['msg'] === 'dispatcher stopped')).toBe(true);

    const rows = await allReversals(t.store);
    expect(rows).toHaveLength(opts.reversals);
    const byReversal = keysByReversal(fake);
    for (const r of rows) {
      expect(r.status).toBe('CONFIRMED');
      expect(r.provider_ref).toBe(fake.payments.get(r.idempotency_key)?.reference);
      expect([...(byReversal.get(r.id) ?? [])]).toEqual([r.idempotency_key]);
    }
    // Every delivery carried one of our reversal keys; each reversal was paid exactly once.
    const keys = new Set(rows.map((r) => r.idempotency_key));
    expect(fake.requests.every((q) => q.key !== null && keys.has(q.key))).toBe(true);
    expect(fake.payments.size).toBe(opts.reversals);
    const paidReversals = new Set(
      [...fake.payments.values()].map((p) => (p.body as { reversalId: string }).reversalId),
    );
    expect(paidReversals.size).toBe(opts.reversals);
    for (const c of checks) c();
    const settled = await settledMinor(t.store, [
      { fleet: 'acme', retractionId: a.retractionId },
      { fleet: 'globex', retractionId: g.retractionId },
    ]);
    expect(settled).toBe(fake.settledMinor('USD'));
    expect(settled).toBe(all.reduce((n, r) => n + r.amountMinor, 0));
    expect(await checkInvariants(t.store)).toEqual([]);
    const resent = [...keys].filter((k) => fake.deliveries(k) > 1).length;
    const resentAfterSend = [...afterSend].filter((k) => fake.deliveries(k) > 1).length;
    return {
      reversals: opts.reversals,
      kills,
      deliveries: fake.requests.length,
      resent,
      afterSendKeys: afterSend.size,
      resentAfterSend,
      ms: Date.now() - started,
    };
  } finally {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    await fake.close();
    await t.close();
  }
}
