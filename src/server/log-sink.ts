import fs from 'node:fs';

/**
 * Where the server's log lines go (a pino destination): one file descriptor, written without ever
 * holding up the process. pino's own destination (sonic-boom) flushes synchronously when the process
 * exits and, when the descriptor is a pipe whose reader has gone (the process that spawned the server
 * exited), retries that write forever: the server then ignores SIGTERM for good (issue 33). Here:
 * - writes are asynchronous, one at a time, in order; nothing is written at exit;
 * - a reader that has gone (EPIPE, or any other write error) ends logging: later lines are dropped;
 * - a reader that is alive but slow makes lines wait in memory up to `maxQueuedBytes`; beyond it
 *   lines are dropped and counted, never waited for;
 * - `flush(ms)` waits for what is queued, at most `ms`, so the last lines of a clean stop are written
 *   when they can be and the stop never waits longer.
 */
export interface LogSink {
  write(line: string): void;
  /** Resolves when every queued line is written, logging has ended, or `timeoutMs` passed, whichever comes first. */
  flush(timeoutMs: number): Promise<void>;
  /** Lines dropped (queue full, or logging ended by a write error). */
  readonly dropped: number;
}

/** Retry interval for a descriptor that is full for now (EAGAIN on a non-blocking pipe). */
const AGAIN_MS = 10;

export function logSink(fd = 2, maxQueuedBytes = 4 * 1024 * 1024): LogSink {
  let queue: string[] = [];
  let queued = 0;
  let writing = false;
  let ended = false;
  let dropped = 0;
  let waiters: Array<() => void> = [];

  const settle = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const end = () => {
    ended = true;
    dropped += queue.length;
    queue = [];
    queued = 0;
    writing = false;
    settle();
  };

  const pump = (pending?: Buffer) => {
    if (ended) return;
    const buf = pending ?? Buffer.from(queue.join(''));
    if (!pending) {
      queue = [];
      queued = 0;
    }
    if (buf.length === 0) {
      writing = false;
      return settle();
    }
    writing = true;
    fs.write(fd, buf, 0, buf.length, null, (err, n) => {
      if (err) {
        if (err.code === 'EAGAIN') return void setTimeout(() => pump(buf), AGAIN_MS).unref();
        return end();
      }
      pump(n < buf.length ? buf.subarray(n) : undefined);
    });
  };

  return {
    write(line) {
      if (ended) return void dropped++;
      if (queued + line.length > maxQueuedBytes) return void dropped++;
      queue.push(line);
      queued += line.length;
      if (!writing) pump();
    },
    flush(timeoutMs) {
      if (ended || (!writing && queue.length === 0)) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    get dropped() {
      return dropped;
    },
  };
}
