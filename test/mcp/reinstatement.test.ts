import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { actorIn, engines } from '../support/engines';
import { passportStory } from '../support/story';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';
import { call, callError, httpClient } from './support';

describe.each(engines())('MCP get_reinstatement on %s', (engine) => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer(engine);
  });
  afterAll(async () => s?.close());

  it('reads the passport reinstatement: $1,240.00 and $89.00 voided, $0.00 re-execution owed, 4 beliefs, the payout restorable; belief ids only with beliefs:read', async () => {
    const actor = await actorIn(s.db.store, 'acme');
    const st = await passportStory(s.core, actor);
    const { retractionId } = await retractBelief(s.core, actor, { beliefId: st.passport.id, reason: 'forged' });
    const r = await reinstateRetraction(s.core, actor, { retractionId, reason: 'genuine' });
    const receipts = await agentWith(s.db.store, 'acme', ['receipts:read'], 'mcp-receipts');
    const both = await agentWith(s.db.store, 'acme', ['receipts:read', 'beliefs:read'], 'mcp-both');
    const client = await httpClient(`${s.base}/mcp`, receipts.token);
    try {
      const got = await call(client, 'get_reinstatement', { retractionId });
      expect(got.reinstatement).toMatchObject({
        id: gid('Reinstatement', r.reinstatementId),
        status: 'REINSTATED',
        retractionId: gid('Retraction', retractionId),
      });
      expect(got.moneyLines.map((l: any) => [l.line, l.priorStatus, l.amount.formatted])).toEqual([
        ['VOIDED', 'OWED', '$1,240.00'],
        ['VOIDED', 'UNREACHABLE', '$89.00'],
      ]);
      expect(got.totals.reexecutionOwed.map((m: any) => m.formatted)).toEqual(['$0.00']);
      expect(got.totals.beliefsReinstated).toBe(4);
      expect(got.beliefs).toEqual({ totalCount: 4, items: [] });
      expect(got.restorableEffectIds).toEqual([gid('Effect', st.pending.id)]);
      expect(await call(client, 'get_reinstatement')).toEqual(got);
      expect(await callError(client, 'get_reinstatement', { reinstatementId: '999999' })).toMatch(/^NOT_FOUND/);
      // The retraction's own receipt shows its reversals VOIDED.
      const receipt = await call(client, 'get_receipt', { retractionId });
      expect(receipt.reversals.map((x: any) => x.status)).toEqual(['VOIDED', 'VOIDED']);
    } finally {
      await client.close();
    }
    const reader = await httpClient(`${s.base}/mcp`, both.token);
    try {
      const got = await call(reader, 'get_reinstatement', { reinstatementId: r.reinstatementId });
      expect(got.beliefs.items.map((b: any) => [b.id, b.depth])).toEqual([
        [gid('Belief', st.passport.id), 0],
        [gid('Belief', st.derived[0]!.id), 1],
        [gid('Belief', st.derived[2]!.id), 1],
        [gid('Belief', st.derived[1]!.id), 2],
      ]);
    } finally {
      await reader.close();
    }
  });
});
