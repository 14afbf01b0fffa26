// What the browser-test scripts share: launching Debian's Chromium with one persistent
// profile, running named checks that record facts (never pass/fail), and the few page and
// frame gestures every script needs. Must never sleep: every wait is for a condition.
import { mkdtemp, rm } from 'node:fs/promises';
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
