/**
 * What a screen reader hears of a reply while it streams (issue #34): whole sentences, not
 * every token. The conversation log is marked busy while a reply streams, and a separate
 * polite live region is fed the sentences completed since the last announcement; the rest is
 * announced when the reply ends.
 *
 * Must never: announce a sentence twice, or a part of one before the reply ends.
 */

/** Where the last complete sentence of `text` ends at or after `from`: after `.`, `!`, `?` or
 *  `…` followed by white space, or at a blank line. `from` when there is none. */
export function sentenceEnd(text: string, from: number): number {
  let end = from;
  const boundary = /[.!?…]["')\]]*\s+|\n\s*\n/g;
  boundary.lastIndex = from;
  for (let m = boundary.exec(text); m !== null; m = boundary.exec(text)) end = m.index + m[0].length;
  return end;
}

/** The next piece to announce of `text` (streamed so far, `done` once the reply ended), given
 *  that everything before `from` was announced: its text and where the announced part now ends. */
export function nextAnnouncement(text: string, from: number, done: boolean): { say: string; upTo: number } {
  const upTo = done ? text.length : sentenceEnd(text, from);
  return { say: text.slice(from, upTo).trim(), upTo };
}
