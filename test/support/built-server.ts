import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, childEnv } from '../mcp/support';

/** `npm start`'s entry point, as compiled by the build (npm ci runs it; so does `node scripts/build.mjs`). */
const MAIN = path.join(ROOT, 'build/src/server/main.js');

export interface BuiltServer {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<number | null>;
  /** The server's base URL once it logs that it serves; rejects when it exits first or takes over 200 s. */
  url: Promise<string>;
}

/** Starts the compiled server on a free port of 127.0.0.1 with `env` over the parent's (minus its store and token). */
export function startBuilt(env: Record<string, string>): BuiltServer {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} is missing: run node scripts/build.mjs`);
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: childEnv({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${err}`)), 200_000);
    child.stderr!.on('data', () => {
      const m = /"url":"(http:\/\/[^"]+)\/graphql"/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited ${code}: ${err}`));
    });
  });
  url.catch(() => {});
  return { child, stderr: () => err, exited, url };
}

/**
 * Starts the compiled server with `env`, expects it to refuse: exit 1 and one line on stderr with no stack trace.
 * Returns that line.
 */
export async function refusedInOneLine(env: Record<string, string>): Promise<string> {
  const s = startBuilt(env);
  const code = await s.exited;
  const lines = s.stderr().trim().split('\n');
  if (code !== 1 || lines.length !== 1 || /\n\s+at |node:internal/.test(s.stderr())) {
    throw new Error(`expected exit 1 and one line without a stack trace; got exit ${code}:\n${s.stderr()}`);
  }
  return lines[0]!;
}
