import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../kernel/config-error';

/** Raised when another live process holds the embedded data directory. */
export class DataDirLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(
      `The data directory ${dir} is in use by process ${pid}. PGlite is a single-process engine: ` +
        `stop that process, point RETRACT_DATA_DIR at another directory, or use PostgreSQL (DATABASE_URL).`,
    );
    this.name = 'DataDirLockedError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the lock file `<dir>/retract.lock` holding this process's pid. A lock left by a dead pid is
 * taken over; a live owner's lock is refused with DataDirLockedError. Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (e) {
    // A file in the way, a path through a file, a directory not ours: the operator picks another path.
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? `${code}: a file is in the way` : code;
    throw new ConfigError(
      `RETRACT_DATA_DIR: ${dir} cannot be the data directory (${why}); point it at a directory this process may create and write`,
    );
  }
  const file = path.join(dir, 'retract.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          if (fs.readFileSync(file, 'utf8').trim() === String(process.pid)) fs.unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
      if (Number.isFinite(owner) && owner !== process.pid && alive(owner)) throw new DataDirLockedError(dir, owner);
      // Stale (dead owner, or garbage): remove and try again.
      try {
        fs.unlinkSync(file);
      } catch {
        /* raced with another taker */
      }
    }
  }
  throw new Error(`could not take the lock on ${dir}`);
}
