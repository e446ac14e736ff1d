/**
 * A configuration value that must be one of `choices`: unset or blank means `dflt`; anything else outside the list
 * is refused with `refuse(message)`, the message naming the variable, the allowed values and what was given.
 */
export function choiceOf<C extends string>(choices: readonly C[], dflt: C, variable: string, value: string | undefined, refuse: (message: string) => Error): C {
  const v = value?.trim() ?? '';
  if (v === '') return dflt;
  if ((choices as readonly string[]).includes(v)) return v as C;
  throw refuse(`${variable} must be one of ${choices.join(', ')} (got ${JSON.stringify(v)})`);
}
