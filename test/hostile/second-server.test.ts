import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuiltServer, startBuilt as start } from '../support/built-server';

/**
 * A server that cannot start for a reason an operator fixes (the embedded data directory held by a
 * running server, the port taken) says so in one line, naming the holder, and exits 1 — not an
 * uncaught exception with a stack trace. Embedded-engine only: PostgreSQL has no directory to hold.
 */
describe('a second server on the same data directory', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-second-'));
  let first: BuiltServer;
  let url = '';

  beforeAll(async () => {
    first = start({ RETRACT_DATA_DIR: dir });
    url = await first.url;
  });
  afterAll(async () => {
    if (first) {
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("is refused in one line naming the owner's pid and the directory, exit 1; the first keeps serving", async () => {
    const second = start({ RETRACT_DATA_DIR: dir });
    expect(await second.exited).toBe(1);
    const lines = second.stderr().trim().split('\n');
    expect(lines, second.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^retract: The data directory ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${first.child.pid}\\.`,
      ),
    );
    expect(second.stderr()).not.toMatch(/\n\s+at |Uncaught|node:internal/);
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  it('a server on a port in use is refused in one line too, exit 1, and leaves its own data directory unlocked', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-port-'));
    try {
      const third = start({ RETRACT_DATA_DIR: other, PORT: new URL(url).port });
      expect(await third.exited).toBe(1);
      const lines = third.stderr().trim().split('\n');
      expect(lines, third.stderr()).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(`^retract: port ${new URL(url).port} on 127\\.0\\.0\\.1 is in use by another process`),
      );
      expect(fs.existsSync(path.join(other, 'retract.lock'))).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
