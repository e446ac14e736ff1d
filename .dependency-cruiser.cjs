/**
 * The layering, checked by `npm run lint:deps` (part of `npm test`'s pretest):
 * adapters (api, server, mcp, cli, demo) sit on the domain; the domain sits on the store; the store
 * knows no domain; the client is a pure consumer of the schema.
 */
const DOMAIN = '^src/(agent|belief|contradiction|derivation|dispatch|effect|event|invariants|retraction|reversal|adjudication|embedding|worker)/';
const ADAPTERS = '^src/(api|server|mcp|cli|demo)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two modules one. GraphQL object types refer to each other by nature: src/api/types is exempt.',
      from: { path: '^src/', pathNot: '^src/api/types/' },
      to: { circular: true },
    },
    { name: 'event-log-below-domain', severity: 'error', comment: 'The event log is written by every lifecycle and knows none of them.', from: { path: '^src/event/' }, to: { path: DOMAIN, pathNot: '^src/event/' } },
    { name: 'mcp-not-graphql', severity: 'error', comment: 'MCP and GraphQL are sibling adapters over the same read model.', from: { path: '^src/mcp/' }, to: { path: '^src/(api|server)/' } },
    { name: 'domain-not-adapters', severity: 'error', comment: 'The domain never imports api, server, mcp, cli or demo.', from: { path: DOMAIN }, to: { path: ADAPTERS } },
    { name: 'store-no-domain', severity: 'error', comment: 'The store knows tables and transactions, not the domain.', from: { path: '^src/store/' }, to: { path: `${DOMAIN}|${ADAPTERS}` } },
    { name: 'client-standalone', severity: 'error', comment: 'The client talks GraphQL; it imports neither server nor store.', from: { path: '^src/client/' }, to: { path: '^src/(?!client/)' } },
    { name: 'cli-not-demo-cycle', severity: 'error', comment: 'The demo is a CLI command; it does not import the CLI back.', from: { path: '^src/demo/' }, to: { path: '^src/cli/' } },
    { name: 'no-tests-in-src', severity: 'error', from: { path: '^src/' }, to: { path: '^(test|experiments)/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
