import unhomoglyph from 'unhomoglyph';

/**
 * Claim keys that read as another key. A fleet's claims are found and contradicted by key, so a twin spelled with
 * look-alike characters (Cyrillic "а" in "authentic", Greek "ο", fullwidth letters) would be a second claim that
 * never contradicts the first. The rule is applied to the key alone, not by comparing it with the fleet's keys:
 * it needs no stored skeletons and no read, and refuses the twin whether or not its original exists yet.
 *
 * A character is an ASCII look-alike when it is not ASCII but its Unicode TR39 skeleton (NFD, the confusables
 * mapping of confusables.txt as the unhomoglyph package ships it, NFD again) is all ASCII: "а"→"a", "ο"→"o",
 * "ɑ"→"a", "ı"→"i". A key's segments are its runs between the separators `: / . _ - @ # + = ~`; a segment is
 * refused when it holds a look-alike and either also holds an ASCII letter or digit (a Latin word with a foreign
 * letter in it), or holds nothing else but look-alikes (a whole word that reads as ASCII, "сосо" for "coco").
 * Words of other scripts pass ("москва", "σοφία", "東京"). Twins made only of ASCII (0 for O, rn for m) are
 * ordinary spellings and are not caught.
 */
export function lookAlikeIn(key: string): { segment: string; char: string } | null {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(key)) return null;
  for (const segment of key.split(/[:/._\-@#+=~]+/)) {
    const chars = [...segment];
    const alike = chars.find(isAsciiLookAlike);
    if (!alike) continue;
    const ascii = chars.some((c) => /[A-Za-z0-9]/.test(c));
    if (ascii || chars.every((c) => isAsciiLookAlike(c) || c.charCodeAt(0) < 0x80)) return { segment, char: alike };
  }
  return null;
}

function isAsciiLookAlike(c: string): boolean {
  // eslint-disable-next-line no-control-regex
  return c.charCodeAt(0) >= 0x80 && /^[\x21-\x7e]+$/.test(unhomoglyph(c.normalize('NFD')).normalize('NFD'));
}
