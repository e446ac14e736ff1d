import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../store/template';

/** An expected failure: the CLI prints `retract: <message>` (one line, no stack) and exits with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The project root (where package.json, experiments/ and src/ live), whatever the working directory. */
const ROOT = projectRoot();

/**
 * Runs `fn` under an ora spinner on stderr when stderr is a terminal; otherwise runs it silently
 * (piped output stays free of control sequences). The spinner ends with `done(result)` or the error.
 */
export async function withSpinner<T>(text: string, fn: () => Promise<T>, done: (r: T) => string): Promise<T> {
  if (!process.stderr.isTTY) return fn();
  const { default: ora } = await import('ora');
  const spinner = ora({ text, stream: process.stderr }).start();
  try {
    const r = await fn();
    spinner.succeed(done(r));
    return r;
  } catch (e) {
    spinner.fail(`${text} — failed`);
    throw e;
  }
}

/**
 * Runs a TypeScript script of this project with tsx as a child process, stdio inherited and stop
 * signals forwarded; resolves with its exit status (128 + signal number when it was killed).
 */
export function runScript(relPath: string, args: readonly string[], what: string): Promise<number> {
  const file = path.join(ROOT, relPath);
  if (!fs.existsSync(file)) throw new CliError(`${what}: ${relPath} does not exist in this checkout`);
  const tsx = createRequire(import.meta.url).resolve('tsx/cli');
  const child = spawn(process.execPath, [tsx, file, ...args], { stdio: 'inherit', cwd: ROOT });
  const forward = (sig: NodeJS.Signals) => child.kill(sig);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  return new Promise((resolve, reject) => {
    child.once('error', (e) => reject(new CliError(`${what}: could not start ${relPath}: ${e.message}`)));
    child.once('exit', (code, signal) => {
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      const signals: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
      resolve(code ?? 128 + (signal ? (signals[signal] ?? 1) : 1));
    });
  });
}

/** Store-selection flags shared by commands that open the database: they override DATABASE_URL / RETRACT_DATA_DIR. */
export interface StoreFlags {
  databaseUrl?: string;
  dataDir?: string;
}

/** The environment with the store flags applied (DATABASE_URL wins over RETRACT_DATA_DIR, as in the server). */
export function envWith(flags: StoreFlags, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out = { ...env };
  if (flags.databaseUrl) out.DATABASE_URL = flags.databaseUrl;
  if (flags.dataDir) {
    out.RETRACT_DATA_DIR = flags.dataDir;
    if (!flags.databaseUrl) delete out.DATABASE_URL;
  }
  return out;
}
