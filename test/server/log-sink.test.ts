import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { logSink } from '../../src/server/log-sink';

/**
 * The server's log destination never holds the process up: lines arrive whole and in order; a reader that stops
 * reading makes flush() give up at its bound; a reader that goes away ends logging (the whole server case, SIGTERM
 * with stderr's reader gone, is in test/server/shutdown.test.ts).
 */
describe('logSink', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-log-sink-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes every line, in order', async () => {
    const file = path.join(dir, 'log');
    const fd = fs.openSync(file, 'w');
    const sink = logSink(fd);
    for (let i = 0; i < 1000; i++) sink.write(`{"n":${i}}\n`);
    await sink.flush(5_000);
    fs.closeSync(fd);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1000);
    expect(lines.map((l) => JSON.parse(l).n)).toEqual([...Array(1000).keys()]);
    expect(sink.dropped).toBe(0);
  });

  it('a pipe whose reader stopped reading: flush gives up at its bound, lines past the queue bound are dropped; when the reader goes, logging ends', async () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    // A reader that never reads: the pipe (64 KiB) fills and the write waits in the thread pool, not in the process.
    const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const fd = fs.openSync(fifo, 'w');
    const sink = logSink(fd, 256 * 1024);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 1024; i++) sink.write(line);
    expect(sink.dropped).toBeGreaterThan(500);
    const started = Date.now();
    await sink.flush(300);
    expect(Date.now() - started).toBeLessThan(2_000);

    fs.closeSync(reader);
    // The blocked write now fails (EPIPE): logging ends, what was queued is dropped, and flush returns at once.
    await expect
      .poll(
        async () => {
          const t = Date.now();
          await sink.flush(1_000);
          return Date.now() - t;
        },
        { timeout: 10_000 },
      )
      .toBeLessThan(100);
    const dropped = sink.dropped;
    sink.write(line);
    expect(sink.dropped).toBe(dropped + 1);
    fs.closeSync(fd);
  });
});
