// @vitest-environment jsdom
import { describe, expect, it } from 'vitest';
import { STYLE_VARIABLES, themeContext, themeOf, watchTheme } from '../src/apps/theme';

describe('the page theme for MCP Apps frames', () => {
  it('tells dark from light by the drawn background, not the OS setting', () => {
    expect(themeOf('rgb(255, 255, 255)')).toBe('light');
    expect(themeOf('rgb(23, 23, 23)')).toBe('dark');
    expect(themeOf('rgba(0, 0, 0, 1)')).toBe('dark');
    expect(themeOf('rgb(0 103 158)')).toBe('dark');
    expect(themeOf('transparent')).toBe('light');
  });

  it('carries the island tokens under the spec names and follows a change of <body>', async () => {
    const style = document.createElement('style');
    style.textContent = `
      #root { background: rgb(255, 255, 255); }
      #root > div { --t-bg: #ffffff; --t-text: #222222; }
      body[data-themes="dark"] #root { background: rgb(23, 23, 23); }
      body[data-themes="dark"] #root > div { --t-bg: #171717; --t-text: #ebebeb; }`;
    document.head.appendChild(style);
    // The island's inner element is transparent: the theme is read from what it is drawn on.
    const outer = document.createElement('div');
    outer.id = 'root';
    const root = document.createElement('div');
    outer.appendChild(root);
    document.body.appendChild(outer);
    const first = themeContext(root);
    expect(first.theme).toBe('light');
    expect(first.styles.variables['--color-background-primary']).toBe('#ffffff');
    expect(STYLE_VARIABLES.map(([name]) => name)).toContain('--color-text-primary');
    const seen: string[] = [];
    const stop = watchTheme(root, (c) => seen.push(`${c.theme} ${c.styles.variables['--color-text-primary']}`));
    document.body.setAttribute('data-themes', 'dark');
    await new Promise((r) => setTimeout(r, 0));
    document.body.setAttribute('data-unrelated', 'x');
    await new Promise((r) => setTimeout(r, 0));
    stop();
    expect(seen).toEqual(['dark #ebebeb']);
  });
});
