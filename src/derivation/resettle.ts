/**
 * The JTMS fixpoint run backwards, in memory, over the beliefs one retraction took down.
 *
 * Input: the root (already known to come back: its claim holds no other ACTIVE belief) and, for
 * every other belief of the retraction's set, each of its justifications with each premise's
 * state: in the set (still down under this retraction), ACTIVE, or down otherwise (retracted by
 * another retraction): such a premise can never come back here, so its justification cannot hold.
 * `blocked` names the beliefs of the set whose claim now holds another ACTIVE belief.
 *
 * Output, exactly as a level-by-level evaluation defines it: the root comes back at level 0; a
 * belief of the set comes back at level d when, with everything that came back below d, one of its
 * justifications holds (every premise ACTIVE) for the first time at d, and its claim is free. A
 * blocked belief whose justification holds does not come back: it is reported (with the premises
 * of its first justification that holds) so a contradiction can be raised for it, and what rests on
 * it alone stays down. Linear in the set's premise edges, like settle.
 */

type PremiseState = 'set' | 'active' | 'down';

export interface ReverseRow {
  belief: number;
  justification: number;
  /** null for a justification without premises. */
  premise: number | null;
  state: PremiseState;
}

export interface Resettled {
  /** Beliefs that come back, root first, then by level and id. */
  ids: number[];
  levels: number[];
  /** Blocked beliefs whose justification holds: the premises of that justification. */
  contradicted: Array<{ belief: number; premises: number[] }>;
}

export function resettle(root: number, rows: readonly ReverseRow[], blocked: ReadonlySet<number>): Resettled {
  const jOf = new Map<number, { belief: number; missing: number; broken: boolean; premises: number[] }>();
  const out = new Map<number, number[]>();
  for (const r of rows) {
    let j = jOf.get(r.justification);
    if (!j) jOf.set(r.justification, (j = { belief: r.belief, missing: 0, broken: false, premises: [] }));
    if (r.premise === null) continue;
    j.premises.push(r.premise);
    if (r.state === 'down') j.broken = true;
    else if (r.state === 'set') {
      j.missing++;
      const list = out.get(r.premise);
      if (list) list.push(r.justification);
      else out.set(r.premise, [r.justification]);
    }
  }
  const up = new Set<number>([root]);
  const held = new Set<number>();
  const ids = [root];
  const levels = [0];
  const contradicted: Resettled['contradicted'] = [];
  const consider = (jid: number, next: number[]) => {
    const j = jOf.get(jid)!;
    if (j.broken || j.missing > 0 || up.has(j.belief) || held.has(j.belief)) return;
    held.add(j.belief);
    if (blocked.has(j.belief)) contradicted.push({ belief: j.belief, premises: [...j.premises].sort((a, b) => a - b) });
    else next.push(j.belief);
  };
  // Level 1 also takes beliefs whose justification already holds without the root (its other
  // premises came back through another retraction's reinstatement since).
  let level: number[] = [root];
  let seed: number[] = [];
  for (const [jid, j] of jOf) if (j.missing === 0) consider(jid, seed);
  for (let d = 1; level.length > 0 || seed.length > 0; d++) {
    const next = seed;
    seed = [];
    for (const p of level) {
      for (const jid of out.get(p) ?? []) {
        jOf.get(jid)!.missing--;
        consider(jid, next);
      }
    }
    next.sort((a, b) => a - b);
    for (const b of next) {
      up.add(b);
      ids.push(b);
      levels.push(d);
    }
    level = next;
  }
  contradicted.sort((a, b) => a.belief - b.belief);
  return { ids, levels, contradicted };
}
