import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { belief } from '../support/story';
import { addJustification } from '../../src/belief/belief.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import type { Actor, Core } from '../../src/core';
import { domainError, dump, expectUnchanged, read } from './helpers';

/** addJustification: the graph stays acyclic and every refusal writes nothing. */
describe.each(engines())('justifications on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  beforeAll(async () => {
    t = await testStore(engine);
    core = coreOf(t.store);
    actor = await actorIn(t.store, 'just');
  });
  afterAll(async () => t?.close());

  it('refuses a justification that would make A rest on its own descendant (CONFLICT), writing nothing', async () => {
    const g = await belief(core, actor, 'cyc/g');
    const a = await belief(core, actor, 'cyc/a', [g]);
    const b = await belief(core, actor, 'cyc/b', [a]);
    const c = await belief(core, actor, 'cyc/c', [b]);
    const before = await dump(t.store);
    for (const premise of [b, c]) {
      const e = await domainError(addJustification(core, actor, { beliefId: a.id, premises: [premise.id] }), 'CONFLICT', 'premises');
      expect(e.message).toContain('cycle');
      expect(e.message).toContain(premise.id);
    }
    // A cycle hidden among acceptable premises is refused just the same.
    await domainError(addJustification(core, actor, { beliefId: a.id, premises: [g.id, c.id] }), 'CONFLICT', 'premises');
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('refuses a self-premise (BAD_USER_INPUT), an unknown premise (NOT_FOUND) and a retracted premise (CONFLICT), writing nothing', async () => {
    const g = await belief(core, actor, 'ref/g');
    const a = await belief(core, actor, 'ref/a', [g]);
    const gone = await belief(core, actor, 'ref/gone');
    await retractBelief(core, actor, { beliefId: gone.id, reason: 'wrong' });
    const before = await dump(t.store);

    const self = await domainError(addJustification(core, actor, { beliefId: a.id, premises: [a.id] }), 'BAD_USER_INPUT', 'premises');
    expect(self.message).toContain('own premise');
    const unknown = await domainError(addJustification(core, actor, { beliefId: a.id, premises: [g.id, '987654321'] }), 'NOT_FOUND', 'premises');
    expect(unknown.message).toContain('987654321');
    const retracted = await domainError(addJustification(core, actor, { beliefId: a.id, premises: [gone.id] }), 'CONFLICT', 'premises');
    expect(retracted.message).toContain(gone.id);
    // A retracted belief cannot gain support either.
    await domainError(addJustification(core, actor, { beliefId: gone.id, premises: [g.id] }), 'CONFLICT', 'beliefId');
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('adding a premise set the belief already has is a no-op, in any order and with repeats', async () => {
    const p = await belief(core, actor, 'dup/p');
    const q = await belief(core, actor, 'dup/q');
    const a = await belief(core, actor, 'dup/a', [p, q]);
    const before = await dump(t.store);
    for (const premises of [[p.id, q.id], [q.id, p.id], [q.id, p.id, q.id]]) {
      const r = await addJustification(core, actor, { beliefId: a.id, premises });
      expect(r.id).toBe(a.id);
    }
    await expectUnchanged(t.store, before);

    // A genuinely new set is written once, with its event.
    const x = await belief(core, actor, 'dup/x');
    await addJustification(core, actor, { beliefId: a.id, premises: [x.id] });
    await addJustification(core, actor, { beliefId: a.id, premises: [x.id] });
    const js = await read(t.store, 'just', async (tx) => ({
      justifications: await tx.selectFrom('justifications').select('id').where('belief_id', '=', a.id).execute(),
      events: await tx.selectFrom('events').select('data').where('type', '=', 'JustificationAdded').execute(),
    }));
    expect(js.justifications).toHaveLength(2);
    expect(js.events.map((e) => e.data)).toEqual([{ premises: [x.id] }]);
    await expectInvariants(t.store);
  });
});
