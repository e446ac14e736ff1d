import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { CliError, runScript } from './common';

/**
 * `retract`: the command line. Every command has --help; expected failures print one line
 * (`retract: <reason>`) and exit non-zero (2 for bad usage or configuration, 1 otherwise);
 * scripts and workers it runs pass their own exit status through. Set RETRACT_DEBUG=1 for stacks.
 */

const EVALS = ['reach', 'adjudicator', 'identity', 'concurrency'] as const;
const WORKERS = ['executor', 'dispatcher'] as const;

function portArg(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535)
    throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return Number(value);
}

const storeOptions = (cmd: Command) =>
  cmd
    .option('--data-dir <dir>', 'embedded data directory (default: RETRACT_DATA_DIR, else ./.retract)')
    .option('--database-url <url>', 'PostgreSQL instead of the embedded engine (default: DATABASE_URL)');

/** Runs an action and exits with its status; CliError → one line on stderr. */
function action<A extends unknown[]>(fn: (...args: A) => Promise<number | void>) {
  return async (...args: A) => {
    try {
      const code = await fn(...args);
      if (typeof code === 'number') process.exit(code);
    } catch (e) {
      if (e instanceof CliError) {
        process.stderr.write(`retract: ${e.message}\n`);
        process.exit(e.exitCode);
      }
      process.stderr.write(`retract: unexpected error: ${(e as Error)?.message ?? String(e)}\n`);
      if (process.env.RETRACT_DEBUG) process.stderr.write(`${(e as Error)?.stack ?? ''}\n`);
      process.exit(1);
    }
  };
}

const program = new Command('retract')
  .description(
    'Shared memory for fleets of AI agents that can take a belief back, together with everything built on it.',
  )
  .version('0.1.0')
  .enablePositionalOptions()
  .showSuggestionAfterError()
  // Usage errors (unknown option or command, missing or invalid value) exit 2; help and version exit 0.
  // Subcommands inherit this.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .addHelpText(
    'after',
    `
Environment: DATABASE_URL (PostgreSQL) or RETRACT_DATA_DIR (embedded, default ./.retract); see docs/configuration.md.
Run \`retract <command> --help\` for a command's options.`,
  );

storeOptions(
  program
    .command('serve')
    .description(
      'run the server: GraphQL at /graphql (HTTP, SSE, graphql-ws), MCP receipts at /mcp, the dashboard at /dashboard',
    )
    .addOption(new Option('--port <port>', 'port to listen on (default: PORT, else 4000)').argParser(portArg))
    .option('--host <host>', 'address to bind (default: HOST, else 127.0.0.1)')
    .addHelpText(
      'after',
      '\nThe operator token comes from RETRACT_BOOTSTRAP_TOKEN (at least 16 characters). Stops cleanly on SIGTERM/SIGINT.',
    ),
).action(action(async (opts) => (await import('./commands')).serve(opts)));

storeOptions(
  program.command('migrate').description('apply every pending database migration (db/migrations) and say which'),
).action(action(async (opts) => (await import('./commands')).migrate(opts)));

program
  .command('demo')
  .description('the passport story, narrated: 8 agents, a forged passport, the cascade live, and the receipt')
  .option('--data-dir <dir>', 'keep the demo in this new (or empty) data directory instead of memory')
  .option('--color', 'force colour')
  .option('--no-color', 'no colour (also NO_COLOR=1); piped output is plain by default')
  .action(action(async (opts: { dataDir?: string; color?: boolean }) => (await import('./demo')).runDemo(opts)));

const agent = program.command('agent').description('manage agents');
storeOptions(
  agent
    .command('create')
    .description('create an agent and print its bearer token (shown once; only its hash is stored)')
    .requiredOption('--name <name>', 'agent name, unique in its fleet')
    .requiredOption(
      '--scopes <scopes>',
      'comma-separated: beliefs:read, beliefs:write, beliefs:retract, effects:propose, effects:execute, contradictions:adjudicate, receipts:read, admin',
    )
    .option('--fleet <fleet>', 'the fleet it joins (default: default; created on first use)')
    .option('--json', 'print {agent, token} as JSON on stdout')
    .addHelpText(
      'after',
      '\nThe token alone goes to stdout (so TOKEN=$(retract agent create …) works); the description to stderr.\n' +
        'On the embedded engine the data directory must not be held by a running server: use the createAgent mutation there.',
    ),
).action(action(async (opts) => (await import('./commands')).agentCreate(opts)));

storeOptions(
  program
    .command('backup')
    .description('write a dump of the embedded store to <file> (the store must not be open in a server)')
    .argument('<file>', 'where to write the dump (a gzipped tar of the PGlite data directory)')
    .addHelpText('after', '\nPostgreSQL and Citus: use pg_dump / pg_restore instead (docs/backup.md).'),
).action(action(async (file: string, opts) => (await import('./backup')).backup(file, opts)));

storeOptions(
  program
    .command('restore')
    .description(
      'make the embedded store the one dumped in <file> by retract backup (the store must not be open in a server)',
    )
    .argument('<file>', 'a dump written by retract backup')
    .option(
      '--replace',
      'restore over an existing store (it is moved aside to pgdata.before-restore-<time>, not deleted)',
    ),
).action(action(async (file: string, opts) => (await import('./backup')).restore(file, opts)));

program
  .command('eval')
  .description(`run an evaluation script (${EVALS.join(' | ')}); its exit status is passed through`)
  .addArgument(new Argument('<name>', 'which evaluation').choices(EVALS))
  .argument('[args...]', 'arguments for the script (e.g. --help)')
  .passThroughOptions()
  .allowUnknownOption()
  .addHelpText('after', `\nRuns experiments/<name>_eval.ts with tsx, e.g. \`retract eval identity --embedder local\`.`)
  .action(
    action(async (name: string, args: string[]) => runScript(`experiments/${name}_eval.ts`, args, `eval ${name}`)),
  );

program
  .command('worker')
  .description('run a worker process: executor (runs PENDING effects) or dispatcher (sends OWED reversals)')
  .addArgument(new Argument('<role>', 'which worker').choices(WORKERS))
  .addHelpText(
    'after',
    '\nConfigured by environment (see src/worker/executor-main.ts and dispatcher-main.ts): e.g. RETRACT_EXECUTOR_TOKEN,\n' +
      'RETRACT_EXECUTOR_URL + RETRACT_EXECUTOR_KINDS, RETRACT_PROVIDER_URL. Exit status: 0 clean stop, 2 configuration, 1 fatal.',
  )
  .action(action(async (role: (typeof WORKERS)[number]) => (await import('./commands')).worker(role)));

storeOptions(
  program
    .command('mcp')
    .description(
      'serve the MCP tools (memory and receipts, as the token scopes open them): stdio (default) or Streamable HTTP (--http PORT)',
    )
    .addOption(
      new Option('--http <port>', 'serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio').argParser(portArg),
    )
    .option('--host <host>', 'address to bind with --http (default: HOST, else 127.0.0.1)')
    .addHelpText(
      'after',
      `
Memory tools: remember, recall, why, as_of, preview_retraction, retract, reinstate, propose_effect. Receipt tools:
get_receipt, get_reinstatement, explain_belief, list_owed_reversals, search_beliefs. Each is listed only for a token
holding the scope its GraphQL twin needs (docs/mcp.md). Reads run as retract_reader in read-only transactions; writes
through the same services as GraphQL, as retract_mcp. stdio: the agent's token comes from RETRACT_TOKEN. --http: each
request sends "Authorization: Bearer <token>". On the embedded engine the data directory must not be held by a
server; when it is, use that server's /mcp endpoint instead.`,
    ),
).action(action(async (opts) => (await import('./commands')).mcp(opts)));

program
  .command('reinstate')
  .description('take a retraction back on a running server (reinstateRetraction) and print the reinstatement receipt')
  .argument('<retraction>', 'the retraction: its global id, or its numeric id')
  .requiredOption('--reason <text>', 'why the retraction was wrong (kept on the receipt)')
  .option('--url <url>', 'the GraphQL endpoint (default: RETRACT_URL, else http://127.0.0.1:4000/graphql)')
  .option('--json', "print the mutation's answer as JSON")
  .addHelpText(
    'after',
    '\nThe token comes from RETRACT_TOKEN and needs beliefs:retract. Asking again prints the first receipt.',
  )
  .action(
    action(async (retraction: string, opts: { reason: string; url?: string; json?: boolean }) =>
      (await import('./reinstate')).reinstate(retraction, opts),
    ),
  );

program
  .command('bench')
  .description('run the benchmarks (experiments/bench/main.ts) with the remaining arguments')
  .argument('[args...]', 'arguments for the benchmark (e.g. --help)')
  .passThroughOptions()
  .allowUnknownOption()
  .action(action(async (args: string[]) => runScript('experiments/bench/main.ts', args, 'bench')));

await program.parseAsync(process.argv);
