import { CliError, type StoreFlags, envWith } from './common';

/**
 * `retract backup <file>` / `retract restore <file>`: the embedded store's dump and load
 * (src/store/backup.ts, docs/backup.md). A PostgreSQL or Citus store is backed up with the database's
 * own tools (pg_dump / pg_restore), so with DATABASE_URL set these refuse and say so.
 */

/** The embedded data directory the flags and environment name; refused when they name a database server. */
function embeddedDir(flags: StoreFlags): string {
  const env = envWith(flags);
  if (env.DATABASE_URL && env.RETRACT_ENGINE !== 'pglite') {
    throw new CliError(
      'backup and restore here are for the embedded store; for PostgreSQL use pg_dump -Fc / pg_restore (see docs/backup.md), ' +
        'or pass --data-dir to name an embedded store',
      2,
    );
  }
  return env.RETRACT_DATA_DIR ?? './.retract';
}

async function refusals<T>(fn: () => Promise<T>): Promise<T> {
  const { BackupError } = await import('../store/backup');
  const { DataDirLockedError } = await import('../store/lock');
  try {
    return await fn();
  } catch (e) {
    if (e instanceof DataDirLockedError)
      throw new CliError(`${e.message} A backup or restore needs the store stopped (docs/backup.md).`);
    if (e instanceof BackupError) throw new CliError(e.message);
    throw e;
  }
}

export async function backup(file: string, flags: StoreFlags): Promise<number> {
  const dir = embeddedDir(flags);
  const { backupDataDir } = await import('../store/backup');
  const { bytes } = await refusals(() => backupDataDir(dir, file));
  process.stderr.write(`backed up the embedded store in ${dir} to ${file} (${bytes} bytes)\n`);
  return 0;
}

export async function restore(file: string, flags: StoreFlags & { replace?: boolean }): Promise<number> {
  const dir = embeddedDir(flags);
  const { restoreDataDir } = await import('../store/backup');
  const { keptAside } = await refusals(() => restoreDataDir(file, dir, { replace: flags.replace }));
  process.stderr.write(
    `restored ${file} into ${dir}${keptAside ? `; the store it replaced is kept in ${keptAside}` : ''}\n` +
      'Subscribers resuming with a cursor from after the backup are refused (BAD_USER_INPUT on after): they resubscribe without one.\n',
  );
  return 0;
}
