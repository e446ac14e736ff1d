import { describe, expect, it } from 'vitest';
import { check, INITIAL, type History, type Op, type Txn } from './elle';

/**
 * The checker fed hand-made histories: a clean one passes, and each planted anomaly is reported under its
 * class. Registers are claims; a value is its beliefs' states ("b1=ACTIVE", "b1=R7").
 */
const assert = (id: string, key: string, belief: string, reads?: Record<string, string>): Txn => ({
  id,
  tag: id,
  writes: [{ key, belief, state: 'ACTIVE' }],
  reads,
});
const retract = (id: string, ...kb: Array<[string, string]>): Txn => ({
  id,
  tag: id,
  writes: kb.map(([key, belief]) => ({ key, belief, state: `R${id}` })),
});
const read = (tag: string, reads: Record<string, string>, keys = ['a', 'b']): Op => ({
  tag,
  process: 9,
  f: 'read',
  outcome: 'ok',
  writes: false,
  reads,
  readKeys: keys,
});
const write = (tag: string, outcome: Op['outcome'] = 'ok'): Op => ({
  tag,
  process: 1,
  f: 'assert',
  outcome,
  writes: true,
});

function history(parts: Partial<History>): History {
  return { ops: [], log: [], receipts: [], reversals: [], committed: [], streams: [], ...parts };
}

/** T1 asserts b1 on a, T2 asserts b2 on b, T3 retracts both (a cascade writes two registers at once). */
const log = [assert('T1', 'a', 'b1'), assert('T2', 'b', 'b2'), retract('T3', ['a', 'b1'], ['b', 'b2'])];
const ops = [write('T1'), write('T2'), write('T3')];

const types = (h: History) => check(h).map((a) => a.type);

describe('the history checker', () => {
  it('passes a clean history: serial reads, receipts equal to their rows, gap-free streams', () => {
    const h = history({
      ops: [
        ...ops,
        read('r1', { a: 'b1=ACTIVE' }),
        read('r2', { a: 'b1=ACTIVE', b: 'b2=ACTIVE' }),
        read('r3', { a: 'b1=RT3', b: 'b2=RT3' }),
        { ...write('T4', 'unknown') },
        { ...write('T5', 'fail') },
      ],
      log,
      receipts: [
        {
          id: 'T3',
          tag: 'T3',
          counted: { beliefs: 2, money: { USD: 500 } },
          rows: { beliefs: 2, money: { USD: 500 } },
        },
      ],
      reversals: [{ id: 'v1', effect: 'e1', retraction: 'T3', amount: 500, effectAmount: 500 }],
      committed: ['c1', 'c2', 'c3', 'c4'],
      streams: [
        { subscriber: 's1', cursors: ['c1', 'c2', 'c3', 'c4'] },
        { subscriber: 's2', cursors: ['c3', 'c4'] },
      ],
    });
    expect(check(h)).toEqual([]);
  });

  it('G0: two writers ordered one way on a and the other way on b (write cycle)', () => {
    const h = history({
      ops: ops.slice(0, 2),
      log: [assert('T1', 'a', 'b1'), assert('T2', 'a', 'b2'), assert('T1', 'b', 'b3'), assert('T2', 'b', 'b4')],
      versionOrder: { a: ['T1', 'T2'], b: ['T2', 'T1'] },
    });
    expect(types(h)).toEqual(['G0']);
  });

  it('G1a: a read sees a value no committed transaction wrote (an aborted write)', () => {
    expect(types(history({ ops: [...ops, read('r', { a: 'b9=ACTIVE' })], log }))).toEqual(['G1a']);
  });

  it('G1b: a read sees a value a transaction held only between two of its writes', () => {
    const h = history({
      ops: [read('r', { a: 'b1=ACTIVE,b2=RT2' }, ['a'])],
      log: [
        assert('T0', 'a', 'b1'),
        assert('T1', 'a', 'b2'),
        {
          id: 'T2',
          tag: 'T2',
          writes: [
            { key: 'a', belief: 'b2', state: 'RT2' },
            { key: 'a', belief: 'b1', state: 'RT2' },
          ],
        },
      ],
    });
    expect(types(h)).toEqual(['G1b']);
  });

  it('G1c: two transactions each read what the other wrote (circular information flow)', () => {
    const h = history({
      log: [assert('T1', 'a', 'b1', { b: 'b2=ACTIVE' }), assert('T2', 'b', 'b2', { a: 'b1=ACTIVE' })],
    });
    expect(types(h)).toEqual(['G1c']);
  });

  it('G2-item: a read sees the cascade on a but not on b (a fractured retraction)', () => {
    const h = history({ ops: [...ops, read('r', { a: 'b1=RT3', b: INITIAL })], log });
    expect(types(h)).toContain('G2-item');
  });

  it('G2-item: write skew between two transactions that each missed the other', () => {
    const h = history({ log: [assert('T1', 'a', 'b1', { b: INITIAL }), assert('T2', 'b', 'b2', { a: INITIAL })] });
    expect(types(h)).toEqual(['G2-item']);
  });

  it('an acknowledged write missing after recovery is lost; a failed one present was applied', () => {
    expect(types(history({ ops: [...ops, write('T9')], log }))).toEqual(['lost']);
    expect(types(history({ ops: [write('T1'), write('T2', 'fail'), write('T3')], log }))).toEqual(['failed-applied']);
  });

  it('a receipt that is not its rows, money that moved twice or changed, and a second reversal are reported', () => {
    const base = { ops, log };
    expect(
      types(
        history({
          ...base,
          receipts: [{ id: 'T3', tag: 'T3', counted: { beliefs: 2, money: {} }, rows: { beliefs: 1, money: {} } }],
        }),
      ),
    ).toEqual(['receipt']);
    expect(
      types(
        history({
          ...base,
          receipts: [
            {
              id: 'T3',
              tag: 'T3',
              counted: { beliefs: 2, money: { USD: 500 } },
              rows: { beliefs: 2, money: { USD: 1000 } },
            },
          ],
        }),
      ),
    ).toEqual(['money']);
    expect(
      types(
        history({ ...base, reversals: [{ id: 'v1', effect: 'e1', retraction: 'T3', amount: 400, effectAmount: 500 }] }),
      ),
    ).toEqual(['money']);
    expect(
      types(
        history({
          ...base,
          reversals: [1, 2].map((i) => ({ id: `v${i}`, effect: 'e1', retraction: 'T3', amount: 5, effectAmount: 5 })),
        }),
      ),
    ).toEqual(['reversal-twice']);
    const told = (beliefs: number, usd: number): Op => ({
      ...write('T3'),
      f: 'retract',
      receipt: { id: 'T3', beliefs, money: { USD: usd } },
    });
    const rows = [
      { id: 'T3', tag: 'T3', counted: { beliefs: 2, money: { USD: 500 } }, rows: { beliefs: 2, money: { USD: 500 } } },
    ];
    expect(types(history({ ...base, ops: [told(3, 500)], receipts: rows }))).toEqual(['receipt']);
    expect(types(history({ ...base, ops: [told(2, 600)], receipts: rows }))).toEqual(['receipt']);
    // A reached effect completed after the answer adds its reversal: more in the rows than told is no loss.
    expect(types(history({ ...base, ops: [told(2, 400)], receipts: rows }))).toEqual([]);
    // Reinstated, its voided reversal taken over by a later retraction: its receipt names that money no more.
    expect(types(history({ ...base, ops: [told(2, 600)], receipts: [{ ...rows[0]!, reinstated: true }] }))).toEqual([]);
  });

  it('a subscriber stream with a gap, a duplicate or a foreign event is reported', () => {
    const committed = ['c1', 'c2', 'c3'];
    expect(types(history({ committed, streams: [{ subscriber: 's', cursors: ['c1', 'c3'] }] }))).toEqual([
      'stream-gap',
    ]);
    expect(types(history({ committed, streams: [{ subscriber: 's', cursors: ['c1', 'c2', 'c2', 'c3'] }] }))).toEqual([
      'stream-duplicate',
    ]);
    expect(types(history({ committed, streams: [{ subscriber: 's', cursors: ['c1', 'x'] }] }))).toEqual([
      'stream-foreign',
    ]);
  });
});
