import { afterAll, describe, expect, it } from 'vitest';
import { engines, expectInvariants, type TestDb } from '../support/engines';
import { belief } from '../support/story';
import { addJustification } from '../../src/belief/belief.service';
import type { BeliefRow } from '../../src/belief/belief.repository';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { retractedBeliefPage } from '../../src/retraction/retraction.repository';
import type { Actor, Core } from '../../src/core';
import { read, domainError, dump, expectUnchanged, closeFileStores, storeSuite } from '../support/helpers';

/** The derivation graph: what falls, what survives and at which depth, and the justifications it may gain. */
afterAll(closeFileStores);

/** Shapes of the derivation graph: what falls, what survives, and at which depth. */
describe.each(engines())('cascade shapes on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { shared: true, fleet: 'shapes' }, (s) => ({ t, core, actor } = s));

  const state = (ids: string[]) =>
    read(t.store, 'shapes', async (tx) => {
      const rows = await tx
        .selectFrom('beliefs')
        .select(['id', 'status', 'retraction_id', 'retraction_depth'])
        .where('id', 'in', ids)
        .execute();
      return ids.map((id) => rows.find((r) => r.id === id)!);
    });

  it('diamond A→B, A→C, {B,C}→D: D falls once at depth 2, and retracting B alone takes D but not C or A', async () => {
    const a = await belief(core, actor, 'dia1/a');
    const b = await belief(core, actor, 'dia1/b', [a]);
    const c = await belief(core, actor, 'dia1/c', [a]);
    const d = await belief(core, actor, 'dia1/d', [b, c]);

    const onlyB = await previewRetraction(core, actor, { beliefId: b.id });
    expect(onlyB.beliefs.items).toEqual([
      { id: b.id, depth: 0 },
      { id: d.id, depth: 1 },
    ]);
    expect(onlyB.survivors).toEqual([]);

    const { retractionId } = await retractBelief(core, actor, { beliefId: a.id, reason: 'a was wrong' });
    expect(await state([a.id, b.id, c.id, d.id])).toEqual([
      { id: a.id, status: 'RETRACTED', retraction_id: retractionId, retraction_depth: 0 },
      { id: b.id, status: 'RETRACTED', retraction_id: retractionId, retraction_depth: 1 },
      { id: c.id, status: 'RETRACTED', retraction_id: retractionId, retraction_depth: 1 },
      { id: d.id, status: 'RETRACTED', retraction_id: retractionId, retraction_depth: 2 },
    ]);
    const page = await read(t.store, 'shapes', (tx) => retractedBeliefPage(tx, 'shapes', retractionId, 10, null));
    expect(page.totalCount).toBe(4);
    expect(page.items.map((i) => i.id)).toEqual([a.id, b.id, c.id, d.id]);
    await expectInvariants(t.store);
  });

  it('diamond with D justified separately by {B} and by {C}: B alone leaves D standing; A takes all four, D at depth 2', async () => {
    const a = await belief(core, actor, 'dia2/a');
    const b = await belief(core, actor, 'dia2/b', [a]);
    const c = await belief(core, actor, 'dia2/c', [a]);
    const d = await belief(core, actor, 'dia2/d', [b]);
    await addJustification(core, actor, { beliefId: d.id, premises: [c.id] });

    const onlyB = await previewRetraction(core, actor, { beliefId: b.id });
    expect(onlyB.beliefs.items).toEqual([{ id: b.id, depth: 0 }]);
    expect(onlyB.survivors).toEqual([d.id]);

    const { retractionId } = await retractBelief(core, actor, { beliefId: a.id, reason: 'a was wrong' });
    expect((await state([a.id, b.id, c.id, d.id])).map((r) => [r.status, r.retraction_depth])).toEqual([
      ['RETRACTED', 0],
      ['RETRACTED', 1],
      ['RETRACTED', 1],
      ['RETRACTED', 2],
    ]);
    expect((await state([d.id]))[0]!.retraction_id).toBe(retractionId);
    await expectInvariants(t.store);
  });

  it('uneven arms: D on {B} (depth 1) and {Z} (depth 3) falls only with its last justification, at depth 4', async () => {
    const a = await belief(core, actor, 'uneven/a');
    const b = await belief(core, actor, 'uneven/b', [a]);
    const x = await belief(core, actor, 'uneven/x', [a]);
    const y = await belief(core, actor, 'uneven/y', [x]);
    const z = await belief(core, actor, 'uneven/z', [y]);
    const d = await belief(core, actor, 'uneven/d', [b]);
    await addJustification(core, actor, { beliefId: d.id, premises: [z.id] });
    await retractBelief(core, actor, { beliefId: a.id, reason: 'a was wrong' });
    expect((await state([a.id, b.id, x.id, y.id, z.id, d.id])).map((r) => r.retraction_depth)).toEqual([
      0, 1, 1, 2, 3, 4,
    ]);
    await expectInvariants(t.store);
  });

  it("a survivor: D on {B} and on {X}; retracting B's root leaves D ACTIVE and listed as a survivor; retracting X then takes D", async () => {
    const root = await belief(core, actor, 'surv/root');
    const b = await belief(core, actor, 'surv/b', [root]);
    const x = await belief(core, actor, 'surv/x');
    const d = await belief(core, actor, 'surv/d', [b]);
    await addJustification(core, actor, { beliefId: d.id, premises: [x.id] });

    const preview = await previewRetraction(core, actor, { beliefId: root.id });
    expect(preview.beliefs.items).toEqual([
      { id: root.id, depth: 0 },
      { id: b.id, depth: 1 },
    ]);
    expect(preview.survivors).toEqual([d.id]);

    const first = await retractBelief(core, actor, { beliefId: root.id, reason: 'root was wrong' });
    expect((await state([root.id, b.id, x.id, d.id])).map((r) => r.status)).toEqual([
      'RETRACTED',
      'RETRACTED',
      'ACTIVE',
      'ACTIVE',
    ]);
    await expectInvariants(t.store);

    const xPreview = await previewRetraction(core, actor, { beliefId: x.id });
    expect(xPreview.beliefs.items).toEqual([
      { id: x.id, depth: 0 },
      { id: d.id, depth: 1 },
    ]);
    expect(xPreview.survivors).toEqual([]);
    const second = await retractBelief(core, actor, { beliefId: x.id, reason: 'x was wrong too' });
    expect(second.retractionId).not.toBe(first.retractionId);
    expect(await state([d.id])).toEqual([
      { id: d.id, status: 'RETRACTED', retraction_id: second.retractionId, retraction_depth: 1 },
    ]);
    await expectInvariants(t.store);
  });

  it('a chain of 60: all fall at depths 0..59, and the receipt pages root first then cascade order with no gap or duplicate', async () => {
    const N = 60;
    const chain: BeliefRow[] = [await belief(core, actor, 'chain/0')];
    for (let i = 1; i < N; i++) chain.push(await belief(core, actor, `chain/${i}`, [chain[i - 1]!]));

    // The preview pages through its own cursor (each page is the same rolled-back cascade).
    const previewed: Array<{ id: string; depth: number }> = [];
    let cursor: string | null = null;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(3);
      const preview = await previewRetraction(core, actor, { beliefId: chain[0]!.id, first: 25, after: cursor });
      expect(preview.beliefs.totalCount).toBe(N);
      previewed.push(...preview.beliefs.items);
      if (!preview.beliefs.hasNextPage) break;
      cursor = preview.beliefs.endCursor;
    }
    expect(previewed).toEqual(chain.map((b, depth) => ({ id: b.id, depth })));

    const { retractionId } = await retractBelief(core, actor, {
      beliefId: chain[0]!.id,
      reason: 'the first link broke',
    });
    const rows = await state(chain.map((b) => b.id));
    expect(rows.every((r) => r.status === 'RETRACTED' && r.retraction_id === retractionId)).toBe(true);
    expect(rows.map((r) => r.retraction_depth)).toEqual([...Array(N).keys()]);

    for (const size of [1, 7, 60, 100]) {
      const seen: Array<{ id: string; depth: number }> = [];
      let after: string | null = null;
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThanOrEqual(N);
        const page = await read(t.store, 'shapes', (tx) =>
          retractedBeliefPage(tx, 'shapes', retractionId, size, after),
        );
        expect(page.totalCount).toBe(N);
        seen.push(...page.items);
        if (!page.hasNextPage) break;
        expect(page.items).toHaveLength(size);
        after = page.endCursor;
      }
      expect(seen).toEqual(chain.map((b, depth) => ({ id: b.id, depth })));
    }
    // Previewing a root that is already retracted is an empty cascade.
    const p1 = await previewRetraction(core, actor, { beliefId: chain[0]!.id, first: 5 });
    expect(p1.beliefs).toEqual({ items: [], hasNextPage: false, endCursor: null, totalCount: 0 });
    await expectInvariants(t.store);
  });
});

/** addJustification: the graph stays acyclic and every refusal writes nothing. */
describe.each(engines())('justifications on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { shared: true, fleet: 'just' }, (s) => ({ t, core, actor } = s));

  it('refuses a justification that would make A rest on its own descendant (CONFLICT), writing nothing', async () => {
    const g = await belief(core, actor, 'cyc/g');
    const a = await belief(core, actor, 'cyc/a', [g]);
    const b = await belief(core, actor, 'cyc/b', [a]);
    const c = await belief(core, actor, 'cyc/c', [b]);
    const before = await dump(t.store);
    for (const premise of [b, c]) {
      const e = await domainError(
        addJustification(core, actor, { beliefId: a.id, premises: [premise.id] }),
        'CONFLICT',
        'premises',
      );
      expect(e.message).toContain('cycle');
      expect(e.message).toContain(premise.id);
    }
    // A cycle hidden among acceptable premises is refused just the same.
    await domainError(
      addJustification(core, actor, { beliefId: a.id, premises: [g.id, c.id] }),
      'CONFLICT',
      'premises',
    );
    await expectUnchanged(t.store, before);
    await expectInvariants(t.store);
  });

  it('refuses a self-premise (BAD_USER_INPUT), an unknown premise (NOT_FOUND) and a retracted premise (CONFLICT), writing nothing', async () => {
    const g = await belief(core, actor, 'ref/g');
    const a = await belief(core, actor, 'ref/a', [g]);
    const gone = await belief(core, actor, 'ref/gone');
    await retractBelief(core, actor, { beliefId: gone.id, reason: 'wrong' });
    const before = await dump(t.store);

    const self = await domainError(
      addJustification(core, actor, { beliefId: a.id, premises: [a.id] }),
      'BAD_USER_INPUT',
      'premises',
    );
    expect(self.message).toContain('own premise');
    const unknown = await domainError(
      addJustification(core, actor, { beliefId: a.id, premises: [g.id, '987654321'] }),
      'NOT_FOUND',
      'premises',
    );
    expect(unknown.message).toContain('987654321');
    const retracted = await domainError(
      addJustification(core, actor, { beliefId: a.id, premises: [gone.id] }),
      'CONFLICT',
      'premises',
    );
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
    for (const premises of [
      [p.id, q.id],
      [q.id, p.id],
      [q.id, p.id, q.id],
    ]) {
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
