/**
 * Citus probe: do turns of fleets that share a shard lose serialization to each other, where fleets on
 * shards of their own do not? (FINDINGS §8: the bench gives up a turn now and then.) One loop of
 * assertBelief turns per fleet, the same number of fleets in each layout, for `seconds` each.
 *
 *   npx tsx experiments/citus/cotenant.ts [seconds=15] [fleets=4]
 *   WORKERS=1|2 (default 2) CLAIMS=n (claims per fleet, default: every turn a new one)
 *
 * Prints, per layout, turns, serialization retries by message, and turns given up after the retry budget.
 */
import { sql } from 'kysely';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { assertBelief } from '../../src/belief/belief.service';
import { DomainError } from '../../src/errors/domain-error';
import { LocalEmbedder } from '../../src/embedding/local';
import { openStore } from '../../src/store/engine';
import { citusNodes, createCitusDatabase, dropCitusDatabase, nodeUrl } from '../../test/support/citus';

const url = process.env.RETRACT_TEST_CITUS_URL ?? 'postgres://postgres@127.0.0.1:9700/postgres';
const seconds = Number(process.argv[2] ?? 15);
const loops = Number(process.argv[3] ?? 4);
const claims = Number(process.env.CLAIMS ?? Number.MAX_SAFE_INTEGER);
const nodes = (await citusNodes(url)).slice(0, 1 + Number(process.env.WORKERS ?? 2));
const name = `retract_probe_cotenant_${process.pid}`;
await createCitusDatabase(url, nodes, name);
const store = await openStore({ databaseUrl: nodeUrl(url, nodes[0]!, name), engine: 'citus', poolSize: loops * 2 + 4 });
try {
  const shardOf = async (f: string) => (await sql<{ s: string }>`SELECT get_shard_id_for_distribution_column('claims', ${f}::text)::text AS s`.execute(store.db)).rows[0]!.s;
  // Fleets that share one shard, and fleets that each have a shard of their own.
  const byShard = new Map<string, string[]>();
  for (let i = 0; ; i++) {
    const f = `probe-${i}`;
    const s = await shardOf(f);
    byShard.set(s, [...(byShard.get(s) ?? []), f]);
    const shared = [...byShard.values()].find((fs) => fs.length >= loops);
    if (shared && byShard.size >= loops) break;
  }
  const shared = [...byShard.values()].find((fs) => fs.length >= loops)!.slice(0, loops);
  const apart = [...byShard.entries()].filter(([, fs]) => !fs.some((f) => shared.includes(f))).slice(0, loops).map(([, fs]) => fs[0]!);
  const core = { store, embedder: new LocalEmbedder() };
  for (const [label, fleets] of [['one shard', shared], ['own shards', apart]] as const) {
    const actors = await Promise.all(fleets.map(async (fleet) => ({ fleet, agentId: (await createAgentDirect(store, { fleet, name: 'probe', scopes: SCOPES })).agent.id })));
    let retries = 0;
    const reasons: Record<string, number> = {};
    store.tx.onRetry = (e: unknown) => { retries++; const m = String((e as Error).message).replace(/\d+/g, 'N'); reasons[m] = (reasons[m] ?? 0) + 1; };
    const kinds: Record<string, number> = {};
    const end = Date.now() + seconds * 1000;
    await Promise.all(actors.map(async (actor, f) => {
      for (let i = 0; Date.now() < end; i++) {
        const kind = await assertBelief(core, actor, { claimKey: `p/${label.replace(' ', '-')}/${f}/${i % claims}`, statement: `turn ${i}`, value: { i } }).then(
          (r) => r.kind, (e: unknown) => { if (e instanceof DomainError && e.code === 'CONFLICT') return 'given up'; throw e; });
        kinds[kind] = (kinds[kind] ?? 0) + 1;
      }
    }));
    const turns = Object.values(kinds).reduce((a, b) => a + b, 0);
    console.log(`${label}: ${loops} fleets, ${turns} turns, ${retries} retries (${(retries / turns).toFixed(3)}/turn), given up ${kinds['given up'] ?? 0}`, reasons);
  }
} finally {
  await store.close();
  await dropCitusDatabase(url, nodes, name);
}
