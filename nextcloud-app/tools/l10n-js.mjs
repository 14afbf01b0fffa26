#!/usr/bin/env node
// Writes l10n/<lang>.js from l10n/<lang>.json, the one file translators edit (issue #34).
//
// Nextcloud reads both: PHP's IL10N reads <lang>.json ({"translations", "pluralForm"}); the
// page loads <lang>.js (\OCP\Util::addScript adds it through addTranslations), which calls
// OC.L10N.register('tamebi', {...}, pluralForm) so that @nextcloud/l10n's t() finds the
// strings. The .js is the same data in the layout Nextcloud's translation tool writes; the
// island's test (test/l10n-bundle.test.ts) fails when the two disagree.
//
// Usage: node nextcloud-app/tools/l10n-js.mjs   (rewrites every l10n/<lang>.js)
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const L10N_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'l10n');

/** The .js text for one parsed .json bundle. */
export function bundleToJs(app, bundle) {
  if (typeof bundle?.translations !== 'object' || typeof bundle.pluralForm !== 'string') {
    throw new Error('a bundle needs "translations" and "pluralForm"');
  }
  const entries = Object.entries(bundle.translations).map(([key, value]) => `    ${JSON.stringify(key)} : ${JSON.stringify(value)}`);
  return `OC.L10N.register(\n    ${JSON.stringify(app)},\n    {\n${entries.join(',\n')}\n},\n${JSON.stringify(bundle.pluralForm)});\n`;
}

/** Every language with a .json bundle. */
export function languages(dir = L10N_DIR) {
  return readdirSync(dir).filter((name) => /^[a-z]{2,3}(_[A-Z]{2})?\.json$/.test(name)).map((name) => name.slice(0, -'.json'.length));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const lang of languages()) {
    const bundle = JSON.parse(readFileSync(join(L10N_DIR, `${lang}.json`), 'utf8'));
    writeFileSync(join(L10N_DIR, `${lang}.js`), bundleToJs('tamebi', bundle));
    console.log(`wrote l10n/${lang}.js`);
  }
}
