import { ConfigError } from './config-error';

/**
 * The parser of a setting `variable` that names one of `choices`, the first its default: unset or blank means the
 * default, a value outside the list is refused with a ConfigError naming the variable (or `name`, for a flag that
 * stands in for it), the allowed values and what was given.
 */
export function choiceOf<C extends string>(variable: string, choices: readonly [C, ...C[]]) {
  return (value: string | undefined, name = variable): C => {
    const v = value?.trim() ?? '';
    if (v === '') return choices[0];
    if ((choices as readonly string[]).includes(v)) return v as C;
    throw new ConfigError(`${name} must be one of ${choices.join(', ')} (got ${JSON.stringify(v)})`);
  };
}

/**
 * A switch setting: `on`/`off` (also `true`/`false`, `1`/`0`), any case; unset or blank means `dflt`; anything else is
 * refused with a ConfigError naming the variable. Every RETRACT switch is read by this one rule.
 */
export function onOff<D extends boolean | null>(env: NodeJS.ProcessEnv, name: string, dflt: D): boolean | D {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return dflt;
  if (raw === 'on' || raw === 'true' || raw === '1') return true;
  if (raw === 'off' || raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be on or off (got ${env[name]})`);
}
