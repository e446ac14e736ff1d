import { describe, expect, it } from 'vitest';
import { crashDrill } from '../../support/dispatch-crash';

/**
 * The short crash drill for CI: the real dispatcher process on PostgreSQL, SIGKILLed twice at each of before-send,
 * after-send and after-record, restarted, and run to the end. The long version is crash.slow.test.ts.
 */
describe.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)('dispatcher crash safety (short) on postgres', () => {
  it("killed 2× at each point: every reversal reaches the provider, is paid exactly once under its key, and CONFIRMED with the provider's reference", async () => {
    const report = await crashDrill({ killsPerPoint: 2, reversals: 16, batch: 2, leaseMs: 1500 });
    expect(report.kills).toEqual({ 'before-send': 2, 'after-send': 2, 'after-record': 2 });
    // Every key killed right after its send went out was sent again (a before-send kill may have sent nothing yet).
    expect(report.afterSendKeys).toBeGreaterThanOrEqual(1);
    expect(report.resentAfterSend).toBe(report.afterSendKeys);
    console.log(`crash drill (short): ${JSON.stringify(report)}`);
  }, 240_000);
});
