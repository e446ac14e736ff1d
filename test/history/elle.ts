/**
 * A history checker on Elle's model (Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from Experimental
 * Observations"), for RETRACT's registers, plus RETRACT's own rules. It imports nothing from src: it judges what
 * clients observed and what the database holds after recovery, handed to it as plain data, so a bug in the code
 * under test cannot also hide in the judge.
 *
 * Registers: each claim key is a register whose value is the state of its beliefs (which is ACTIVE, which
 * retraction holds each other one down). Every committed transaction in the log (the database's own event log,
 * one entry per writing transaction, in the order the log streams it) sets some registers; replaying the log
 * gives each register's version order, and which transaction wrote each version. A READ snapshot observed one
 * value per register: from that the checker infers
 *   ww  T1 → T2  T2 wrote the version right after T1's on some register;
 *   wr  T  → R   R read the version T wrote;
 *   rw  R  → T   R read the version right before the one T wrote (R did not see T),
 * and reports a cycle of ww edges only as G0, of ww/wr edges as G1c, and any other cycle (one needing an rw edge)
 * as G2-item. A read of a value no committed transaction produced is G1a (an aborted or invented write); a read
 * of a value a transaction held only in the middle of its own writes is G1b.
 */

export type Outcome = 'ok' | 'fail' | 'unknown';

/** One client operation: invocation and completion as the client saw them. */
export interface Op {
  /** Unique; write operations put it into what they write (a statement, a reason, a key) so the log names them. */
  tag: string;
  process: number;
  f: string;
  outcome: Outcome;
  /** True for an operation that writes (its tag must then be in the log when ok, and must not when failed). */
  writes: boolean;
  /** A READ snapshot: register → observed value (a register absent from the snapshot reads as INITIAL). */
  reads?: Record<string, string>;
  /** The registers a READ covered (its prefix): registers it did not return are read as INITIAL. */
  readKeys?: string[];
  /** What the client was told of the receipt of its retraction (ok answers only). */
  receipt?: { id: string; beliefs: number; money: Record<string, number> };
}

/** One change of one belief inside a transaction: `belief` of register `key` is now `state` ('ACTIVE' or 'R<retraction>'). */
interface Write {
  key: string;
  belief: string;
  state: string;
}

/** A committed transaction as the log holds it. `tag` names the client operation that wrote it, when one did. */
export interface Txn {
  id: string;
  tag: string | null;
  writes: Write[];
  /** What the transaction itself read (register → value), where that is known. */
  reads?: Record<string, string>;
}

/** A receipt and the rows behind it after recovery. */
export interface Receipt {
  id: string;
  tag: string | null;
  /** What the receipt itself says (beliefs it counts, money per currency). */
  counted: { beliefs: number; money: Record<string, number> };
  /** What the rows say: beliefs that fell in it (its events), reversal amounts per currency. */
  rows: { beliefs: number; money: Record<string, number> };
  /**
   * Taken back by a reinstatement: its reversals were voided, and a later retraction that reaches the same effect
   * takes the one reversal of that effect over (re-owed under the later receipt), so its money may shrink.
   */
  reinstated?: boolean;
}

export interface History {
  ops: Op[];
  log: Txn[];
  /** Per register, its writers in version order, from a source other than the log (the log's order otherwise). */
  versionOrder?: Record<string, string[]>;
  receipts: Receipt[];
  /** Every reversal row: its effect, retraction, amount, and the amount of the effect it reverses. */
  reversals: Array<{
    id: string;
    effect: string;
    retraction: string;
    amount: number | null;
    effectAmount: number | null;
  }>;
  /** The fleet's committed event order (cursors), as a fresh subscriber from the start sees it after recovery. */
  committed: string[];
  /** What each subscriber received, in arrival order, across its resumes. */
  streams: Array<{ subscriber: string; cursors: string[] }>;
}

type AnomalyType =
  | 'G0'
  | 'G1a'
  | 'G1b'
  | 'G1c'
  | 'G2-item'
  | 'lost'
  | 'failed-applied'
  | 'receipt'
  | 'money'
  | 'reversal-twice'
  | 'stream-gap'
  | 'stream-duplicate'
  | 'stream-foreign';

export interface Anomaly {
  type: AnomalyType;
  detail: string;
}

export const INITIAL = '∅';

/** A register's value: its beliefs and their states, in a canonical order. */
function value(state: Map<string, string>): string {
  if (state.size === 0) return INITIAL;
  return [...state]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([b, s]) => `${b}=${s}`)
    .join(',');
}

interface Version {
  value: string;
  writer: string;
}

type Kind = 'ww' | 'wr' | 'rw';

/**
 * Replays the log, register by register: each register's versions in order, and every value a transaction
 * passed through on the way (it changed two beliefs of one claim: the value between is intermediate). A
 * register's version order is the log's, unless `versionOrder` gives it from another source.
 */
function versions(h: History): { byKey: Map<string, Version[]>; intermediate: Map<string, Set<string>> } {
  const perKey = new Map<string, Map<string, Write[]>>();
  for (const t of h.log)
    for (const w of t.writes) {
      const m = perKey.get(w.key) ?? perKey.set(w.key, new Map()).get(w.key)!;
      (m.get(t.id) ?? m.set(t.id, []).get(t.id)!).push(w);
    }
  const byKey = new Map<string, Version[]>();
  const intermediate = new Map<string, Set<string>>();
  for (const [key, writers] of perKey) {
    const order = h.versionOrder?.[key] ?? [...writers.keys()];
    const state = new Map<string, string>();
    const list: Version[] = [{ value: INITIAL, writer: 'init' }];
    const between = new Set<string>();
    for (const id of order) {
      const ws = writers.get(id) ?? [];
      ws.forEach((w, i) => {
        state.set(w.belief, w.state);
        if (i < ws.length - 1) between.add(value(state));
      });
      const v = value(state);
      if (list[list.length - 1]!.value !== v) list.push({ value: v, writer: id });
    }
    byKey.set(key, list);
    intermediate.set(key, between);
  }
  return { byKey, intermediate };
}

/** Tarjan's strongly connected components over the edges whose kind is in `kinds`. */
function components(nodes: string[], edges: Map<string, Map<string, Kind>>, kinds: Set<Kind>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const strong = (v: string) => {
    // Iterative, so a long history cannot overflow the call stack.
    const work: Array<{ v: string; it: Iterator<[string, Kind]> }> = [];
    const enter = (x: string) => {
      idx.set(x, index);
      low.set(x, index++);
      stack.push(x);
      on.add(x);
      work.push({ v: x, it: (edges.get(x) ?? new Map<string, Kind>()).entries() });
    };
    enter(v);
    while (work.length) {
      const top = work[work.length - 1]!;
      const n = top.it.next();
      if (!n.done) {
        const [w, k] = n.value;
        if (!kinds.has(k)) continue;
        if (!idx.has(w)) enter(w);
        else if (on.has(w)) low.set(top.v, Math.min(low.get(top.v)!, idx.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) low.set(work[work.length - 1]!.v, Math.min(low.get(work[work.length - 1]!.v)!, low.get(top.v)!));
      if (low.get(top.v) === idx.get(top.v)) {
        const c: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          on.delete(w);
          c.push(w);
        } while (w !== top.v);
        if (c.length > 1) out.push(c);
      }
    }
  };
  for (const v of nodes) if (!idx.has(v)) strong(v);
  return out;
}

/** The dependency graph of committed transactions and ok reads, with G1a/G1b found on the way. */
function dependencies(h: History, anomalies: Anomaly[]): { nodes: string[]; edges: Map<string, Map<string, Kind>> } {
  const { byKey, intermediate } = versions(h);
  const edges = new Map<string, Map<string, Kind>>();
  // One edge per pair: the strongest kind wins (ww over wr over rw), so a cycle is classed by what it needs.
  const rank: Record<Kind, number> = { ww: 0, wr: 1, rw: 2 };
  const add = (a: string, b: string, k: Kind) => {
    if (a === b || a === 'init') return;
    const m = edges.get(a) ?? edges.set(a, new Map()).get(a)!;
    const had = m.get(b);
    if (had === undefined || rank[k] < rank[had]) m.set(b, k);
  };
  for (const list of byKey.values())
    for (let i = 1; i + 1 < list.length; i++) add(list[i]!.writer, list[i + 1]!.writer, 'ww');
  const nodes = h.log.map((t) => t.id);
  const readers: Array<{ node: string; tag: string; reads: Record<string, string>; keys: string[] }> = h.log
    .filter((t) => t.reads)
    .map((t) => ({ node: t.id, tag: t.id, reads: t.reads!, keys: Object.keys(t.reads!) }));
  for (const op of h.ops) {
    if (op.outcome !== 'ok' || !op.reads) continue;
    nodes.push(`read:${op.tag}`);
    readers.push({
      node: `read:${op.tag}`,
      tag: op.tag,
      reads: op.reads,
      keys: [...new Set([...(op.readKeys ?? []), ...Object.keys(op.reads)])],
    });
  }
  for (const { node: r, tag, reads, keys } of readers) {
    for (const key of keys) {
      const seen = reads[key] ?? INITIAL;
      const list = byKey.get(key) ?? [{ value: INITIAL, writer: 'init' }];
      const at = list.map((v, i) => (v.value === seen ? i : -1)).filter((i) => i >= 0);
      if (at.length === 0) {
        if (intermediate.get(key)?.has(seen))
          anomalies.push({
            type: 'G1b',
            detail: `${tag} read ${key} = ${seen}, a value its writer held only mid-transaction`,
          });
        else
          anomalies.push({ type: 'G1a', detail: `${tag} read ${key} = ${seen}, which no committed transaction wrote` });
        continue;
      }
      // A value that recurs (a reinstatement brings a belief back as it was) names no single version: no edge.
      if (at.length > 1) continue;
      const i = at[0]!;
      add(list[i]!.writer, r, 'wr');
      if (i + 1 < list.length) add(r, list[i + 1]!.writer, 'rw');
    }
  }
  return { nodes, edges };
}

/** Every anomaly the history shows; an empty list is a clean history. */
export function check(h: History): Anomaly[] {
  const anomalies: Anomaly[] = [];
  const { nodes, edges } = dependencies(h, anomalies);
  const reported = new Set<string>();
  const classes: Array<[AnomalyType, Kind[]]> = [
    ['G0', ['ww']],
    ['G1c', ['ww', 'wr']],
    ['G2-item', ['ww', 'wr', 'rw']],
  ];
  for (const [type, kinds] of classes) {
    for (const c of components(nodes, edges, new Set(kinds))) {
      const key = [...c].sort().join(' ');
      if (reported.has(key)) continue;
      reported.add(key);
      // A component already reported under a stronger class (G0 before G1c before G2-item) is not reported again.
      anomalies.push({ type, detail: `cycle among ${c.join(', ')}` });
    }
  }

  const logged = new Set(h.log.map((t) => t.tag).filter((t): t is string => !!t));
  for (const op of h.ops) {
    if (!op.writes) continue;
    if (op.outcome === 'ok' && !logged.has(op.tag))
      anomalies.push({
        type: 'lost',
        detail: `${op.f} ${op.tag} was acknowledged but is not in the log after recovery`,
      });
    if (op.outcome === 'fail' && logged.has(op.tag))
      anomalies.push({ type: 'failed-applied', detail: `${op.f} ${op.tag} failed but its write is in the log` });
  }
  // Whole or nothing: a receipt counts exactly its rows, and an acknowledged receipt is what recovery kept.
  const receipts = new Map(h.receipts.map((r) => [r.id, r]));
  for (const r of h.receipts) {
    if (r.counted.beliefs !== r.rows.beliefs)
      anomalies.push({
        type: 'receipt',
        detail: `receipt ${r.id} counts ${r.counted.beliefs} beliefs, its rows ${r.rows.beliefs}`,
      });
    if (!sameMoney(r.counted.money, r.rows.money))
      anomalies.push({
        type: 'money',
        detail: `receipt ${r.id} says ${JSON.stringify(r.counted.money)}, its reversal rows ${JSON.stringify(r.rows.money)}`,
      });
  }
  for (const op of h.ops) {
    if (op.outcome !== 'ok' || !op.receipt) continue;
    const r = receipts.get(op.receipt.id);
    if (!r) anomalies.push({ type: 'lost', detail: `receipt ${op.receipt.id} of ${op.tag} is gone after recovery` });
    // Money told can only grow afterwards: an effect the retraction reached while it was EXECUTING records its
    // reversal under that retraction when it completes. Less in the rows than the client was told is money lost.
    else if (
      r.rows.beliefs !== op.receipt.beliefs ||
      (!r.reinstated && Object.entries(op.receipt.money).some(([c, n]) => (r.rows.money[c] ?? 0) < n))
    )
      anomalies.push({
        type: 'receipt',
        detail: `${op.tag} was told ${op.receipt.beliefs} beliefs ${JSON.stringify(op.receipt.money)}; the rows hold ${r.rows.beliefs} ${JSON.stringify(r.rows.money)}`,
      });
  }
  const pairs = new Map<string, number>();
  for (const v of h.reversals) {
    const k = `${v.effect}/${v.retraction}`;
    pairs.set(k, (pairs.get(k) ?? 0) + 1);
    if (v.amount !== v.effectAmount)
      anomalies.push({
        type: 'money',
        detail: `reversal ${v.id} is for ${v.amount}, its effect ${v.effect} moved ${v.effectAmount}`,
      });
  }
  for (const [k, n] of pairs)
    if (n > 1) anomalies.push({ type: 'reversal-twice', detail: `${n} reversals for (effect, retraction) ${k}` });
  anomalies.push(...streamAnomalies(h));
  return anomalies;
}

function sameMoney(a: Record<string, number>, b: Record<string, number>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

/** Each subscriber's stream is a gap-free, duplicate-free run of the committed order. */
function streamAnomalies(h: History): Anomaly[] {
  const out: Anomaly[] = [];
  const pos = new Map(h.committed.map((c, i) => [c, i]));
  for (const s of h.streams) {
    const seen = new Set<string>();
    let last: number | null = null;
    for (const c of s.cursors) {
      if (seen.has(c)) {
        out.push({ type: 'stream-duplicate', detail: `${s.subscriber} received ${c} twice` });
        continue;
      }
      seen.add(c);
      const p = pos.get(c);
      if (p === undefined) {
        out.push({
          type: 'stream-foreign',
          detail: `${s.subscriber} received ${c}, which is not in the committed order`,
        });
        continue;
      }
      if (last !== null && p !== last + 1)
        out.push({ type: 'stream-gap', detail: `${s.subscriber} went from position ${last} to ${p}` });
      last = p;
    }
  }
  return out;
}
