// Renders every ```mermaid block to SVG at build time, so readers' browsers run no diagram
// code and the built site needs nothing from the network.
//
// Two steps, both pure JavaScript (no browser, no DOM):
//   1. mermaid's own parser checks the block against the reference grammar (in a worker, see
//      mermaid-check-worker.mjs). The renderer below is lenient, so without this a typo would
//      ship as a wrong picture; with it, a block that does not parse fails the build with the
//      page, the line and mermaid's message.
//   2. beautiful-mermaid lays the diagram out and draws it (mermaid itself needs a browser
//      to measure text).
// The SVG is embedded as an image (data: URL) so that MDX never has to parse SVG markup. The
// first `%% ` comment line of a block becomes the image's alt text.
import { Worker } from 'node:worker_threads';
import { renderMermaidSVG } from 'beautiful-mermaid';

const THEME = { bg: '#ffffff', fg: '#1f2328', accent: '#0082c9' }; // Nextcloud blue for arrows

let checker = null;
let nextId = 0;
let idleTimer = null;
const waiting = new Map();

// The worker is stopped once nothing has been asked of it for a moment: a live worker thread
// would keep `rspress build` from exiting.
function stopWhenIdle() {
  clearTimeout(idleTimer);
  if (waiting.size > 0 || checker === null) return;
  idleTimer = setTimeout(() => {
    if (waiting.size === 0 && checker !== null) {
      checker.terminate();
      checker = null;
    }
  }, 500);
}

/** Resolves when mermaid's parser accepts `source`; rejects with its message otherwise. */
function checkGrammar(source) {
  if (checker === null) {
    checker = new Worker(new URL('./mermaid-check-worker.mjs', import.meta.url));
    checker.on('message', ({ id, ok, message }) => {
      const { resolve, reject } = waiting.get(id);
      waiting.delete(id);
      if (ok) resolve();
      else reject(new Error(message));
      stopWhenIdle();
    });
    checker.on('error', (error) => {
      for (const { reject } of waiting.values()) reject(error);
      waiting.clear();
      checker = null;
    });
  }
  clearTimeout(idleTimer);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    checker.postMessage({ id, source });
  });
}

export async function renderDiagram(source) {
  await checkGrammar(source);
  // `%%` comment lines are ours (alt text); the renderer expects the diagram type first.
  const diagram = source.split('\n').filter((line) => !line.trim().startsWith('%%')).join('\n');
  const svg = renderMermaidSVG(diagram, THEME);
  // The renderer imports a web font from a CDN; the site must work offline and leak nothing.
  return svg.replace(/@import url\([^)]*\);?/g, '');
}

function altText(source) {
  const comment = source.split('\n').map((line) => line.trim()).find((line) => line.startsWith('%% '));
  return comment ? comment.slice(3).trim() : 'Diagram';
}

function mermaidBlocks(node, found = []) {
  for (const [index, child] of (node.children ?? []).entries()) {
    if (child.type === 'code' && child.lang === 'mermaid') found.push({ parent: node, index, code: child });
    else mermaidBlocks(child, found);
  }
  return found;
}

export function remarkMermaid() {
  return async (tree, file) => {
    for (const { parent, index, code } of mermaidBlocks(tree)) {
      let svg;
      try {
        svg = await renderDiagram(code.value);
      } catch (error) {
        const where = `${file.path ?? 'a page'}:${code.position?.start.line ?? '?'}`;
        throw new Error(`mermaid diagram at ${where} does not render: ${error?.message ?? error}`);
      }
      const url = `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
      parent.children[index] = { type: 'paragraph', children: [{ type: 'image', url, alt: altText(code.value), title: null }] };
    }
  };
}
