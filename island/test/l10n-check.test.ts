/// <reference types="node" />
import { describe, expect, it } from 'vitest';
import { scanIsland, scanSource } from './l10n-scan';

// No user-visible string of the island bypasses t() (issue #34). The scanner is in
// l10n-scan.ts; the samples below prove it fails on each kind of bypass it knows.

describe('the island translates every user-visible string', () => {
  it('has no string that bypasses t() or n()', () => {
    const { bypasses, msgids } = scanIsland();
    expect(bypasses.map((f) => `${f.file}:${f.line}: ${f.text}`)).toEqual([]);
    expect(msgids.size, 'the scan found almost no t() calls; is it reading src/?').toBeGreaterThan(50);
  });

  it('fails on a bad sample of each kind', () => {
    const vue = [
      '<script setup lang="ts">',
      "import { t } from '../l10n';",
      "const heading = 'Send this mail?';",
      "const fine = t('tamebi', 'Send this message now?');",
      '</script>',
      '<template>',
      '  <section aria-label="What Tamebi remembers" :title="`Delete ${name}`">',
      '    <p>Loading…</p>',
      "    <p>{{ name || 'Untitled conversation' }}</p>",
      "    <p>{{ t('tamebi', 'Fine') }} {{ list('to') }}</p>",
      '    <input placeholder="Message Tamebi">',
      '    <img alt="">',
      '    <span>✕</span>',
      '  </section>',
      '</template>',
    ].join('\n');
    const { bypasses, msgids } = scanSource('Bad.vue', vue);
    expect(bypasses.map((f) => `${f.line}: ${f.text}`)).toEqual([
      '3: Send this mail?',
      '7: aria-label="What Tamebi remembers"',
      '7: Delete …',
      '8: Loading…',
      '9: Untitled conversation',
      '11: placeholder="Message Tamebi"',
    ]);
    expect([...msgids].sort()).toEqual(['Fine', 'Send this message now?']);

    const ts = [
      "export const GENERIC = { failed: 'Something went wrong. Please try again.' };",
      'const html = `Tamebi cannot start: ${reason}`;',
      "const fine = n('tamebi', 'One file', '%n files', count);",
      "const dynamic = t('tamebi', text);",
      "const code = 'mail_send';",
      "if (x === 'Not a sentence') {}",
      "switch (s) { case 'Quota reached for today.': return t('tamebi', 'Quota reached for today.'); }",
      "switch (s) { case 'Left untranslated here.': return s; }",
    ].join('\n');
    const script = scanSource('bad.ts', ts);
    expect(script.bypasses.map((f) => `${f.line}: ${f.text}`)).toEqual([
      '1: Something went wrong. Please try again.',
      '2: Tamebi cannot start: …',
      "4: t() whose text is not a literal (it cannot be extracted)",
      '6: Not a sentence',
      // A server's sentence matched against is fine only where t() translates that same text.
      '8: Left untranslated here.',
    ]);
    expect([...script.msgids]).toEqual(['_One file_::_%n files_', 'Quota reached for today.']);
  });
});
