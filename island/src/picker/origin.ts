/**
 * Where a picker conversation was started (issue #29): the app whose Smart Picker opened
 * Tamebi, read from the page Nextcloud rendered, and how the conversation list names it.
 *
 * Owns: the closed set of origins (the orchestrator's `src/origin.rs` has the same five and
 * refuses anything else) and the mapping from Nextcloud app ids to them.
 * Must never: send an app id it read from the page as it is (only a name of the closed set).
 */
import { t } from '../l10n';

export type Origin = 'talk' | 'text' | 'collectives' | 'mail' | 'picker';

const ORIGINS: readonly Origin[] = ['talk', 'text', 'collectives', 'mail', 'picker'];

/** Nextcloud app ids whose composer offers the Smart Picker, by the origin they stand for. */
const BY_APP: Readonly<Record<string, Origin>> = {
  spreed: 'talk',
  text: 'text',
  files: 'text', // Text edits Markdown files inside Files
  notes: 'text', // Notes writes in Text's editor
  collectives: 'collectives',
  mail: 'mail',
};

/**
 * The origin of the page the picker opens on. Nextcloud renders the current app as
 * `#content.app-<id>` (core/templates/layout.user.php); an app we do not name is `picker`.
 */
export function originOfPage(doc: Document): Origin {
  const content = doc.getElementById('content');
  const app = content ? Array.from(content.classList).find((c) => c.startsWith('app-'))?.slice(4) : undefined;
  return (app !== undefined && Object.hasOwn(BY_APP, app) ? BY_APP[app] : undefined) ?? 'picker';
}

/** A stored origin as the island knows it; anything else is none. */
export function knownOrigin(value: unknown): Origin | null {
  return typeof value === 'string' && (ORIGINS as readonly string[]).includes(value) ? (value as Origin) : null;
}

/** How the conversation list marks a conversation from the Smart Picker. */
export function originLabel(origin: Origin): string {
  switch (origin) {
    case 'talk':
      return t('tamebi', 'from Talk');
    case 'text':
      return t('tamebi', 'from Text');
    case 'collectives':
      return t('tamebi', 'from Collectives');
    case 'mail':
      return t('tamebi', 'from Mail');
    case 'picker':
      return t('tamebi', 'from the Smart Picker');
  }
}
