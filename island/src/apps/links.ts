/**
 * Link targets an MCP App may ask the host to open (`ui/open-link`).
 *
 * Owns: the `tamebi:` target scheme and the Nextcloud URLs built from it. An app names a
 * target — a file by id, a folder by path, a day by date — and the host builds the URL.
 *
 *   tamebi:file/<numeric file id>         → <linkBase>/apps/files/?fileid=<id>
 *   tamebi:folder/<percent-encoded path>  → <linkBase>/apps/files/?dir=<path>
 *   tamebi:day/<YYYY-MM-DD>               → <linkBase>/apps/calendar/timeGridDay/<date>
 *
 * Must never: pass through a URL the frame wrote. An app that could hand over a URL would
 * be a phishing primitive wearing our chrome (`//evil.example` passes a naive
 * startsWith("/") and is protocol-relative). Anything that is not exactly one of the three
 * shapes above is refused.
 */

export type LinkTarget =
  | { kind: 'file'; fileId: string }
  | { kind: 'folder'; path: string }
  | { kind: 'day'; date: string }
  // Built only by the Smart Picker from a Deck tool's ids (picker/choices.ts); a frame cannot
  // name one (parseLinkTarget knows no card target).
  | { kind: 'card'; boardId: string; cardId: string };

const FILE = /^tamebi:file\/([1-9][0-9]{0,18})$/;
const FOLDER = /^tamebi:folder\/([A-Za-z0-9%._~!$&'()*+,;=:@/-]{1,1024})$/;
const DAY = /^tamebi:day\/(\d{4})-(\d{2})-(\d{2})$/;

/** Parses a target named by an app; null means refused. */
export function parseLinkTarget(raw: string): LinkTarget | null {
  // Refuse control characters, spaces and backslashes anywhere: browsers strip or
  // reinterpret them when parsing URLs, which is exactly the trick we must not allow.
  if (/[\u0000-\u0020\u007f-\u009f\\]/.test(raw)) return null;

  const file = FILE.exec(raw);
  if (file?.[1]) return { kind: 'file', fileId: file[1] };

  const day = DAY.exec(raw);
  if (day) return isCalendarDate(Number(day[1]), Number(day[2]), Number(day[3])) ? { kind: 'day', date: `${day[1]}-${day[2]}-${day[3]}` } : null;

  const folder = FOLDER.exec(raw);
  if (folder?.[1]) {
    const path = decodePath(folder[1]);
    return path === null ? null : { kind: 'folder', path };
  }
  return null;
}

/** Builds the Nextcloud URL for a parsed target. `linkBase` comes from the page, never a frame. */
export function buildLinkUrl(target: LinkTarget, linkBase: string): string {
  switch (target.kind) {
    case 'file':
      return `${linkBase}/apps/files/?fileid=${target.fileId}`;
    case 'folder':
      return `${linkBase}/apps/files/?${new URLSearchParams({ dir: target.path }).toString()}`;
    case 'day':
      return `${linkBase}/apps/calendar/timeGridDay/${target.date}`;
    case 'card':
      // Deck's own page route `/board/{boardId}/card/{cardId}` (its history-mode router); Deck's
      // reference provider turns the `/card/{cardId}` form into a preview, this one opens the card.
      return `${linkBase}/apps/deck/board/${target.boardId}/card/${target.cardId}`;
  }
}

/** Decodes a folder path and checks the decoded form too (encoding must not smuggle tricks). */
function decodePath(encoded: string): string | null {
  let path: string;
  try {
    path = decodeURIComponent(encoded);
  } catch {
    return null;
  }
  if (!path.startsWith('/') || path.startsWith('//')) return null;
  if (/[\u0000-\u001f\u007f-\u009f\\]/.test(path)) return null;
  if (path.split('/').some((segment) => segment === '..' || segment === '.')) return null;
  return path;
}

function isCalendarDate(year: number, month: number, day: number): boolean {
  if (year < 1900 || year > 2999 || month < 1 || month > 12 || day < 1) return false;
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
