// Every BaseStore method of RetractStore against a real RETRACT server, asserted on InMemoryStore too wherever a
// LangGraph user would count on the two answering alike (docs/langgraph.md lists where they differ, on purpose).
import type {
  BaseStore,
  GetOperation,
  ListNamespacesOperation,
  PutOperation,
  SearchOperation,
} from '@langchain/langgraph-checkpoint';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines, expectInvariants } from '../../support/engines';
import { inMemoryStore, startStoreServer, type StoreServer } from './support';

const keysOf = (items: Array<{ namespace: string[]; key: string }>) =>
  items.map((i) => `${i.namespace.join('|')}#${i.key}`).sort();

describe.each(engines())('RetractStore answers as InMemoryStore does, on %s', (engine) => {
  let s: StoreServer;
  beforeAll(async () => {
    s = await startStoreServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  const both: Array<[string, (fields?: string[]) => Promise<BaseStore>]> = [
    ['InMemoryStore', async (fields) => inMemoryStore(fields)],
    ['RetractStore', (fields) => s.retractStore({ fields })],
  ];
  const checked = async (store: BaseStore) => {
    if (store.constructor.name === 'RetractStore') await expectInvariants(s.server.store);
  };

  it.each(both)(
    '%s: put then get returns the value, namespace, key and Dates; a missing key is null',
    async (_n, make) => {
      const store = await make();
      const before = Date.now();
      await store.put(['users', '42', 'memories'], 'food', { text: 'likes pizza', stars: 5, tags: ['food'] });
      const item = await store.get(['users', '42', 'memories'], 'food');
      expect(item).toMatchObject({
        namespace: ['users', '42', 'memories'],
        key: 'food',
        value: { text: 'likes pizza', stars: 5, tags: ['food'] },
      });
      expect(item!.createdAt).toBeInstanceOf(Date);
      expect(item!.updatedAt).toBeInstanceOf(Date);
      // The server's clock and ours: within a minute of each other.
      expect(Math.abs(item!.createdAt.getTime() - before)).toBeLessThan(60_000);
      expect(item!.updatedAt.getTime()).toBeGreaterThanOrEqual(item!.createdAt.getTime());
      expect(await store.get(['users', '42', 'memories'], 'nope')).toBeNull();
      expect(await store.get(['users', '43', 'memories'], 'food')).toBeNull();
      await checked(store);
    },
  );

  it.each(both)('%s: put of a new value replaces it; put of the same value changes nothing', async (_n, make) => {
    const store = await make();
    await store.put(['prefs'], 'seat', { text: 'aisle' });
    await store.put(['prefs'], 'seat', { text: 'window' });
    expect((await store.get(['prefs'], 'seat'))!.value).toEqual({ text: 'window' });
    await store.put(['prefs'], 'seat', { text: 'window' });
    expect((await store.get(['prefs'], 'seat'))!.value).toEqual({ text: 'window' });
    expect(await store.search(['prefs'])).toHaveLength(1);
    await checked(store);
  });

  it.each(both)(
    '%s: delete, and a put of null, remove the item and return nothing; deleting a missing key is no error',
    async (_n, make) => {
      const store = await make();
      await store.put(['notes'], 'a', { text: 'a' });
      await store.put(['notes'], 'b', { text: 'b' });
      expect(await store.delete(['notes'], 'a')).toBeUndefined();
      expect(await store.get(['notes'], 'a')).toBeNull();
      const [deleted] = await store.batch([{ namespace: ['notes'], key: 'b', value: null }]);
      expect(deleted == null).toBe(true);
      expect(await store.get(['notes'], 'b')).toBeNull();
      await expect(store.delete(['notes'], 'never-there')).resolves.toBeUndefined();
      expect(await store.search(['notes'])).toEqual([]);
      await checked(store);
    },
  );

  it.each(both)('%s: search matches a namespace prefix label by label, and [] matches everything', async (_n, make) => {
    const store = await make();
    await store.put(['users', '1'], 'k', { n: 1 });
    await store.put(['users', '2', 'deep'], 'k', { n: 2 });
    await store.put(['users'], 'top', { n: 3 });
    await store.put(['users2'], 'k', { n: 4 });
    expect(keysOf(await store.search(['users']))).toEqual(['users#top', 'users|1#k', 'users|2|deep#k']);
    expect(keysOf(await store.search(['users', '2']))).toEqual(['users|2|deep#k']);
    expect(keysOf(await store.search(['user']))).toEqual([]);
    expect(keysOf(await store.search([]))).toEqual(['users#top', 'users2#k', 'users|1#k', 'users|2|deep#k']);
  });

  it.each(both)(
    '%s: search filters on value fields: equality and $eq $ne $gt $gte $lt $lte $in $nin',
    async (_n, make) => {
      const store = await make();
      for (let i = 1; i <= 6; i++)
        await store.put(['items'], `i${i}`, { n: i, kind: i % 2 ? 'odd' : 'even', text: `item ${i}` });
      const keys = async (filter: Record<string, unknown>) =>
        (await store.search(['items'], { filter })).map((i) => i.key).sort();
      expect(await keys({ kind: 'odd' })).toEqual(['i1', 'i3', 'i5']);
      expect(await keys({ kind: 'odd', n: { $gt: 1 } })).toEqual(['i3', 'i5']);
      expect(await keys({ n: { $gte: 5 } })).toEqual(['i5', 'i6']);
      expect(await keys({ n: { $lt: 3 } })).toEqual(['i1', 'i2']);
      expect(await keys({ n: { $lte: 1 } })).toEqual(['i1']);
      expect(await keys({ n: { $eq: 4 } })).toEqual(['i4']);
      expect(await keys({ kind: { $ne: 'odd' } })).toEqual(['i2', 'i4', 'i6']);
      expect(await keys({ n: { $in: [2, 3] } })).toEqual(['i2', 'i3']);
      expect(await keys({ n: { $nin: [1, 2, 3, 4] } })).toEqual(['i5', 'i6']);
      expect(await keys({ missing: 'x' })).toEqual([]);
    },
  );

  it.each(both)(
    '%s: limit and offset page through a search without gaps or repeats (default limit 10)',
    async (_n, make) => {
      const store = await make();
      for (let i = 0; i < 12; i++) await store.put(['page'], `k${String(i).padStart(2, '0')}`, { i });
      expect(await store.search(['page'])).toHaveLength(10);
      const pages = [];
      for (let offset = 0; offset < 12; offset += 5)
        pages.push(...(await store.search(['page'], { limit: 5, offset })).map((x) => x.key));
      expect(pages).toHaveLength(12);
      expect(new Set(pages).size).toBe(12);
      expect(await store.search(['page'], { limit: 5, offset: 12 })).toEqual([]);
      expect(
        (await store.search(['page'], { filter: { i: { $gte: 4 } }, limit: 3, offset: 6 })).map((x) => x.value.i),
      ).toHaveLength(2);
    },
  );

  it.each(both)(
    '%s: search with a query ranks by the text the index fields hold, nearest first, with a score',
    async (_n, make) => {
      const store = await make(['text']);
      await store.put(['docs'], 'a', { text: 'the passport of customer 7 is authentic', kind: 'kyc' });
      await store.put(['docs'], 'b', { text: 'shipping address for an order of garden tools', kind: 'shipping' });
      await store.put(['docs'], 'c', { text: 'customer 7 asked for a refund of the garden tools', kind: 'refund' });
      const hits = await store.search(['docs'], { query: 'is the passport of customer 7 authentic', limit: 3 });
      expect(hits.map((h) => h.key)).toEqual(['a', 'c', 'b']);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score!);
      expect(
        (await store.search(['docs'], { query: 'garden tools', filter: { kind: 'shipping' } })).map((h) => h.key),
      ).toEqual(['b']);
      expect(
        (await store.search(['docs'], { query: 'garden tools', limit: 1, offset: 1 })).map((h) => h.key),
      ).toHaveLength(1);
    },
  );

  it.each(both)(
    '%s: listNamespaces honours prefix, suffix, * wildcards, maxDepth, limit and offset, sorted',
    async (_n, make) => {
      const store = await make();
      for (const ns of [['a', 'b', 'c'], ['a', 'b', 'd'], ['a', 'e'], ['f'], ['f', 'b', 'c']])
        await store.put(ns, 'k', { ns });
      expect(await store.listNamespaces()).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['a', 'e'],
        ['f'],
        ['f', 'b', 'c'],
      ]);
      expect(await store.listNamespaces({ prefix: ['a'] })).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['a', 'e'],
      ]);
      expect(await store.listNamespaces({ suffix: ['c'] })).toEqual([
        ['a', 'b', 'c'],
        ['f', 'b', 'c'],
      ]);
      expect(await store.listNamespaces({ prefix: ['*', 'b'] })).toEqual([
        ['a', 'b', 'c'],
        ['a', 'b', 'd'],
        ['f', 'b', 'c'],
      ]);
      expect(await store.listNamespaces({ prefix: ['a'], suffix: ['*', 'd'] })).toEqual([['a', 'b', 'd']]);
      expect(await store.listNamespaces({ maxDepth: 2 })).toEqual([['a', 'b'], ['a', 'e'], ['f'], ['f', 'b']]);
      expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([['a'], ['f']]);
      expect(await store.listNamespaces({ limit: 2, offset: 1 })).toEqual([
        ['a', 'b', 'd'],
        ['a', 'e'],
      ]);
      expect(await store.listNamespaces({ prefix: ['zzz'] })).toEqual([]);
    },
  );

  it.each(both)(
    '%s: labels and keys with any characters round-trip through put, get, search and listNamespaces',
    async (_n, make) => {
      const store = await make();
      const odd = [
        ['crème brûlée', 'a/b#c~d', '🙂 x', 'ÅΩ'],
        ['tab\tlabel', ''],
      ];
      const ns1 = odd[0]!;
      const keys = ['', 'k/with/slashes', '#hash', '~tilde', 'spaces and ünïcødé 日本', 'dots.and:colons'];
      for (const k of keys) await store.put(ns1, k, { k });
      for (const k of keys) expect((await store.get(ns1, k))?.value).toEqual({ k });
      expect((await store.search(ns1, { limit: 20 })).map((i) => i.key).sort()).toEqual([...keys].sort());
      expect(
        (await store.search(ns1.slice(0, 2), { limit: 20 })).every(
          (i) => i.namespace.join('\u0001') === ns1.join('\u0001'),
        ),
      ).toBe(true);
      expect(await store.listNamespaces()).toEqual([ns1]);
      await checked(store);
    },
  );

  it.each(both)('%s: batch answers each operation in place: get, search, listNamespaces, put', async (_n, make) => {
    const store = await make();
    await store.put(['b'], 'x', { v: 1 });
    const ops: [GetOperation, SearchOperation, ListNamespacesOperation, PutOperation] = [
      { namespace: ['b'], key: 'x' },
      { namespacePrefix: ['b'], limit: 10, offset: 0 },
      // As BaseStore.listNamespaces sends it: InMemoryStore tells the operation by its matchConditions key.
      { matchConditions: undefined, limit: 10, offset: 0 },
      { namespace: ['b'], key: 'y', value: { v: 2 } },
    ];
    const [got, found, spaces, put] = await store.batch(ops);
    expect(got).toMatchObject({ key: 'x', value: { v: 1 } });
    expect(found.map((i) => i.key)).toEqual(['x']);
    expect(spaces).toEqual([['b']]);
    expect(put == null).toBe(true);
    expect((await store.get(['b'], 'y'))!.value).toEqual({ v: 2 });
    await checked(store);
  });

  it.each(both)(
    '%s: put refuses the namespaces LangGraph refuses (empty, a period, the langgraph root)',
    async (_n, make) => {
      const store = await make();
      await expect(store.put([], 'k', { v: 1 })).rejects.toThrow(/empty/);
      await expect(store.put(['a.b'], 'k', { v: 1 })).rejects.toThrow(/period/);
      await expect(store.put(['langgraph'], 'k', { v: 1 })).rejects.toThrow(/langgraph/);
      expect(await store.search([])).toEqual([]);
    },
  );
});
