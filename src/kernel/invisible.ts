/**
 * The code points that render as nothing or reorder what is around them: Unicode Default_Ignorable_Code_Point
 * (zero-width spaces and joiners, soft hyphen, variation selectors, the Hangul fillers, tag characters…),
 * general category Cf (format characters) and Bidi_Control (embeddings, overrides, isolates, marks). Taken from
 * the Unicode data of the running engine through property escapes, not from a hand list.
 */
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{Bidi_Control}]/u;

/** A character as U+XXXX. */
export function codePoint(c: string): string {
  return `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** The first INVISIBLE code point of `s`, as U+XXXX; null when there is none. */
export function invisibleIn(s: string): string | null {
  const m = INVISIBLE.exec(s);
  return m ? codePoint(m[0]) : null;
}
