import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type BuiltServer, startBuilt } from '../support/built-server';
import { type Shown, type Step, matches, normalise, steps } from '../support/doc-replay';
import { ROOT, childEnv } from '../mcp/support';
import { expectInvariants } from '../support/engines';
import { openStore } from '../../src/store/engine';

/**
 * Docs that cannot drift: README's quick start and docs/walkthrough.md are replayed, block by block, against a
 * server started from the build, and every output they show is compared with what the run printed (ids, times,
 * cursors, tokens, ports and the checkout's path normalised; `…` stands for text left out). The convention that
 * makes a page replayable is in test/support/doc-replay.ts. Each page is one run from a fresh store, so two
 * sections can no longer show two different stories. A block the test cannot replay is marked `skip: <reason>` on
 * the page and listed here as a skipped test with that reason.
 */
const PAGES = ['README.md', 'docs/walkthrough.md'];
const STEP_TIMEOUT = 120_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The shell the page's reader has: variables carry over from block to block; `node` is the Node running this. */
class Session {
  env: Record<string, string> = childEnv({ PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` });
  server: BuiltServer | null = null;
  address = '127.0.0.1:4000';
  background: { child: ChildProcess; run: Promise<Run> } | null = null;
  private readonly envFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'retract-docs-')), 'env');
  readonly dataDir = path.join(path.dirname(this.envFile), 'store');

  /** The page's text with the documented address replaced by the running server's. */
  here(text: string): string {
    return text.replace(/(?:127\.0\.0\.1|localhost):4000/g, this.address);
  }

  spawn(script: string): { child: ChildProcess; run: Promise<Run> } {
    const wrapped = `set -eo pipefail\nset -a\n${this.here(script)}\nset +a\nenv -0 > ${JSON.stringify(this.envFile)}\n`;
    const child = spawn('bash', ['-c', wrapped], { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const run = new Promise<Run>((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
    return { child, run };
  }

  /** Runs a block to its end; its variables hold for the next blocks. */
  async run(script: string): Promise<Run> {
    const r = await this.spawn(script).run;
    if (r.code !== 0)
      throw new Error(`exit ${r.code}\n--- block\n${script}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
    this.env = Object.fromEntries(
      fs
        .readFileSync(this.envFile, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    return r;
  }

  async stopServer(): Promise<void> {
    if (!this.server) return;
    this.server.child.kill('SIGTERM');
    await this.server.exited;
    this.server = null;
  }

  async close(): Promise<void> {
    this.background?.child.kill('SIGTERM');
    await this.stopServer();
    fs.rmSync(path.dirname(this.envFile), { recursive: true, force: true });
  }
}

function expectShown(shown: Shown, output: string, page: string): void {
  const printed = output.replaceAll(`${ROOT}/`, './'); // the checkout's own path, wherever it is cloned
  if (matches(shown.text, printed)) return;
  // Not a match: show both, normalised, as a diff.
  expect(normalise(printed), `${page}:${shown.line} shows another output than the run printed`).toBe(
    normalise(shown.text),
  );
}

/** The files a page's commands write in the checkout (`tee F`, `--data-dir ./D`, `// F — …` blocks): removed after. */
function writes(all: Step[]): string[] {
  const names = all.flatMap((s) =>
    s.kind === 'file'
      ? [s.name]
      : 'script' in s
        ? [...s.script.matchAll(/(?:\btee|--data-dir)\s+(?:\.\/)?([\w.-]+)/g)].map((m) => m[1]!)
        : [],
  );
  return [...new Set(names)];
}

for (const page of PAGES) {
  const all = steps(path.join(ROOT, page));

  describe(`${page}, replayed`, { timeout: STEP_TIMEOUT }, () => {
    const session = new Session();
    const created = writes(all);
    afterAll(async () => {
      await session.close();
      for (const f of created) fs.rmSync(path.join(ROOT, f), { recursive: true, force: true });
    });

    it('writes nothing over a file of the checkout', () => {
      expect(
        created.filter((f) => fs.existsSync(path.join(ROOT, f))),
        'remove these: the replay writes them',
      ).toEqual([]);
    });

    for (const step of all) {
      const where = `${page}:${step.line}`;
      switch (step.kind) {
        case 'skip':
          it.skip(`${where} not replayed: ${step.reason}`, () => {});
          break;
        case 'orphan':
          it(`${where} is an output the page runs nothing to produce`, () => {
            expect.fail(
              `${where}: place it right after its command, start it with "$ <command>", or mark it "skip: <reason>"`,
            );
          });
          break;
        case 'file':
          it(`${where} writes ${step.name}`, () => {
            fs.writeFileSync(path.join(ROOT, step.name), session.here(step.body));
          });
          break;
        case 'server':
          it(`${where} starts the server (the built npm start)`, async () => {
            const start = /^(?:\s*\w+=\S+\s+)*npm start\b.*$/m;
            const line = start.exec(step.script)?.[0];
            expect(line, `${where}: a server block runs npm start`).toBeDefined();
            await session.run(step.script.replace(start, ''));
            const vars = Object.fromEntries([...line!.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
            const token = session.env.RETRACT_BOOTSTRAP_TOKEN;
            session.server = startBuilt({
              ...(token ? { RETRACT_BOOTSTRAP_TOKEN: token } : {}),
              ...vars,
              RETRACT_DATA_DIR: session.dataDir,
            });
            session.address = new URL(await session.server.url).host;
          });
          break;
        case 'background':
          it(`${where} starts a command in the background`, async () => {
            const bg = session.spawn(step.script);
            session.background = bg;
            // Going on once it speaks (a subscriber: connected), and a moment more for its subscription to register.
            await new Promise<void>((resolve, reject) => {
              bg.child.stderr!.once('data', () => setTimeout(resolve, 3000));
              void bg.run.then((r) => reject(new Error(`it exited ${r.code} first: ${r.stderr}`)));
            });
          });
          break;
        case 'awaitBackground':
          it(`${where} is what the background command printed`, async () => {
            expect(session.background, `${where}: no background command ran before it`).not.toBeNull();
            const r = await session.background!.run;
            expect(r.code, r.stderr).toBe(0);
            expectShown(step.expect, r.stdout, page);
          });
          break;
        case 'run':
          it(`${where} ${step.expect ? `prints what ${page}:${step.expect.line} shows` : 'runs'}`, async () => {
            const r = await session.run(step.script);
            if (step.expect) expectShown(step.expect, r.stdout, page);
          });
          break;
      }
    }

    if (all.some((s) => s.kind === 'server')) {
      it("leaves the server's store holding every invariant", async () => {
        await session.stopServer();
        const store = await openStore({ dataDir: session.dataDir, migrate: false });
        try {
          await expectInvariants(store);
        } finally {
          await store.close();
        }
      });
    }
  });
}
