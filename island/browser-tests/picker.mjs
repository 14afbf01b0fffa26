#!/usr/bin/env node
// "Ask Tamebi" in another app's Smart Picker (issue #29), in a real Chromium against the stack
// tests/island_browser.rs started: the dev host's /composer page plays Talk's composer and
// Nextcloud's reference picker (dev-host/smart-picker.js), and the island runs in picker mode
// inside it, in alice's own session.
//
// Owns: the clicks and probes of these checks and one JSON document on stdout (facts only; the
// Rust test decides). Must never: sleep, or touch the stack other than through the browser.
//
// Environment: BASE_URL (the dev host), ARTIFACTS (a directory for screenshots).
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { replyDone, required, runCheck, say, watchedPage, withBrowser } from './lib.mjs';

const BASE = required('BASE_URL').replace(/\/+$/, '');
const ARTIFACTS = required('ARTIFACTS');
const result = { checks: {}, console: [], pageErrors: [] };

await mkdir(ARTIFACTS, { recursive: true });
await withBrowser(async (context) => {
  const page = await watchedPage(context, result);
  // Every chat request's body: the picker's carry their origin, the main page's none.
  const chats = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/apps/tamebi/api/chat' && r.method() === 'POST') chats.push(JSON.parse(r.postData() ?? '{}'));
  });
  await page.goto(`${BASE}/?as=alice`);
  await page.goto(`${BASE}/composer?app=spreed`);
  const composer = page.getByTestId('host-composer');
  await composer.waitFor();

  await runCheck(result, 'picker_inserts_the_answer_after_an_approval', () => insertAnswer(page, composer, chats));
  await runCheck(result, 'picker_cancel_inserts_nothing', () => cancel(page, composer));
  await runCheck(result, 'picker_inserts_a_host_built_link', () => insertLink(page, composer));
  await runCheck(result, 'picker_conversation_continues_on_the_main_page', () => continueOnMainPage(page, chats));
});
process.stdout.write(`${JSON.stringify(result)}\n`);

/** Opens the Smart Picker and picks "Ask Tamebi"; returns the picker's dialog. */
async function openTamebi(page) {
  await page.locator('#smart-picker').click();
  const dialog = page.getByTestId('smart-picker');
  const providers = await dialog.locator('.smart-picker__provider').allInnerTexts();
  await dialog.locator('.smart-picker__provider[data-provider="tamebi"]').click();
  await dialog.getByTestId('composer').waitFor();
  return { dialog, providers };
}

async function insertAnswer(page, composer, chats) {
  const { dialog, providers } = await openTamebi(page);
  const layout = {
    sidebar: await dialog.locator('nav').count(),
    memoryToggle: await dialog.getByTestId('memory-toggle').count(),
    insertBeforeReply: await dialog.getByTestId('picker-insert-answer').count(),
  };
  await say(page, 'Please write the picker note');
  const card = dialog.getByTestId('approval-card');
  await card.waitFor();
  const insertWhileAsking = await dialog.getByTestId('picker-insert-answer').count();
  await page.screenshot({ path: join(ARTIFACTS, 'picker-approval.png') });
  await card.getByTestId('approve').click();
  await dialog.locator('.tool[data-tool="files_write"][data-state="output-available"]').waitFor();
  await replyDone(page);
  const insert = dialog.getByTestId('picker-insert-answer');
  await insert.waitFor();
  const links = await dialog.getByTestId('picker-insert-link').evaluateAll((bs) => bs.map((b) => ({ text: b.textContent.trim(), url: b.dataset.url })));
  const composerBefore = await composer.inputValue();
  await page.screenshot({ path: join(ARTIFACTS, 'picker-answer.png') });
  await insert.click();
  await dialog.waitFor({ state: 'detached' });
  return {
    providers,
    ...layout,
    insertWhileAsking,
    links,
    composerBefore,
    composer: await composer.inputValue(),
    origins: chats.map((c) => c.origin ?? null),
  };
}

async function cancel(page, composer) {
  const before = await composer.inputValue();
  const { dialog } = await openTamebi(page);
  await say(page, 'picker small talk');
  await replyDone(page);
  await dialog.getByTestId('picker-insert-answer').waitFor();
  await dialog.getByTestId('picker-cancel').click();
  await dialog.waitFor({ state: 'detached' });
  return { before, after: await composer.inputValue() };
}

async function insertLink(page, composer) {
  await composer.fill('');
  const { dialog } = await openTamebi(page);
  await say(page, 'List my files');
  await dialog.locator('.tool[data-tool="files_list"][data-state="output-available"]').waitFor();
  await replyDone(page);
  const buttons = dialog.getByTestId('picker-insert-link');
  await buttons.first().waitFor();
  const links = await buttons.evaluateAll((bs) => bs.map((b) => ({ text: b.textContent.trim(), url: b.dataset.url })));
  const file = buttons.filter({ hasText: 'Insert link to file' }).first();
  const chosen = await file.getAttribute('data-url');
  await file.click();
  await dialog.waitFor({ state: 'detached' });
  return { links, chosen, composer: await composer.inputValue() };
}

async function continueOnMainPage(page, chats) {
  await page.goto(`${BASE}/apps/tamebi/`);
  await page.getByTestId('composer').waitFor();
  const item = page.locator('.conversations__item', { hasText: 'Please write the picker note' });
  await item.waitFor();
  const marked = await page.locator('.conversations__item').evaluateAll((items) =>
    items.map((li) => ({ title: li.querySelector('.conversations__open')?.firstChild?.textContent?.trim() ?? '', origin: li.querySelector('[data-testid="conversation-origin"]')?.textContent ?? null })),
  );
  await item.locator('.conversations__open').click();
  await page.locator('.message--assistant', { hasText: 'Saved the picker note.' }).waitFor();
  const sent = chats.length;
  await say(page, 'code check');
  await page.locator('.message--assistant', { hasText: 'Noted.' }).waitFor();
  await replyDone(page);
  await page.screenshot({ path: join(ARTIFACTS, 'picker-continued.png') });
  const after = await page.locator('.conversations__item', { hasText: 'Please write the picker note' }).getByTestId('conversation-origin').innerText();
  const continued = chats.slice(sent);
  return {
    marked,
    messages: await page.locator('.message').count(),
    continuedIds: continued.map((c) => c.id),
    pickerId: chats[0]?.id ?? null,
    continuedOrigins: continued.map((c) => c.origin ?? null),
    originAfter: after,
  };
}
