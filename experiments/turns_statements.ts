/**
 * Lists the SQL statements (round trips) the server sends for one assertBelief turn over HTTP
 * GraphQL: a new claim (BeliefAsserted) and a repeat of the same value (BeliefCorroborated), as the
 * turns benchmark (experiments/bench/turns.ts) sends them. Its raw-SQL arm must send the same.
 *
 *   npx tsx experiments/turns_statements.ts [--turns N] [--server postgres://…/postgres]
 *
 * Counts every query a `pg` client of this process sends (the store's pool, its NOTIFY included)
 * while the turns run one after another; creates and drops a database `retract_turns_statements`.
 */
import pg from 'pg';
import pino from 'pino';
import { createAgentDirect } from '../src/agent/agent.service';
import { LocalEmbedder } from '../src/embedding/local';
import { createApp } from '../src/server/app';
import { DEFAULT_SERVER, freshDb } from './bench/lib/stores';

const MUTATION = `mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename ... on BeliefAsserted { belief { id } } ... on BeliefCorroborated { belief { id } } } }`;
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const turns = Number(arg('turns') ?? 20);
const server = arg('server') ?? process.env.DATABASE_URL ?? DEFAULT_SERVER;

let counts: Map<string, number> | null = null;
const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }).query = function (
  this: unknown,
  q: unknown,
  ...rest: unknown[]
) {
  const text = typeof q === 'string' ? q : (q as { text?: string } | null)?.text;
  if (counts && text) {
    const k = text.replace(/\s+/g, ' ').trim().slice(0, 120);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return query.call(this, q, ...rest);
};

const db = await freshDb('postgres', server, 'retract_turns_statements');
try {
  const store = await db.open(10);
  const app = await createApp({
    config: { port: 0, host: '127.0.0.1', bootstrapToken: 'turns-statements-token-0123456789', logLevel: 'silent' },
    store,
    embedder: new LocalEmbedder(),
    logger: pino({ level: 'silent' }),
  });
  try {
    await app.listen();
    const { token } = await createAgentDirect(store, {
      fleet: 'bench',
      name: 'turns',
      scopes: ['beliefs:write', 'beliefs:read'],
    });
    const turn = async (key: string, i: number) => {
      const r = await fetch(`${app.url()}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({
          query: MUTATION,
          variables: { i: { claimKey: key, statement: `turn ${i}`, value: { v: 1 } } },
        }),
      });
      const j = (await r.json()) as { data?: { assertBelief?: { __typename: string } } };
      return j.data?.assertBelief?.__typename ?? JSON.stringify(j);
    };
    await turn('warm/0', 0);
    await turn('hot', 0);
    for (const mode of ['BeliefAsserted', 'BeliefCorroborated'] as const) {
      counts = new Map();
      for (let i = 0; i < turns; i++) {
        const kind = await turn(mode === 'BeliefAsserted' ? `new/${i}` : 'hot', i);
        if (kind !== mode) throw new Error(`expected ${mode}, got ${kind}`);
      }
      await new Promise((r) => setTimeout(r, 50)); // the coalesced NOTIFY of the last turn
      const c = counts;
      counts = null;
      const total = [...c.values()].reduce((a, b) => a + b, 0);
      console.log(`${mode}: ${total} statements over ${turns} turns = ${(total / turns).toFixed(2)} per turn`);
      for (const [k, v] of [...c].sort((a, b) => b[1] - a[1])) console.log(`${String(v).padStart(6)}  ${k}`);
    }
  } finally {
    await app.close();
    await store.close();
  }
} finally {
  await db.drop();
}
