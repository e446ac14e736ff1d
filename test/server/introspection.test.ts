import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/api-server';
import { expectInvariants } from '../support/engines';

/**
 * graphql-js's standard introspection query — GraphiQL's, and code generators' — nests `ofType` 9 deep: the depth
 * limit (14) refused it, so GraphiQL opened with "the query is nested too deeply" and no schema. Under `__schema` an
 * `ofType` chain of up to 9 counts as one level; every other level counts as before.
 */
describe('introspection and the depth limit', () => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer('pglite');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  const post = async (query: string) => {
    const r = await fetch(s.http, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    return (await r.json()) as {
      data?: { __schema?: { queryType: { name: string } } };
      errors?: Array<{ message: string; extensions?: { code?: string; limit?: string } }>;
    };
  };

  it('answers the standard introspection query, with and without its options', async () => {
    for (const opts of [
      {},
      {
        descriptions: true,
        specifiedByUrl: true,
        directiveIsRepeatable: true,
        schemaDescription: true,
        inputValueDeprecation: true,
      },
    ]) {
      const r = await post(getIntrospectionQuery(opts));
      expect(r.errors).toBeUndefined();
      expect(r.data?.__schema?.queryType.name).toBe('Query');
    }
  });

  it('refuses an ofType chain deeper than the standard one, and deep recursion through fields and types', async () => {
    const ofTypes = (n: number) => `${'ofType { '.repeat(n)}name${' }'.repeat(n)}`;
    const nine = await post(`{ __schema { types { fields { type { ${ofTypes(9)} } } } } }`);
    expect(nine.errors).toBeUndefined();
    const chain = await post(`{ __schema { types { fields { type { ${ofTypes(10)} } } } } }`);
    expect(chain.data).toBeUndefined();
    expect(chain.errors?.[0]).toMatchObject({
      message: 'the query is nested too deeply; ask for fewer levels',
      extensions: { code: 'LIMIT_EXCEEDED', limit: 'depth' },
    });
    // graphql-js's own rule refuses this one first ("Maximum introspection depth exceeded").
    const recursion = await post(`{ __schema { types { ${'fields { type { '.repeat(7)}name${' } }'.repeat(7)} } } }`);
    expect(recursion.data).toBeUndefined();
    expect(recursion.errors?.length).toBeGreaterThan(0);
  });
});
