import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openStore } from '../../src/store/engine';
import {
  citusNodes,
  citusUrl,
  createCitusDatabase,
  dropCitusDatabase,
  dropCitusDatabases,
  freezeTemplate,
  nodeUrl,
} from './citus';

/**
 * Once per test run: a migrated PGlite data directory dumped to a file (each test file loads its
 * own copy in memory), and, when RETRACT_TEST_DATABASE_URL is set, a migrated PostgreSQL template
 * database that each test file clones with CREATE DATABASE … TEMPLATE, and, when RETRACT_TEST_CITUS_URL is
 * set, the same on every node of the Citus cluster (test/support/citus.ts).
 */
export default async function setup(project: TestProject) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-test-'));
  const store = await openStore({ dataDir: 'memory://' });
  const dump = await store.pglite!.dumpDataDir('none');
  await store.close();
  const file = path.join(dir, 'template.tar');
  fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgliteTemplate', file);

  const url = process.env.RETRACT_TEST_DATABASE_URL;
  let template: string | null = null;
  if (url) {
    template = `retract_tpl_${process.pid}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template}`);
    await admin.query(`CREATE DATABASE ${template}`);
    await admin.end();
    const u = new URL(url);
    u.pathname = `/${template}`;
    const pgStore = await openStore({ databaseUrl: u.toString(), poolSize: 1 });
    await pgStore.close();
  }
  project.provide('pgTemplate', template ?? '');

  const citus = citusUrl();
  const citusTemplate = `retract_ctpl_${process.pid}`;
  const nodes = citus ? await citusNodes(citus) : [];
  if (citus) {
    await createCitusDatabase(citus, nodes, citusTemplate, 4);
    const store = await openStore({
      databaseUrl: nodeUrl(citus, nodes[0]!, citusTemplate),
      engine: 'citus',
      poolSize: 1,
    });
    await store.close();
    await freezeTemplate(citus, nodes, citusTemplate);
  }
  project.provide('citus', { template: citus ? citusTemplate : '', nodes });
  if (!citus) console.log('RETRACT_TEST_CITUS_URL is not set: the Citus engine is not tested in this run.');
  if (!url)
    console.log(
      'RETRACT_TEST_DATABASE_URL is not set: every suite runs on PGlite; the PostgreSQL-only suites are skipped.',
    );

  return async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    if (url && template) {
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const r = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname = $2`, [
        `retract_t_${process.pid}_%`,
        template,
      ]);
      for (const row of r.rows)
        await admin.query(`DROP DATABASE IF EXISTS ${row.datname} WITH (FORCE)`).catch(() => {});
      await admin.end();
    }
    if (citus) {
      await dropCitusDatabases(citus, nodes, `retract_ct_${process.pid}_`);
      await dropCitusDatabase(citus, nodes, citusTemplate);
    }
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    pgTemplate: string;
    citus: { template: string; nodes: import('./citus').CitusNode[] };
  }
}
