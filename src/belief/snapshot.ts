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

/** Decodes a snapshot string; BAD_USER_INPUT when malformed or taken in another fleet. */
export function decodeReadPoint(field: string, s: string, fleet: string): ReadPoint {
  let parsed: { v?: unknown; f?: unknown; s?: unknown };
  try {
    parsed = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw badInput(field, 'must be a snapshot returned by search');
  }
  if (parsed?.v !== 1 || typeof parsed.f !== 'string' || typeof parsed.s !== 'string' || !/^\d+:\d+:[\d,]*$/.test(parsed.s)) {
    throw badInput(field, 'must be a snapshot returned by search');
  }
  if (parsed.f !== fleet) throw badInput(field, 'must be a snapshot taken in your own fleet');
  return { fleet: parsed.f, snapshot: parsed.s };
}
