import { ConfigError } from './config-error';

/**
 * A configuration value that must be one of `choices`: unset or blank means `dflt`; anything else outside the list
 * is refused with a ConfigError, the message naming the variable, the allowed values and what was given.
 */
export function choiceOf<C extends string>(choices: readonly C[], dflt: C, variable: string, value: string | undefined): C {
  const v = value?.trim() ?? '';
  if (v === '') return dflt;
  if ((choices as readonly string[]).includes(v)) return v as C;
  throw new ConfigError(`${variable} must be one of ${choices.join(', ')} (got ${JSON.stringify(v)})`);
}
