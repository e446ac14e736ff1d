import { describe, expect, it } from 'vitest';
import { crashDrill } from '../../support/dispatch-crash';

/**
 * The long crash drill (`npm run test:dispatch`): the real dispatcher process on PostgreSQL, SIGKILLed at each of
 * before-send, after-send and after-record at least RETRACT_CRASH_KILLS (default 10) times, restarted each time,
 * then run to the end.
 */
const kills = Number(process.env.RETRACT_CRASH_KILLS ?? 10);

describe.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)('dispatcher crash safety (long) on postgres', () => {
  it(`killed ${kills}× at each point: every reversal reaches the provider, is paid exactly once under its key, and CONFIRMED with the provider's reference`, async () => {
    const report = await crashDrill({ killsPerPoint: kills, reversals: 3 * kills * 2 + 12, batch: 2, leaseMs: 1500 });
    expect(report.kills).toEqual({ 'before-send': kills, 'after-send': kills, 'after-record': kills });
    // Every key killed right after its send went out was sent again (a before-send kill may have sent nothing yet).
    expect(report.afterSendKeys).toBeGreaterThanOrEqual(1);
    expect(report.resentAfterSend).toBe(report.afterSendKeys);
    console.log(`crash drill (long): ${JSON.stringify(report)}`);
  }, 1_800_000);
});
