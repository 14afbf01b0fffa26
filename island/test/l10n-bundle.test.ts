/// <reference types="node" />
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { register, setLanguage } from '@nextcloud/l10n';
import { n, t } from '../src/l10n';
import { streamErrorText } from '../src/errors';
import { scanIsland } from './l10n-scan';
import ts from 'typescript';

// The German bundle (issue #34): nextcloud-app/l10n/de.json is the one file edited by hand;
// de.js is generated from it (nextcloud-app/tools/l10n-js.mjs). Both must agree, and every
// source string of the island (t()/n()) and of the PHP app ($l->t()/->n()) must have an entry.

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const app = join(root, 'nextcloud-app');

interface Bundle {
  translations: Record<string, string | string[]>;
  pluralForm: string;
}
const de = JSON.parse(readFileSync(join(app, 'l10n/de.json'), 'utf8')) as Bundle;

function phpFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return phpFiles(path);
    return name.endsWith('.php') ? [path] : [];
  });
}

/** A PHP single- or double-quoted literal without interpolation, unescaped. */
const PHP_STRING = String.raw`'((?:[^'\\]|\\.)*)'|"((?:[^"\\$]|\\.)*)"`;
const unquote = (single: string | undefined, double: string | undefined) =>
  single !== undefined ? single.replace(/\\(['\\])/g, '$1') : (double ?? '').replace(/\\(["\\$])/g, '$1');

/** Every source string the PHP app gives IL10N: `->t('…'` and `->n('…', '…'` (Nextcloud's plural key). */
export function phpMsgids(text: string): { ids: string[]; dynamic: number } {
  const ids: string[] = [];
  for (const m of text.matchAll(new RegExp(String.raw`->t\(\s*(?:${PHP_STRING})`, 'g'))) ids.push(unquote(m[1], m[2]));
  for (const m of text.matchAll(new RegExp(String.raw`->n\(\s*(?:${PHP_STRING})\s*,\s*(?:${PHP_STRING})`, 'g'))) {
    ids.push(`_${unquote(m[1], m[2])}_::_${unquote(m[3], m[4])}_`);
  }
  // A call whose first argument is not a literal cannot be extracted by any tool.
  const all = [...text.matchAll(/->[tn]\(/g)].length;
  return { ids, dynamic: all - ids.length };
}

function placeholders(text: string): string[] {
  return [...text.matchAll(/\{[A-Za-z0-9_]+\}|%[sdn]/g)].map((m) => m[0]).sort();
}

describe('the German bundle', () => {
  it('de.js is generated from de.json', async () => {
    const generator = (await import(pathToFileURL(join(app, 'tools/l10n-js.mjs')).href)) as { bundleToJs(app: string, bundle: Bundle): string };
    expect(readFileSync(join(app, 'l10n/de.js'), 'utf8')).toBe(generator.bundleToJs('tamebi', de));
  });

  it('has every source string of the island', () => {
    const missing = [...scanIsland().msgids].filter((id) => !(id in de.translations));
    expect(missing).toEqual([]);
  });

  it('has every source string of the PHP app', () => {
    const ids = new Set<string>();
    let dynamic = 0;
    for (const file of [...phpFiles(join(app, 'lib')), ...phpFiles(join(app, 'templates'))]) {
      const found = phpMsgids(readFileSync(file, 'utf8'));
      found.ids.forEach((id) => ids.add(id));
      dynamic += found.dynamic;
    }
    expect(dynamic, 'an IL10N call with a text that is not a literal').toBe(0);
    expect([...ids].filter((id) => !(id in de.translations))).toEqual([]);
    expect(ids.size, 'the PHP scan found almost no strings').toBeGreaterThan(30);
  });

  it('keeps every placeholder, and gives each plural both German forms', () => {
    const wrong: string[] = [];
    for (const [key, value] of Object.entries(de.translations)) {
      const plural = /^_(.*)_::_(.*)_$/s.exec(key);
      if (plural) {
        if (!Array.isArray(value) || value.length !== 2) wrong.push(`${key}: needs [singular, plural]`);
        else if (value.some((v, i) => placeholders(v).join() !== placeholders(plural[i + 1] ?? '').join())) wrong.push(key);
      } else if (typeof value !== 'string' || value === '' || placeholders(value).join() !== placeholders(key).join()) {
        wrong.push(key);
      }
    }
    expect(wrong).toEqual([]);
    expect(de.pluralForm).toBe('nplurals=2; plural=(n != 1);');
  });

  it('is what t() and n() read once the page loaded de.js', () => {
    // What Nextcloud's core does for OC.L10N.register: the bundle goes into @nextcloud/l10n's registry.
    const OC = { L10N: { register: (appId: string, bundle: Record<string, string | string[]>) => register(appId, bundle) } };
    new Function('OC', readFileSync(join(app, 'l10n/de.js'), 'utf8'))(OC);
    setLanguage('de');
    expect(t('tamebi', 'Approve')).toBe('Genehmigen');
    expect(t('tamebi', 'Approve {tool}?', { tool: 'files_write' })).toBe('files_write genehmigen?');
    expect(n('tamebi', 'You can send again in %n second.', 'You can send again in %n seconds.', 1)).toBe('Du kannst in 1 Sekunde wieder senden.');
    expect(n('tamebi', 'You can send again in %n second.', 'You can send again in %n seconds.', 5)).toBe('Du kannst in 5 Sekunden wieder senden.');
    // Vue escapes interpolations itself: a value is passed on as it is, never HTML-escaped.
    expect(t('tamebi', 'Delete {title}', { title: 'Q&A <draft>' })).toBe('Q&A <draft> löschen');
    // A stream's error part arrives in English from the orchestrator and is shown in German:
    // every sentence the orchestrator ends a stream with (read from its source) is translated.
    const rust = ['src/error.rs', 'src/store/lease.rs'].map((f) => readFileSync(join(app, '..', f), 'utf8')).join('\n');
    for (const name of ['INTERNAL', 'UNAVAILABLE', 'STOPPED_ELSEWHERE', 'TOKEN_BOUND', 'INTERRUPTED_MESSAGE', 'STOPPED_UNREAD', 'STOPPED_BY_USER']) {
      const sentence = new RegExp(`const ${name}: &str =\\s*"([^"]+)";`).exec(rust)?.[1];
      expect(sentence, name).toBeTruthy();
      const shown = streamErrorText(`${sentence} (request id: r-1)`);
      expect(shown, name).toMatch(/ \(Anfrage-ID: r-1\)$/);
      expect(shown, name).not.toContain(sentence);
    }
    expect(streamErrorText('no request id here')).toBeNull();
    expect(streamErrorText('This reply was interrupted: the server writing it stopped. Send your message again to continue. (request id: r-7)'))
      .toBe('Diese Antwort wurde unterbrochen: Der Server, der sie schrieb, wurde beendet. Sende deine Nachricht erneut, um fortzufahren. (Anfrage-ID: r-7)');
  });

  it('reads PHP calls as Nextcloud extracts them', () => {
    const sample = `p($l->t('Users\\' recent calls')); $this->l->t("Say \\"hi\\"", [1]); $l->n('%n file', '%n files', 2); $l->t($dynamic);`;
    expect(phpMsgids(sample)).toEqual({ ids: ["Users' recent calls", 'Say "hi"', '_%n file_::_%n files_'], dynamic: 1 });
  });
});

// The MCP Apps frames we ship translate from their own small tables (the runtime's
// mcpApp.translator, picked by the host's hostContext.locale): each must have German for every
// text it gives t(), keep the placeholders, and hold no entry nothing uses.
const FRAMES = ['mcp-servers/mcp-nextcloud/apps/calendar-week.html', 'mcp-servers/mcp-nextcloud/apps/files-table.html', 'mcp-servers/mcp-mail/apps/compose.html'];

/** The frame's German table and the texts its script gives t() or holds as string literals. */
export function frameStrings(html: string): { german: Record<string, string>; translated: string[]; literals: Set<string> } {
  const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '').join('\n');
  const source = ts.createSourceFile('frame.js', scripts, ts.ScriptTarget.ES2022, true, ts.ScriptKind.JS);
  const german: Record<string, string> = {};
  const translated: string[] = [];
  const literals = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression.getText(source);
      const [first] = node.arguments;
      if (callee === 'mcpApp.translator' && first && ts.isObjectLiteralExpression(first)) {
        for (const language of first.properties) {
          if (!ts.isPropertyAssignment(language) || language.name.getText(source) !== 'de' || !ts.isObjectLiteralExpression(language.initializer)) continue;
          for (const entry of language.initializer.properties) {
            if (ts.isPropertyAssignment(entry) && ts.isStringLiteral(entry.name) && ts.isStringLiteral(entry.initializer)) german[entry.name.text] = entry.initializer.text;
          }
        }
        return;
      }
      if (callee === 't' && first && ts.isStringLiteral(first)) translated.push(first.text);
    }
    if (ts.isStringLiteral(node)) literals.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { german, translated, literals };
}

describe('the MCP Apps frames', () => {
  for (const frame of FRAMES) {
    it(`${frame} has German for every text it shows`, () => {
      const { german, translated, literals } = frameStrings(readFileSync(join(root, frame), 'utf8'));
      expect(translated.length, 'no t() call found').toBeGreaterThan(3);
      expect(translated.filter((text) => !(text in german))).toEqual([]);
      expect(Object.entries(german).filter(([en, de]) => placeholders(en).join() !== placeholders(de).join())).toEqual([]);
      expect(Object.keys(german).filter((en) => !literals.has(en) && !translated.includes(en)), 'German entries nothing uses').toEqual([]);
    });
  }

  it('reads a frame as the runtime uses it', () => {
    const sample = "<script>var t = mcpApp.translator({ de: { 'Week': 'Woche', 'Start': 'Beginn' } }); var L = { start: 'Start' }; t('Week'); t('Gone');</script>";
    const { german, translated, literals } = frameStrings(sample);
    expect(german).toEqual({ Week: 'Woche', Start: 'Beginn' });
    expect(translated).toEqual(['Week', 'Gone']);
    expect(literals.has('Start')).toBe(true);
  });
});
