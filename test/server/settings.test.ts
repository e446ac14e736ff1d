import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refusedInOneLine, startBuilt } from '../support/built-server';

/**
 * `npm start` reads its engine and embedder from the environment. A value an operator mistyped is refused in one
 * line, exit 1, before anything is opened; RETRACT_ENGINE is obeyed, not only validated.
 */
describe('npm start and its settings', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-settings-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function refusal(env: Record<string, string>): Promise<string> {
    const line = await refusedInOneLine({ RETRACT_DATA_DIR: path.join(dir, 'refused'), ...env });
    expect(fs.existsSync(path.join(dir, 'refused')), 'nothing was opened').toBe(false);
    return line;
  }

  it('refuses an unknown RETRACT_ENGINE, RETRACT_EMBEDDER or RETRACT_ADJUDICATOR, and a server engine without DATABASE_URL', async () => {
    expect(await refusal({ RETRACT_ENGINE: 'mysql' })).toBe(
      "retract: RETRACT_ENGINE must be pglite, postgres or citus (got 'mysql')",
    );
    expect(await refusal({ RETRACT_ENGINE: 'citus' })).toBe('retract: RETRACT_ENGINE=citus needs DATABASE_URL');
    expect(await refusal({ RETRACT_EMBEDDER: 'openai' })).toBe(
      'retract: RETRACT_EMBEDDER must be one of local, bedrock (got "openai")',
    );
    expect(await refusal({ RETRACT_ADJUDICATOR: 'gpt' })).toBe(
      'retract: RETRACT_ADJUDICATOR must be one of heuristic, bedrock (got "gpt")',
    );
    expect(await refusal({ PORT: 'eighty' })).toBe('retract: PORT must be a port number (got eighty)');
  });

  it('refuses a RETRACT_GRAPHIQL other than on/off and a RETRACT_SHUTDOWN_TIMEOUT_MS that is not a positive integer, in one line', async () => {
    expect(await refusal({ RETRACT_GRAPHIQL: 'yes' })).toBe('retract: RETRACT_GRAPHIQL must be on or off (got yes)');
    expect(await refusal({ RETRACT_SHUTDOWN_TIMEOUT_MS: '10s' })).toBe(
      'retract: RETRACT_SHUTDOWN_TIMEOUT_MS must be a positive integer (got 10s)',
    );
  });

  it('serves on PGlite when RETRACT_ENGINE=pglite, whatever DATABASE_URL names', async () => {
    const s = startBuilt({
      RETRACT_ENGINE: 'pglite',
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing',
      RETRACT_DATA_DIR: path.join(dir, 'embedded'),
    });
    try {
      const url = await s.url;
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect(s.stderr()).toMatch(/"engine":"pglite"/);
    } finally {
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });

  // The engine a database is, not the one named, decides: naming Citus for a plain PostgreSQL server is refused.
  it.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)(
    'refuses RETRACT_ENGINE=citus on a plain PostgreSQL database, in one line',
    async () => {
      const url = new URL(process.env.RETRACT_TEST_DATABASE_URL!);
      url.pathname = '/postgres';
      expect(await refusal({ RETRACT_ENGINE: 'citus', DATABASE_URL: url.toString() })).toBe(
        'retract: RETRACT_ENGINE=citus, but postgres is a plain PostgreSQL database (no citus extension)',
      );
    },
  );
});
