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
