import { badInput } from '../errors/domain-error';
import type { Db } from '../store/tx';
import { currentSnapshot } from './nearest.repository';

/**
 * A READ point: the database snapshot (pg_snapshot: xmin:xmax:xip) of the transaction that served
 * a search, and the fleet it was taken in. Opaque to clients. At COMMIT, `assertBelief(basedOn)`
 * asks whether the claim was written by a transaction the READ could not see.
 */
export interface ReadPoint {
  fleet: string;
  snapshot: string;
}

export async function takeReadPoint(db: Db, fleet: string): Promise<string> {
  return encodeReadPoint({ fleet, snapshot: await currentSnapshot(db, fleet) });
}

export function encodeReadPoint(p: ReadPoint): string {
  return Buffer.from(JSON.stringify({ v: 1, f: p.fleet, s: p.snapshot })).toString('base64url');
}

const XID8_MAX = 2n ** 64n - 1n;
const SNAPSHOT = /^([1-9]\d{0,19}):([1-9]\d{0,19}):((?:[1-9]\d{0,19}(?:,[1-9]\d{0,19})*)?)$/;
const NOT_OURS = 'must be a snapshot returned by search';

/**
 * Decodes a snapshot string; BAD_USER_INPUT when malformed, taken in another fleet, or not a snapshot PostgreSQL
 * could have handed out (pg_snapshot's own rules: 0 < xmin <= xmax < 2^64, every in-progress id in [xmin, xmax),
 * ascending), so the database never sees one it would fail to parse. That it is not from the future is asked in
 * the COMMIT's first statement (snapshot_ahead), which alone sees the database's clock of transaction ids.
 */
export function decodeReadPoint(field: string, s: string, fleet: string): ReadPoint {
  let parsed: { v?: unknown; f?: unknown; s?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw badInput(field, NOT_OURS);
  }
  if (parsed?.v !== 1 || typeof parsed.f !== 'string' || typeof parsed.s !== 'string') throw badInput(field, NOT_OURS);
  if (parsed.f !== fleet) throw badInput(field, 'must be a snapshot taken in your own fleet');
  const m = SNAPSHOT.exec(parsed.s);
  if (!m) throw badInput(field, `${NOT_OURS} (xmin:xmax:in-progress ids, all positive)`);
  const [xmin, xmax] = [BigInt(m[1]!), BigInt(m[2]!)];
  const xip = m[3] ? m[3].split(',').map(BigInt) : [];
  if (xmax > XID8_MAX) throw badInput(field, `${NOT_OURS} (a transaction id is below 2^64)`);
  if (xmin > xmax) throw badInput(field, `${NOT_OURS} (its xmin is after its xmax)`);
  if (xip.some((x, i) => x < xmin || x >= xmax || (i > 0 && x < xip[i - 1]!))) {
    throw badInput(field, `${NOT_OURS} (its in-progress ids lie between xmin and xmax, ascending)`);
  }
  return { fleet: parsed.f, snapshot: parsed.s };
}
