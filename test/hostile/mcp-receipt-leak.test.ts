import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgentDirect } from '../../src/agent/agent.service';
import { gid } from '../../src/kernel/ids';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { createApp, type App } from '../../src/server/app';
import type { EngineName } from '../../src/store/engine';
import { coreOf, embedder, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { codes, gql } from '../support/api-client';
import { passportStory } from '../support/story';
import { call, httpClient } from '../mcp/support';

/**
 * Issue 29, broken item 3, as the probe found it: retract a belief, reinstate the retraction, then as a
 * token holding only receipts:read call get_receipt by retractionId and with no argument. GraphQL refuses
 * the root ("reading an ACTIVE belief needs beliefs:read"); MCP used to answer its statement, value and
 * status ACTIVE. Now the root is null, the reinstated beliefs are absent, and nothing of them is in the text.
 * (test/mcp/visibility.test.ts checks every tool and every scope the same way.)
 */
describe.each(engines())(
  'a receipts-only token after a reinstatement, on %s',
  { timeout: 240_000 },
  (engine: EngineName) => {
    let t: TestDb;
    let app: App;
    let token: string;
    let retractionId: string;
    let statements: string[];

    storeSuite(engine, {}, async (suite) => {
      t = suite.t;
      const ops = await createAgentDirect(t.store, { fleet: 'acme', name: 'ops', scopes: ['admin'] });
      const actor = { fleet: 'acme', agentId: ops.agent.id };
      const core = coreOf(t.store);
      const s = await passportStory(core, actor);
      statements = [s.passport, ...s.derived].map((b) => b.statement);
      ({ retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' }));
      await reinstateRetraction(core, actor, { retractionId, reason: 'authentic after all' });
      token = (await createAgentDirect(t.store, { fleet: 'acme', name: 'auditor', scopes: ['receipts:read'] })).token;
      app = await createApp({
        config: { port: 0, host: '127.0.0.1' },
        store: t.store,
        embedder,
        logger: pino({ level: 'silent' }),
      });
      await app.listen();
    });
    afterAll(async () => {
      await app?.close();
    });

    it('GraphQL refuses the root; MCP get_receipt shows the receipt without it', async () => {
      const g = await gql(
        `${app.url()}/graphql`,
        'query($id: ID!) { retraction(id: $id) { reason root { statement value status } } }',
        { id: gid('Retraction', retractionId) },
        token,
      );
      expect(codes(g.body.errors)).toEqual(['FORBIDDEN']);
      expect(g.body.errors[0].message).toMatch(/reading an ACTIVE belief needs the scope beliefs:read/);

      const client = await httpClient(`${app.url()}/mcp`, token);
      try {
        for (const args of [{ retractionId }, {}]) {
          const r = await client.callTool({ name: 'get_receipt', arguments: args });
          expect(r.isError).toBeFalsy();
          const out = r.structuredContent as any;
          expect(out.retraction).toMatchObject({ reason: 'forged', root: null });
          expect(out.beliefs.items).toEqual([]);
          expect(out.totals.beliefsRetracted).toBe(4);
          const all = JSON.stringify(r);
          for (const s of statements) expect(all).not.toContain(s);
          expect(all).not.toMatch(/"status":"ACTIVE"/);
        }
        // The reinstatement receipt names no belief either (they are ACTIVE again).
        expect((await call(client, 'get_reinstatement', { retractionId: Number(retractionId) })).beliefs).toEqual({
          totalCount: 4,
          items: [],
        });
      } finally {
        await client.close();
      }
      await expectInvariants(t.store);
    });
  },
);
