/**
 * The page's look as MCP Apps host context (issue #34: one theme, the host's).
 *
 * Owns: reading the theme and the colours the island itself is drawn with, and telling when
 * they change. Inside Nextcloud those are its theming variables (`--color-main-background`,
 * …, switched by the `data-theme-*` / `data-themes` attributes of <body>); elsewhere the
 * island's fallbacks. The theme is read from the page as drawn (the luminance of the
 * island's background), never from `prefers-color-scheme`: Nextcloud's theme can differ from
 * the OS setting, and a frame must look like the page it sits in.
 *
 * Must never: send anything (the host does), or read a frame.
 */

export type Theme = 'light' | 'dark';

/** What the host puts in `hostContext` (`ui/initialize`) and `ui/notifications/host-context-changed`. */
export interface ThemeContext {
  theme: Theme;
  styles: { variables: Record<string, string> };
}

/** The spec's standard variable (ext-apps `McpUiStyleVariableKey`) and the island token (style.css) it carries. */
export const STYLE_VARIABLES: ReadonlyArray<readonly [string, string]> = [
  ['--color-background-primary', '--t-bg'],
  ['--color-background-secondary', '--t-bg-soft'],
  ['--color-text-primary', '--t-text'],
  ['--color-text-secondary', '--t-muted'],
  ['--color-text-danger', '--t-error'],
  ['--color-border-primary', '--t-border'],
  ['--color-ring-primary', '--t-focus'],
];

/** The theme a background colour belongs to: dark below mid luminance; light if it cannot be read. */
export function themeOf(background: string): Theme {
  const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)/.exec(background.trim());
  if (!m) return 'light';
  const [r, g, b] = [m[1], m[2], m[3]].map((v) => {
    const c = Number(v) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * (r ?? 0) + 0.7152 * (g ?? 0) + 0.0722 * (b ?? 0) < 0.18 ? 'dark' : 'light';
}

/** The background `el` is drawn on: its own, or the nearest ancestor's that is not transparent. */
function backgroundOf(el: Element): string {
  for (let node: Element | null = el; node; node = node.parentElement) {
    const background = getComputedStyle(node).backgroundColor;
    if (!/^(transparent|rgba\(.*,\s*0\))$/.test(background.trim())) return background;
  }
  return 'rgb(255, 255, 255)';
}

/** The context for frames shown inside `root` (an element of the island, which carries its tokens). */
export function themeContext(root: Element): ThemeContext {
  const style = getComputedStyle(root);
  const variables: Record<string, string> = {};
  for (const [name, token] of STYLE_VARIABLES) {
    const value = style.getPropertyValue(token).trim();
    if (value !== '') variables[name] = value;
  }
  const font = style.fontFamily.trim();
  if (font !== '') variables['--font-sans'] = font;
  return { theme: themeOf(backgroundOf(root)), styles: { variables } };
}

/**
 * Calls `changed(context)` whenever the page's look changes: an attribute of <html> or <body>
 * (Nextcloud switches its theme there), a stylesheet added or removed, or the OS setting (which
 * the page follows under Nextcloud's "system default" theme). Returns the stop function.
 */
export function watchTheme(root: Element, changed: (context: ThemeContext) => void): () => void {
  let last = JSON.stringify(themeContext(root));
  const check = (): void => {
    const now = themeContext(root);
    const text = JSON.stringify(now);
    if (text === last) return;
    last = text;
    changed(now);
  };
  const doc = root.ownerDocument;
  const observer = new MutationObserver(check);
  observer.observe(doc.documentElement, { attributes: true });
  if (doc.body) observer.observe(doc.body, { attributes: true });
  if (doc.head) observer.observe(doc.head, { childList: true });
  const media = doc.defaultView?.matchMedia?.('(prefers-color-scheme: dark)');
  media?.addEventListener?.('change', check);
  return () => {
    observer.disconnect();
    media?.removeEventListener?.('change', check);
  };
}
