import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pc from 'picocolors';
import { CliError, withSpinner } from './common';
import { formatMoney, formatMonies } from '../mcp/format';
import { count } from '../kernel/count';
import type { App } from '../server/app';
import type { Store } from '../store/engine';
import {
  iterate,
  nodeClient,
  wsClient,
  wsUrl,
  type Json,
  type AssertBeliefInput,
  type Belief,
  type RetractClient,
  type ResultOf,
} from '../client/node';
import * as D from './demo-operations';

/**
 * `retract demo` / `npm run demo`: the passport story, told through the real GraphQL API of an
 * in-process server on the embedded engine. Eight agents READ, THINK and COMMIT beliefs, propose and
 * execute effects; a forensic check finds the passport forged; the auditor adjudicates, and the
 * cascade streams over graphql-ws depth by depth; the receipt closes it. The store is in memory
 * (or a new directory given with --data-dir, never an existing store). Exits 0 when the story ran
 * and every invariant holds.
 */

type Colors = ReturnType<typeof pc.createColors>;

const PREFIX = 'customer:4411';

const AGENTS = [
  { name: 'doc-check', scopes: ['beliefs:write'], role: 'checks identity documents at onboarding' },
  { name: 'kyc', scopes: ['beliefs:read', 'beliefs:write'], role: 'derives identity and KYC tier' },
  { name: 'refunds', scopes: ['beliefs:read', 'beliefs:write', 'effects:propose'], role: 'decides and issues refunds' },
  { name: 'billing', scopes: ['beliefs:read', 'effects:propose'], role: 'charges tier fees' },
  { name: 'payouts', scopes: ['beliefs:read', 'effects:propose'], role: 'schedules payouts' },
  { name: 'executor', scopes: ['effects:execute'], role: 'runs effects against the bank and card rails' },
  { name: 'forensics', scopes: ['beliefs:write'], role: 'examines documents in depth, later' },
  {
    name: 'auditor',
    scopes: ['beliefs:read', 'contradictions:adjudicate', 'receipts:read'],
    role: 'adjudicates and watches receipts',
  },
] as const;
type AgentName = (typeof AGENTS)[number]['name'];

/** Colour only on a terminal that wants it: --color/--no-color win, then NO_COLOR, FORCE_COLOR, a TTY. */
export function colorEnabled(
  flag: boolean | undefined,
  env: NodeJS.ProcessEnv = process.env,
  isTTY = !!process.stdout.isTTY,
): boolean {
  if (flag !== undefined) return flag;
  if ('NO_COLOR' in env && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false') return true;
  return isTTY && env.TERM !== 'dumb';
}

type Totals = ResultOf<typeof D.PREVIEW>['previewRetraction']['totals'];
type Money = Totals['exposure'][number];
/** One agent of the story: its name for the transcript and its client (its own token). */
interface AgentClient {
  name: string;
  api: RetractClient;
}
const agentClient = (name: string, token: string, url: string): AgentClient => ({
  name,
  api: nodeClient({ url, token }),
});

const short = (claimKey: string) => claimKey.replace(`${PREFIX}/`, '');
const usd = (amountMinor: number) => formatMoney(amountMinor, 'USD');
const pickMoney = (list: Money[]) => formatMonies(list, usd(0));

export async function runDemo(opts: { dataDir?: string; color?: boolean } = {}): Promise<number> {
  const c = pc.createColors(colorEnabled(opts.color));
  const out = (line = '') => process.stdout.write(`${line}\n`);

  let dir: string | null = null;
  if (opts.dataDir) {
    dir = path.resolve(opts.dataDir);
    if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
      throw new CliError(
        `--data-dir ${dir} is not empty; the demo writes only into a new or empty directory, never over an existing store`,
        2,
      );
    }
  }

  // The engine, the server and their dependencies load only once the arguments are known to be good.
  const [{ default: pino }, { HeuristicAdjudicator }, { LocalEmbedder }, { createApp }, { openStore }] =
    await Promise.all([
      import('pino'),
      import('../adjudication/heuristic'),
      import('../embedding/local'),
      import('../server/app'),
      import('../store/engine'),
    ]);
  const bootstrapToken = `demo-${randomBytes(18).toString('base64url')}`;
  let store: Store | null = null;
  let app: App | null = null;
  try {
    ({ store, app } = await withSpinner(
      'starting an in-process RETRACT server on the embedded engine',
      async () => {
        const s = await openStore({ dataDir: dir ?? 'memory://' });
        try {
          const a = await createApp({
            config: { port: 0, host: '127.0.0.1', bootstrapToken, logLevel: 'silent' },
            store: s,
            embedder: new LocalEmbedder(),
            adjudicator: new HeuristicAdjudicator(),
            logger: pino({ level: 'silent' }),
          });
          await a.listen();
          return { store: s, app: a };
        } catch (e) {
          await s.close();
          throw e;
        }
      },
      () => 'server ready',
    ));
    const code = await story(app, store, bootstrapToken, c, out, dir);
    return code;
  } finally {
    await app?.close().catch(() => {});
    await store?.close().catch(() => {});
  }
}

async function story(
  app: App,
  store: Store,
  bootstrapToken: string,
  c: Colors,
  out: (l?: string) => void,
  dir: string | null,
): Promise<number> {
  const url = `${app.url()}/graphql`;
  const h = (n: number, title: string) => {
    out();
    out(c.bold(`${n}. ${title}`));
  };
  const who = (name: string) => c.cyan(name.padEnd(10));
  const phase = (p: 'READ' | 'THINK' | 'COMMIT') =>
    ({ READ: c.blue, THINK: c.magenta, COMMIT: c.green })[p](p.padEnd(6));
  const pad = ' '.repeat(2 + 10 + 1);
  const gidOf = (id: string) => Buffer.from(id, 'base64').toString('utf8');

  out(c.bold('RETRACT demo — the forged passport'));
  out(
    `An in-process server on the embedded engine (PGlite, ${dir ? dir : 'in memory'}), driven through its own GraphQL API:`,
  );
  out(
    `  ${c.dim('HTTP')}  ${url}   ${c.dim('(queries and mutations: fetch POST with Authorization: Bearer <token>)')}`,
  );
  out(
    `  ${c.dim('WS')}    ${url.replace(/^http/, 'ws')}   ${c.dim('(the live cascade: graphql-ws, retractionEvents)')}`,
  );

  // ---------------------------------------------------------------- 1. the fleet
  const operator = agentClient('operator', bootstrapToken, url);
  h(1, 'The fleet');
  out(`  ${who('operator')}(the bootstrap token) creates eight agents with createAgent; each token is shown once:`);
  const agents = {} as Record<AgentName, AgentClient>;
  for (const a of AGENTS) {
    const r = await operator.api.request(D.CREATE_AGENT, { input: { name: a.name, scopes: [...a.scopes] } });
    agents[a.name] = agentClient(a.name, r.createAgent.token, url);
    out(`    ${c.cyan(a.name.padEnd(10))} ${a.role.padEnd(46)} ${c.dim(a.scopes.join(', '))}`);
  }
  const kinds = [
    { kind: 'refund', reversible: true, note: 'reversible' },
    { kind: 'card_charge', reversible: false, note: 'no compensation handler' },
    { kind: 'payout', reversible: true, note: 'reversible' },
  ];
  for (const k of kinds) {
    await operator.api.request(D.REGISTER_EFFECT_KIND, { input: { kind: k.kind, reversible: k.reversible } });
  }
  out(`  ${who('operator')}registers effect kinds: ${kinds.map((k) => `${k.kind} (${k.note})`).join(', ')}`);

  // The auditor's live feed: from the start of this fresh store's log, so no step can slip past it.
  const ws = wsClient(wsUrl(url), agents.auditor.api.token);
  const feed = iterate(ws, D.FEED, { after: Buffer.from('e1:0:0:-1').toString('base64url') });
  out(`  ${who('auditor')}subscribes to retractionEvents over graphql-ws, like a dashboard`);

  // ---------------------------------------------------------------- 2. beliefs
  h(2, 'Beliefs, one turn at a time: READ (search), THINK (outside any transaction), COMMIT (assertBelief)');
  // doc-check and forensics hold beliefs:write alone: the client asks back only what their tokens may read.
  const assert = (agent: AgentClient, input: AssertBeliefInput) => agent.api.assertBelief(input);
  const read = async (agent: AgentClient, text: string) => {
    const r = await agent.api.search({ text, k: 3, claimKeyPrefix: PREFIX });
    out(`  ${who(agent.name)}${phase('READ')} search "${text}" → ${count(r.hits.length, 'hit')}`);
    for (const hit of r.hits) {
      out(
        `${pad}         ${c.dim(hit.score.toFixed(3))}  ${short(hit.belief.claimKey)} = ${JSON.stringify(hit.belief.value)} ${c.dim(`(${hit.belief.status}, by ${hit.belief.author.name})`)}`,
      );
    }
    return r;
  };
  const think = (agent: AgentClient, thought: string) => out(`  ${who(agent.name)}${phase('THINK')} ${thought}`);
  const commit = async (
    agent: AgentClient,
    input: {
      claimKey: string;
      statement: string;
      value: Json;
      evidence?: string;
      derivedFrom?: Belief[];
      basedOn?: string;
    },
  ) => {
    const r = await assert(agent, { ...input, derivedFrom: input.derivedFrom?.map((b) => b.id) });
    const from = input.derivedFrom?.length
      ? ` derivedFrom [${input.derivedFrom.map((b) => short(b.claimKey)).join(', ')}]`
      : '';
    out(
      `  ${who(agent.name)}${phase('COMMIT')} assertBelief ${short(input.claimKey)} = ${JSON.stringify(input.value)}${from}${input.basedOn ? ' basedOn <snapshot>' : ''}`,
    );
    if (input.evidence) out(`${pad}         evidence: "${input.evidence}"`);
    const written = 'belief' in r ? r.belief : null;
    out(`${pad}         → ${c.green(r.__typename)}${written ? c.dim(` ${gidOf(written.id)}`) : ''}`);
    if (r.__typename !== 'BeliefAsserted')
      throw new Error(`expected BeliefAsserted for ${input.claimKey}, got ${r.__typename}`);
    return r.belief;
  };

  const passport = await commit(agents['doc-check'], {
    claimKey: `${PREFIX}/passport.authentic`,
    statement: 'The passport of customer 4411 is authentic',
    value: true,
    evidence: 'onboarding scan of passport P-4411-77, MRZ readable, photo matches selfie',
  });
  let snap = await read(agents.kyc, 'is the passport of customer 4411 authentic?');
  think(agents.kyc, 'the passport is authentic and ACTIVE, so the identity of customer 4411 is verified');
  const identity = await commit(agents.kyc, {
    claimKey: `${PREFIX}/identity.verified`,
    statement: 'The identity of customer 4411 is verified',
    value: true,
    derivedFrom: [passport],
    basedOn: snap.snapshot,
  });
  think(agents.kyc, 'an authentic passport also qualifies customer 4411 for the gold KYC tier');
  const tier = await commit(agents.kyc, {
    claimKey: `${PREFIX}/kyc.tier`,
    statement: 'Customer 4411 is in KYC tier gold',
    value: 'gold',
    derivedFrom: [passport],
    basedOn: snap.snapshot,
  });
  snap = await read(agents.refunds, 'is the identity of customer 4411 verified?');
  think(agents.refunds, 'a verified identity makes the disputed order refundable');
  const eligible = await commit(agents.refunds, {
    claimKey: `${PREFIX}/refund.eligible`,
    statement: 'Customer 4411 is eligible for a refund of order 9120',
    value: true,
    derivedFrom: [identity],
    basedOn: snap.snapshot,
  });

  // ---------------------------------------------------------------- 3. effects
  h(3, 'Effects: agents act on what they believe');
  const propose = async (agent: AgentClient, kind: string, amountMinor: number, on: Belief, key: string) => {
    const r = (
      await agent.api.request(D.PROPOSE, {
        input: { kind, amount: { amountMinor, currency: 'USD' }, supportedBy: [on.id], idempotencyKey: key },
      })
    ).proposeEffect;
    if (r.__typename !== 'EffectProposed') throw new Error(`proposeEffect ${kind}: ${r.__typename}`);
    out(
      `  ${who(agent.name)}proposeEffect ${kind} ${usd(amountMinor)} on ${short(on.claimKey)} ${c.dim(`(key ${key})`)} → ${r.effect.status}`,
    );
    return r.effect;
  };
  await propose(agents.refunds, 'refund', 124_000, eligible, `${PREFIX}:refund-1`);
  await propose(agents.billing, 'card_charge', 8_900, tier, `${PREFIX}:charge-1`);
  await propose(agents.payouts, 'payout', 50_000, identity, `${PREFIX}:payout-1`);
  for (const [kind, ref] of [
    ['refund', 'BNK-2291-0417'],
    ['card_charge', 'CRD-7730-0091'],
  ] as const) {
    const claimed = await agents.executor.api.request(D.CLAIM, { input: { kinds: [kind] } });
    if (!claimed.claimEffect?.amount) throw new Error(`no ${kind} was ready to run`);
    const done = await agents.executor.api.request(D.COMPLETE, {
      input: { effectId: claimed.claimEffect.id, externalRef: ref },
    });
    out(
      `  ${who('executor')}claimEffect → ${kind} ${formatMoney(claimed.claimEffect.amount.amountMinor, claimed.claimEffect.amount.currency)} EXECUTING; ` +
        `completeEffect (ref ${done.completeEffect.externalRef}) → ${c.yellow(done.completeEffect.status)}`,
    );
  }
  out(
    `  ${pad.slice(3)}payout ${usd(50_000)} stays ${c.yellow('PENDING')} ${c.dim("(payouts run in tomorrow's batch)")}`,
  );

  // ---------------------------------------------------------------- 4. the forged passport
  h(4, 'The forged passport');
  const forged = await assert(agents.forensics, {
    claimKey: `${PREFIX}/passport.authentic`,
    statement: 'The passport of customer 4411 is forged',
    value: false,
    evidence: 'forensic document examination: hologram and MRZ forged; confirmed with the issuing authority registry',
  });
  if (forged.__typename !== 'ContradictionRaised')
    throw new Error(`expected a contradiction, got ${forged.__typename}`);
  out(`  ${who('forensics')}${phase('COMMIT')} assertBelief passport.authentic = false`);
  out(
    `${pad}         evidence: "forensic document examination: hologram and MRZ forged; confirmed with the issuing authority registry"`,
  );
  out(
    `${pad}         → ${c.red('ContradictionRaised')} ${c.dim(gidOf(forged.contradiction.id))} ${c.dim('(nothing written to the claim yet)')}`,
  );
  const preview = await agents.auditor.api.request(D.PREVIEW, { id: passport.id });
  const p = preview.previewRetraction;
  out(
    `  ${who('auditor')}previewRetraction passport.authentic → would take down ${count(p.beliefs.totalCount, 'belief')} (${count(p.survivors.length, 'survivor')}), ` +
      `cancel ${count(p.pendingEffects.length, 'pending effect')}, reach ${count(p.executedEffects.length, 'executed one')} (${pickMoney(p.totals.exposure)})`,
  );
  const verdict = await agents.auditor.api.request(D.ADJUDICATE, { id: forged.contradiction.id });
  const v = verdict.adjudicateContradiction;
  out(
    `  ${who('auditor')}adjudicateContradiction → ${c.red(v.verdict)} ${c.dim(`by ${v.adjudicator}`)}: ${v.rationale}`,
  );
  if (v.verdict !== 'ACCEPT_PROPOSED' || !v.resolution)
    throw new Error(`the adjudicator answered ${v.verdict}; the demo expects ACCEPT_PROPOSED`);

  // ---------------------------------------------------------------- 5. the cascade, live
  h(5, 'The cascade, as its events stream over the subscription');
  let committed: Totals | null = null;
  let lastDepth = -1;
  const timeout = setTimeout(() => void feed.return?.(), 20_000);
  try {
    for await (const msg of feed) {
      if (msg.errors?.length) throw new Error(`subscription error: ${msg.errors.map((e) => e.message).join('; ')}`);
      const e = msg.data!.retractionEvents;
      const t = e.__typename.padEnd(20);
      switch (e.__typename) {
        case 'RetractionStarted':
          out(`  ${c.bold(t)}${gidOf(e.retraction.id)} "${e.retraction.reason}"`);
          break;
        case 'BeliefRetracted':
          out(
            `  ${e.depth === lastDepth ? ' '.repeat(20) : c.bold(`BeliefRetracted d=${e.depth}`.padEnd(20))}${c.red('✗')} ${e.belief.claimKey} ${c.dim(`(by ${e.belief.author.name})`)}`,
          );
          lastDepth = e.depth;
          break;
        case 'EffectCancelled':
          out(
            `  ${c.bold(t)}${e.effect.kind} ${formatMoney(e.effect.amount!.amountMinor, e.effect.amount!.currency)} ${c.dim(`(${e.effect.proposedBy.name})`)}: CANCELLED, it can never run`,
          );
          break;
        case 'ReversalRecorded': {
          const r = e.reversal;
          const status = r.status === 'OWED' ? c.yellow(r.status) : c.red(r.status);
          out(
            `  ${c.bold(t)}${r.effect.kind} ${formatMoney(r.amount!.amountMinor, r.amount!.currency)}: ${status}` +
              (r.status === 'OWED' ? ` under ${r.idempotencyKey}` : ` (${r.reason})`),
          );
          break;
        }
        case 'RetractionCommitted':
          committed = e.totals;
          out(
            `  ${c.bold(t)}${count(committed.beliefsRetracted, 'belief')} retracted, ${count(committed.effectsCancelled, 'effect')} cancelled, ${count(committed.effectsReached, 'executed effect')} reached — one transaction`,
          );
          break;
      }
      if (committed) break;
    }
  } finally {
    clearTimeout(timeout);
    await ws.dispose();
  }
  if (!committed) throw new Error('the subscription ended before RetractionCommitted arrived');
  if (v.accepted)
    out(
      `  ${' '.repeat(20)}passport.authentic is now ${JSON.stringify(v.accepted.value)} ${c.dim(`(the accepted proposal, by ${v.accepted.author.name}, ${v.accepted.status})`)}`,
    );

  // ---------------------------------------------------------------- 6. the receipt
  h(6, 'The receipt');
  const receipt = await agents.auditor.api.request(D.RECEIPT, { id: v.resolution.id });
  const r = receipt.retraction;
  if (!r) throw new Error(`the receipt ${v.resolution.id} was not found`);
  const owedKinds = r.reversals.filter((x) => x.status !== 'UNREACHABLE').map((x) => x.effect.kind);
  const lostKinds = r.reversals.filter((x) => x.status === 'UNREACHABLE').map((x) => x.effect.kind);
  out(
    `  ${who('auditor')}retraction(id: "${v.resolution.id}") ${c.dim(`— ${gidOf(v.resolution.id)}, root ${short(r.root.claimKey)}, by ${r.actor.name}`)}`,
  );
  const rows: Array<[string, string, string]> = [
    [
      'exposure',
      pickMoney(r.totals.exposure),
      `executed money the retraction reached (${count(r.totals.effectsReached, 'effect')})`,
    ],
    [
      'owed',
      pickMoney(r.totals.owed),
      `${count(r.totals.reversalsOwed, 'reversal')} OWED: ${owedKinds.join(', ') || 'none'}`,
    ],
    [
      'unreachable',
      pickMoney(r.totals.unreachableAmount),
      `${r.totals.unreachable}: ${lostKinds.join(', ') || 'none'} (no compensation handler)`,
    ],
    ['settled', pickMoney(r.totals.settled), 'confirmed by a provider: none yet'],
  ];
  const w = [
    Math.max(...rows.map((x) => x[0].length)),
    Math.max(...rows.map((x) => x[1].length)),
    Math.max(...rows.map((x) => x[2].length)),
  ];
  const line = (l: string, m: string, rr: string) =>
    `  ${l}${'─'.repeat(w[0]! + 2)}${m}${'─'.repeat(w[1]! + 2)}${m}${'─'.repeat(w[2]! + 2)}${rr}`;
  out(line('┌', '┬', '┐'));
  for (const [label, amount, note] of rows) {
    out(`  │ ${c.bold(label.padEnd(w[0]!))} │ ${amount.padStart(w[1]!)} │ ${c.dim(note.padEnd(w[2]!))} │`);
  }
  out(line('└', '┴', '┘'));
  out(
    `  ${pickMoney(r.totals.owed)} owed / ${pickMoney(r.totals.unreachableAmount)} unreachable / ${pickMoney(r.totals.settled)} settled — ` +
      `${count(r.totals.beliefsRetracted, 'belief')} retracted, ${count(r.totals.effectsCancelled, 'effect')} cancelled`,
  );
  out('  No money moved inside RETRACT: "settled" stays at zero until a provider confirms the refund\'s reversal');
  out('  with a reference of its own (retract worker dispatcher sends it under its idempotency key).');

  const { checkInvariants } = await import('../invariants/check');
  const violations = await checkInvariants(store);
  if (violations.length > 0) {
    out(c.red(`  invariants violated: ${JSON.stringify(violations)}`));
    return 1;
  }
  out(`  ${c.green('✓')} every invariant holds (checkInvariants)`);
  out();
  out(c.dim('Read the same receipt from an agent runtime over MCP: `retract mcp` (stdio) or POST /mcp on the server;'));
  out(c.dim('see docs/walkthrough.md.'));
  return 0;
}
