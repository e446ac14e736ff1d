import { EventEmitter, once } from 'node:events';
import type { Store } from '../store/engine';
import { readTx } from '../store/tx';
import type { Totals } from '../retraction/retraction.repository';
import { type Cursor, type EventRow, encodeCursor, headCursor, tail } from './event.repository';

export const RETRACTION_EVENT_TYPES = ['RetractionStarted', 'BeliefRetracted', 'EffectCancelled', 'ReversalRecorded', 'RetractionCommitted'] as const;
export type RetractionEventType = (typeof RETRACTION_EVENT_TYPES)[number];

/** One cascade step as subscribers see it; `cursor` resumes right after it. */
export interface StreamEvent {
  __typename: RetractionEventType;
  cursor: string;
  retractionId: string;
  at: Date;
  beliefId?: string;
  depth?: number;
  effectId?: string;
  reversalId?: string;
  totals?: Totals;
}

/**
 * Wakes tailers when anything commits: in-process commits always, and other processes' commits
 * through the engine's LISTEN where it has one. One listener per store, shared by every subscriber.
 */
export class Waker {
  readonly emitter = new EventEmitter();
  private stopListen: (() => Promise<void>) | null = null;
  constructor(private readonly store: Store) {
    this.emitter.setMaxListeners(0);
  }
  async start(): Promise<void> {
    const wake = () => this.emitter.emit('wake');
    this.store.commits.on('commit', wake);
    if (this.store.engine === 'postgres') this.stopListen = await this.store.listen(wake);
  }
  async stop(): Promise<void> {
    await this.stopListen?.();
    this.emitter.emit('wake');
  }
}

function expand(row: EventRow, skipThrough: number): StreamEvent[] {
  const type = row.type as RetractionEventType;
  const base = { __typename: type, retractionId: String(row.retraction_id), at: row.at };
  const whole = (): StreamEvent[] => [{ ...base, cursor: encodeCursor({ tx: row.tx, seq: row.seq, index: -1 }), ...(type === 'RetractionCommitted' ? { totals: row.data as Totals } : {}) }];
  if (type === 'RetractionStarted' || type === 'RetractionCommitted') return skipThrough >= 0 ? [] : whole();
  const out: StreamEvent[] = [];
  row.ids.forEach((id, i) => {
    if (i <= skipThrough) return;
    const cursor = encodeCursor({ tx: row.tx, seq: row.seq, index: i === row.ids.length - 1 ? -1 : i });
    if (type === 'BeliefRetracted') out.push({ ...base, cursor, beliefId: id, depth: row.depth ?? 0 });
    else if (type === 'EffectCancelled') out.push({ ...base, cursor, effectId: id });
    else out.push({ ...base, cursor, reversalId: id });
  });
  return out;
}

/**
 * Every cascade step of every retraction in one fleet, in log order, from after `after` (or from
 * now). It never advances past a transaction that might still commit (see event.repository tail),
 * so a reconnecting subscriber that passes its last cursor misses nothing and sees nothing twice.
 * It reads only when its consumer pulls, so a slow subscriber holds up no one else.
 */
export async function* retractionEvents(store: Store, waker: Waker, fleet: string, after: Cursor | null, signal: AbortSignal, pollMs = 1000): AsyncGenerator<StreamEvent> {
  let cursor: Cursor = after ?? (await readTx(store, fleet, (tx) => headCursor(tx)));
  while (!signal.aborted) {
    const rows = await readTx(store, fleet, (tx) => tail(tx, cursor, 200));
    if (rows.length === 0) {
      const timer = AbortSignal.any([signal, AbortSignal.timeout(pollMs)]);
      try {
        await once(waker.emitter, 'wake', { signal: timer });
      } catch {
        /* poll timeout or stop */
      }
      continue;
    }
    for (const row of rows) {
      const skip = row.tx === cursor.tx && row.seq === cursor.seq ? cursor.index : -1;
      cursor = { tx: row.tx, seq: row.seq, index: -1 };
      if (!(RETRACTION_EVENT_TYPES as readonly string[]).includes(row.type)) continue;
      for (const e of expand(row, skip)) {
        if (signal.aborted) return;
        yield e;
      }
    }
  }
}
