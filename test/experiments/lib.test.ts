/** The statistics and formatting the experiment reports rest on, against published values. */
import { describe, expect, it } from 'vitest';
import { erfc, fisherExact, normalTwoSided, percentile, twoProportionZ, wilson } from '../../experiments/lib/stats';
import { money, table } from '../../experiments/lib/report';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

describe('wilson', () => {
  it('matches the closed form at 0, n and in between', () => {
    // 0 of 200: upper bound z²/(n+z²).
    const z2 = 1.959963984540054 ** 2;
    expect(wilson(0, 200)).toEqual({ rate: 0, low: 0, high: expect.closeTo(z2 / (200 + z2), 12) });
    expect(wilson(200, 200).high).toBe(1);
    expect(wilson(200, 200).low).toBeCloseTo(200 / (200 + z2), 12);
    // 10 of 100: 0.0552…0.1744 (Newcombe 1998, method 3).
    const w = wilson(10, 100);
    expect(w.rate).toBe(0.1);
    expect(w.low).toBeCloseTo(0.0552, 4);
    expect(w.high).toBeCloseTo(0.1744, 4);
  });
  it('refuses impossible counts', () => {
    expect(() => wilson(3, 2)).toThrow(/0 ≤ k ≤ n/);
    expect(() => wilson(-1, 2)).toThrow();
    expect(wilson(0, 0)).toEqual({ rate: 0, low: 0, high: 1 });
  });
});

describe('normal tails', () => {
  it('erfc and the two-sided p keep precision in the tails', () => {
    expect(erfc(0)).toBeCloseTo(1, 7);
    expect(normalTwoSided(1.959963984540054)).toBeCloseTo(0.05, 6);
    expect(normalTwoSided(2.5758293035489)).toBeCloseTo(0.01, 6);
    // 2·Φ(−5) = 5.733e-7: relative precision, not just absolute.
    expect(normalTwoSided(5) / 5.733031437583892e-7).toBeCloseTo(1, 5);
    expect(erfc(-1)).toBeCloseTo(2 - erfc(1), 12);
  });
});

describe('twoProportionZ', () => {
  it('pooled z for 0/200 against 10/200', () => {
    const { z, p } = twoProportionZ(0, 200, 10, 200);
    const se = Math.sqrt(0.025 * 0.975 * (2 / 200));
    expect(z).toBeCloseTo(-0.05 / se, 10);
    expect(p).toBeCloseTo(0.001362, 5);
  });
  it('no difference when both rates are 0', () => {
    expect(twoProportionZ(0, 200, 0, 200)).toEqual({ z: 0, p: 1 });
  });
});

describe('fisherExact', () => {
  it('two-sided p of published tables', () => {
    // Wikipedia's worked example ("Fisher's exact test"): [[1, 9], [11, 3]] → 0.002759.
    expect(fisherExact(1, 9, 11, 3)).toBeCloseTo(0.002759, 6);
    // R: fisher.test(matrix(c(3, 1, 1, 3), 2)) → 0.4857 (the tea-tasting table).
    expect(fisherExact(3, 1, 1, 3)).toBeCloseTo(0.4857, 4);
    expect(fisherExact(0, 200, 0, 200)).toBe(1);
    // 0/10 against 10/10: 2 / C(20, 10).
    expect(fisherExact(0, 10, 10, 0)).toBeCloseTo(2 / 184756, 12);
  });
  it('is symmetric in the arms', () => {
    expect(fisherExact(2, 198, 9, 191)).toBeCloseTo(fisherExact(9, 191, 2, 198), 12);
  });
});

describe('report helpers', () => {
  it('formats money in minor units', () => {
    expect(money(124_000)).toBe('$1,240.00');
    expect(money(8_900)).toBe('$89.00');
    expect(money(0)).toBe('$0.00');
    expect(money(5, 'EUR')).toBe('0.05 EUR');
  });
  it('percentile is nearest-rank', () => {
    expect(percentile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(percentile([1, 2, 3, 4], 0.95)).toBe(4);
    expect(percentile([], 0.5)).toBeNaN();
  });
  it('tables align columns', () => {
    expect(
      table([
        ['a', 'bb'],
        ['ccc', 'd'],
      ]).split('\n'),
    ).toEqual(['a    bb', '---  --', 'ccc   d']);
  });
});

describe('experiment-only switch', () => {
  it('is set by no module of the product: only an experiment builds a Core with skipClaimLock', () => {
    const src = path.resolve(__dirname, '../../src');
    const setters = (readdirSync(src, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /skipClaimLock\s*(:\s*true|=(?!=))/.test(readFileSync(path.join(src, f), 'utf8')));
    expect(setters).toEqual([]);
  });
});
