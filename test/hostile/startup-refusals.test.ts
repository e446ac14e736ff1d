import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { refusedInOneLine } from '../support/built-server';

/**
 * Every setting an operator gets wrong is refused in one line naming the setting, exit 1, with no
 * stack trace: a bootstrap token too short, a WebSocket or introspection setting out of its values, a data directory that is a file (or under one), a
 * DATABASE_URL nothing answers at or whose database does not exist. The password in the URL is
 * never printed.
 */
describe('npm start refuses bad settings in one line', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-startup-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const refusal = (env: Record<string, string>) =>
    refusedInOneLine({ RETRACT_DATA_DIR: path.join(dir, 'refused'), ...env });

  it('a short RETRACT_BOOTSTRAP_TOKEN, before anything is opened', async () => {
    expect(await refusal({ RETRACT_BOOTSTRAP_TOKEN: 'short' })).toBe(
      'retract: RETRACT_BOOTSTRAP_TOKEN must be at least 16 characters',
    );
    expect(fs.existsSync(path.join(dir, 'refused')), 'nothing was opened').toBe(false);
  });

  it('the WebSocket and introspection settings: a yes/no that is neither, a cap that is not a positive integer', async () => {
    expect(await refusal({ RETRACT_WS_ANONYMOUS: 'yes' })).toBe(
      'retract: RETRACT_WS_ANONYMOUS must be on or off (got yes)',
    );
    expect(await refusal({ RETRACT_ANONYMOUS_INTROSPECTION: 'maybe' })).toBe(
      'retract: RETRACT_ANONYMOUS_INTROSPECTION must be on or off (got maybe)',
    );
    expect(await refusal({ RETRACT_WS_MAX_UNAUTHENTICATED_PER_ADDRESS: '0' })).toBe(
      'retract: RETRACT_WS_MAX_UNAUTHENTICATED_PER_ADDRESS must be a positive integer (got 0)',
    );
    expect(await refusal({ RETRACT_WS_INIT_TIMEOUT_MS: 'soon' })).toBe(
      'retract: RETRACT_WS_INIT_TIMEOUT_MS must be a positive integer (got soon)',
    );
  });

  it('a RETRACT_DATA_DIR that is a file, or lies under one', async () => {
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'not a directory');
    expect(await refusal({ RETRACT_DATA_DIR: file })).toBe(
      `retract: RETRACT_DATA_DIR: ${file} cannot be the data directory (EEXIST: a file is in the way); point it at a directory this process may create and write`,
    );
    expect(await refusal({ RETRACT_DATA_DIR: path.join(file, 'sub') })).toMatch(
      /^retract: RETRACT_DATA_DIR: .*a-file\/sub cannot be the data directory \(ENOTDIR: a file is in the way\)/,
    );
  });

  it('a DATABASE_URL nothing answers at; the password is not printed', async () => {
    const line = await refusal({ DATABASE_URL: 'postgres://nobody:s3cr3t-pw@127.0.0.1:1/nothing' });
    expect(line).toMatch(
      /^retract: DATABASE_URL: cannot connect to 127\.0\.0\.1:1\/nothing \(connect ECONNREFUSED 127\.0\.0\.1:1\)/,
    );
    expect(line).not.toContain('s3cr3t-pw');
  });

  it.skipIf(!process.env.RETRACT_TEST_DATABASE_URL)(
    'a DATABASE_URL naming a database that does not exist',
    async () => {
      const url = new URL(process.env.RETRACT_TEST_DATABASE_URL!);
      url.pathname = '/no_such_database_here';
      expect(await refusal({ DATABASE_URL: url.toString() })).toMatch(
        /^retract: DATABASE_URL: cannot connect to .*\/no_such_database_here \(database "no_such_database_here" does not exist\)/,
      );
    },
  );
});
