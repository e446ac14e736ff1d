/**
 * Citus probe: why do the bench's turns give up on "Canceled on conflict out to pivot N, during read"?
 * (issue 33 item 3; FINDINGS §8.) The bench's own mix — 8 fleets, one loop of assertBelief turns each, 200 claims
 * cycled (the first pass asserts, every later turn contradicts) — on a new database, for `seconds`. Every retried
 * attempt is kept with the statement that failed and PostgreSQL's reason; afterwards each pivot's transaction id is
 * looked up in the workers' event log (`events.tx` is stamped with the worker's own xid), so the report says which
 * fleet's turn the pivot was, and whether it shares a shard with the turn it cancelled.
 *
 *   npx tsx experiments/citus/pivot.ts [seconds=20] [fleets=8] [claims=200]
 *   WORKERS=1|2 (default 1); PAIRS=1: every fleet shares its shard with one other; ANALYZE=1: statistics first
 */
import { sql } from 'kysely';
import type { LogEvent } from 'kysely';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { LocalEmbedder } from '../../src/embedding/local';
import { openStore } from '../../src/store/engine';
import { citusNodes, createCitusDatabase, dropCitusDatabase, nodeUrl } from '../../test/support/citus';
import { tally, turnLoops } from '../bench/lib/turn-loops';

const url = process.env.RETRACT_TEST_CITUS_URL ?? 'postgres://postgres@127.0.0.1:9700/postgres';
const seconds = Number(process.argv[2] ?? 20);
const fleets = Number(process.argv[3] ?? 8);
const claims = Number(process.argv[4] ?? 200);
const nodes = (await citusNodes(url)).slice(0, 1 + Number(process.env.WORKERS ?? 1));
const name = `retract_probe_pivot_${process.pid}`;

interface Failure {
  at: number;
  fleet: string;
  statement: string;
  detail: string;
  pivot: number | null;
}
const failures: Failure[] = [];
const t0 = Date.now();
// Which fleet a statement ran for: every transaction of a turn sets retract.fleet first, and each loop is alone on
// its connection for the length of a transaction, so the statement's fleet is read from its own text where it has one.
const onQuery = (e: LogEvent) => {
  if (e.level !== 'error') return;
  const err = e.error as { code?: string; detail?: string; message?: string; where?: string };
  if (err.code !== '40001' && err.code !== 'XX000') return;
  const text = e.query.sql.replace(/\s+/g, ' ').trim();
  const fleet = (e.query.parameters.find((p) => typeof p === 'string' && /^bench-\d+$/.test(p)) as string) ?? '?';
  const detail = (err.detail ?? err.message ?? '').split('\n')[0]!;
  const where = (err.where ?? '').replace(/\s+/g, ' ');
  const m = /pivot (\d+)/.exec(detail);
  failures.push({
    at: Date.now() - t0,
    fleet,
    statement: text.slice(0, 60) + (where ? ` [${where}]` : ''),
    detail,
    pivot: m ? Number(m[1]) : null,
  });
};

await createCitusDatabase(url, nodes, name);
const store = await openStore({
  databaseUrl: nodeUrl(url, nodes[0]!, name),
  engine: 'citus',
  poolSize: fleets + 4,
  onQuery,
});
try {
  const core = { store, embedder: new LocalEmbedder() };
  const shardOf = async (fleet: string) =>
    (
      await sql<{
        s: string;
      }>`SELECT get_shard_id_for_distribution_column('claims', ${fleet}::text)::text AS s`.execute(store.db)
    ).rows[0]!.s;
  // The bench's fleet names (bench-0 … bench-7: two pairs of them share a shard), or with PAIRS=1 names chosen so
  // that every fleet shares its shard with exactly one other.
  const names: string[] = [];
  if (process.env.PAIRS) {
    const byShard = new Map<string, string[]>();
    for (let i = 0; names.length < fleets; i++) {
      const f = `bench-${i}`;
      const s = await shardOf(f);
      const there = [...(byShard.get(s) ?? []), f];
      byShard.set(s, there);
      if (there.length === 2) names.push(...there);
    }
  } else for (let f = 0; f < fleets; f++) names.push(`bench-${f}`);
  const actors = [];
  const shard = new Map<string, string>();
  for (const fleet of names) {
    const { agent } = await createAgentDirect(store, { fleet, name: 'bench', scopes: SCOPES });
    actors.push({ fleet, agentId: agent.id });
    shard.set(fleet, await shardOf(fleet));
  }
  // With ANALYZE=1: a few turns per fleet, then ANALYZE, as autovacuum does some time in the bench's first minute
  // (50 rows changed in a shard): the shards' statistics then say one page, and the plans become sequential scans.
  if (process.env.ANALYZE) {
    await turnLoops(core, actors, 2, (f, i) => `warm/${f}/${i}`);
    await sql`ANALYZE claims, beliefs`.execute(store.db);
  }
  console.log(`pivot probe: ${fleets} fleets, ${claims} claims each, ${seconds} s, ${nodes.length - 1} worker(s)`);
  console.log(`shards: ${actors.map((a) => `${a.fleet}→${shard.get(a.fleet)}`).join(', ')}`);
  const { kinds, turns, retries, givenUp, byAttempt } = await turnLoops(
    core,
    actors,
    seconds,
    (f, i) => `turn/${f}/${i % claims}`,
  );
  console.log(`turns ${turns}; kinds ${tally(kinds)}`);
  console.log(`retries: ${tally(retries) || 'none'}`);
  console.log(`retries by the attempt that failed: ${tally(byAttempt) || 'none'}`);
  for (const g of givenUp) console.log(`given up: ${tally(g)}`);

  // Each pivot's transaction, from the event its turn appended on the worker (events.tx: the worker's xid8).
  const pivots = [...new Set(failures.map((f) => f.pivot).filter((p): p is number => p !== null))];
  const found = pivots.length
    ? (
        await sql<{ xid: string; fleet_id: string; type: string; claim: string | null; seq: string }>`
          SELECT (tx::text::bigint % 4294967296)::text AS xid, fleet_id, type, data->>'claimKey' AS claim, seq::text
            FROM events WHERE (tx::text::bigint % 4294967296) = ANY(${pivots}::bigint[])`.execute(store.db)
      ).rows
    : [];
  const byXid = new Map(found.map((r) => [Number(r.xid), r]));
  const lines: Record<string, number> = {};
  for (const f of failures) {
    const p = f.pivot === null ? undefined : byXid.get(f.pivot);
    const who =
      f.pivot === null
        ? 'no pivot named'
        : !p
          ? 'pivot wrote no event'
          : p.fleet_id === f.fleet
            ? `pivot: the same fleet's ${p.type}`
            : `pivot: another fleet's ${p.type} (${shard.get(p.fleet_id) === shard.get(f.fleet) ? 'same shard' : 'other shard'})`;
    const key = `${f.detail.replace(/\d+/g, 'N')} | at: ${f.statement.slice(0, 40)}${f.statement.includes('[') ? f.statement.slice(f.statement.indexOf('[')) : ''} | ${who}`;
    lines[key] = (lines[key] ?? 0) + 1;
  }
  console.log('failed attempts, by reason, statement and pivot:');
  for (const [k, n] of Object.entries(lines).sort((a, b) => b[1] - a[1])) console.log(`  ${n} × ${k}`);
  if (process.env.VERBOSE)
    for (const f of failures)
      console.log(
        `  ${f.at} ms ${f.fleet} ${f.detail} | ${f.statement} | ${JSON.stringify(f.pivot === null ? null : byXid.get(f.pivot))}`,
      );
} finally {
  await store.close();
  if (process.env.KEEP) console.log(`kept ${name}`);
  else await dropCitusDatabase(url, nodes, name);
}
