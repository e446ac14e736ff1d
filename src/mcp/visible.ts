import { decodeGlobalID } from '@pothos/plugin-relay';
import type { AgentRow } from '../agent/agent.repository';
import { type Readable, type ReadGrants, beliefReadable, mayRead } from '../agent/access';
import { beliefsByIds } from '../belief/belief.repository';
import { NODE_TYPES, type NodeType, gid } from '../kernel/ids';
import type { Store } from '../store/engine';
import { readerTx } from './reader';

/**
 * The read rule GraphQL applies per type (src/agent/access.ts: `mayRead`, `beliefReadable`, and the
 * grants of what a request's own mutation answered), applied to a tool's answer as a whole: every
 * object of the answer that carries a global id, and every global id it names (REFERENCE_KEY), is kept only when the
 * token may read an object of that type — a Belief by its status NOW (as GraphQL does for as-of views),
 * looked up in the database, not by what the answer says. A refused object or id is removed from its
 * list, or replaced by null where it is a single value; a wrapper left without its object (a search
 * hit whose belief was refused) leaves its list too. So no tool can show what the same token could not
 * read through GraphQL, whichever tool (or future tool) builds the answer.
 */

/** The rule for each node type; Agent and Justification have none of their own in GraphQL. */
const RULE: Record<NodeType, Readable | 'open' | 'belief'> = {
  Agent: 'open',
  Justification: 'open',
  Belief: 'belief',
  Effect: 'Effect',
  Reversal: 'Receipt',
  Retraction: 'Receipt',
  Reinstatement: 'Receipt',
  Contradiction: 'Contradiction',
};

/** The node a string names, when it is exactly one of our global ids. */
function nodeOf(s: string): { type: NodeType; id: string } | null {
  if (s.length < 8 || s.length > 120 || !/^[A-Za-z0-9+/=]+$/.test(s)) return null;
  let d: { typename: string; id: string };
  try {
    d = decodeGlobalID(s);
  } catch {
    return null;
  }
  if (!(NODE_TYPES as readonly string[]).includes(d.typename) || !/^[0-9]{1,19}$/.test(d.id)) return null;
  return gid(d.typename as NodeType, d.id) === s ? { type: d.typename as NodeType, id: d.id } : null;
}

/**
 * The keys whose string values (or list items) are references: `id`, `…Id`, `…Ids` and the few
 * reference lists named otherwise. What an agent wrote (a statement, a reason, a key) is never read as
 * an id, even when it happens to spell one.
 */
const REFERENCE_KEY = /^(id|[A-Za-z]*Id|[A-Za-z]*Ids|cancelledBy|via|restsOn)$/;

/** Every global id of type Belief under a reference key in `v`. */
function beliefIds(v: unknown, out: Set<string>, ref = false): Set<string> {
  if (typeof v === 'string') {
    const n = ref ? nodeOf(v) : null;
    if (n?.type === 'Belief') out.add(n.id);
  } else if (Array.isArray(v)) {
    for (const x of v) beliefIds(x, out, ref);
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) beliefIds(x, out, REFERENCE_KEY.test(k));
  }
  return out;
}

const DROP = Symbol('drop');

/** `answer` with everything `agent` may not read removed (see above). */
export async function visibleTo<T>(store: Store, agent: AgentRow, grants: ReadGrants, answer: T): Promise<T> {
  const ids = [...beliefIds(answer, new Set())];
  const status = new Map<string, string>();
  if (ids.length > 0 && !mayRead(agent, 'Belief')) {
    // Only a token that cannot read ACTIVE beliefs needs their status; beliefs:read opens every one.
    for (const b of await readerTx(store, agent.fleet_id, (tx) => beliefsByIds(tx, agent.fleet_id, ids)))
      status.set(b.id, b.status);
  }
  const readable = (n: { type: NodeType; id: string }): boolean => {
    if (grants.has(n.type, n.id)) return true;
    const rule = RULE[n.type];
    if (rule === 'open') return true;
    if (rule === 'belief') return mayRead(agent, beliefReadable(status.get(n.id) ?? 'ACTIVE'));
    return mayRead(agent, rule);
  };
  const walk = (v: unknown, inList: boolean, ref: boolean): unknown => {
    if (typeof v === 'string') {
      const n = ref ? nodeOf(v) : null;
      return n && !readable(n) ? DROP : v;
    }
    if (Array.isArray(v)) return v.map((x) => walk(x, true, ref)).filter((x) => x !== DROP);
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.id === 'string' && walk(o.id, false, true) === DROP) return DROP;
      const out: Record<string, unknown> = {};
      let lost = false;
      for (const [k, x] of Object.entries(o)) {
        const w = walk(x, false, REFERENCE_KEY.test(k));
        if (w === DROP) {
          out[k] = null;
          lost ||= typeof x === 'object' && x !== null && !Array.isArray(x);
        } else out[k] = w;
      }
      // A list item without an id of its own whose object was refused says nothing left: it leaves the list.
      return lost && inList && !('id' in o) ? DROP : out;
    }
    return v;
  };
  const top = walk(answer, false, false);
  return (top === DROP ? {} : top) as T;
}
