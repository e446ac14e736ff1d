import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { type Readable, beliefReadable, mayRead } from '../../src/agent/access';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES, type Scope } from '../../src/agent/scopes';
import type { Actor } from '../../src/core';
import { reinstateRetraction, restoreEffect } from '../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { createApp, type App } from '../../src/server/app';
import type { EngineName, Store } from '../../src/store/engine';
import { inTx } from '../../src/store/tx';
import { coreOf, embedder, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { asserted, belief, passportStory, proposed } from '../support/story';
import { assertBelief } from '../../src/belief/belief.service';
import { httpClient } from './support';

/**
 * One read rule for MCP and GraphQL, checked structurally (issue 29.3): every tool a token lists is
 * called, with every single-scope token, after a retraction, after its reinstatement and after an
 * effect is restored; every global id anywhere in an answer (an object's `id`, or a reference) must
 * name something that token may read under src/agent/access.ts — a Belief by its status NOW — or that
 * the call itself wrote (as a GraphQL mutation's own answer), and no statement of a belief it may not
 * read may appear in the structured answer or its text. Before the fix, a receipts:read token got the
 * reinstated (ACTIVE) root's statement, value and status from get_receipt.
 */

const TYPES = [
  'Agent',
  'Belief',
  'Effect',
  'Reversal',
  'Retraction',
  'Contradiction',
  'Justification',
  'Reinstatement',
];

/** The node a string names when it is exactly a global id (base64 of `Type:digits`). */
function node(s: string): { type: string; id: string } | null {
  if (!/^[A-Za-z0-9+/]+=*$/.test(s) || s.length < 8) return null;
  const m = /^([A-Za-z]+):([0-9]+)$/.exec(Buffer.from(s, 'base64').toString('utf8'));
  return m && TYPES.includes(m[1]!) && Buffer.from(`${m[1]}:${m[2]}`).toString('base64') === s
    ? { type: m[1]!, id: m[2]! }
    : null;
}

/** Every (path, string) pair of a JSON value. */
function strings(v: unknown, at = '$', out: Array<[string, string]> = []): Array<[string, string]> {
  if (typeof v === 'string') out.push([at, v]);
  else if (Array.isArray(v)) v.forEach((x, i) => strings(x, `${at}[${i}]`, out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) strings(x, `${at}.${k}`, out);
  return out;
}

const RULE: Record<string, Readable | null> = {
  Agent: null,
  Justification: null,
  Effect: 'Effect',
  Reversal: 'Receipt',
  Retraction: 'Receipt',
  Reinstatement: 'Receipt',
  Contradiction: 'Contradiction',
};

/** What a write tool's own answer grants, as the GraphQL mutation's resolver grants it (src/api/types). */
function grantsOf(tool: string, out: any): Set<string> {
  const g = new Set<string>();
  if (tool === 'remember' && (out.outcome === 'ASSERTED' || out.outcome === 'CORROBORATED') && out.belief)
    g.add(`Belief:${out.belief.dbId}`);
  if (tool === 'remember' && out.contradictionId) g.add(`Contradiction:${node(out.contradictionId)!.id}`);
  if (tool === 'retract') g.add(`Retraction:${out.retraction.dbId}`);
  if (tool === 'reinstate') {
    g.add(`Reinstatement:${out.reinstatement.dbId}`);
    if (out.outcome === 'BLOCKED' && out.reinstatement.contradictionId)
      g.add(`Contradiction:${node(out.reinstatement.contradictionId)!.id}`);
  }
  if (tool === 'propose_effect' && out.effect) g.add(`Effect:${out.effect.dbId}`);
  return g;
}

interface World {
  ops: Actor;
  ids: Record<string, string>;
  retractionId: string;
  before: string;
}

describe.each(engines())(
  'MCP answers follow the GraphQL read rule on %s',
  { timeout: 600_000 },
  (engine: EngineName) => {
    let t: TestDb;
    let store: Store;
    let app: App;
    let w: World;
    const tokens = new Map<Scope, string>();
    const succeeded = new Set<string>();

    storeSuite(engine, {}, async (suite) => {
      t = suite.t;
      store = t.store;
      const core = coreOf(store);
      const ops = await createAgentDirect(store, { fleet: 'acme', name: 'ops', scopes: ['admin'] });
      const actor = { fleet: 'acme', agentId: ops.agent.id };
      const s = await passportStory(core, actor);
      for (const scope of SCOPES)
        tokens.set(
          scope,
          (await createAgentDirect(store, { fleet: 'acme', name: `only-${scope.replace(':', '-')}`, scopes: [scope] }))
            .token,
        );
      const before = new Date().toISOString();
      await new Promise((r) => setTimeout(r, 5));
      const { retractionId } = await retractBelief(core, actor, { beliefId: s.passport.id, reason: 'forged' });
      w = {
        ops: actor,
        retractionId,
        before,
        ids: {
          passport: s.passport.id,
          identity: s.derived[0]!.id,
          eligible: s.derived[1]!.id,
          kyc: s.derived[2]!.id,
          payout: s.pending.id,
        },
      };
      app = await createApp({
        config: { port: 0, host: '127.0.0.1' },
        store,
        embedder,
        logger: pino({ level: 'silent' }),
      });
      await app.listen();
    });

    afterAll(async () => {
      await app?.close();
    });

    /** The arguments each tool is called with at `stage` by the token of `scope` (scratch beliefs for what writes). */
    async function argsFor(tool: string, scope: Scope, stage: string): Promise<Array<Record<string, unknown>>> {
      const core = coreOf(store);
      const tag = `${scope.replace(':', '-')}-${stage}`;
      const { ids } = w;
      switch (tool) {
        case 'get_receipt':
          return [{}, { retractionId: Number(w.retractionId) }, { beliefId: ids.identity }];
        case 'get_reinstatement':
          return [{}];
        case 'list_owed_reversals':
          return [{}];
        case 'explain_belief':
        case 'why':
          return [{ beliefId: ids.eligible }, { beliefId: Number(ids.passport) }];
        case 'search_beliefs':
        case 'recall':
          return [{ text: 'The passport of customer 4411 is authentic', includeRetracted: true, k: 20 }];
        case 'as_of':
          return [{ at: w.before }, { at: new Date().toISOString() }];
        case 'preview_retraction':
          return [{ beliefId: ids.passport }, { beliefId: ids.kyc }];
        case 'remember': {
          const contested = asserted(
            await assertBelief(core, w.ops, {
              claimKey: `scratch/contested-${tag}`,
              statement: `the value ops holds for ${tag}`,
              value: 1,
            }),
          );
          return [
            { claimKey: `scratch/note-${tag}`, statement: `note of ${tag}`, evidence: 'seen' },
            { claimKey: `scratch/derived-${tag}`, statement: `derived of ${tag}`, derivedFrom: [ids.passport] },
            { claimKey: contested.claim_key, statement: `contested of ${tag}`, value: 2 },
          ];
        }
        case 'retract': {
          const premise = await belief(core, w.ops, `scratch/premise-${tag}`);
          const dependent = await belief(core, w.ops, `scratch/dependent-${tag}`, [premise]);
          await proposed(core, w.ops, 'payout', [dependent], `scratch-${tag}`, 100);
          return [
            { beliefId: Number(premise.id), reason: 'scratch' },
            ...(stage === 'retracted' ? [{ beliefId: ids.passport, reason: 'again' }] : []),
          ];
        }
        case 'reinstate':
          return stage === 'retracted' ? [] : [{ retractionId: w.retractionId, reason: 'again' }];
        case 'propose_effect':
          return [
            {
              kind: 'payout',
              supportedBy: [ids.identity],
              idempotencyKey: `p-${tag}`,
              amount: { amountMinor: 700, currency: 'USD' },
            },
            {
              kind: 'payout',
              supportedBy: [ids.identity],
              idempotencyKey: 'customer:4411:payout-1',
              amount: { amountMinor: 50_000, currency: 'USD' },
            },
          ];
        // The memory graph (src/mcp/memory-graph/), in the order it registers: the writes need two scopes, so only admin calls them.
        case 'create_entities':
          return [{ entities: [{ name: `scratch ${tag}`, entityType: 'note', observations: ['first'] }] }];
        case 'create_relations':
          return [{ relations: [{ from: `scratch ${tag}`, to: `scratch ${tag}`, relationType: 'cites' }] }];
        case 'add_observations':
          return [
            {
              observations: [
                {
                  entityName: `scratch ${tag}`,
                  contents: ['second'],
                  derivedFrom: [{ entityName: `scratch ${tag}`, content: 'first' }],
                },
              ],
            },
          ];
        case 'delete_entities':
          return [{ entityNames: [`scratch ${tag}`] }];
        case 'delete_observations':
          return [{ deletions: [{ entityName: `scratch ${tag}`, observations: ['second'] }] }];
        case 'delete_relations':
          return [{ relations: [{ from: `scratch ${tag}`, to: `scratch ${tag}`, relationType: 'cites' }] }];
        case 'read_graph':
          return [{}];
        case 'search_nodes':
          return [{ query: 'scratch' }];
        case 'open_nodes':
          return [{ names: [`scratch ${tag}`] }];
        default:
          throw new Error(`no arguments for ${tool}: add them here`);
      }
    }

    async function beliefsNow() {
      return inTx(store, { fleet: 'acme', readOnly: true }, (tx) =>
        tx.selectFrom('beliefs').select(['id', 'status', 'statement']).execute(),
      );
    }

    /** Every field of every answer the token of `scope` gets at `stage`, against the rule. */
    async function walk(stage: string): Promise<string[]> {
      const leaks: string[] = [];
      for (const scope of SCOPES) {
        const client: Client = await httpClient(`${app.url()}/mcp`, tokens.get(scope)!).catch((e) => {
          // A token that opens no tool (contradictions:adjudicate) is refused the endpoint: nothing to leak.
          if (/holds none of the scopes/.test(String(e))) return null as never;
          throw e;
        });
        if (!client) continue;
        const listed = (await client.listTools()).tools.map((x) => x.name);
        // reinstate after retract, so the scratch retraction exists for it.
        for (const tool of [...listed.filter((x) => x !== 'reinstate'), ...listed.filter((x) => x === 'reinstate')]) {
          for (const args of await argsFor(tool, scope, stage)) {
            const r = await client.callTool({ name: tool, arguments: args });
            const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join('\n');
            const out = r.structuredContent ?? {};
            if (!r.isError) succeeded.add(tool);
            const granted = r.isError ? new Set<string>() : grantsOf(tool, out);
            leaks.push(...check(scope, tool, out, text, granted, await beliefsNow()));
            if (tool === 'retract' && !r.isError && !(out as any).alreadyRetracted) {
              // The next reinstate of this token takes this very retraction back.
              const back = await client.callTool({
                name: 'reinstate',
                arguments: { retractionId: (out as any).retraction.id, reason: 'scratch back' },
              });
              if (!back.isError) succeeded.add('reinstate');
              leaks.push(
                ...check(
                  scope,
                  'reinstate',
                  back.structuredContent ?? {},
                  (back.content as Array<{ text?: string }>)[0]?.text ?? '',
                  back.isError ? new Set() : grantsOf('reinstate', back.structuredContent),
                  await beliefsNow(),
                ),
              );
            }
          }
        }
        await client.close();
      }
      return leaks;

      function check(
        scope: Scope,
        tool: string,
        out: unknown,
        text: string,
        granted: Set<string>,
        beliefs: Array<{ id: string; status: string; statement: string }>,
      ): string[] {
        const viewer = { id: '0', scopes: [scope] };
        const status = new Map(beliefs.map((b) => [b.id, b.status]));
        const found: string[] = [];
        const may = (type: string, id: string) =>
          granted.has(`${type}:${id}`) ||
          (type === 'Belief'
            ? mayRead(viewer, beliefReadable(status.get(id) ?? 'ACTIVE'))
            : RULE[type] === null || mayRead(viewer, RULE[type]!));
        for (const [at, s] of strings(out)) {
          const n = node(s);
          if (n && !may(n.type, n.id))
            found.push(
              `${stage} ${scope} ${tool} ${at}: ${n.type} ${n.id}${n.type === 'Belief' ? ` (${status.get(n.id)})` : ''}`,
            );
        }
        const json = JSON.stringify(out);
        for (const b of beliefs) {
          if (may('Belief', b.id)) continue;
          if (json.includes(JSON.stringify(b.statement)) || text.includes(b.statement))
            found.push(`${stage} ${scope} ${tool}: the statement of belief ${b.id} (${b.status}) "${b.statement}"`);
        }
        return found;
      }
    }

    it('after a retraction, its reinstatement and an effect restored, no single-scope token reads a field its scope does not open', async () => {
      const leaks: string[] = [];
      leaks.push(...(await walk('retracted')));
      await reinstateRetraction(coreOf(store), w.ops, {
        retractionId: w.retractionId,
        reason: 'the passport was authentic',
      });
      leaks.push(...(await walk('reinstated')));
      await restoreEffect(coreOf(store), w.ops, { effectId: w.ids.payout! });
      leaks.push(...(await walk('restored')));
      expect(leaks).toEqual([]);
      // Every tool answered at least once: none was skipped.
      expect([...succeeded].sort()).toEqual([
        'add_observations',
        'as_of',
        'create_entities',
        'create_relations',
        'delete_entities',
        'delete_observations',
        'delete_relations',
        'explain_belief',
        'get_receipt',
        'get_reinstatement',
        'list_owed_reversals',
        'open_nodes',
        'preview_retraction',
        'propose_effect',
        'read_graph',
        'recall',
        'reinstate',
        'remember',
        'retract',
        'search_beliefs',
        'search_nodes',
        'why',
      ]);
      await expectInvariants(store);
    });
  },
);
