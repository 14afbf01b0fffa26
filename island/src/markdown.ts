/**
 * Model text to safe HTML.
 *
 * Owns: rendering markdown from the model. Raw HTML in the model's text is escaped, never
 * interpreted (markdown-it with `html: false`), and the result is sanitised again with
 * DOMPurify, so a link can only be http(s) or mailto and opens in a new tab without an
 * opener.
 *
 * Must never: return markup that can run script or load a frame.
 */
import MarkdownIt from 'markdown-it';
import DOMPurify from 'dompurify';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });

let hooked = false;
function ensureHook(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
  });
}

export function renderMarkdown(text: string): string {
  ensureHook();
  return DOMPurify.sanitize(md.render(text), {
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
    FORBID_TAGS: ['img', 'iframe', 'form', 'input', 'style', 'script'],
  });
}
