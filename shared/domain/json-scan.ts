/** Scanning JSON text without parsing it: what the scans that must skip strings share. */

/**
 * The index of the quote that closes the string opened at `start` (a `"`), escapes skipped; the
 * text's length when it never closes (the parse that follows says what is wrong).
 */
export function endOfString(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c)
      i++; // backslash: skip the escaped character
    else if (c === 0x22) return i;
  }
  return text.length;
}
