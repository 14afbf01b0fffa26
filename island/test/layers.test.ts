/// <reference types="node" />
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sourceFiles, src } from './sources';

// The island's imports run one way, down (issue 34): each module may import only modules of a
// lower layer, or other files of its own entry (the components import one another). An import
// against this table, or from a module with no entry, fails here, naming the file, so a ring
// like the old api.ts ↔ apps/host.ts cannot come back unnoticed.
// Entries are paths under src/ without the extension; a directory entry covers its files.

/** Lowest first. */
const LAYERS: string[][] = [
  ['l10n'],
  ['config', 'errors', 'tools', 'markdown', 'approval', 'apps/bridge', 'apps/links', 'apps/theme', 'announce', 'picker/origin', 'prefill', 'registry'],
  ['api', 'ocs', 'chat', 'apps/host', 'picker/choices'],
  ['components'],
  ['picker/register', 'admin/AdminApp'],
  ['main', 'admin/main'],
];


/** The layer and entry of a module path under src/ (no extension), the most specific entry. */
function entry(module: string): [number, string] | undefined {
  let best: [number, string] | undefined;
  LAYERS.forEach((names, layer) => {
    for (const name of names) {
      if ((module === name || module.startsWith(`${name}/`)) && (!best || name.length > best[1].length)) {
        best = [layer, name];
      }
    }
  });
  return best;
}

/** Every relative import of `text`: static `from '…'`, bare `import '…'`, dynamic `import('…')`. */
function imports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [...code.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)['"](\.[^'"]+)['"]/g)];
  return found.map((m) => m[1] ?? '');
}

describe('the island module layering', () => {
  it('imports only reach down', () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const file of sourceFiles()) {
      const own = relative(src, file).replace(/\.(ts|vue)$/, '');
      const ownEntry = entry(own);
      for (const spec of imports(readFileSync(file, 'utf8'))) {
        if (spec.endsWith('.css')) continue;
        checked += 1;
        const target = relative(src, resolve(dirname(file), spec)).replace(/\.(ts|vue)$/, '');
        const targetEntry = entry(target);
        if (!ownEntry) {
          wrong.push(`${own}: has no layer in LAYERS`);
        } else if (!targetEntry) {
          wrong.push(`${own} imports ${target}, which has no layer in LAYERS`);
        } else if (targetEntry[0] > ownEntry[0] || (targetEntry[0] === ownEntry[0] && targetEntry[1] !== ownEntry[1])) {
          wrong.push(`${own} imports ${target} (${targetEntry[1]} is not below ${ownEntry[1]})`);
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(checked, 'the scan found almost no imports; is it reading src/?').toBeGreaterThan(20);
  });

  it('reads static, type-only and dynamic imports, not comments', () => {
    const text = [
      "import type { A } from './a';",
      "import { B } from '../b';",
      "// import { C } from './commented';",
      "const d = await import('./d');",
      "import './style.css';",
      "import { ref } from 'vue';",
    ].join('\n');
    expect(imports(text)).toEqual(['./a', '../b', './d', './style.css']);
  });
});
