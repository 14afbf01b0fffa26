// What the browser-test scripts share: launching Debian's Chromium with one persistent
// profile, opening the chat as a person, running named checks that record facts (never
// pass/fail), and the few page and frame gestures every script needs. Must never sleep: every
// wait is for a condition.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const WAIT = 20_000;

export function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`browser-tests: ${name} is required`);
    process.exit(2);
  }
  return value;
}

export const log = (...args) => console.error('[browser-tests]', ...args);

/** Launches headless Chromium; `use(context)` runs with it, and the profile is removed after. */
export async function withBrowser(use) {
  const userDataDir = await mkdtemp(join(tmpdir(), 'tamebi-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    timezoneId: 'UTC',
    locale: 'en-GB',
  });
  try {
    return await use(context);
  } finally {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  }
}

/** The context's page, with the shared timeout, and its console and page errors recorded into
 * `result.console` / `result.pageErrors` (the Rust side prints them when a check fails). */
export async function watchedPage(context, result) {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(WAIT);
  page.on('console', (m) => result.console.push({ type: m.type(), text: m.text().slice(0, 400), url: m.location()?.url ?? '' }));
  page.on('pageerror', (e) => result.pageErrors.push(String(e?.message ?? e).slice(0, 400)));
  return page;
}

/** Where the island sends app tool calls (the frame relay and the click-dispatched door). */
const APP_DOORS = '/apps/tamebi/api/apps/tools/';

/**
 * One script's browser session: creates `artifacts`, launches Chromium, opens the chat as alice
 * at `base` and waits for the composer, then runs `use({ context, page, appCalls })`, and at
 * the end prints `result` as one JSON line on stdout. `appCalls` fills with every `request`
 * (`{path, body}`) or `response` (`{path, status}`, as `record` says) to the app tool doors.
 * `os` is the colour scheme Chromium reports as the OS setting, `theme` the Nextcloud theme the
 * page opens with (the dev host's `?theme=`); the two differ on purpose (issue #34).
 */
export async function inChat({ base, artifacts, result, record, os = 'dark', theme = 'light' }, use) {
  await mkdir(artifacts, { recursive: true });
  await withBrowser(async (context) => {
    const page = await watchedPage(context, result);
    const appCalls = [];
    page.on(record, (r) => {
      if (!r.url().includes(APP_DOORS)) return;
      const path = new URL(r.url()).pathname;
      appCalls.push(record === 'request' ? { path, body: r.postData() ?? '' } : { path, status: r.status() });
    });
    await page.emulateMedia({ colorScheme: os });
    await page.goto(`${base}/apps/tamebi/?as=alice&theme=${theme}`);
    await page.getByTestId('composer').waitFor();
    await use({ context, page, appCalls });
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** The finished `.tool` cards of tool `name` in the chat. */
export const finishedTools = (page, name) => page.locator(`.tool[data-tool="${name}"][data-state="output-available"]`);

/** Waits for the app frame of `tool` (one `.tool` card) and returns its iframe element
 * locator and its frame. */
export async function appFrame(tool) {
  const iframe = tool.getByTestId('app-frame');
  await iframe.waitFor();
  const frame = await (await iframe.elementHandle()).contentFrame();
  return { iframe, frame };
}

/** Runs one check into `result.checks[name]`; an exception is that check's error. */
export async function runCheck(result, name, fn) {
  log('check', name);
  try {
    const value = await fn();
    result.checks[name] = { ...(value?.report ?? value ?? {}) };
    return value;
  } catch (error) {
    result.checks[name] = { error: String(error?.stack ?? error).slice(0, 2000) };
    log('check failed', name, error);
    return null;
  }
}

/** Sends one chat message through the composer, as a person would (Enter sends). */
export async function say(page, text) {
  const box = page.getByTestId('composer');
  await box.fill(text);
  await box.press('Enter');
}

/** Waits until the reply in progress is over (the Stop button is gone and Send is back). */
export async function replyDone(page) {
  await page.getByTestId('send').waitFor();
}

/** Posts one JSON-RPC request from inside `frame` to the host and resolves with its answer. */
export function frameRpc(frame, method, params) {
  return frame.evaluate(
    ({ method, params }) =>
      new Promise((resolve) => {
        const id = `probe-${Math.random().toString(36).slice(2)}`;
        const onMessage = (event) => {
          if (event.source !== parent || event.data?.id !== id) return;
          removeEventListener('message', onMessage);
          resolve(event.data);
        };
        addEventListener('message', onMessage);
        parent.postMessage({ jsonrpc: '2.0', id, method, params }, '*');
      }),
    { method, params },
  );
}

// --- Theme and accessibility probes (issue #34) ----------------------------------------------

/** Switches the page to Nextcloud theme `id` at run time, as Nextcloud's theming app marks <body>. */
export function setPageTheme(page, id) {
  return page.evaluate((id) => {
    const body = document.body;
    for (const name of [...body.getAttributeNames()]) if (name.startsWith('data-theme')) body.removeAttribute(name);
    body.setAttribute(`data-theme-${id}`, '');
    body.setAttribute('data-themes', id);
  }, id);
}

/** Waits until `frame`'s document says theme `theme` (set by the runtime from the host context). */
export function frameTheme(frame, theme) {
  return frame.waitForFunction((t) => document.documentElement.getAttribute('data-theme') === t, theme);
}

/** The computed background and text colours of the page's chat and of a frame's <body>. */
export async function colours(page, frame) {
  const pageColours = await page.evaluate(() => {
    const s = getComputedStyle(document.getElementById('tamebi-island'));
    return { background: s.backgroundColor, text: s.color };
  });
  const frameColours = await frame.evaluate(() => {
    const s = getComputedStyle(document.body);
    const r = getComputedStyle(document.documentElement);
    return { background: r.backgroundColor, text: s.color, theme: document.documentElement.getAttribute('data-theme') };
  });
  return { page: pageColours, frame: frameColours };
}

let axeSource = null;

/**
 * Runs axe-core (the pinned npm package) in one document: the page, or one frame on its own.
 * The source goes in through Playwright's evaluate, which the frames' CSP does not govern (the
 * policy stays as served). Reports every violation of any impact, trimmed to what a person
 * needs to find it.
 */
export async function axe(target) {
  axeSource ??= await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await target.evaluate(() => typeof window.axe === 'object'))) await target.evaluate(axeSource);
  const violations = await target.evaluate(async () => {
    const results = await window.axe.run(document, { iframes: false, resultTypes: ['violations'] });
    return results.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target.join(' '), summary: (n.failureSummary ?? '').slice(0, 300) })),
    }));
  });
  return violations;
}
