import pg from 'pg';

/**
 * Test databases on a Citus cluster. Citus keeps its metadata (nodes, shards, placements) inside each database, on
 * every node, and does not propagate CREATE DATABASE, so a test database is the run's migrated template database
 * copied on every node with CREATE DATABASE … TEMPLATE: the copies name the same shards, which the workers' copies
 * hold. A copy takes about half a second for three nodes, where making and migrating one takes several.
 *
 * RETRACT_TEST_CITUS_URL names any database of the cluster's coordinator in which the workers are registered
 * (`scripts/ensure-citus.sh` sets up `postgres` that way); only its node list is read.
 */
export interface CitusNode {
  host: string;
  port: number;
}

export function citusUrl(): string | undefined {
  return process.env.RETRACT_TEST_CITUS_URL || undefined;
}

/** The same server and credentials as `url`, on another node and database. */
export function nodeUrl(url: string, node: CitusNode, database: string): string {
  const u = new URL(url);
  u.hostname = node.host;
  u.port = String(node.port);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs `fn` on a client of `database` on one node, as the URL's user, and closes it. */
export async function onNode<T>(
  url: string,
  node: CitusNode,
  database: string,
  fn: (c: pg.Client) => Promise<T>,
): Promise<T> {
  const c = new pg.Client({ connectionString: nodeUrl(url, node, database) });
  c.on('notice', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/** The coordinator first, then the workers, as the database `url` names them. */
export async function citusNodes(url: string): Promise<CitusNode[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ host: string; port: number }>(
      `SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE isactive AND noderole = 'primary' ORDER BY groupid`,
    );
    if (r.rows.length < 2 || !(await c.query(`SELECT 1 FROM pg_dist_node WHERE groupid = 0`)).rowCount) {
      throw new Error(
        `RETRACT_TEST_CITUS_URL: ${new URL(url).pathname.slice(1)} on the coordinator has no coordinator and workers registered (run scripts/ensure-citus.sh)`,
      );
    }
    return r.rows;
  } finally {
    await c.end();
  }
}

/**
 * A new empty Citus database `name` on every node, the workers registered in it: what `ensure-citus.sh
 * --new-database` does. `shardCount` is the shards per distributed table it will make (tests: few, so that the
 * migrations' DDL is quick and fleets still fall on both workers).
 */
export async function createCitusDatabase(
  url: string,
  nodes: CitusNode[],
  name: string,
  shardCount?: number,
): Promise<void> {
  for (const n of nodes) {
    await onNode(url, n, 'postgres', async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${name}`);
    });
    await onNode(url, n, name, (c) => c.query(`CREATE EXTENSION citus; CREATE EXTENSION vector`));
  }
  const [coordinator, ...workers] = nodes;
  await onNode(url, coordinator!, name, async (c) => {
    await c.query(`SELECT citus_set_coordinator_host($1, $2)`, [coordinator!.host, coordinator!.port]);
    for (const w of workers) await c.query(`SELECT citus_add_node($1, $2)`, [w.host, w.port]);
    if (shardCount) await c.query(`ALTER DATABASE ${name} SET citus.shard_count = ${Number(shardCount)}`);
  });
}

/**
 * Makes `name` a template on every node: no connections allowed, and the ones open now (Citus' maintenance
 * daemon and its connections between the nodes) ended, since CREATE DATABASE … TEMPLATE needs it unused.
 */
export async function freezeTemplate(url: string, nodes: CitusNode[], name: string): Promise<void> {
  for (const n of nodes) {
    await onNode(url, n, 'postgres', async (c) => {
      await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [name],
      );
    });
  }
}

/** Copies the template on every node; retries while another copy of it is being made on a node. */
export async function cloneCitusDatabase(
  url: string,
  nodes: CitusNode[],
  template: string,
  name: string,
): Promise<void> {
  for (const n of nodes) {
    await onNode(url, n, 'postgres', async (c) => {
      for (let i = 0; ; i++) {
        try {
          await c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
          return;
        } catch (e) {
          if (i > 100 || (e as { code?: string }).code !== '55006') throw e;
          await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
        }
      }
    });
  }
}

/**
 * Drops `name` on every node, workers first (the coordinator's copy names them). WITH (FORCE) ends client sessions
 * but not Citus' maintenance daemon, which reconnects: a drop refused for "other sessions" (55006) is tried again,
 * or the worker's copy outlived the run, its daemon calling the other nodes for a database they no longer had.
 */
export async function dropCitusDatabase(url: string, nodes: CitusNode[], name: string): Promise<void> {
  for (const n of [...nodes.slice(1), nodes[0]!]) {
    await onNode(url, n, 'postgres', async (c) => {
      for (let i = 0; ; i++) {
        try {
          await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          return;
        } catch (e) {
          if (i >= 20 || (e as { code?: string }).code !== '55006') throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    }).catch((e: Error) => process.stderr.write(`could not drop ${name} on ${n.host}:${n.port}: ${e.message}\n`));
  }
}

/** Every database on the cluster whose name starts with `prefix`, dropped (a run's leftovers). */
export async function dropCitusDatabases(url: string, nodes: CitusNode[], prefix: string): Promise<void> {
  const names = await onNode(url, nodes[0]!, 'postgres', async (c) =>
    (
      await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, [prefix])
    ).rows.map((r) => r.datname),
  );
  for (const name of names) await dropCitusDatabase(url, nodes, name);
}
