/// <reference types="node" />
// The island's own sources, as the structural tests read them (layering, translation).
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `island/src`. */
export const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

/** Every .ts and .vue file below `dir` (not declaration files), as absolute paths. */
export function sourceFiles(dir: string = src): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|vue)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}
