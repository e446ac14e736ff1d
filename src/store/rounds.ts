import { pause } from '../kernel/sleep';
import type { Store } from './engine';

/**
 * The loop of every worker (the effect executor, the reversal dispatcher): rounds woken by the store's commit
 * notices, with a poll as the floor and a backoff on errors. Below the domain, so both loops share it one way.
 */

/**
 * A poll timer that commits can cut short: `wait(ms)` resolves after `ms`, on the next commit notice (this process's
 * commits, and other processes' through LISTEN where the engine has it), or when `signal` aborts.
 */
async function commitWaker(store: Store, signal: AbortSignal | undefined) {
  let pending = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    pending = true;
    wake?.();
  };
  store.commits.on('commit', poke);
  let unlisten: () => Promise<void> = async () => {};
  try {
    unlisten = await store.listen(poke);
  } catch {
    /* no cross-process wake-up: polling alone still works */
  }
  return {
    wait(ms: number): Promise<void> {
      if (pending || signal?.aborted) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          wake = null;
          pending = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener('abort', done, { once: true });
        wake = done;
      });
    },
    async close() {
      store.commits.off('commit', poke);
      await unlisten().catch(() => {});
    },
  };
}

/**
 * A worker's loop: runs `round` until `signal` fires. A round that did nothing (false) waits for the next commit
 * notice or `pollMs`; a round that throws is reported to `onError` and retried after a backoff that doubles with
 * each failure in a row, up to 30 s. Only the stop signal ends it.
 */
export async function runRounds(
  store: Store,
  o: { signal: AbortSignal; pollMs: number; round: () => Promise<boolean>; onError: (err: unknown) => void },
): Promise<void> {
  const waker = await commitWaker(store, o.signal);
  let errorStreak = 0;
  try {
    while (!o.signal.aborted) {
      let worked: boolean;
      try {
        worked = await o.round();
        errorStreak = 0;
      } catch (err) {
        errorStreak++;
        o.onError(err);
        await pause(Math.min(30_000, o.pollMs * 2 ** Math.min(errorStreak, 6)), o.signal);
        continue;
      }
      if (!worked) await waker.wait(o.pollMs);
    }
  } finally {
    await waker.close();
  }
}
