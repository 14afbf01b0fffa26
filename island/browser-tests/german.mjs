#!/usr/bin/env node
// The island in German (issue #34), in a real Chromium against the stack tests/island_browser.rs
// started, after alice set her Nextcloud language to German: what she reads in the page, in an
// approval card and in the week grid frame (weekday names, and the week starting on Monday).
//
// Owns: the clicks and probes of these checks and one JSON document on stdout (facts only; the
// Rust test decides). Must never: sleep, or touch the stack other than through the browser.
//
// Environment: BASE_URL (the dev host), ARTIFACTS (a directory for screenshots).
import { join } from 'node:path';
import { appFrame, finishedTools, inChat, replyDone, required, runCheck, say } from './lib.mjs';

const BASE = required('BASE_URL').replace(/\/+$/, '');
const ARTIFACTS = required('ARTIFACTS');
const result = { checks: {}, console: [], pageErrors: [] };

await inChat({ base: BASE, artifacts: ARTIFACTS, result, record: 'response' }, async ({ page }) => {
  await runCheck(result, 'the_page_is_german', () => pageText(page));
  await runCheck(result, 'the_week_grid_is_german_and_starts_on_monday', () => weekGrid(page));
  await runCheck(result, 'the_approval_card_is_german', () => approvalCard(page));
});

async function pageText(page) {
  return {
    lang: await page.evaluate(() => document.documentElement.lang),
    locale: await page.evaluate(() => document.documentElement.dataset.locale ?? null),
    newConversation: await page.getByTestId('new-conversation').innerText(),
    memory: await page.getByTestId('memory-toggle').innerText(),
    send: await page.getByTestId('send').innerText(),
    placeholder: await page.getByTestId('composer').getAttribute('placeholder'),
    // The main region's accessible name: its aria-labelledby heading (issue #34's level-one heading).
    mainLabel: await page.evaluate(() => {
      const id = document.querySelector('main')?.getAttribute('aria-labelledby');
      return id ? document.getElementById(id)?.textContent?.trim() ?? null : null;
    }),
  };
}

async function weekGrid(page) {
  await page.getByTestId('new-conversation').click();
  await say(page, 'Show my calendar for the week of 12 January 2026');
  const tool = finishedTools(page, 'calendar_events');
  await tool.waitFor();
  const { iframe, frame } = await appFrame(tool);
  await frame.locator('.event', { hasText: 'Quarterly planning' }).waitFor();
  await replyDone(page);
  const grid = await frame.evaluate(() => ({
    lang: document.documentElement.lang,
    title: document.getElementById('title')?.textContent ?? '',
    heads: [...document.querySelectorAll('.day-head button')].map((b) => b.textContent),
    days: [...document.querySelectorAll('.day-head button')].map((b) => b.dataset.day),
    firstLabel: document.querySelector('.day-head button')?.getAttribute('aria-label') ?? '',
    events: [...document.querySelectorAll('.event')].map((b) => b.getAttribute('aria-label')),
  }));
  await iframe.screenshot({ path: join(ARTIFACTS, 'week-grid-de.png') });
  await tool.locator('summary').click();
  return { ...grid, status: await tool.locator('.tool__status').innerText() };
}

async function approvalCard(page) {
  await page.getByTestId('new-conversation').click();
  await page.locator('.message').first().waitFor({ state: 'detached' });
  await say(page, 'Please write the denied note');
  const card = page.getByTestId('approval-card');
  await card.waitFor();
  const seen = {
    cardText: await card.innerText(),
    label: await card.getAttribute('aria-label'),
    approve: await card.getByTestId('approve').innerText(),
    deny: await card.getByTestId('deny').innerText(),
  };
  await page.screenshot({ path: join(ARTIFACTS, 'approval-card-de.png'), fullPage: true });
  await card.getByTestId('deny').click();
  const tool = page.locator('.tool[data-tool="files_write"][data-state="output-denied"]');
  await tool.waitFor();
  await replyDone(page);
  return { ...seen, status: await tool.locator('.tool__status').innerText() };
}
