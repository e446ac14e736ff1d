/**
 * A count with its noun in the right number: `count(1, 'effect')` is "1 effect", `count(0, 'effect')` "0 effects".
 * Every count a person reads goes through it, so "1 effects restorable" cannot come back.
 */
export function count(n: number | bigint, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 || n === 1n ? singular : plural}`;
}
