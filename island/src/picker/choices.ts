/**
 * What the person may insert into the composer that opened the Smart Picker (issue #29): the
 * answer as plain Markdown, or a link to a file, folder, event or Deck card a tool returned.
 *
 * Owns: reading those choices out of the conversation's messages. A link is always built by
 * the host from an id, a path or a date (`apps/links.ts`, the one place Nextcloud URLs are
 * made), after the same checks a frame's `ui/open-link` target passes.
 * Must never: offer a URL that a tool result, the model or a frame wrote; insert anything by
 * itself (the person's click on a choice is the only way in, PickerActions.vue).
 */
import type { DynamicToolUIPart, UIMessage } from 'ai';
import { buildLinkUrl, parseLinkTarget, type LinkTarget } from '../apps/links';

export type LinkKind = 'file' | 'folder' | 'event' | 'card';

export interface PickerLink {
  kind: LinkKind;
  /** What the button names (a file's name, an event's title); text only, never markup. */
  label: string;
  /** The host-built, absolute URL that is inserted. */
  url: string;
}

/** The latest reply's text, as the model wrote it (Markdown); null while there is none. */
export function answerText(messages: readonly UIMessage[]): string | null {
  const last = messages.at(-1);
  if (!last || last.role !== 'assistant') return null;
  const text = last.parts
    .flatMap((p) => (p.type === 'text' ? [p.text.trim()] : []))
    .filter((s) => s !== '')
    .join('\n\n');
  return text === '' ? null : text;
}

/** Whether the latest reply waits for the person (an approval card is open): nothing is offered
 *  for insertion until it is decided and the reply is complete. */
export function awaitsDecision(messages: readonly UIMessage[]): boolean {
  const last = messages.at(-1);
  return last?.role === 'assistant' && last.parts.some((p) => p.type === 'dynamic-tool' && p.state === 'approval-requested');
}

/** Most links offered at once: the newest ones. */
const MAX_LINKS = 8;

/**
 * Links to what the conversation's tools returned, each once: the newest result first, a
 * result's items in the order the tool gave them. `origin` is the page's (an inserted link is
 * read by others, so it must be absolute); `timeZone` decides an event's day.
 */
export function insertableLinks(messages: readonly UIMessage[], linkBase: string, origin: string, timeZone?: string): PickerLink[] {
  const found: Candidate[] = [];
  for (const message of [...messages].reverse()) {
    if (message.role !== 'assistant') continue;
    for (const part of [...message.parts].reverse()) {
      if (part.type === 'dynamic-tool' && part.state === 'output-available') found.push(...fromOutput(part, timeZone));
    }
  }
  const seen = new Set<string>();
  const links: PickerLink[] = [];
  for (const candidate of found) {
    const target = parseLinkTarget(candidate.target) ?? parseCardTarget(candidate.target);
    if (!target) continue;
    const url = new URL(buildLinkUrl(target, linkBase), origin).href;
    if (seen.has(url)) continue;
    seen.add(url);
    links.push({ kind: candidate.kind, label: candidate.label, url });
    if (links.length === MAX_LINKS) break;
  }
  return links;
}

type Candidate = { kind: LinkKind; label: string; target: string };

function fromOutput(part: DynamicToolUIPart, timeZone?: string): Candidate[] {
  const output = part.output as { structuredContent?: unknown; isError?: boolean } | null;
  if (!output || output.isError === true) return [];
  const sc = record(output.structuredContent);
  if (!sc) return [];
  return [...files(sc), ...events(sc, timeZone), ...cards(sc)];
}

/** `files_list` / `files_find` entries, and a single file's result (`files_read`, `files_write`). */
function files(sc: Record<string, unknown>): Candidate[] {
  const entries = Array.isArray(sc.entries) ? sc.entries.map(record) : [sc];
  return entries.flatMap((e): Candidate[] => {
    if (!e || typeof e.path !== 'string' || e.path === '') return [];
    const name = typeof e.name === 'string' && e.name !== '' ? e.name : (e.path.split('/').filter(Boolean).at(-1) ?? e.path);
    if (e.is_dir === true) return [{ kind: 'folder', label: name, target: `tamebi:folder/${encodeURIComponent(`/${e.path.replace(/^\/+/, '')}`)}` }];
    if (typeof e.file_id === 'number' && Number.isSafeInteger(e.file_id)) return [{ kind: 'file', label: name, target: `tamebi:file/${e.file_id}` }];
    return [];
  });
}

/** `calendar_events` occurrences: Calendar's day view of the event's day. */
function events(sc: Record<string, unknown>, timeZone?: string): Candidate[] {
  if (!Array.isArray(sc.events)) return [];
  return sc.events.map(record).flatMap((e): Candidate[] => {
    if (!e || typeof e.title !== 'string' || typeof e.start !== 'string') return [];
    const day = dayOf(e.start, e.all_day === true, timeZone);
    return day ? [{ kind: 'event', label: e.title, target: `tamebi:day/${day}` }] : [];
  });
}

/** A Deck board's cards (`deck_board`: `board_id` and its stacks' cards). */
function cards(sc: Record<string, unknown>): Candidate[] {
  if (typeof sc.board_id !== 'number' || !Array.isArray(sc.stacks)) return [];
  const board = sc.board_id;
  return sc.stacks.map(record).flatMap((stack) =>
    Array.isArray(stack?.cards)
      ? stack.cards.map(record).flatMap((c): Candidate[] => (c && typeof c.card_id === 'number' && typeof c.title === 'string' ? [{ kind: 'card', label: c.title, target: `tamebi:card/${board}/${c.card_id}` }] : []))
      : [],
  );
}

/** Deck cards are the picker's own target (frames do not open cards): digits only. */
function parseCardTarget(raw: string): LinkTarget | null {
  const m = /^tamebi:card\/([1-9][0-9]{0,18})\/([1-9][0-9]{0,18})$/.exec(raw);
  return m?.[1] && m[2] ? { kind: 'card', boardId: m[1], cardId: m[2] } : null;
}

/** The event's calendar day: an all-day event's own date, else its start in the person's zone. */
function dayOf(start: string, allDay: boolean, timeZone?: string): string | null {
  if (allDay && /^\d{4}-\d{2}-\d{2}/.test(start)) return start.slice(0, 10);
  const date = new Date(start);
  if (Number.isNaN(date.getTime())) return null;
  try {
    // en-CA writes dates as YYYY-MM-DD.
    return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date);
  } catch {
    return null;
  }
}

function record(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}
