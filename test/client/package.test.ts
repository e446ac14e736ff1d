// @retract/client as an agent project outside this repository gets it: `npm pack` of packages/client, the
// tarball installed into an empty project under the system's temporary directory (dependencies from the
// registry, nothing from the repository), and there the programs of docs/client.md, read from that page, run
// against a server started from the build: in ESM, in CommonJS, typed (`tsc --noEmit` under nodenext and
// bundler, then run), and bundled for the browser.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/engine';
import { type BuiltServer, startBuilt } from '../support/built-server';
import { expectInvariants } from '../support/engines';
import { ROOT, childEnv } from '../mcp/support';

const run = promisify(execFile);
const BOOTSTRAP = 'client-package-bootstrap-0123';
const PACKAGE = path.join(ROOT, 'packages/client');
const NPM = fs.existsSync(path.join(path.dirname(process.execPath), 'npm'))
  ? path.join(path.dirname(process.execPath), 'npm')
  : 'npm';
const json = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8'));

/** The fenced blocks of docs/client.md that carry a name after their language (```js agent.mjs), by name. */
function docsBlocks(): Record<string, string> {
  const md = fs.readFileSync(path.join(ROOT, 'docs/client.md'), 'utf8');
  return Object.fromEntries([...md.matchAll(/^```\w+ (\S+)\n([\s\S]*?)^```$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** agent.cjs as docs/client.md builds it: its wrapper around the body of agent.mjs (everything after the import). */
function commonJs(blocks: Record<string, string>): string {
  const body = blocks['agent.mjs']!.replace(/^import [^\n]*\n/, '');
  const wrapper = blocks['agent.cjs']!;
  expect(wrapper).toMatch(/^ *\/\/ … the body of agent\.mjs.*$/m);
  return wrapper.replace(/^ *\/\/ … the body of agent\.mjs.*$/m, body);
}

/** Versions as this repository's lockfile holds them: the project pins them as its own lockfile would. */
function lockedVersions(names: string[]): Record<string, string> {
  const lock = json(path.join(ROOT, 'package-lock.json')).packages as Record<string, { version: string }>;
  return Object.fromEntries(names.map((n) => [n, lock[`node_modules/${n}`]!.version]));
}

/** The package a bare import specifier names (`@scope/name/sub` → `@scope/name`). */
const packageOf = (spec: string) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

/** The specifiers a module's import and export statements and import() types name. */
const specifiers = (text: string) =>
  [
    ...text.matchAll(/^\s*(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
    ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]!);

const normalise = (out: string) => out.replace(/customer:\d+/g, 'customer:<n>').trim();

describe('@retract/client installed from its tarball into a project outside the repository', () => {
  const blocks = docsBlocks();
  let tmp: string;
  let project: string;
  let dataDir: string;
  let server: BuiltServer;
  let tarball: string;
  let env: Record<string, string>;

  /** Runs node in the project (the agent's own program, or tsc); resolves to its stdout. tsc may take minutes on a loaded machine. */
  const node = async (...args: string[]) =>
    (await run(process.execPath, args, { cwd: project, env, timeout: 240_000 })).stdout;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-client-package-'));
    project = path.join(tmp, 'agent-project');
    dataDir = path.join(tmp, 'server-data');
    server = startBuilt({ RETRACT_DATA_DIR: dataDir, RETRACT_BOOTSTRAP_TOKEN: BOOTSTRAP });
    // npm pack runs the package's prepack, which compiles src/client into packages/client/dist.
    const packed = JSON.parse(
      (await run(NPM, ['pack', PACKAGE, '--pack-destination', tmp, '--json'], { cwd: ROOT, timeout: 240_000 })).stdout,
    );
    tarball = path.join(tmp, packed[0].filename);
    fs.mkdirSync(project);
    const tools = lockedVersions(['typescript', '@types/node']);
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify(
        {
          name: 'agent-project',
          private: true,
          type: 'module',
          devDependencies: tools,
          // Overrides pin versions and add no dependency: what the client's own manifest names is what arrives.
          overrides: {
            ...lockedVersions(['graphql-ws', 'gql.tada', '@0no-co/graphql.web', 'ws', 'graphql']),
            ...tools,
          },
        },
        null,
        2,
      ),
    );
    for (const name of ['agent.mjs', 'agent.ts', 'mine.ts', 'tsconfig.json'])
      fs.writeFileSync(path.join(project, name), blocks[name]!);
    fs.writeFileSync(path.join(project, 'agent.cjs'), commonJs(blocks));
    fs.writeFileSync(
      path.join(project, 'check.cts'),
      [
        "import retract = require('@retract/client/node');",
        "const client: retract.RetractClient = retract.nodeClient({ url: 'http://127.0.0.1:4000/graphql', token: 'rt_x' });",
        'void client.close();',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(project, 'browser.mjs'),
      "import { RetractClient } from '@retract/client';\nexport const client = new RetractClient({ url: '/graphql', token: 'rt_x' });\n",
    );
    await run(NPM, ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: project,
      env: npmEnv(),
      timeout: 240_000,
    });

    const url = `${await server.url}/graphql`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${BOOTSTRAP}` },
      body: JSON.stringify({
        query: 'mutation($input: CreateAgentInput!) { createAgent(input: $input) { token } }',
        variables: {
          input: {
            name: 'kyc',
            fleet: 'outside',
            scopes: ['beliefs:read', 'beliefs:write', 'beliefs:retract', 'receipts:read'],
          },
        },
      }),
    });
    const token = ((await res.json()) as { data: { createAgent: { token: string } } }).data.createAgent.token;
    env = { ...childEnv({ RETRACT_URL: url, RETRACT_TOKEN: token }), NODE_PATH: '' };
  }, 600_000);

  afterAll(async () => {
    if (server) {
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      const store = await openStore({ dataDir, maintenanceMs: 0 });
      try {
        await expectInvariants(store);
      } finally {
        await store.close();
      }
    }
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('the tarball holds the compiled client and its manifest only; installing it runs nothing; its manifest names every package it imports', () => {
    const installed = path.join(project, 'node_modules/@retract/client');
    // Resolved inside the project, not through the repository.
    expect(fs.realpathSync(installed).startsWith(fs.realpathSync(project))).toBe(true);
    const files = fs
      .readdirSync(installed, { recursive: true, encoding: 'utf8' })
      .filter((f) => fs.statSync(path.join(installed, f)).isFile());
    expect(files.filter((f) => !/^dist\/.*\.(js|d\.ts)$/.test(f) && !/^(package\.json|README\.md)$/.test(f))).toEqual(
      [],
    );
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/node.js',
        'dist/node.d.ts',
        'dist/graphql-env.d.ts',
      ]),
    );
    expect(fs.statSync(tarball).size).toBeLessThan(100_000);

    const manifest = json(path.join(installed, 'package.json'));
    // Every folder of src/client with an index.ts is a subpath of the package (./langgraph: @retract/client/langgraph).
    const folders = fs
      .readdirSync(path.join(ROOT, 'src/client'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && fs.existsSync(path.join(ROOT, 'src/client', d.name, 'index.ts')));
    for (const d of folders)
      expect(manifest.exports[`./${d.name}`], `packages/client/package.json exports ./${d.name}`).toEqual({
        types: `./dist/${d.name}/index.d.ts`,
        default: `./dist/${d.name}/index.js`,
      });
    expect(Object.keys(manifest.scripts ?? {}).filter((s) => /^(pre|post)?install$|^prepare$/.test(s))).toEqual([]);
    const declared = new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const imported = new Set<string>();
    for (const f of files.filter((x) => /\.(js|ts)$/.test(x))) {
      for (const spec of specifiers(fs.readFileSync(path.join(installed, f), 'utf8'))) {
        if (!spec.startsWith('.') && !spec.startsWith('node:')) imported.add(packageOf(spec));
      }
    }
    expect([...imported].filter((p) => !declared.has(p))).toEqual([]);
    // The manifest's ranges start at the versions this repository builds and tests the client with.
    const root = json(path.join(ROOT, 'package.json')).dependencies as Record<string, string>;
    for (const [name, range] of Object.entries(manifest.dependencies as Record<string, string>))
      expect(range, name).toBe(`^${root[name]}`);
  });

  it('ESM: agent.mjs runs a turn, a retraction, and a subscription resumed from a cursor, printing what docs/client.md shows', async () => {
    expect(normalise(await node('agent.mjs'))).toBe(normalise(blocks['output']!));
  });

  it('CommonJS: agent.cjs (the same body through require()) prints the same', async () => {
    expect(normalise(await node('agent.cjs'))).toBe(normalise(blocks['output']!));
  });

  it('TypeScript: tsc --noEmit passes under nodenext and under bundler (no skipLibCheck, no DOM), and a .cts requires it', async () => {
    const tsc = path.join(project, 'node_modules/typescript/bin/tsc');
    expect(json(path.join(project, 'tsconfig.json')).compilerOptions).toMatchObject({
      module: 'nodenext',
      moduleResolution: 'nodenext',
    });
    await Promise.all([
      node(tsc, '-p', '.'),
      node(tsc, '-p', '.', '--module', 'esnext', '--moduleResolution', 'bundler'),
      node(
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--lib',
        'es2023',
        '--types',
        'node',
        'check.cts',
      ),
    ]);
    // A document that selects a field the schema lacks fails the check: the types are the schema's, not `any`.
    fs.writeFileSync(
      path.join(project, 'wrong.ts'),
      "import { RetractClient, graphql } from '@retract/client';\nconst c = new RetractClient({ url: '', token: '' });\nawait c.request(graphql(`query { viewer { nickname } }`));\n",
    );
    await expect(node(tsc, '-p', '.')).rejects.toMatchObject({ stdout: expect.stringContaining('nickname') });
    fs.rmSync(path.join(project, 'wrong.ts'));
  }, 600_000);

  it('TypeScript: agent.ts and mine.ts run as they are (Node strips the types)', async () => {
    expect(normalise(await node('agent.ts'))).toBe(normalise(blocks['output']!));
    expect(await node('mine.ts')).toBe('kyc in outside: beliefs:read, beliefs:write, beliefs:retract, receipts:read\n');
  });

  it('browser: @retract/client bundles for the browser without a Node module', async () => {
    const r = await build({
      absWorkingDir: project,
      entryPoints: ['browser.mjs'],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    expect(r.errors).toEqual([]);
    expect(Object.keys(r.metafile.inputs).filter((f) => /node_modules\/ws\/|^node:/.test(f))).toEqual([]);
  });
});

/** npm's environment for the child install: the parent's, minus what `npm test` set about this repository's package. */
function npmEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) => v !== undefined && !/^(npm_package_|npm_lifecycle_|INIT_CWD$)/.test(k),
    ),
  ) as Record<string, string>;
}
