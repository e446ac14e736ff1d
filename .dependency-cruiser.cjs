/**
 * The layering, checked by `npm run lint:deps` (part of `npm test`'s pretest) over src/ and dashboard/src/:
 * adapters (api, server, mcp, cli) sit on the domain; the domain sits on the store; the store
 * knows no domain; the kernel and the errors sit below everything; the client and the dashboard are pure consumers of
 * the schema. Every folder of src/ is named by at least one rule, and every folder or file a rule names exists:
 * test/repo/dependency-rules.test.ts reads this file and fails otherwise.
 */
const DOMAIN =
  '^src/(agent|belief|contradiction|derivation|effect|event|invariants|reinstatement|retraction|reversal|adjudication|embedding|worker)/';
/**
 * What opens write transactions or drives writes: the services (every writeTx of the product), the
 * worker loops and their processes, the cascade and what it does to effects, reversal dispatch and
 * the provider callback, and the adapters that call them.
 */
const WRITE_PATH =
  '(\\.service\\.ts$|^src/worker/|^src/effect/(executor|reach)\\.ts$|^src/retraction/cascade\\.ts$|^src/reversal/(dispatcher|callback)\\.ts$|^src/(api|server|cli)/)';
const ADAPTERS = '^src/(api|server|mcp|cli)/';
/** The MCP modules that may reach writes: the write tools, and what registers and serves them. */
const MCP_WRITERS = '^src/mcp/(write/|server\\.ts$|http\\.ts$|main\\.ts$)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A cycle makes two modules one. GraphQL object types refer to each other by nature: src/api/types is exempt.',
      from: { path: '^src/', pathNot: '^src/api/types/' },
      to: { circular: true },
    },
    {
      name: 'dashboard-no-circular',
      severity: 'error',
      comment:
        'The dashboard has no exemption: a panel asks another part of the page for something through dashboard/src/page-events.ts, and main.ts wires who answers, so no panel imports one that imports it back.',
      from: { path: '^dashboard/src/' },
      to: { circular: true },
    },
    {
      name: 'dashboard-speaks-graphql',
      severity: 'error',
      comment:
        'The dashboard is an agent like any other: of src/ it imports only the browser-safe typed client (src/client/index.ts), never the server, the store or the client for Node.',
      from: { path: '^dashboard/src/' },
      to: { path: '^src/', pathNot: '^src/client/(?!node\\.ts$)' },
    },
    {
      name: 'event-log-below-domain',
      severity: 'error',
      comment: 'The event log is written by every lifecycle and knows none of them.',
      from: { path: '^src/event/' },
      to: { path: DOMAIN, pathNot: '^src/event/' },
    },
    {
      name: 'mcp-not-graphql',
      severity: 'error',
      comment: 'MCP and GraphQL are sibling adapters over the same read model.',
      from: { path: '^src/mcp/' },
      to: { path: '^src/(api|server)/' },
    },
    {
      name: 'domain-not-adapters',
      severity: 'error',
      comment: 'The domain never imports api, server, mcp or cli.',
      from: { path: DOMAIN },
      to: { path: ADAPTERS },
    },
    {
      name: 'kernel-below-all',
      severity: 'error',
      comment: 'The kernel (money, paging, id and cursor codecs) is what every layer imports; it imports none of them.',
      from: { path: '^src/kernel/' },
      to: { path: `${DOMAIN}|${ADAPTERS}|^src/store/` },
    },
    {
      name: 'store-no-domain',
      severity: 'error',
      comment: 'The store knows tables and transactions, not the domain.',
      from: { path: '^src/store/' },
      to: { path: `${DOMAIN}|${ADAPTERS}` },
    },
    {
      name: 'errors-below-all',
      severity: 'error',
      comment:
        'The error classes (a refusal and its extensions.code) are thrown from every layer, the kernel too; they import nothing of src.',
      from: { path: '^src/errors/' },
      to: { path: '^src/(?!errors/)' },
    },
    {
      name: 'client-standalone',
      severity: 'error',
      comment: 'The client talks GraphQL; it imports neither server nor store.',
      from: { path: '^src/client/' },
      to: { path: '^src/(?!client/)' },
    },
    { name: 'no-tests-in-src', severity: 'error', from: { path: '^src/' }, to: { path: '^(test|experiments)/' } },
    {
      name: 'mcp-reaches-no-write-path',
      severity: 'error',
      comment:
        'Every MCP module but the write tools (src/mcp/write/) and the three that assemble and serve them (server, http, main) reads only: through readerTx (READ ONLY, as retract_reader) and the read functions of the repositories. None of them reaches, even transitively, a module that opens a write transaction.',
      from: { path: '^src/mcp/', pathNot: MCP_WRITERS },
      to: { path: WRITE_PATH, reachable: true },
    },
    {
      name: 'mcp-writes-only-in-write-tools',
      severity: 'error',
      comment:
        'Only the MCP write tools (src/mcp/write/) import a write path, and only the services GraphQL calls: server, http and main reach writes solely through them.',
      from: { path: '^src/mcp/', pathNot: '^src/mcp/write/' },
      to: { path: WRITE_PATH },
    },
    {
      name: 'mcp-write-tools-call-services',
      severity: 'error',
      comment:
        'The MCP write tools call services (the same functions GraphQL calls), never the cascade, the workers or another adapter: no second implementation of a rule.',
      from: { path: '^src/mcp/write/' },
      to: { path: WRITE_PATH, pathNot: '\\.service\\.ts$' },
    },
    {
      name: 'sql-only-in-repositories',
      severity: 'error',
      comment:
        "Every statement of the product lives in a src/<lifecycle>/<aggregate>.repository.ts (store/ keeps transactions, engine and catalog queries; invariants/ is the checker): nothing else imports kysely's sql.",
      from: { path: '^src/', pathNot: '(\\.repository\\.ts$|^src/store/|^src/invariants/)' },
      to: { path: 'node_modules/kysely/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-folder-cycles',
      severity: 'error',
      comment:
        "A folder that imports a folder importing it back (directly or around a longer loop) makes the two one layer: each lifecycle sits on the ones below it. Break the loop where the dependency is one way: hand a repository the SQL fragment of the layer above (reach.ts), put a loop's shared helper below both (store/rounds.ts), or move the orchestration up (adjudication.service.ts). A folder and its own sub-folders count as one.",
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
    },
  },
};
