import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { lockDataDir } from './lock';

/**
 * Backup and restore of the embedded store (docs/backup.md): PGlite's own dump of its data directory
 * (`dumpDataDir`, a gzipped tar of PGDATA) and its own load (`loadDataDir`). Both take the data
 * directory's lock first, so they are refused with DataDirLockedError while a server (or any process)
 * has the store open: PGlite is one process, and a copy taken beside a running server could not be a
 * consistent one. Stop the server, back up, start it again (a PGlite store is a single-process
 * deployment; PostgreSQL is the engine for backups without a stop, with pg_dump).
 */

/** Raised for a backup or restore that cannot go ahead (no store to back up, a store in the way, not a dump). */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

const pgdataOf = (dataDir: string) => path.join(path.resolve(dataDir), 'pgdata');
const hasCluster = (pgdata: string) => fs.existsSync(path.join(pgdata, 'PG_VERSION'));

/** Writes a dump of the embedded store in `dataDir` to `file` (replaced whole: written beside it, then renamed). */
export async function backupDataDir(dataDir: string, file: string): Promise<{ bytes: number }> {
  const pgdata = pgdataOf(dataDir);
  if (!hasCluster(pgdata))
    throw new BackupError(`${path.resolve(dataDir)} holds no embedded store (no ${path.join('pgdata', 'PG_VERSION')})`);
  const release = lockDataDir(path.resolve(dataDir));
  try {
    const lite = await PGlite.create({ dataDir: pgdata, extensions: { vector } });
    let dump: Blob;
    try {
      dump = await lite.dumpDataDir('gzip');
    } finally {
      await lite.close();
    }
    const bytes = Buffer.from(await dump.arrayBuffer());
    const tmp = `${file}.partial-${process.pid}`;
    fs.writeFileSync(tmp, bytes);
    fs.renameSync(tmp, file);
    return { bytes: bytes.length };
  } finally {
    release();
  }
}

/**
 * Makes the embedded store in `dataDir` the one dumped in `file`. A data directory that already holds a
 * store is refused unless `replace`; then that store is kept, moved aside to `pgdata.before-restore-<time>`
 * (returned as `keptAside`), never deleted. The dump is loaded into memory first, so a file that is not a
 * PGlite dump is refused with the data directory untouched.
 */
export async function restoreDataDir(
  file: string,
  dataDir: string,
  opts: { replace?: boolean } = {},
): Promise<{ keptAside: string | null }> {
  if (!fs.existsSync(file)) throw new BackupError(`no backup file ${file}`);
  const dump = new Blob([fs.readFileSync(file)]);
  const release = lockDataDir(path.resolve(dataDir));
  try {
    const pgdata = pgdataOf(dataDir);
    if (hasCluster(pgdata) && !opts.replace) {
      throw new BackupError(
        `${path.resolve(dataDir)} already holds a store; pass --replace to restore over it (the current one is moved aside, not deleted)`,
      );
    }
    try {
      const probe = await PGlite.create({ loadDataDir: dump, extensions: { vector } });
      await probe.close();
    } catch (e) {
      throw new BackupError(`${file} is not a PGlite dump this version can load: ${(e as Error).message}`);
    }
    let keptAside: string | null = null;
    if (fs.existsSync(pgdata)) {
      keptAside = `${pgdata}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      fs.renameSync(pgdata, keptAside);
    }
    const lite = await PGlite.create({ dataDir: pgdata, loadDataDir: dump, extensions: { vector } });
    await lite.close();
    return { keptAside };
  } finally {
    release();
  }
}
