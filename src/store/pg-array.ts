/**
 * PostgreSQL array literals, for statements that pass a whole list as ONE text parameter (cast in the
 * statement, e.g. `${intArray(ids)}::bigint[]`): one parameter however many elements, and the planner
 * cannot see the array's length through a sub-select of it (the cascade's and the reinstatement's
 * statements rely on that to probe by primary key).
 */

/** `{1,2,3}`: an int[] / bigint[] literal. */
export function intArray(xs: readonly number[]): string {
  return `{${xs.join(',')}}`;
}

/** A text[] literal of elements that need no escaping inside double quotes (digits, commas, brackets); null as NULL. */
export function textArray(xs: ReadonlyArray<string | null>): string {
  return `{${xs.map((x) => (x === null ? 'NULL' : `"${x}"`)).join(',')}}`;
}
