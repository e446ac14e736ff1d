/**
 * Citus probe: do turns of fleets that share a shard lose serialization to each other, where fleets on
 * shards of their own do not? (FINDINGS §8: the bench gives up a turn now and then.) One loop of
 * assertBelief turns per fleet, the same number of fleets in each layout, for `seconds` each.
 *
 *   npx tsx experiments/citus/cotenant.ts [seconds=15] [fleets=4]   (fleets per layout)
 *   WORKERS=1|2 (default 2) CLAIMS=n (claims per fleet, default: every turn a new one)
 *
 * Prints, per layout, turns, serialization retries by message, and turns given up after the retry budget.
 */
import { sql } from 'kysely';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { LocalEmbedder } from '../../src/embedding/local';
import { openStore } from '../../src/store/engine';
import { citusNodes, createCitusDatabase, dropCitusDatabase, nodeUrl } from '../../test/support/citus';
import { tally, turnLoops } from '../bench/lib/turn-loops';

const url = process.env.RETRACT_TEST_CITUS_URL ?? 'postgres://postgres@127.0.0.1:9700/postgres';
const seconds = Number(process.argv[2] ?? 15);
const fleets = Number(process.argv[3] ?? 4);
const claims = Number(process.env.CLAIMS ?? Number.MAX_SAFE_INTEGER);
const nodes = (await citusNodes(url)).slice(0, 1 + Number(process.env.WORKERS ?? 2));
const name = `retract_probe_cotenant_${process.pid}`;
await createCitusDatabase(url, nodes, name);
const store = await openStore({
  databaseUrl: nodeUrl(url, nodes[0]!, name),
  engine: 'citus',
  poolSize: fleets * 2 + 4,
});
try {
  const shards = Number(
    (
      await sql<{ n: string }>`SELECT count(*) AS n FROM pg_dist_shard WHERE logicalrelid = 'claims'::regclass`.execute(
        store.db,
      )
    ).rows[0]!.n,
  );
  if (fleets >= shards) throw new Error(`${fleets} fleets on shards of their own need more than ${shards} shards`);
  const shardOf = async (f: string) =>
    (
      await sql<{ s: string }>`SELECT get_shard_id_for_distribution_column('claims', ${f}::text)::text AS s`.execute(
        store.db,
      )
    ).rows[0]!.s;
  // Name fleets until `fleets` of them share one shard and `fleets` other shards hold at least one each.
  const byShard = new Map<string, string[]>();
  const packed = () => [...byShard.values()].find((fs) => fs.length >= fleets);
  for (let i = 0; !(packed() && byShard.size > fleets); i++) {
    const f = `probe-${i}`;
    const s = await shardOf(f);
    byShard.set(s, [...(byShard.get(s) ?? []), f]);
  }
  const shared = packed()!.slice(0, fleets);
  const apart = [...byShard.values()]
    .filter((fs) => fs !== packed())
    .slice(0, fleets)
    .map((fs) => fs[0]!);
  const core = { store, embedder: new LocalEmbedder() };
  for (const [label, layout] of [
    ['one-shard', shared],
    ['own-shards', apart],
  ] as const) {
    const actors = await Promise.all(
      layout.map(async (fleet) => ({
        fleet,
        agentId: (await createAgentDirect(store, { fleet, name: 'probe', scopes: SCOPES })).agent.id,
      })),
    );
    const { kinds, turns, retries } = await turnLoops(core, actors, seconds, (f, i) => `p/${label}/${f}/${i % claims}`);
    console.log(
      `${label}: ${layout.length} fleets, ${turns} turns, given up ${kinds['given up'] ?? 0}; retries: ${tally(retries) || 'none'}`,
    );
  }
} finally {
  await store.close();
  await dropCitusDatabase(url, nodes, name);
}
