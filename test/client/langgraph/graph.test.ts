// A real LangGraph StateGraph (docs/examples/langgraph-memory.ts, the example docs/langgraph.md shows) run with
// InMemoryStore and with RetractStore: the same answers while memory is only written and read, and different ones
// once a premise is deleted — RetractStore's derived memory falls with it, InMemoryStore's stays.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryGraph, story } from '../../../docs/examples/langgraph-memory';
import { engines, expectInvariants } from '../../support/engines';
import { inMemoryStore, startStoreServer, type StoreServer } from './support';

const ROOT = path.resolve(import.meta.dirname, '../../..');

describe.each(engines())('a LangGraph graph with its memory in RETRACT, on %s', (engine) => {
  let s: StoreServer;
  beforeAll(async () => {
    s = await startStoreServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('answers as it does on InMemoryStore for plain use; after the premise is deleted only RetractStore drops the derived memory', async () => {
    const memory = inMemoryStore();
    const retract = await s.retractStore();
    const [m, r] = [await story(memory), await story(retract)];

    // Plain use: the same answers, turn by turn.
    expect(r.first).toEqual(m.first);
    expect(r.second).toEqual(m.second);
    expect(r.first).toMatchObject({
      remembered: ['eligible for an instant refund', 'passport checked and authentic'],
      instantRefund: true,
    });
    expect(r.second).toMatchObject({
      remembered: ['eligible for an instant refund', 'lives in Lisbon', 'passport checked and authentic'],
      instantRefund: true,
    });

    // The passport memory was deleted: the conclusion derived from it fell in RETRACT, and stayed in memory.
    expect(r.after).toMatchObject({ remembered: ['lives in Lisbon'], instantRefund: false });
    expect(m.after).toMatchObject({
      remembered: ['eligible for an instant refund', 'lives in Lisbon'],
      instantRefund: true,
    });

    // And so for any reader of the stores, not only this graph.
    const conclusion = [['customers', 'c-4411', 'conclusions'], 'instant-refund'] as const;
    expect(await retract.get([...conclusion[0]], conclusion[1])).toBeNull();
    expect(await memory.get([...conclusion[0]], conclusion[1])).toMatchObject({
      value: { text: 'eligible for an instant refund' },
    });
    expect((await retract.search(['customers'], { query: 'instant refund' })).map((i) => i.key)).toEqual(['address']);
    expect((await memory.search(['customers'])).map((i) => i.key).sort()).toEqual(['address', 'instant-refund']);
    await expectInvariants(s.server.store);
  });

  it("the graph reaches the store through LangGraph's own batching wrapper (AsyncBatchedStore), not directly", async () => {
    const retract = await s.retractStore();
    const seen: string[] = [];
    const batch = retract.batch.bind(retract);
    retract.batch = ((ops: Parameters<typeof batch>[0]) => {
      seen.push(
        ...ops.map((o) =>
          'namespacePrefix' in o ? 'search' : 'value' in o ? 'put' : 'namespace' in o ? 'get' : 'list',
        ),
      );
      return batch(ops);
    }) as typeof retract.batch;
    await memoryGraph(retract).invoke({ customer: 'c-1', learned: { key: 'passport', text: 'ok', verified: true } });
    expect(seen).toEqual(['put', 'search', 'put', 'search', 'get']);
  });

  it('docs/langgraph.md shows docs/examples/langgraph-memory.ts verbatim', () => {
    const example = fs.readFileSync(path.join(ROOT, 'docs/examples/langgraph-memory.ts'), 'utf8');
    expect(fs.readFileSync(path.join(ROOT, 'docs/langgraph.md'), 'utf8')).toContain(`\`\`\`ts\n${example}\`\`\``);
  });
});
