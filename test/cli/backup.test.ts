import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine';
import { actorIn, coreOf, expectInvariants } from '../support/engines';
import { belief } from '../support/story';
import { retract } from '../support/cli-run';

/**
 * `retract backup` / `retract restore` as an operator runs them (child processes, exit status and
 * stderr): refused while the store is open in another process, refused over an existing store without
 * --replace, and a restore into a new directory opens as the store that was backed up.
 * test/store/backup.test.ts checks what a restore preserves.
 */

const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-cli-backup-'));
afterAll(() => fs.rmSync(temp, { recursive: true, force: true }));

describe('retract backup / restore', { timeout: 240_000 }, () => {
  it('backs up a stopped store, refuses an open one, and restores it into a new directory', async () => {
    const data = path.join(temp, 'data');
    const file = path.join(temp, 'store.tar.gz');
    const store = await openStore({ dataDir: data, maintenanceMs: 0 });
    const actor = await actorIn(store, 'cli-backup');
    const kept = await belief(coreOf(store), actor, 'backup/kept');

    // Open in this process (as in a server): refused, the holder named, no file written.
    const held = await retract(['backup', file, '--data-dir', data]);
    expect(held.code).toBe(1);
    expect(held.stderr).toMatch(
      new RegExp(
        `^retract: The data directory .* is in use by process ${process.pid}\\..* A backup or restore needs the store stopped`,
      ),
    );
    expect(fs.existsSync(file)).toBe(false);
    await store.close();

    const made = await retract(['backup', file, '--data-dir', data]);
    expect(made.stderr).toMatch(/^backed up the embedded store in .* \(\d+ bytes\)/);
    expect(made.code).toBe(0);
    expect(fs.statSync(file).size).toBeGreaterThan(0);

    const over = await retract(['restore', file, '--data-dir', data]);
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/already holds a store; pass --replace/);

    const copy = path.join(temp, 'copy');
    const into = await retract(['restore', file, '--data-dir', copy]);
    expect(into.stderr).toMatch(/^restored .* into .*copy\n/);
    expect(into.code).toBe(0);
    const restored = await openStore({ dataDir: copy, maintenanceMs: 0 });
    try {
      const found = await restored.db
        .selectFrom('beliefs')
        .select('claim_key')
        .where('id', '=', kept.id)
        .executeTakeFirst();
      expect(found?.claim_key).toBe('backup/kept');
      await expectInvariants(restored);
    } finally {
      await restored.close();
    }
  });

  it('refuses a PostgreSQL store, pointing to pg_dump; and a file that is not a dump', async () => {
    const pgUrl = await retract([
      'backup',
      path.join(temp, 'x'),
      '--database-url',
      'postgres://nobody@127.0.0.1:1/none',
    ]);
    expect(pgUrl.code).toBe(2);
    expect(pgUrl.stderr).toMatch(/for PostgreSQL use pg_dump -Fc \/ pg_restore \(see docs\/backup\.md\)/);
    const junk = path.join(temp, 'junk.tar.gz');
    fs.writeFileSync(junk, 'not a dump');
    const bad = await retract(['restore', junk, '--data-dir', path.join(temp, 'fresh')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/junk\.tar\.gz is not a PGlite dump/);
    expect(fs.existsSync(path.join(temp, 'fresh', 'pgdata', 'PG_VERSION'))).toBe(false);
  });
});
