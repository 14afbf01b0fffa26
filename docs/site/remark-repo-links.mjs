// Links from a docs page to a file outside docs/ (the README, a source file) have no page in
// the site. Each one is checked to exist in the repository (a broken one fails the build,
// like a dead link between pages does) and is rendered as its text with the repository path
// beside it, instead of a link that leads nowhere.
import { existsSync } from 'node:fs';
import path from 'node:path';

export function remarkRepoLinks({ docsRoot }) {
  const repoRoot = path.dirname(docsRoot);
  return (tree, file) => {
    const visit = (node) => {
      if (!Array.isArray(node.children)) return;
      node.children = node.children.flatMap((child) => {
        visit(child);
        if (child.type !== 'link' || /^([a-z]+:|#|\/)/i.test(child.url)) return [child];
        const pageDir = path.dirname(file.path ?? path.join(docsRoot, 'index.md'));
        const target = path.resolve(pageDir, decodeURIComponent(child.url.split('#')[0]));
        if (target === docsRoot || target.startsWith(docsRoot + path.sep)) return [child];
        const inRepo = path.relative(repoRoot, target);
        if (!existsSync(target)) {
          throw new Error(`${file.path}:${child.position?.start.line ?? '?'}: link to ${child.url}: no such file in the repository (${inRepo})`);
        }
        return [...child.children, { type: 'text', value: ' (' }, { type: 'inlineCode', value: inRepo }, { type: 'text', value: ' in the repository)' }];
      });
    };
    visit(tree);
  };
}
