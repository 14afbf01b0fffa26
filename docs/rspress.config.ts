// The docs site: the markdown files in this folder, built by Rspress into doc_build/.
//   npm run build   (scripts/test: scripts/test.d/45-docs.sh; a dead link or a diagram that does not render fails it)
//   npm run dev     (scripts/dev serves it on TAMEBI_DEV_DOCS_PORT)
// Navigation is by audience. Every page listed here must exist (a missing one fails the build);
// a page in docs/ that no audience lists yet is still reachable, under "More", with a warning.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from '@rspress/core';
import { remarkMermaid } from './site/remark-mermaid.mjs';
import { remarkRepoLinks } from './site/remark-repo-links.mjs';

const docsRoot = path.dirname(fileURLToPath(import.meta.url));

type Page = { file: string; text: string };
const AUDIENCES: { text: string; pages: Page[] }[] = [
  {
    text: 'Users',
    pages: [
      { file: 'using', text: 'Using Tamebi' },
      { file: 'smart-picker', text: 'Tamebi in the Smart Picker' },
      { file: 'talk', text: 'Tamebi in Talk' },
    ],
  },
  {
    text: 'Admins',
    pages: [
      { file: 'admin-guide', text: 'Admin guide' },
      { file: 'nextcloud-app', text: 'The Nextcloud app' },
      { file: 'security', text: 'Security and guardrails' },
    ],
  },
  {
    text: 'Operators',
    pages: [
      { file: 'orchestrator', text: 'The orchestrator' },
      { file: 'mcp-nextcloud', text: 'mcp-nextcloud' },
      { file: 'mcp-mail', text: 'mcp-mail' },
      { file: 'files-grep', text: 'files_grep' },
      { file: 'performance', text: 'Performance' },
      { file: 'scale-out', text: 'Scale-out' },
    ],
  },
  {
    text: 'Developers',
    pages: [
      { file: 'architecture', text: 'Architecture' },
      { file: 'api', text: 'Orchestrator HTTP API' },
      { file: 'island', text: 'The island' },
      { file: 'dev-standin', text: 'The Nextcloud stand-in' },
      { file: 'mail-bridge-api', text: 'Mail bridge API' },
      { file: 'scripted-model', text: 'The scripted model' },
      { file: 'testing', text: 'Testing: fuzzing' },
    ],
  },
];

const link = (page: Page) => {
  if (!existsSync(path.join(docsRoot, `${page.file}.md`))) {
    throw new Error(`docs/rspress.config.ts lists docs/${page.file}.md, which does not exist`);
  }
  return { text: page.text, link: `/${page.file}` };
};
const audiences = AUDIENCES.map(({ text, pages }) => ({ text, items: pages.map(link) }));

const listed = new Set(AUDIENCES.flatMap(({ pages }) => pages.map((p) => p.file)));
const unlisted = readdirSync(docsRoot)
  .filter((f) => f.endsWith('.md') && f !== 'index.md' && !listed.has(f.slice(0, -3)))
  .sort()
  .map((f) => {
    const heading = /^# (.+)$/m.exec(readFileSync(path.join(docsRoot, f), 'utf8'));
    return { text: heading ? heading[1].replace(/`/g, '') : f.slice(0, -3), link: `/${f.slice(0, -3)}` };
  });
if (unlisted.length > 0) {
  console.warn(`docs: ${unlisted.map((p) => `${p.link.slice(1)}.md`).join(', ')} in no audience's navigation (shown under "More"): add to AUDIENCES in docs/rspress.config.ts`);
  audiences.push({ text: 'More', items: unlisted });
}

export default defineConfig({
  root: docsRoot,
  title: 'Tamebi',
  description: 'An AI agent inside your Nextcloud that can only see and do what you can.',
  lang: 'en',
  route: {
    extensions: ['.md', '.mdx'],
    exclude: ['node_modules/**', 'doc_build/**', 'site/**'],
  },
  markdown: {
    // Links between pages are Rspress's to check; a link leaving docs/ (../README.md) is checked
    // by remarkRepoLinks, which runs after it and fails the build if the file is missing.
    link: { checkDeadLinks: { excludes: (url: string) => url.startsWith('../') }, checkAnchors: true },
    remarkPlugins: [[remarkRepoLinks, { docsRoot }], remarkMermaid],
  },
  builderConfig: {
    // Rspack's persistent cache lives in node_modules/.cache, inside the watched docs root:
    // its writes made `rspress dev` restart over and over (the watcher's node_modules ignore
    // glob does not apply). The site is small enough to build from scratch.
    performance: { buildCache: false },
  },
  themeConfig: {
    nav: audiences,
    sidebar: { '/': audiences.map((a) => ({ ...a, collapsible: false })) },
    footer: { message: 'Tamebi: no permission logic of its own; Nextcloud decides.' },
  },
});
