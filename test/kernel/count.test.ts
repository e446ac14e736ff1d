import { describe, expect, it } from 'vitest';
import { count } from '../../src/kernel/count';

// What the CLI prints for every count ("1 effect restorable", never "1 effects restorable").
describe('count', () => {
  it('takes the singular for exactly one and the plural otherwise', () => {
    expect(count(1, 'effect')).toBe('1 effect');
    expect(count(0, 'effect')).toBe('0 effects');
    expect(count(2, 'belief')).toBe('2 beliefs');
    expect(count(1n, 'reversal')).toBe('1 reversal');
    expect(count(3n, 'reversal')).toBe('3 reversals');
    expect(count(1, 'executed one')).toBe('1 executed one');
  });

  it('takes an irregular plural when given one', () => {
    expect(count(2, 'child', 'children')).toBe('2 children');
    expect(count(1, 'child', 'children')).toBe('1 child');
  });
});
