import { EventEmitter, once } from 'node:events';
import type { Store } from '../store/engine';
import { isServer } from '../store/store';
import { readTx } from '../store/tx';
import type { Totals } from '../kernel/money';
import { type Cursor, type EventRow, encodeCursor, headCursor, tail } from './event.repository';

const RETRACTION_EVENT_TYPES = [
  'RetractionStarted',
  'BeliefRetracted',
  'EffectCancelled',
  'ReversalRecorded',
  'RetractionCommitted',
  // A reinstatement is the cascade running back, on the same stream (its rows carry the retraction it takes back).
  'ReinstatementStarted',
  'BeliefReinstated',
  'ReversalVoided',
  'EffectRestored',
  'ReinstatementCommitted',
] as const;
type RetractionEventType = (typeof RETRACTION_EVENT_TYPES)[number];

/** One cascade step as subscribers see it; `cursor` resumes right after it. */
export interface StreamEvent {
  __typename: RetractionEventType | BatchEventType;
  cursor: string;
  retractionId: string;
  at: Date;
  beliefId?: string;
  depth?: number;
  effectId?: string;
  reversalId?: string;
  totals?: Totals;
  /** Reinstatement events: the reinstatement, and (ReinstatementCommitted) its figures. */
  reinstatementId?: string;
  reinstatementTotals?: Record<string, unknown>;
  /** Batched events (granularity LEVEL): the ids of this batch, in cascade order. */
  ids?: string[];
}

/**
 * How finely a subscription reports a cascade. BELIEF: one event per belief, effect and reversal.
 * LEVEL: one event per cascade level and kind, carrying up to {@link LEVEL_BATCH} ids (a bigger level
 * comes in several), so a 1k-belief cascade is a handful of messages instead of a thousand.
 */
export type Granularity = 'BELIEF' | 'LEVEL';
/** The LEVEL event that carries a batch of each per-item event type. */
const BATCH_OF = {
  BeliefRetracted: 'BeliefsRetracted',
  EffectCancelled: 'EffectsCancelled',
  ReversalRecorded: 'ReversalsRecorded',
  BeliefReinstated: 'BeliefsReinstated',
  ReversalVoided: 'ReversalsVoided',
  EffectRestored: 'EffectsRestored',
} as const;
type BatchEventType = (typeof BATCH_OF)[keyof typeof BATCH_OF];
/** Largest number of ids one LEVEL event carries. */
export const LEVEL_BATCH = 500;

/**
 * Wakes tailers when anything commits: in-process commits always, and other processes' commits
 * through the engine's LISTEN where it has one. One listener per store, shared by every subscriber.
 */
export class Waker {
  readonly emitter = new EventEmitter();
  /** Counts wake-ups; a read started in generation g started after wake-up g was announced. */
  generation = 0;
  private stopListen: (() => Promise<void>) | null = null;
  private readonly stopping = new AbortController();
  /** Aborted by stop(): every stream this waker wakes ends (a subscriber is sent `complete`), as on a server's shutdown. */
  readonly stopped: AbortSignal = this.stopping.signal;
  constructor(private readonly store: Store) {
    this.emitter.setMaxListeners(0);
  }
  async start(): Promise<void> {
    const wake = () => {
      this.generation++;
      this.emitter.emit('wake');
    };
    this.store.commits.on('commit', wake);
    if (isServer(this.store.engine)) this.stopListen = await this.store.listen(wake);
  }
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.stopListen?.();
    this.emitter.emit('wake');
  }
}

/**
 * The cascade levels a row's ids span, as runs [start, end) of the row. A BeliefRetracted row holds
 * one level (`depth`), or consecutive small levels from `depth` on whose sizes `data.levels` lists
 * (src/event/level-rows.ts levelRows). Other rows are one run.
 */
function levelsOf(row: EventRow): Array<{ depth: number; start: number; end: number }> {
  const sizes = (row.data as { levels?: number[] } | null)?.levels;
  if ((row.type !== 'BeliefRetracted' && row.type !== 'BeliefReinstated') || !Array.isArray(sizes))
    return [{ depth: row.depth ?? 0, start: 0, end: row.ids.length }];
  let start = 0;
  return sizes.map((n, k) => ({ depth: (row.depth ?? 0) + k, start, end: (start += n) }));
}

function expand(row: EventRow, skipThrough: number, granularity: Granularity): StreamEvent[] {
  const type = row.type as RetractionEventType;
  const reinstatementId = (row.data as { reinstatementId?: string } | null)?.reinstatementId;
  const base = {
    retractionId: String(row.retraction_id),
    at: row.at,
    ...(reinstatementId ? { reinstatementId: String(reinstatementId) } : {}),
  };
  const cursorAt = (i: number) => encodeCursor({ tx: row.tx, seq: row.seq, index: i >= row.ids.length - 1 ? -1 : i });
  if (
    type === 'RetractionStarted' ||
    type === 'RetractionCommitted' ||
    type === 'ReinstatementStarted' ||
    type === 'ReinstatementCommitted'
  ) {
    if (skipThrough >= 0) return [];
    const figures =
      type === 'RetractionCommitted'
        ? { totals: row.data as Totals }
        : type === 'ReinstatementCommitted'
          ? { reinstatementTotals: row.data as Record<string, unknown> }
          : {};
    return [{ __typename: type, ...base, cursor: cursorAt(-1), ...figures }];
  }
  const out: StreamEvent[] = [];
  const levels = levelsOf(row);
  if (granularity === 'LEVEL') {
    // Batches are cut at fixed offsets of each level, so a resumed subscription cut mid-batch finishes that batch.
    for (let from = skipThrough + 1; from < row.ids.length;) {
      const level = levels.find((l) => from < l.end)!;
      const to = Math.min(level.end, level.start + (Math.floor((from - level.start) / LEVEL_BATCH) + 1) * LEVEL_BATCH);
      out.push({
        __typename: BATCH_OF[type as keyof typeof BATCH_OF],
        ...base,
        cursor: cursorAt(to - 1),
        ids: row.ids.slice(from, to).map(String),
        ...(type === 'BeliefRetracted' || type === 'BeliefReinstated' ? { depth: level.depth } : {}),
      });
      from = to;
    }
    return out;
  }
  let level = 0;
  row.ids.forEach((id, i) => {
    if (i <= skipThrough) return;
    const cursor = cursorAt(i);
    while (i >= levels[level]!.end) level++;
    if (type === 'BeliefRetracted' || type === 'BeliefReinstated')
      out.push({ __typename: type, ...base, cursor, beliefId: id, depth: levels[level]!.depth });
    else if (type === 'EffectCancelled' || type === 'EffectRestored')
      out.push({ __typename: type, ...base, cursor, effectId: id });
    else out.push({ __typename: type, ...base, cursor, reversalId: id });
  });
  return out;
}

/** Tail reads issued to the database (shared ones count once), for tests and benchmarks. */
export const tailStats = { reads: 0 };

const inflight = new WeakMap<Store, Map<string, Promise<EventRow[]>>>();

/**
 * One read of the log after `cursor`, shared by every subscriber of the fleet that asks for the same
 * cursor while it is in flight: 200 dashboards woken by one commit cost one read, not 200. A read is
 * shared only within one wake-up generation, so a subscriber woken by a commit never takes the rows
 * of a read that started before that commit was announced (it would miss the commit until the next
 * poll). Rows are read-only to consumers.
 */
function sharedTail(store: Store, waker: Waker, fleet: string, cursor: Cursor, limit: number): Promise<EventRow[]> {
  let reads = inflight.get(store);
  if (!reads) inflight.set(store, (reads = new Map()));
  const key = `${waker.generation}|${fleet}|${cursor.tx}|${cursor.seq}|${cursor.index}|${limit}`;
  const hit = reads.get(key);
  if (hit) return hit;
  tailStats.reads++;
  const read = readTx(store, fleet, (tx) => tail(tx, fleet, cursor, limit)).finally(() => reads.delete(key));
  reads.set(key, read);
  return read;
}

/** One open subscription, as /metrics sees it: when the event it holds undelivered was written (null: caught up). */
interface OpenTail {
  holding: Date | null;
}

const openTails = new WeakMap<Store, Set<OpenTail>>();

/**
 * The store's open subscriptions and how far behind the slowest one is: the age in seconds of the oldest event a
 * subscription has read but its consumer has not yet taken (0 when every one is caught up, waiting for a commit).
 */
export function subscriptionLag(store: Store, now = Date.now()): { open: number; slowestSeconds: number } {
  const set = openTails.get(store);
  let oldest = now;
  for (const t of set ?? []) if (t.holding && t.holding.getTime() < oldest) oldest = t.holding.getTime();
  return { open: set?.size ?? 0, slowestSeconds: Math.max(0, now - oldest) / 1000 };
}

/**
 * Every cascade step of every retraction in one fleet, in log order, from after `after` (or from
 * now). It never advances past a transaction that might still commit (see event.repository tail),
 * so a reconnecting subscriber that passes its last cursor misses nothing and sees nothing twice.
 * It reads only when its consumer pulls, so a slow subscriber holds up no one else. BELIEF and LEVEL
 * cursors are the same kind: either resumes a subscription of either granularity. It ends when
 * `cancelled` aborts or the waker stops.
 */
export async function* retractionEvents(
  store: Store,
  waker: Waker,
  fleet: string,
  after: Cursor | null,
  cancelled: AbortSignal,
  granularity: Granularity = 'BELIEF',
  pollMs = 1000,
): AsyncGenerator<StreamEvent> {
  // Ends when its consumer cancels it or the server stops (the stream then completes: no event is lost,
  // a subscriber resumes after its last cursor on the next server).
  const signal = AbortSignal.any([cancelled, waker.stopped]);
  let cursor: Cursor = after ?? (await readTx(store, fleet, (tx) => headCursor(tx, fleet)));
  let open = openTails.get(store);
  if (!open) openTails.set(store, (open = new Set()));
  const self: OpenTail = { holding: null };
  open.add(self);
  try {
    yield* follow();
  } finally {
    open.delete(self);
  }

  async function* follow(): AsyncGenerator<StreamEvent> {
    while (!signal.aborted) {
      const rows = await sharedTail(store, waker, fleet, cursor, 200);
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
        for (const e of expand(row, skip, granularity)) {
          if (signal.aborted) return;
          self.holding = row.at;
          yield e;
          self.holding = null;
        }
      }
    }
  }
}
