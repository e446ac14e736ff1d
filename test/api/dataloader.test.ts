import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { gid } from '../../src/kernel/ids';
import { retractBelief } from '../../src/retraction/retraction.service';
import { registerEffectKind } from '../../src/effect/effect.service';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { belief, executed, proposed } from '../support/story';
import { gql, ok } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';

/**
 * Counts every SQL statement Kysely executes through the store it is plugged into, and separately
 * the per-transaction preamble (BEGIN with the `set_config` of role and fleet, one round trip that
 * src/store/tx.ts sends first in every transaction; on Citus its second string, the SET LOCALs, is left out of
 * the count) and the COMMIT/ROLLBACK that ends it, so
 * `count - ends` is the statements of the old count (data + preamble) and `count - preambles - ends`
 * the statements that read data.
 */
class StatementCounter implements KyselyPlugin {
  count = 0;
  preambles = 0;
  ends = 0;
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const n = args.node as { kind: string; sqlFragments?: readonly string[] };
    const text = n.kind === 'RawNode' ? (n.sqlFragments?.[0] ?? '') : '';
    if (text.startsWith('start transaction') && text.includes("set_config('role'")) this.preambles++;
    if (text === 'commit' || text === 'rollback') this.ends++;
    // Citus: the worker settings are the preamble's second round trip (src/store/tx.ts), not a data statement.
    if (text.startsWith('SET LOCAL citus.propagate_set_commands')) this.count--;
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.count++;
    return args.result;
  }
}

const RECEIPT_PAGE = /* GraphQL */ `
  query Receipt($id: ID!, $first: Int) {
    retraction(id: $id) {
      id
      reason
      actor {
        id
        name
      }
      beliefs(first: $first) {
        totalCount
        edges {
          node {
            id
            claimKey
            status
            author {
              id
              name
            }
            justifications {
              holds
              premises {
                id
                claimKey
                author {
                  id
                  name
                }
              }
            }
            effects {
              id
              kind
              status
              amount {
                amountMinor
              }
              proposedBy {
                name
              }
              supportedBy {
                id
              }
              reversal {
                id
                status
                idempotencyKey
              }
            }
          }
        }
      }
    }
  }
`;

/**
 * The N+1 check: a receipt page of 50 retracted beliefs, each with its author, its justification's
 * premises and the effects resting on it (half reached with a reversal, half cancelled), costs the
 * same fixed number of SQL statements as a page of 5 — every relation is one batched statement.
 */
describe.each(engines())('dataloader batching on %s', (engine) => {
  let s: ApiServer;
  const counter = new StatementCounter();
  let token: string;
  let retraction: string;

  beforeAll(async () => {
    // This is about statements, not cost: a page of 50 with every relation counts each belief's 8 justifications of
    // 64 premises and 50 effects of 64 supports at their bounds (≈ 7M), over the default limit.
    s = await startApiServer(engine, {
      wrapStore: (st) => ({ ...st, db: st.db.withPlugin(counter) }),
      config: { limits: { cost: 10_000_000 } },
    });
    const actor = await actorIn(s.db.store, 'acme');
    const core = { store: s.db.store, embedder: s.core.embedder };
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const root = await belief(core, actor, 'batch/root');
    const derived = [];
    for (let i = 0; i < 50; i++)
      derived.push(await belief(core, actor, `batch/d-${String(i).padStart(2, '0')}`, [root]));
    for (let i = 0; i < 25; i++)
      await executed(
        core,
        actor,
        await proposed(core, actor, 'refund', [derived[i]!], `batch:exec-${i}`, 100 + i),
        `ref-${i}`,
      );
    for (let i = 25; i < 50; i++) await proposed(core, actor, 'refund', [derived[i]!], `batch:pending-${i}`, 100 + i);
    retraction = gid(
      'Retraction',
      (await retractBelief(core, actor, { beliefId: root.id, reason: 'batch root was wrong' })).retractionId,
    );
    token = (await agentWith(s.db.store, 'acme', ['receipts:read'], 'reader')).token;
    ok(await gql(s.http, '{ viewer { id } }', {}, token)); // authenticates once (the token is cached briefly)
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  async function statementsFor(first: number) {
    const before = counter.count;
    const pre = counter.preambles;
    const ends = counter.ends;
    const data = ok(await gql(s.http, RECEIPT_PAGE, { id: retraction, first }, token));
    const transactions = counter.preambles - pre;
    expect(counter.ends - ends).toBe(transactions);
    return { n: counter.count - before - transactions, transactions, data };
  }

  it('a page of 50 beliefs with author, justifications and effects takes a small fixed number of statements, the same as a page of 5', async () => {
    const big = await statementsFor(50);
    const edges = big.data.retraction.beliefs.edges;
    expect(big.data.retraction.beliefs.totalCount).toBe(51);
    expect(edges.length).toBe(50);
    // What came back is the real graph: the root first, then 49 derived beliefs each with its premise and effect.
    expect(edges.map((e: any) => e.node.claimKey)).toEqual([
      'batch/root',
      ...Array.from({ length: 49 }, (_, i) => `batch/d-${String(i).padStart(2, '0')}`),
    ]);
    expect(
      edges
        .slice(1)
        .every(
          (e: any) =>
            e.node.justifications.length === 1 &&
            e.node.justifications[0].premises[0].claimKey === 'batch/root' &&
            !e.node.justifications[0].holds,
        ),
    ).toBe(true);
    const effects = edges.flatMap((e: any) => e.node.effects);
    expect(effects.length).toBe(49);
    expect(effects.filter((e: any) => e.status === 'EXECUTED' && e.reversal?.status === 'OWED').length).toBe(25);
    expect(effects.filter((e: any) => e.status === 'CANCELLED' && e.reversal === null).length).toBe(24);
    expect(edges.every((e: any) => e.node.author.name.startsWith('agent-'))).toBe(true);

    const small = await statementsFor(5);
    expect(small.data.retraction.beliefs.edges.length).toBe(5);
    // Batched: the count does not grow with the page. One read transaction per batch (each opens with
    // its set_config preamble), one data statement per batch (the receipt page takes two: rows and total).
    expect({ statements: big.n, transactions: big.transactions }).toEqual({
      statements: small.n,
      transactions: small.transactions,
    });
    expect(big.n - big.transactions).toBeLessThanOrEqual(20);
    expect(big.transactions).toBeLessThanOrEqual(16);
    expect(big.transactions).toBeGreaterThan(5);
  });

  it('paging the receipt 7 at a time returns every belief once, root first, then by depth and id (ids of one and two digits alike)', async () => {
    const PAGE = `query($id: ID!, $a: String) { retraction(id: $id) { beliefs(first: 7, after: $a) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { claimKey } } } } }`;
    const keys: string[] = [];
    let after: string | null = null;
    for (let i = 0; i < 20; i++) {
      const page: any = ok(await gql(s.http, PAGE, { id: retraction, a: after }, token)).retraction.beliefs;
      expect(page.totalCount).toBe(51);
      keys.push(...page.edges.map((e: any) => e.node.claimKey));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(keys).toEqual([
      'batch/root',
      ...Array.from({ length: 50 }, (_, i) => `batch/d-${String(i).padStart(2, '0')}`),
    ]);
  });
});
