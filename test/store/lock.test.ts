import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/store/engine';
import { DataDirLockedError, lockDataDir } from '../../src/store/lock';

const run = promisify(execFile);
const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'open-store.ts');

interface ChildResult {
  opened: boolean;
  pid: number;
  name?: string;
  message?: string;
  owner?: number | null;
  held?: string;
  released?: boolean;
}

/** Opens the store in `dir` from a separate Node process and reports what happened. */
async function openInChild(dir: string): Promise<ChildResult> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture, dir], {
    cwd: process.cwd(),
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ChildResult;
}

/** The pid of a process that has certainly exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  const pid = child.pid!;
  await new Promise((r) => child.on('exit', r));
  expect(() => process.kill(pid, 0)).toThrow();
  return pid;
}

/**
 * The embedded engine's data-directory lock (PGlite only: a PostgreSQL store has no data directory,
 * so this suite runs once rather than per engine). PGlite is single-process: a second process must
 * be refused before it touches the files; a lock left by a dead process is taken over.
 */
describe('data-directory lock (embedded engine, on disk)', () => {
  let dir: string;
  let lockFile: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-lock-'));
    lockFile = path.join(dir, 'retract.lock');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("a second process is refused with DataDirLockedError naming the holder's pid; closing releases the lock", async () => {
    // Start from the migrated template (skips initdb); the files live on disk in `dir` from here on.
    const template = new Blob([fs.readFileSync(inject('pgliteTemplate'))]);
    let store: Store | null = await openStore({ dataDir: dir, loadDataDir: template });
    expect(fs.existsSync(path.join(dir, 'pgdata', 'PG_VERSION'))).toBe(true);
    try {
      expect(store.engine).toBe('pglite');
      expect(fs.readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
      const n = await sql<{ n: number }>`SELECT count(*)::int AS n FROM kysely_migration`.execute(store.db);
      expect(n.rows[0]!.n).toBeGreaterThan(0);

      const child = await openInChild(dir);
      expect(child).toMatchObject({ opened: false, name: 'DataDirLockedError', owner: process.pid });
      expect(child.message).toContain(`in use by process ${process.pid}`);
      expect(child.message).toContain(dir);
      // The refused child left the holder's lock alone.
      expect(fs.readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    } finally {
      await store?.close();
      store = null;
    }
    expect(fs.existsSync(lockFile)).toBe(false);
  });

  it('a stale lock holding a dead pid, or garbage, is taken over (by another process, then by this one)', async () => {
    // A lock left by a process that died: another process takes it over, opens the data written above, and releases it.
    fs.writeFileSync(lockFile, String(await deadPid()));
    const child = await openInChild(dir);
    expect(child).toMatchObject({ opened: true, released: true });
    expect(child.held).toBe(String(child.pid));

    fs.writeFileSync(lockFile, 'not-a-pid');
    const store = await openStore({ dataDir: dir });
    try {
      expect(fs.readFileSync(lockFile, 'utf8').trim()).toBe(String(process.pid));
    } finally {
      await store.close();
    }
    expect(fs.existsSync(lockFile)).toBe(false);
  });

  it('lockDataDir refuses a live owner other than this process, and release only removes its own lock', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-lock-unit-'));
    try {
      const file = path.join(other, 'retract.lock');
      fs.writeFileSync(file, String(process.ppid)); // a live process that is not this one
      let caught: unknown;
      try {
        lockDataDir(other);
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(DataDirLockedError);
      expect((caught as DataDirLockedError).pid).toBe(process.ppid);
      expect(fs.readFileSync(file, 'utf8')).toBe(String(process.ppid));

      fs.unlinkSync(file);
      const release = lockDataDir(other);
      fs.writeFileSync(file, String(process.ppid)); // someone else's lock now
      release();
      expect(fs.readFileSync(file, 'utf8')).toBe(String(process.ppid));
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
