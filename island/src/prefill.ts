/**
 * The question a "Continue in Tamebi" link puts into the composer (docs/talk.md): the Talk bot
 * answers without any authority, and its link opens the person's own Tamebi with
 * `?prefill=<question>`, where their own access applies.
 *
 * Owns: reading `prefill` from the page's URL once, bounding and cleaning it, and taking it out
 * of the address bar (a reload or a copied URL does not fill the box again).
 * Must never: send anything. The text only waits in the composer; the person reads it and
 * presses send themselves, so a link someone else wrote cannot make Tamebi act.
 */

/** Longest prefill kept, in characters. */
export const MAX_PREFILL = 4000;

/** The prefill in `href` (cleaned), and the same URL without it (null when it had none). */
export function readPrefill(href: string): { text: string; cleanUrl: string | null } {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return { text: '', cleanUrl: null };
  }
  const raw = url.searchParams.get('prefill');
  if (raw === null) return { text: '', cleanUrl: null };
  url.searchParams.delete('prefill');
  return { text: cleanPrefill(raw), cleanUrl: url.toString() };
}

/** Control characters other than line breaks and tabs go; the length is bounded. */
export function cleanPrefill(raw: string): string {
  // eslint-disable-next-line no-control-regex
  const text = raw.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim();
  return Array.from(text).slice(0, MAX_PREFILL).join('');
}

/** Reads the page's prefill once and removes it from the address bar. */
export function takePrefill(win: Pick<Window, 'location' | 'history'>): string {
  const { text, cleanUrl } = readPrefill(win.location.href);
  if (cleanUrl !== null) win.history.replaceState(win.history.state, '', cleanUrl);
  return text;
}
