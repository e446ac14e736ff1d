import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { assertBelief } from '../../../src/belief/belief.service';
import { DomainError } from '../../../src/errors/domain-error';
import { readerTx } from '../../../src/mcp/reader';
import type { GraphPort } from '../../../src/mcp/memory-graph/operations';
import { registerMemoryGraphTools } from '../../../src/mcp/memory-graph/tools';
import { retractBelief } from '../../../src/retraction/retraction.service';
import { actorIn, coreOf, expectInvariants, testStore, type TestDb } from '../../support/engines';
import { compareTools, compareUsage } from './compare';
import { referenceClient } from './harness';
import { USAGE } from './usage';

describe('tmp', { timeout: 120_000 }, () => {
  let t: TestDb;
  beforeAll(async () => { t = await testStore('pglite'); });
  afterAll(async () => { await t.close(); });
  it('matches', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'acme');
    const port: GraphPort = {
      fleet: 'acme',
      read: (fn) => readerTx(t.store, 'acme', fn),
      assert: async (i) => {
        const r = await assertBelief(core, actor, i);
        if (r.kind === 'asserted' || r.kind === 'corroborated') return { kind: r.kind, beliefId: r.belief.id };
        if (r.kind === 'contradiction') return r;
        if (r.kind === 'premiseRetracted') return { kind: r.kind, premiseId: r.premise.id };
        return { kind: 'claimChanged' };
      },
      retract: (beliefId, reason) => retractBelief(core, actor, { beliefId, reason }),
    };
    const server = new McpServer({ name: 'x', version: '1' });
    registerMemoryGraphTools(server, port, { read: true, write: true, retract: true }, async (_tool, fn) => {
      try { return await fn(); } catch (e) {
        if (e instanceof DomainError) return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}` }] };
        throw e;
      }
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const ours = new Client({ name: 't', version: '1' });
    await ours.connect(b);
    const ref = await referenceClient();
    try {
      await compareTools(ref.client, ours);
      const out = await compareUsage(ref.client, ours, USAGE);
      console.log(JSON.stringify(out.filter((o) => o.step.tool.startsWith('delete')).map((o) => o.ours), null, 1).slice(0, 3000));
    } finally {
      await ref.close();
    }
    await expectInvariants(t.store);
  });
});
