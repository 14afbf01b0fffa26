/**
 * Translation and locale, the way every Nextcloud app does it.
 *
 * Owns: `t('tamebi', …)` and `n('tamebi', …)` over `@nextcloud/l10n`, which reads the bundle
 * the page registered (`l10n/<lang>.js` calls `OC.L10N.register('tamebi', …)`, loaded by
 * `\OCP\Util::addTranslations('tamebi')` in the PHP app and by the dev host), the person's
 * language (`<html lang>`) and locale (`<html data-locale>`), and their time zone; what the
 * MCP Apps frames get in `hostContext` to format dates with `Intl`.
 *
 * Placeholders are `{name}`, as in Nextcloud. Vue escapes every interpolation, so the strings
 * come back unescaped and unsanitised (Nextcloud's defaults would show `&lt;` to the person).
 * A leaf: imports nothing of the island. The check in test/l10n-check.test.ts fails on a
 * user-visible string that does not pass through here.
 */
import { getCanonicalLocale, getLanguage, translate, translatePlural } from '@nextcloud/l10n';

type Vars = Record<string, string | number>;
const RAW = { escape: false, sanitize: false } as const;

/** Translates `text` of `app` (always 'tamebi'), filling `{placeholders}` from `vars`. */
export function t(app: 'tamebi', text: string, vars?: Vars): string {
  return translate(app, text, vars ?? {}, undefined, RAW);
}

/** Translates a plural: `%n` and `{placeholders}` are filled; the form follows `count`. */
export function n(app: 'tamebi', singular: string, plural: string, count: number, vars?: Vars): string {
  return translatePlural(app, singular, plural, count, vars ?? {}, RAW);
}

/** The person's language as Nextcloud set it on the page (`<html lang>`), e.g. `de`. */
export function language(): string {
  return getLanguage() || 'en';
}

/** The person's locale as a BCP 47 tag, e.g. `de-DE` (Nextcloud writes `de_DE`). */
export function locale(): string {
  const tag = getCanonicalLocale();
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? 'en';
  } catch {
    return 'en';
  }
}

/** The person's time zone: their Nextcloud setting when the page gave one, else the browser's. */
export function timeZone(configured?: string): string {
  return configured || Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** A translated sentence cut at its `{placeholders}`, so a template can set each one in its own
 *  element (bold, a test id) while the sentence's word order stays the translation's. */
export function splitPlaceholders(sentence: string): Array<{ text: string; slot: string | null }> {
  return sentence
    .split(/(\{[A-Za-z0-9_]+\})/)
    .filter((piece) => piece !== '')
    .map((piece) => {
      const slot = /^\{([A-Za-z0-9_]+)\}$/.exec(piece)?.[1] ?? null;
      return slot === null ? { text: piece, slot } : { text: '', slot };
    });
}
