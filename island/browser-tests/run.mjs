#!/usr/bin/env node
// The island and its MCP Apps in a real Chromium, against a real stack (started by
// tests/island_browser.rs: stand-in, mcp-nextcloud, scripted model, orchestrator, dev host).
//
// Owns: one browser launch, the clicks and frame probes of every check, screenshots, and one
// JSON document on stdout describing what the browser observed. It reports facts; the Rust
// test decides pass or fail, so a wrong observation cannot hide behind a boolean made here.
//
// Must never: sleep (every wait is for a condition, with a timeout), touch the stack other
// than through the browser, or weaken a page, frame or policy to make a probe work.
//
// Environment: BASE_URL (the dev host), NC_URL (where app links point), ARTIFACTS (a
// directory for screenshots), CHROMIUM (default /usr/bin/chromium), ADMIN_SECTION (the admin
// settings section as PHP rendered it, nextcloud-app/tests/AdminPage.php).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WAIT, appFrame, axe, colours, finishedTools, frameRpc, frameTheme, inChat, replyDone, required, runCheck, say, setPageTheme } from './lib.mjs';

const BASE = required('BASE_URL').replace(/\/+$/, '');
const NC_URL = required('NC_URL').replace(/\/+$/, '');
const ARTIFACTS = required('ARTIFACTS');
const ADMIN_SECTION = required('ADMIN_SECTION');

/** What the browser saw, per named check. */
const result = { checks: {}, console: [], pageErrors: [] };

async function main() {
  await inChat({ base: BASE, artifacts: ARTIFACTS, result, record: 'response' }, async ({ context, page, appCalls: relay }) => {
    await recordAnnouncements(page);
    const calendar = await run('calendar_week_renders_in_sandboxed_frame', () => calendarWeek(page));
    await run('conversation_is_a_live_log', () => liveLog(page));
    if (calendar?.frame) {
      await run('frame_follows_the_page_theme', () => followTheme(page, calendar.frame));
      await run('frame_is_isolated_from_the_host', () => isolation(page, calendar.frame));
      await run('frame_tool_calls_are_read_only', () => frameToolCalls(page, calendar.frame, relay));
      await run('open_link_and_resize_are_policed', () => linksAndResize(page, context, calendar));
      await run('axe_main_page_and_week_frame_in_every_theme', () => axeInEveryTheme(page, calendar.frame));
    }
    await run('tampered_document_does_not_run', () => tampered(page));
    await run('files_table_renders', () => filesTable(page));
    await run('approve_runs_the_recorded_call', () => approval(page, 'approve'));
    await run('deny_runs_nothing', () => approval(page, 'deny'));
    await run('assistant_picker_binds_the_conversation', () => assistantPicker(page));
    await run('a_refusal_shows_the_text_of_its_code', () => refusalText(page));
    await run('stop_ends_the_reply_at_once', () => stopAtOnce(page));
    await run('axe_admin_page_in_every_theme', () => adminPage(context));
  });
}

/** Runs one check into this run's result. */
const run = (name, fn) => runCheck(result, name, fn);

// --- 1. A calendar_events turn renders the week grid in a sandboxed frame ------------------

async function calendarWeek(page) {
  await say(page, 'Show my calendar for the week of 12 January 2026');
  const tool = finishedTools(page, 'calendar_events');
  await tool.waitFor();
  const { iframe, frame } = await appFrame(tool);
  const event = frame.locator('.event', { hasText: 'Quarterly planning' });
  await event.waitFor();
  await page.getByTestId('messages').getByText('Here is your week of 12 January 2026.').waitFor();
  await replyDone(page);
  const attrs = await iframe.evaluate((f) => ({
    sandbox: f.getAttribute('sandbox'),
    src: f.getAttribute('src'),
    srcdoc: f.getAttribute('srcdoc'),
    allow: f.getAttribute('allow'),
    height: f.getBoundingClientRect().height,
  }));
  const grid = await frame.evaluate(() => ({
    title: document.getElementById('title')?.textContent ?? '',
    days: [...document.querySelectorAll('.day-head button')].map((b) => b.dataset.day),
    events: [...document.querySelectorAll('.event')].map((b) => b.getAttribute('aria-label')),
    eventDay: document.querySelector('.event')?.closest('.col') ? [...document.querySelectorAll('.col')].findIndex((c) => c.querySelector('.event')) : -1,
  }));
  const frameUrl = frame.url();
  await page.screenshot({ path: join(ARTIFACTS, 'chat-calendar.png'), fullPage: true });
  await iframe.screenshot({ path: join(ARTIFACTS, 'week-grid.png') });
  return { frame, iframe, report: { ...attrs, frameUrl, ...grid } };
}

// --- 1b. The conversation is a live log; a streamed reply is announced in sentences ----------

/** Records, in the page, every text the sentence announcer is given and every aria-busy the log
 * takes, from now on. */
function recordAnnouncements(page) {
  return page.evaluate(() => {
    const seen = { announced: [], busy: [] };
    window.__a11ySeen = seen;
    const announcer = document.querySelector('[data-testid="announcer"]');
    const log = document.querySelector('[data-testid="messages"]');
    new MutationObserver(() => seen.announced.push(announcer.textContent)).observe(announcer, { childList: true, characterData: true, subtree: true });
    new MutationObserver(() => seen.busy.push(log.getAttribute('aria-busy'))).observe(log, { attributes: true, attributeFilter: ['aria-busy'] });
  });
}

async function liveLog(page) {
  const log = page.getByTestId('messages');
  return {
    role: await log.getAttribute('role'),
    live: await log.getAttribute('aria-live'),
    busyNow: await log.getAttribute('aria-busy'),
    headings: await page.locator('h1').allInnerTexts(),
    seen: await page.evaluate(() => window.__a11ySeen),
  };
}

// --- 1c. The frame takes the page's theme, not the OS's, and follows it without a reload -----

/** Waits until the frame's background and text are the page's (both come from the host context). */
async function frameLooksLikePage(page, frame) {
  const { background, text } = await page.evaluate(() => {
    const s = getComputedStyle(document.getElementById('tamebi-island'));
    return { background: s.backgroundColor, text: s.color };
  });
  await frame.waitForFunction(([bg, fg]) => getComputedStyle(document.documentElement).backgroundColor === bg && getComputedStyle(document.body).color === fg, [background, text]);
}

async function followTheme(page, frame) {
  // The chat opened with the OS dark and Nextcloud light (inChat's default).
  const osDarkPageLight = await colours(page, frame);
  await frame.evaluate(() => { window.__notReloaded = true; });
  await page.emulateMedia({ colorScheme: 'light' });
  await setPageTheme(page, 'dark');
  await frameTheme(frame, 'dark');
  await frameLooksLikePage(page, frame);
  const osLightPageDark = await colours(page, frame);
  await page.screenshot({ path: join(ARTIFACTS, 'theme-os-light-page-dark.png'), fullPage: true });
  await setPageTheme(page, 'light-highcontrast');
  await frameTheme(frame, 'light');
  await frameLooksLikePage(page, frame);
  const highContrast = await colours(page, frame);
  await page.emulateMedia({ colorScheme: 'dark' });
  await setPageTheme(page, 'light');
  await frameLooksLikePage(page, frame);
  const restored = await colours(page, frame);
  const notReloaded = await frame.evaluate(() => window.__notReloaded === true);
  return { osDarkPageLight, osLightPageDark, highContrast, restored, notReloaded };
}

/** axe on the page and, on its own, inside the week frame, in each of Nextcloud's themes. */
async function axeInEveryTheme(page, frame) {
  const out = {};
  for (const theme of ['light', 'dark', 'light-highcontrast', 'dark-highcontrast']) {
    await setPageTheme(page, theme);
    await frameLooksLikePage(page, frame);
    out[theme] = { page: await axe(page), frame: await axe(frame) };
    await page.screenshot({ path: join(ARTIFACTS, `theme-${theme}.png`), fullPage: true });
  }
  await setPageTheme(page, 'light');
  await frameLooksLikePage(page, frame);
  return out;
}

// --- 2. From inside the frame: no host cookie, no parent DOM, no network ---------------------

async function isolation(page, frame) {
  const hostCookie = await page.evaluate(() => {
    document.cookie = 'tamebi_host_marker=visible-to-the-host; path=/; SameSite=Strict';
    return document.cookie;
  });
  const frameRequests = [];
  const onRequest = (r) => { if (r.frame() !== page.mainFrame()) frameRequests.push(r.url()); };
  page.on('request', onRequest);
  const probe = await frame.evaluate(async () => {
    const out = { origin: self.origin };
    try {
      out.cookie = { readable: true, value: document.cookie };
    } catch (e) {
      out.cookie = { readable: false, error: e.name };
    }
    try {
      out.parentDocument = { readable: true, title: parent.document.title };
    } catch (e) {
      out.parentDocument = { readable: false, error: e.name };
    }
    const violations = [];
    const onViolation = (e) => violations.push(e.effectiveDirective || e.violatedDirective);
    document.addEventListener('securitypolicyviolation', onViolation);
    try {
      const r = await fetch('/apps/tamebi/api/conversations', { credentials: 'include' });
      out.fetch = { blocked: false, status: r.status };
    } catch (e) {
      out.fetch = { blocked: true, error: e.name };
    }
    // The violation event is queued as a task; a round trip through the task queue lets it land.
    await new Promise((resolve) => setTimeout(resolve, 0));
    document.removeEventListener('securitypolicyviolation', onViolation);
    out.fetch.violations = violations;
    return out;
  });
  page.off('request', onRequest);
  return { ...probe, hostCookie, frameRequests };
}

// --- 3. tools/call from a frame: effectful refused (403), read-only works --------------------

async function frameToolCalls(page, frame, relay) {
  const before = relay.length;
  const write = await frameRpc(frame, 'tools/call', { name: 'files_write', arguments: { path: '/written-by-a-frame.txt', content: 'a frame wrote this' } });
  const writeRelay = relay.slice(before);
  // The real path for a read-only app tool: a click on the event inside the app.
  const mark = relay.length;
  await frame.locator('.event', { hasText: 'Quarterly planning' }).click();
  const details = frame.locator('#details dd', { hasText: 'Room 1' });
  await details.waitFor();
  const detailsText = await frame.locator('#details').innerText();
  return {
    write: { error: write.error ?? null, result: write.result ?? null },
    writeRelay,
    readRelay: relay.slice(mark),
    detailsText,
  };
}

// --- 4. ui/open-link only for tamebi: targets; a huge resize is clamped ---------------------

async function linksAndResize(page, context, calendar) {
  const { frame, iframe } = calendar;
  const pagesBefore = context.pages().length;
  const evil = await frameRpc(frame, 'ui/open-link', { url: '//evil.example' });
  const evilHttps = await frameRpc(frame, 'ui/open-link', { url: 'https://evil.example/' });
  const pagesAfterEvil = context.pages().length;
  const fallbackAfterEvil = await page.locator('.tamebi__notice a').count();

  // A vetted target opens the Nextcloud page the host built (a new tab, or a link if blocked).
  // What counts is where the new tab navigates (the stand-in then asks for a login, which
  // headless Chromium turns into an error page: that is not ours to judge).
  const popupPromise = context.waitForEvent('page', { timeout: WAIT }).catch(() => null);
  const navigation = context
    .waitForEvent('request', { predicate: (r) => r.isNavigationRequest() && r.frame().page() !== page, timeout: WAIT })
    .catch(() => null);
  const day = await frameRpc(frame, 'ui/open-link', { url: 'tamebi:day/2026-01-15' });
  const popup = await popupPromise;
  const request = await navigation;
  let opened = null;
  if (popup) {
    opened = { url: request?.url() ?? null };
    await popup.close();
  }
  const fallback = page.locator('.tamebi__notice a');
  const fallbackHref = (await fallback.count()) > 0 ? await fallback.first().getAttribute('href') : null;

  await frame.evaluate(() => parent.postMessage({ jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { width: 400, height: 99999 } }, '*'));
  await page.waitForFunction((el) => el.getBoundingClientRect().height >= 1200 || el.style.height === '1200px', await iframe.elementHandle());
  const height = await iframe.evaluate((f) => ({ style: f.style.height, rect: Math.round(f.getBoundingClientRect().height) }));
  return {
    evil: { error: evil.error ?? null, result: evil.result ?? null },
    evilHttps: { error: evilHttps.error ?? null, result: evilHttps.result ?? null },
    pagesBefore,
    pagesAfterEvil,
    fallbackAfterEvil,
    day: { error: day.error ?? null, result: day.result ?? null },
    opened,
    fallbackHref,
    expectedDayUrl: `${NC_URL}/apps/calendar/timeGridDay/2026-01-15`,
    height,
  };
}

// --- 5. A document changed after its policy was built does not run ---------------------------

async function tampered(page) {
  const served = {};
  // The test plays an attacker between the orchestrator and the browser: it takes the real
  // frame answer (document + the CSP built from it) and changes one byte of the script.
  await page.route('**/apps/tamebi/frame?*', async (route) => {
    const url = new URL(route.request().url());
    const mode = url.searchParams.get('probe');
    if (!mode) return route.continue();
    const response = await route.fetch();
    const headers = response.headers();
    const original = await response.text();
    let body = original;
    if (mode === 'tampered') body = original.replace('var HOUR_PX = 48;', 'var HOUR_PX = 49;');
    served[mode] = {
      status: response.status(),
      csp: headers['content-security-policy'] ?? null,
      changedBytes: [...body].filter((c, i) => c !== original[i]).length + Math.abs(body.length - original.length),
    };
    await route.fulfill({ status: response.status(), headers, body });
  });
  // The document is served for the conversation the island's own frame is shown in.
  const conversation = await page.evaluate(() => new URL(document.querySelector('iframe[data-app]').src).searchParams.get('conversation'));
  const src = (mode) => `/apps/tamebi/frame?${new URLSearchParams({ server: 'nextcloud', uri: 'ui://nextcloud/calendar-week', conversation, probe: mode })}`;
  // Each probe frame is sandboxed like the island's; it either says ui/initialize (its script
  // ran) or the browser reports a refused inline script for it.
  const load = (mode) =>
    page.evaluate(
      ({ src, mode, wait }) =>
        new Promise((resolve) => {
          const frame = document.createElement('iframe');
          frame.setAttribute('sandbox', 'allow-scripts');
          frame.dataset.probe = mode;
          frame.src = src;
          const said = [];
          const done = (outcome) => {
            removeEventListener('message', onMessage);
            resolve({ outcome, said });
          };
          const onMessage = (event) => {
            if (event.source !== frame.contentWindow) return;
            said.push(event.data?.method ?? null);
            if (event.data?.method === 'ui/initialize') done('initialized');
          };
          addEventListener('message', onMessage);
          frame.addEventListener('load', () => {
            // The frame's scripts ran (or were refused) before its load event; messages they
            // posted are already queued ahead of this task.
            setTimeout(() => done('loaded-without-initialize'), 0);
          });
          setTimeout(() => done('timeout'), wait);
          document.body.appendChild(frame);
        }),
      { src: src(mode), mode, wait: WAIT },
    );
  const refusedBefore = refusedScripts().length;
  const tamperedRun = await load('tampered');
  // Chromium reports the refused inline script on the console; wait for that report unless
  // it already came.
  if (refusedScripts().length === refusedBefore) {
    await page.waitForEvent('console', { predicate: (m) => REFUSED_SCRIPT.test(m.text()), timeout: WAIT }).catch(() => null);
  }
  const refused = refusedScripts().slice(refusedBefore);
  const control = await load('original');
  await page.unroute('**/apps/tamebi/frame?*');
  await page.evaluate(() => document.querySelectorAll('iframe[data-probe]').forEach((f) => f.remove()));
  return { served, tampered: tamperedRun, refused, control };
}

// Chromium's wording: "Executing inline script violates the following Content Security
// Policy directive …" (older releases: "Refused to execute inline script …").
const REFUSED_SCRIPT = /inline script.*Content Security Policy/i;

function refusedScripts() {
  return result.console.filter((m) => REFUSED_SCRIPT.test(m.text));
}

// --- 6. The second app: a files_list turn renders the files table ---------------------------

async function filesTable(page) {
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  await say(page, 'List my files');
  const { iframe, frame } = await appFrame(finishedTools(page, 'files_list'));
  await frame.locator('#rows tr').first().waitFor();
  await page.getByTestId('messages').getByText('Those are your files.').waitFor();
  await replyDone(page);
  const table = await frame.evaluate(() => ({
    title: document.getElementById('title')?.textContent ?? '',
    names: [...document.querySelectorAll('#rows button.open')].map((b) => b.textContent),
  }));
  await page.screenshot({ path: join(ARTIFACTS, 'chat-files.png'), fullPage: true });
  await iframe.screenshot({ path: join(ARTIFACTS, 'files-table.png') });
  // The frame fits its content (the app reports its body's height; the host clamps it).
  const fit = await frame.evaluate(() => Math.ceil(document.body.getBoundingClientRect().height));
  await page.waitForFunction(([el, h]) => Math.abs(el.getBoundingClientRect().height - h) <= 2, [await iframe.elementHandle(), Math.max(60, fit)]).catch(() => null);
  const height = Math.round(await iframe.evaluate((f) => f.getBoundingClientRect().height));
  return { sandbox: await iframe.getAttribute('sandbox'), src: await iframe.getAttribute('src'), ...table, contentHeight: fit, frameHeight: height, axe: await axe(frame) };
}

// --- 7. Approve and deny from the approval card ----------------------------------------------

/** Approve is done with the keyboard alone (Tab and Enter, from the New conversation button to
 * the composer, Enter to send, Enter on the card); deny with the mouse. Both report where focus
 * was when the card appeared and after the decision, and axe's verdict on the page with the card. */
async function approval(page, decision) {
  const prompt = decision === 'approve' ? 'Please write the approved note' : 'Please write the denied note';
  let tabs = null;
  if (decision === 'approve') {
    await page.getByTestId('new-conversation').focus();
    await page.keyboard.press('Enter');
    await page.locator('.message').first().waitFor({ state: 'detached' });
    tabs = 0;
    while (tabs < 40 && !(await page.evaluate(() => document.activeElement?.id === 'tamebi-input'))) {
      await page.keyboard.press('Tab');
      tabs += 1;
    }
    await page.keyboard.type(prompt);
    await page.keyboard.press('Enter');
  } else {
    await page.getByTestId('new-conversation').click();
    await page.locator('.message').first().waitFor({ state: 'detached' });
    await say(page, prompt);
  }
  const card = page.getByTestId('approval-card');
  await card.waitFor();
  const cardText = await card.innerText();
  await page.waitForFunction(() => document.activeElement?.closest('[data-testid="approval-card"]') !== null).catch(() => null);
  const focusOnCard = await page.evaluate(() => {
    const el = document.activeElement;
    return { testid: el?.getAttribute('data-testid') ?? null, first: el === document.querySelector('[data-testid="approval-card"] button'), outline: el ? getComputedStyle(el).outlineStyle : null };
  });
  const axeCard = await axe(page);
  await page.screenshot({ path: join(ARTIFACTS, `approval-card-${decision}.png`), fullPage: true });
  // The buttons arm a moment after the card appears (an Enter meant for the composer cannot approve).
  const button = card.locator(`[data-testid="${decision}"]:not([aria-disabled])`);
  await button.waitFor();
  if (decision === 'approve') await page.keyboard.press('Enter');
  else await button.click();
  const focusAfter = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName ?? null);
  const finalState = decision === 'approve' ? 'output-available' : 'output-denied';
  const tool = page.locator(`.tool[data-tool="files_write"][data-state="${finalState}"]`);
  await tool.waitFor();
  await page.getByTestId('messages').getByText(decision === 'approve' ? 'Saved the note.' : 'Understood, I did not write it.').waitFor();
  await replyDone(page);
  await tool.locator('summary').click();
  const trace = await tool.innerText();
  const cardsLeft = await page.getByTestId('approval-card').count();
  await page.screenshot({ path: join(ARTIFACTS, `chat-${decision}.png`), fullPage: true });
  return { cardText, state: await tool.getAttribute('data-state'), status: await tool.locator('.tool__status').innerText(), trace, cardsLeft, tabs, focusOnCard, focusAfter, axe: axeCard };
}

// --- 8. The assistant picker: chosen before the first message, fixed after it ---------------

async function assistantPicker(page) {
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  const picker = page.getByTestId('assistant-picker');
  await picker.waitFor();
  const options = await picker.locator('option').evaluateAll((os) => os.map((o) => o.value));
  const initial = await picker.inputValue();
  const enabledBefore = await picker.isEnabled();
  await picker.selectOption('planner');
  // The planner may only use calendar tools; the script makes the model name files_list anyway.
  await say(page, 'planner check: show my documents');
  const tool = page.locator('.tool[data-tool="files_list"][data-state="output-error"]');
  await tool.waitFor();
  await page.getByTestId('messages').getByText('Only your calendar is mine to read.').waitFor();
  await replyDone(page);
  await page.screenshot({ path: join(ARTIFACTS, 'assistant-picker.png'), fullPage: true });
  const after = { value: await picker.inputValue(), enabled: await picker.isEnabled() };
  await tool.locator('summary').click();
  const trace = await tool.innerText();
  // A new conversation offers the choice again, starting from the default.
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  const fresh = { value: await picker.inputValue(), enabled: await picker.isEnabled() };
  return { options, initial, enabledBefore, after, trace, fresh };
}

// --- 8. A refusal shows the host's text for its code, not the one for its status -------------

/** The second message of a conversation is sent under the first one's id (rewritten on its way
 * out, as a buggy or replaying client would): the orchestrator refuses it with 409
 * `message_id_taken`, and the island must say that, not "a reply is already being written". */
async function refusalText(page) {
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  let firstId = null;
  const isChat = (url) => new URL(url).pathname.endsWith('/apps/tamebi/api/chat');
  await page.route(isChat, async (route) => {
    const body = JSON.parse(route.request().postData() ?? '{}');
    const last = body.messages?.at(-1);
    if (firstId === null) {
      firstId = last?.id ?? null;
      return route.continue();
    }
    last.id = firstId;
    return route.continue({ postData: JSON.stringify(body) });
  });
  try {
    await say(page, 'code check one');
    await replyDone(page);
    const refused = page.waitForResponse((r) => isChat(r.url()) && r.request().method() === 'POST');
    await say(page, 'code check two');
    const answer = await refused;
    const shown = page.getByTestId('chat-error');
    await shown.waitFor({ timeout: WAIT });
    await page.screenshot({ path: join(ARTIFACTS, 'refusal-text.png'), fullPage: true });
    return { status: answer.status(), body: await answer.json(), shown: await shown.innerText() };
  } finally {
    await page.unroute(isChat);
  }
}

// --- 8b. Stop ends the reply on the server too; the next message is taken at once ---------

async function stopAtOnce(page) {
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  const isStop = (url) => /\/apps\/tamebi\/api\/chat\/[^/]+\/stop$/.test(new URL(url).pathname);
  const stopped = page.waitForResponse((r) => isStop(r.url()) && r.request().method() === 'POST', { timeout: WAIT });
  await say(page, 'stop check, please');
  await page.locator('.message', { hasText: 'Stopped half' }).waitFor({ timeout: WAIT });
  await page.getByTestId('stop').click();
  const answer = await stopped;
  const note = page.getByTestId('interrupted-note').last();
  await note.waitFor({ timeout: WAIT });
  await replyDone(page);
  await say(page, 'code check after the stop');
  await page.locator('.message', { hasText: 'Noted.' }).waitFor({ timeout: WAIT });
  await replyDone(page);
  const error = page.getByTestId('chat-error');
  await page.screenshot({ path: join(ARTIFACTS, 'stop.png'), fullPage: true });
  return { status: answer.status(), note: await note.innerText(), refusal: (await error.count()) > 0 ? await error.innerText() : null };
}

// --- 9. The admin settings section inside a Nextcloud-like page, in each theme (issue #34) ---

/** The section as PHP rendered it, placed as Nextcloud places a settings section: in its
 * content area, under the page's one (visually hidden) level-one heading, with Nextcloud's
 * theme variables (the dev host's emulation) and the few rules of its server CSS the
 * section's classes use. */
async function adminPage(context) {
  const section = await readFile(ADMIN_SECTION, 'utf8');
  const themeCss = await readFile(new URL('../dev-host/nextcloud-theme.css', import.meta.url), 'utf8');
  const serverCss = `
    body { font: 15px/1.5 system-ui, sans-serif; }
    .hidden-visually { position: absolute; left: -10000px; top: auto; width: 1px; height: 1px; overflow: hidden; }
    #app-content { padding: 0 20px; }
    .section { padding: 30px; border-bottom: 1px solid var(--color-border); }
    .section h2 { font-size: 20px; font-weight: bold; }
    table.grid th { color: var(--color-text-maxcontrast); font-weight: normal; text-align: left; }
    table.grid td, table.grid th { padding: 4px 8px; border-bottom: 1px solid var(--color-border); }`;
  const page = await context.newPage();
  try {
    await page.setContent(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Administration settings - Nextcloud</title>
<style>${themeCss}${serverCss}</style></head>
<body data-theme-light data-themes="light"><main id="content"><h1 class="hidden-visually">Administration settings</h1>
<div id="app-content">${section}</div></main></body></html>`);
    const out = { sectionChars: section.length, headings: await page.locator('h2, h3').allInnerTexts() };
    for (const theme of ['light', 'dark', 'light-highcontrast', 'dark-highcontrast']) {
      await setPageTheme(page, theme);
      out[theme] = await axe(page);
    }
    await page.screenshot({ path: join(ARTIFACTS, 'admin-page.png'), fullPage: true });
    return out;
  } finally {
    await page.close();
  }
}

main().catch((error) => {
  console.error(`browser-tests: ${error?.stack ?? error}`);
  process.exit(1);
});
