// A LangGraph long-term memory store (BaseStore of @langchain/langgraph-checkpoint) kept in RETRACT: an item is a
// belief, a derivation is a justification, and deleting an item is a retraction with its cascade. docs/langgraph.md
// has the whole mapping. It talks GraphQL through the typed client only, so it runs wherever the client does.
import {
  BaseStore,
  validateNamespace,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
} from '@langchain/langgraph-checkpoint';
import { RetractApiError, RetractClient, type Belief, type ClientOptions, type ResultOf } from '../index.js';
import * as op from '../operations.js';
import { CLAIM_KEY_MAX, checkRoot, itemClaimKey, namespacePrefixKey, parseItemClaimKey } from './claim-keys.js';
import { derivedFromOf, passesFilter, RetractStoreError, statementOf } from './item-values.js';

export interface RetractStoreOptions {
  /** The client to act through; its token's agent (and so its fleet) owns the items. Or give url and token. */
  client?: RetractClient;
  url?: string;
  token?: string;
  /** Passed to the client the store creates from url and token (e.g. fetch). */
  clientOptions?: Omit<ClientOptions, 'url' | 'token'>;
  /** The claim-key root every item lives under (default `lg`): `<root>/<namespace…>/#<key>`. */
  root?: string;
  /** Fields whose text a belief's statement (what search embeds) is made of when put gives no index; default the whole value. */
  fields?: string[];
}

/** A page of the server's newest-first ACTIVE beliefs of a claim-key prefix. */
const PAGE = 500;
/** Attempts of a put whose new value another put overtook (each one asserts again over the newer value). */
const PUT_ATTEMPTS = 5;
/** The most hits the server's search returns (SearchInput.k). */
const SEARCH_MAX = 100;

/**
 * LangGraph's BaseStore over RETRACT. `put` asserts a belief (an item whose value names `__derivedFrom` items is
 * derived from their beliefs); a new value for a key is a contradiction the store resolves for the new value, so the
 * old belief is retracted with its cascade; `delete` (and `put(…, null)`) retracts with the cascade; `get`, `search`
 * and `listNamespaces` read ACTIVE beliefs only, so whatever fell with a premise is gone. `batch` runs in order.
 * The token needs beliefs:read, beliefs:write, beliefs:retract and contradictions:adjudicate.
 */
export class RetractStore extends BaseStore {
  readonly client: RetractClient;
  readonly root: string;
  private readonly fields: readonly string[];
  private readonly ownsClient: boolean;

  constructor(opts: RetractStoreOptions) {
    super();
    if (opts.client) this.client = opts.client;
    else if (opts.url && opts.token)
      this.client = new RetractClient({ ...opts.clientOptions, url: opts.url, token: opts.token });
    else throw new TypeError('RetractStore: pass a client, or url and token');
    this.ownsClient = !opts.client;
    this.root = checkRoot(opts.root ?? 'lg');
    this.fields = opts.fields ?? ['$'];
  }

  /** Runs the operations one after another, in order (a get after a put sees it); the results in the same order. */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const o of operations) results.push(await this.run(o));
    return results as OperationResults<Op>;
  }

  /** The claim key an item lives at. */
  claimKeyOf(namespace: string[], key: string): string {
    return itemClaimKey(this.root, namespace, key);
  }

  /**
   * The ACTIVE belief holding an item, or null: its id is what an effect names in `supportedBy` (proposeEffect), so
   * that retracting a premise the item rests on cancels the effect, or reaches it once executed.
   */
  async beliefOf(namespace: string[], key: string): Promise<Belief | null> {
    const claimKey = this.storableKey(namespace, key);
    return claimKey === null ? null : this.client.beliefByClaim(claimKey);
  }

  override async stop(): Promise<void> {
    if (this.ownsClient) await this.client.close();
  }

  private run(o: Operation): Promise<unknown> {
    if ('namespacePrefix' in o) return this.searchItems(o);
    if ('value' in o) return this.putItem(o);
    if ('namespace' in o) return this.getItem(o);
    return this.listNamespacesOf(o);
  }

  private async getItem(o: GetOperation): Promise<Item | null> {
    const b = await this.beliefOf(o.namespace, o.key);
    return b && this.itemOf(b);
  }

  private async putItem(o: PutOperation): Promise<void> {
    if (o.value === null) return this.deleteItem(o.namespace, o.key);
    validateNamespace(o.namespace);
    const claimKey = this.claimKeyOf(o.namespace, o.key);
    const derivedFrom = await Promise.all(
      derivedFromOf(o.value, o.namespace).map(async (ref, i) => {
        const premise = await this.beliefOf(ref.namespace, ref.key);
        if (!premise)
          throw new RetractStoreError(
            `value.__derivedFrom[${i}]`,
            `no item ${JSON.stringify(ref.key)} in namespace ${JSON.stringify(ref.namespace)}`,
          );
        return premise.id;
      }),
    );
    const statement = statementOf(o.value, Array.isArray(o.index) ? o.index : this.fields);
    const input = { claimKey, statement, value: o.value, ...(derivedFrom.length ? { derivedFrom } : {}) };
    for (let attempt = 1; ; attempt++) {
      const r = await this.client.assertBelief(input);
      if (r.__typename === 'PremiseRetracted') {
        throw new RetractStoreError(
          'value.__derivedFrom',
          `a premise (${r.premise?.claimKey ?? 'not readable'}) was retracted while the item was written; nothing was written`,
        );
      }
      if (r.__typename !== 'ContradictionRaised') return;
      // A new value for the key: the store's own verdict for it retracts the old value's belief (and what rested
      // on it) and writes the new one, in one transaction.
      const verdict = (v: 'ACCEPT_PROPOSED' | 'KEEP_EXISTING', why: string) =>
        this.client.request(op.RESOLVE_CONTRADICTION, {
          input: { contradictionId: r.contradiction.id, verdict: v, rationale: `${why} ${claimKey}` },
        });
      try {
        await verdict('ACCEPT_PROPOSED', 'LangGraph put replaced the value of');
        return;
      } catch (e) {
        // Another put replaced the value first (CONFLICT): this proposal is stale. Close it and assert again over
        // the new value, so the last put wins as in any key-value store.
        if (!(e instanceof RetractApiError) || e.code !== 'CONFLICT' || attempt >= PUT_ATTEMPTS) throw e;
        await verdict('KEEP_EXISTING', 'LangGraph put was overtaken by another put of').catch(() => undefined);
      }
    }
  }

  private async deleteItem(namespace: string[], key: string): Promise<void> {
    const b = await this.beliefOf(namespace, key);
    if (b) await this.client.retractBelief(b.id, `LangGraph delete of ${b.claimKey}`);
  }

  private async searchItems(o: SearchOperation): Promise<SearchItem[]> {
    const limit = o.limit ?? 10;
    const offset = o.offset ?? 0;
    const prefix = namespacePrefixKey(this.root, o.namespacePrefix);
    // No item's claim key is longer than 256 characters, so none starts with a longer prefix.
    if (prefix.length > CLAIM_KEY_MAX) return [];
    const items: SearchItem[] = [];
    if (o.query) {
      // The server ranks by its embedder; a filter is applied to the nearest 100 ACTIVE beliefs of the prefix.
      const k = Math.min(SEARCH_MAX, o.filter ? SEARCH_MAX : offset + limit);
      if (offset >= k) return [];
      const r = await this.client.search({ text: o.query, k, claimKeyPrefix: prefix });
      for (const h of r.hits) {
        const item = this.itemOf(h.belief);
        if (item && passesFilter(item.value, o.filter)) items.push({ ...item, score: h.score });
      }
      return items.slice(offset, offset + limit);
    }
    // Without a filter the first offset + limit beliefs are the answer: no more is asked for.
    for await (const b of this.activeBeliefs(prefix, o.filter ? PAGE : Math.min(PAGE, offset + limit))) {
      const item = this.itemOf(b);
      if (item && passesFilter(item.value, o.filter)) items.push(item);
      if (items.length >= offset + limit) break;
    }
    return items.slice(offset, offset + limit);
  }

  private async listNamespacesOf(o: ListNamespacesOperation): Promise<string[][]> {
    const conditions = o.matchConditions ?? [];
    // A prefix's leading labels up to its first wildcard narrow what the server lists.
    const fixed = conditions.find((c) => c.matchType === 'prefix')?.path ?? [];
    const lead = fixed.slice(0, fixed.includes('*') ? fixed.indexOf('*') : fixed.length);
    const seen = new Map<string, string[]>();
    let after: string | null = null;
    do {
      const page: ResultOf<typeof op.BELIEF_KEYS>['beliefs'] = (
        await this.client.request(op.BELIEF_KEYS, {
          claimKeyPrefix: namespacePrefixKey(this.root, lead),
          status: 'ACTIVE',
          first: PAGE,
          after,
        })
      ).beliefs;
      for (const e of page.edges) {
        const parsed = parseItemClaimKey(this.root, e.node.claimKey);
        if (!parsed || !conditions.every((c) => matchesCondition(c, parsed.namespace))) continue;
        const ns = o.maxDepth === undefined ? parsed.namespace : parsed.namespace.slice(0, o.maxDepth);
        seen.set(ns.join(':'), ns);
      }
      after = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null;
    } while (after);
    // Ordered as InMemoryStore orders them.
    const all = [...seen.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, ns]) => ns);
    const offset = o.offset ?? 0;
    return all.slice(offset, offset + (o.limit ?? all.length));
  }

  /** The ACTIVE beliefs of a claim-key prefix, newest first, fetched a page at a time as they are consumed. */
  private async *activeBeliefs(claimKeyPrefix: string, first: number): AsyncGenerator<Belief> {
    let after: string | null = null;
    do {
      const page: ResultOf<typeof op.BELIEFS>['beliefs'] = (
        await this.client.request(op.BELIEFS, { claimKeyPrefix, status: 'ACTIVE', first, after })
      ).beliefs;
      for (const e of page.edges) yield e.node;
      after = page.pageInfo.hasNextPage ? (page.pageInfo.endCursor ?? null) : null;
    } while (after);
  }

  /** An item's claim key, or null for one too long to have been stored (reads of it find nothing). */
  private storableKey(namespace: string[], key: string): string | null {
    try {
      return this.claimKeyOf(namespace, key);
    } catch (e) {
      if (e instanceof RangeError) return null;
      throw e;
    }
  }

  /** The item a belief holds, or null when its claim key is not an item's of this store. */
  private itemOf(b: Belief): Item | null {
    const at = parseItemClaimKey(this.root, b.claimKey);
    if (!at) return null;
    // Only a belief written outside the store holds a value that is not an object; it is shown as { value }.
    const value =
      b.value !== null && typeof b.value === 'object' && !Array.isArray(b.value)
        ? (b.value as Record<string, unknown>)
        : { value: b.value };
    const createdAt = new Date(b.createdAt);
    return { namespace: at.namespace, key: at.key, value, createdAt, updatedAt: createdAt };
  }
}

/** A namespace against a prefix or suffix condition, `*` matching any one label (as InMemoryStore decides it). */
function matchesCondition(c: MatchCondition, ns: readonly string[]): boolean {
  if (c.path.length > ns.length) return false;
  const start = c.matchType === 'prefix' ? 0 : ns.length - c.path.length;
  return c.path.every((label, i) => label === '*' || ns[start + i] === label);
}
