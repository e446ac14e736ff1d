import { describe, expect, it } from 'vitest';
import type { AdjudicationCase, BeliefSide } from '../../src/adjudication/adjudicator';
import { classifyEvidence, HeuristicAdjudicator, otherEntitiesNamed, unitOf } from '../../src/adjudication/heuristic';

const h = new HeuristicAdjudicator();

function side(p: Partial<BeliefSide> = {}): BeliefSide {
  return { statement: 'the thing holds', value: 'a', evidence: null, author: 'agent:x', ...p };
}
function kase(
  existing: Partial<BeliefSide>,
  proposed: Partial<BeliefSide>,
  claimKey = 'thing:1/prop',
): AdjudicationCase {
  return { claimKey, existing: side(existing), proposed: side({ value: 'b', ...proposed }) };
}

describe('classifyEvidence', () => {
  it.each([
    [null, 'none'],
    ['   ', 'none'],
    ['Checked against the official registry', 'strong'],
    ['Signed contract, page 4', 'strong'],
    ['Verified by one-time code', 'strong'],
    ['A rumour on a forum', 'weak'],
    ['Unverified copy of a registry document', 'weak'],
    ['document not verified', 'weak'],
    ['Customer said so on the phone', 'weak'],
    ['From the CRM export', 'unclassified'],
  ] as const)('%j → %s', (evidence, tier) => {
    expect(classifyEvidence({ evidence }).tier).toBe(tier);
  });

  it('reads the source too', () => {
    expect(classifyEvidence({ evidence: 'lookup result', source: 'companies registry' }).tier).toBe('strong');
  });
});

describe('unitOf / otherEntitiesNamed', () => {
  it('finds units and currencies in objects and strings', () => {
    expect(unitOf({ amount: 1, currency: 'USD' })).toBe('usd');
    expect(unitOf({ amount: 1, Unit: 'kilograms' })).toBe('kg');
    expect(unitOf('$1,200')).toBe('usd');
    expect(unitOf('1200 EUR')).toBe('eur');
    expect(unitOf('12 kg')).toBe('kg');
    expect(unitOf('2025-05-03')).toBeUndefined();
    expect(unitOf('+44 7700 900123')).toBeUndefined();
    expect(unitOf(42)).toBeUndefined();
  });

  it('spots a statement about another entity of the claim key type', () => {
    expect(otherEntitiesNamed('customer:4411/email', "Customer 4412's email is b@x")).toEqual(['4412']);
    expect(otherEntitiesNamed('customer:4411/email', 'Customer #4411 has a new email')).toEqual([]);
    expect(otherEntitiesNamed('customer:4411/email', 'The customer has a new email')).toEqual([]);
    expect(otherEntitiesNamed('order:9002/status', 'Order no. 9001 has shipped')).toEqual(['9001']);
    expect(otherEntitiesNamed('company:ACME/status', 'Company ACME2 dissolved')).toEqual([]); // key id has no digit
  });
});

describe('HeuristicAdjudicator', () => {
  it('has id heuristic and is deterministic', async () => {
    const c = kase({ evidence: 'registry record' }, { evidence: 'rumour' });
    expect(h.id).toBe('heuristic');
    expect(await h.adjudicate(c)).toEqual(await new HeuristicAdjudicator().adjudicate(c));
  });

  it('stronger proposed evidence → ACCEPT_PROPOSED', async () => {
    const r = await h.adjudicate(kase({ evidence: 'someone said so' }, { evidence: 'official registry entry' }));
    expect(r.verdict).toBe('ACCEPT_PROPOSED');
    expect(r.rationale).toMatch(/stronger: strong .* vs existing weak/);
  });

  it('proposal without evidence against a documented belief → KEEP_EXISTING', async () => {
    const r = await h.adjudicate(kase({ evidence: 'signed contract' }, { evidence: null, at: '2030-01-01T00:00:00Z' }));
    expect(r.verdict).toBe('KEEP_EXISTING');
  });

  it('newer with equal evidence → ACCEPT_PROPOSED; older → KEEP_EXISTING', async () => {
    const older = { evidence: 'bank statement', at: '2024-01-01T00:00:00Z' };
    const newer = { evidence: 'bank statement', at: '2025-01-01T00:00:00Z' };
    expect((await h.adjudicate(kase(older, newer))).verdict).toBe('ACCEPT_PROPOSED');
    expect((await h.adjudicate(kase(newer, older))).verdict).toBe('KEEP_EXISTING');
  });

  it('equally strong evidence and no time ordering → ESCALATE', async () => {
    const r = await h.adjudicate(kase({ evidence: 'passport scan, verified' }, { evidence: 'birth certificate' }));
    expect(r.verdict).toBe('ESCALATE');
  });

  it('no evidence on either side → ESCALATE even with times', async () => {
    const r = await h.adjudicate(kase({ at: '2024-01-01' }, { at: '2025-01-01' }));
    expect(r).toEqual({ verdict: 'ESCALATE', rationale: 'neither side offers any evidence' });
  });

  it('equal tiers, reliability ≥ 0.3 apart → the more reliable side (before time)', async () => {
    const r = await h.adjudicate(
      kase(
        { evidence: 'filed report', reliability: 0.9, at: '2020-01-01' },
        { evidence: 'web page', reliability: 0.2, at: '2025-01-01' },
      ),
    );
    expect(r.verdict).toBe('KEEP_EXISTING');
    expect(r.rationale).toContain('more reliable');
  });

  it('different currency or unit → ESCALATE, whatever the evidence', async () => {
    const r = await h.adjudicate(
      kase(
        { value: { amount: 10, currency: 'USD' }, evidence: 'rumour' },
        { value: { amount: 10, currency: 'EUR' }, evidence: 'signed invoice' },
      ),
    );
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('usd vs eur');
    expect((await h.adjudicate(kase({ value: '12 kg' }, { value: '12 lb' }))).verdict).toBe('ESCALATE');
  });

  it('a proposal about another entity → ESCALATE', async () => {
    const r = await h.adjudicate(
      kase(
        { statement: 'Customer 4411 email is a@x' },
        { statement: 'Customer 4412 email is b@x', evidence: 'verified' },
        'customer:4411/email',
      ),
    );
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('4412');
  });

  it('identical values → KEEP_EXISTING (corroboration), key order irrelevant', async () => {
    const r = await h.adjudicate(kase({ value: { a: 1, b: [1, 2] } }, { value: { b: [1, 2], a: 1 } }));
    expect(r.verdict).toBe('KEEP_EXISTING');
  });

  it('never throws on odd input', async () => {
    const r = await h.adjudicate({ claimKey: 'k', existing: null, proposed: null } as unknown as AdjudicationCase);
    expect(r.verdict).toBe('ESCALATE');
  });
});
