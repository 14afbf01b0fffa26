// Renders every ```mermaid block to SVG at build time, so readers' browsers run no diagram
// code and the built site needs nothing from the network. beautiful-mermaid is pure
// JavaScript (no browser, no DOM). A diagram that does not parse fails the build with the
// page and line, instead of shipping a blank box.
//
// The SVG is embedded as an image (data: URL) so that MDX never has to parse SVG markup. The
// first `%% ` comment line of a block becomes the image's alt text.
import { renderMermaidSVG } from 'beautiful-mermaid';

const THEME = { bg: '#ffffff', fg: '#1f2328', accent: '#0082c9' }; // Nextcloud blue for arrows

export function renderDiagram(source) {
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

export function remarkMermaid() {
  return (tree, file) => {
    const visit = (node) => {
      if (!Array.isArray(node.children)) return;
      node.children = node.children.map((child) => {
        if (child.type !== 'code' || child.lang !== 'mermaid') {
          visit(child);
          return child;
        }
        let svg;
        try {
          svg = renderDiagram(child.value);
        } catch (error) {
          const where = `${file.path ?? 'a page'}:${child.position?.start.line ?? '?'}`;
          throw new Error(`mermaid diagram at ${where} does not render: ${error?.message ?? error}`);
        }
        const url = `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
        return { type: 'paragraph', children: [{ type: 'image', url, alt: altText(child.value), title: null }] };
      });
    };
    visit(tree);
  };
}
