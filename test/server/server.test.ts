import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines, expectInvariants } from '../support/engines';
import { type ApiServer, startApiServer } from '../support/api-server';

const run = promisify(execFile);

describe('the emitted schema', () => {
  // In a child process under tsx, as `npm run schema` runs it: inside vitest the schema (built by
  // Pothos on graphql's CJS build) and printSchema (resolved to its ESM build) are two copies of graphql-js.
  it('printedSchema() is schema/schema.graphql byte for byte (run `npm run schema` after changing the API)', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', '-e', "import('./src/api/schema.ts').then((m) => process.stdout.write(m.printedSchema()))"],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    expect(stdout.length).toBeGreaterThan(10_000);
    expect(stdout).toBe(fs.readFileSync('schema/schema.graphql', 'utf8'));
  });

  it('the contract check passes: no breaking change against the committed baseline schema/contract.graphql', async () => {
    const { stdout } = await run(process.execPath, ['scripts/contract-check.mjs'], { cwd: process.cwd() }).catch(
      (e: { code: number; stdout: string }) => {
        throw new Error(`contract-check exited ${e.code}:\n${e.stdout}`);
      },
    );
    expect(stdout).toMatch(/contract check: 0 breaking change\(s\)/);
    expect(stdout).not.toMatch(/^BREAKING/m);
  });
});

/** /health and GraphiQL on a listening server: GraphiQL only outside production. */
describe.each(engines())('health and GraphiQL on %s', (engine) => {
  let dev: ApiServer;
  let prod: ApiServer;
  beforeAll(async () => {
    dev = await startApiServer(engine);
    prod = await startApiServer(engine, { db: dev.db, config: { production: true } });
  });
  afterAll(async () => {
    if (dev) await expectInvariants(dev.db.store);
    await prod?.close();
    await dev?.close();
  });

  it('/health answers 200 with the engine', async () => {
    for (const s of [dev, prod]) {
      const r = await fetch(`${s.base}/health`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/application\/json/);
      expect(await r.json()).toMatchObject({ status: 'ok', engine });
    }
  });

  it('GET /graphql with Accept: text/html serves GraphiQL when not in production', async () => {
    const r = await fetch(dev.http, { headers: { accept: 'text/html' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/text\/html/);
    expect(await r.text()).toMatch(/graphiql/i);
  });

  it('in production GET /graphql with Accept: text/html serves no GraphiQL, and field suggestions are off', async () => {
    const r = await fetch(prod.http, { headers: { accept: 'text/html' } });
    expect(r.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    expect(await r.text()).not.toMatch(/graphiql/i);
    expect(r.status).toBeGreaterThanOrEqual(400);
    const typo = await fetch(prod.http, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewr { id } }' }),
    });
    expect((await typo.json()).errors[0].message).not.toMatch(/Did you mean/);
    const devTypo = await fetch(dev.http, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ viewr { id } }' }),
    });
    expect((await devTypo.json()).errors[0].message).toMatch(/Did you mean "viewer"/);
  });
});
