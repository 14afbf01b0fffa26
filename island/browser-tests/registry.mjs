#!/usr/bin/env node
// The registry managed inside Nextcloud (issue #30), in a real Chromium against the stack
// tests/island_browser.rs started: root, a Nextcloud admin, registers the probe MCP server on
// the dev host's admin settings page, builds an assistant from the tools it lists and allows
// personal assistants its tools; alice sees that assistant in the island's picker, builds her
// own, uses it and proposes it to the group staff; bob (in staff) sees it only once root
// approved it, and again only after root approved alice's later edit.
//
// Owns: the clicks and probes of these checks and one JSON document on stdout (facts only; the
// Rust test decides). Must never: sleep, or touch the stack other than through the browser.
//
// Environment: BASE_URL (the dev host), PROBE_URL (the probe server's MCP URL), ARTIFACTS.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { axe, required, runCheck, watchedPage, withBrowser } from './lib.mjs';

const BASE = required('BASE_URL').replace(/\/+$/, '');
const PROBE_URL = required('PROBE_URL');
const ARTIFACTS = required('ARTIFACTS');
const result = { checks: {}, console: [], pageErrors: [] };

await mkdir(ARTIFACTS, { recursive: true });
await withBrowser(async (context) => {
  const page = await watchedPage(context, result);
  page.on('dialog', (d) => d.accept());
  await runCheck(result, 'admin_registers_a_server_and_builds_an_assistant', () => adminBuilds(page));
  await runCheck(result, 'the_admins_assistant_is_in_the_picker', () => inPicker(page, 'alice'));
  await runCheck(result, 'a_person_builds_uses_and_proposes_their_own', () => personBuilds(page));
  await runCheck(result, 'a_proposal_is_seen_only_after_approval', () => approval(page));
  await runCheck(result, 'an_edit_needs_approval_again', () => reapproval(page));
});
process.stdout.write(`${JSON.stringify(result)}\n`);

async function as(page, uid, path) {
  await page.goto(`${BASE}/?as=${uid}`);
  if (path !== '/apps/tamebi/') await page.goto(`${BASE}${path}`);
}

async function adminPage(page) {
  await as(page, 'root', '/settings/admin/ai');
  await page.getByTestId('server-form').waitFor();
}

async function adminBuilds(page) {
  await adminPage(page);
  const form = page.getByTestId('server-form');
  // A bad URL is refused in words before anything is sent.
  await form.getByLabel('Name').fill('probe');
  await form.getByLabel('URL').fill('ftp://example.com/mcp');
  await page.getByTestId('server-save').click();
  const urlError = await page.locator('#tamebi-server-url-error').innerText();
  await form.getByLabel('URL').fill(PROBE_URL);
  await form.getByLabel('Credential').selectOption('none');
  await page.getByTestId('server-save').click();
  const row = page.getByTestId('admin-server-probe');
  await row.waitFor();
  const server = { cells: await row.locator('td').allInnerTexts(), health: await row.getByTestId('admin-server-health').innerText() };

  // The assistant: tools picked from what the probe lists, a typed pattern previewed first.
  const assistantForm = page.getByTestId('assistant-form');
  await assistantForm.getByLabel('Name', { exact: true }).fill('prober');
  await assistantForm.getByLabel('Description').fill('Uses the probe.');
  await assistantForm.getByLabel('Instructions').fill('Be brief.');
  const choices = await page.getByTestId('tamebi-assistant-pick').locator('option').allInnerTexts();
  await page.getByTestId('tamebi-assistant-typed').fill('probe/calendar_*');
  const preview = await page.getByTestId('tamebi-assistant-preview').innerText();
  await page.getByTestId('tamebi-assistant-typed').fill('probe/nothing_*');
  const refusedPreview = await page.getByTestId('tamebi-assistant-preview').innerText();
  await page.getByTestId('tamebi-assistant-typed').fill('probe/calendar_*');
  await page.getByTestId('tamebi-assistant-add-typed').click();
  await page.getByTestId('tamebi-assistant-pick').selectOption('probe/files_list');
  await page.getByTestId('tamebi-assistant-add-picked').click();
  const patterns = await page.getByTestId('tamebi-assistant-pattern').allInnerTexts();
  await page.getByTestId('assistant-save').click();
  const assistantRow = page.getByTestId('admin-assistant-prober');
  await assistantRow.waitFor();
  const assistant = await assistantRow.locator('td').allInnerTexts();

  // What personal assistants may use: every probe tool.
  await page.getByTestId('tamebi-policy-pick').selectOption('probe/*');
  await page.getByTestId('tamebi-policy-add-picked').click();
  await page.getByTestId('policy-save').click();
  await page.getByTestId('admin-status').filter({ hasText: 'Policy saved.' }).waitFor();
  const violations = await axe(page);
  await page.screenshot({ path: join(ARTIFACTS, 'admin-registry.png'), fullPage: true });
  return { urlError, server, choices, preview, refusedPreview, patterns, assistant, violations };
}

/** The island's picker options for `uid` (label text each). */
async function pickerOptions(page, uid) {
  await as(page, uid, '/apps/tamebi/');
  const picker = page.getByTestId('assistant-picker');
  await picker.waitFor();
  return picker.locator('option').allInnerTexts();
}

async function inPicker(page, uid) {
  return { options: await pickerOptions(page, uid) };
}

async function personBuilds(page) {
  await as(page, 'alice', '/apps/tamebi/');
  await page.getByTestId('personal-toggle').click();
  await page.getByTestId('personal-new').click();
  const form = page.getByTestId('personal-form');
  await page.getByTestId('personal-name').fill('Helper');
  await page.getByTestId('personal-instructions').fill('Answer in one line.');
  const offered = await page.getByTestId('personal-pick').locator('option').allInnerTexts();
  await page.getByTestId('personal-pick').selectOption('probe/*');
  await page.getByTestId('personal-add-picked').click();
  // Wider than the admin allows: refused in the form, before anything is sent.
  await page.getByTestId('personal-typed').fill('*/*');
  const wider = await page.getByTestId('personal-preview').innerText();
  await page.getByTestId('personal-typed').fill('');
  await form.getByLabel('Folders to search first (one per line, like /Projects)').fill('/Projects');
  await page.getByTestId('personal-save').click();
  const item = page.getByTestId('personal-Helper');
  await item.waitFor();
  const created = await item.getByTestId('personal-state').innerText();
  const violations = await axe(page);
  await page.screenshot({ path: join(ARTIFACTS, 'personal-assistants.png'), fullPage: true });

  // Use it: the picker now names it, as hers.
  await item.getByTestId('personal-use').click();
  const picker = page.getByTestId('assistant-picker');
  const picked = await picker.evaluate((s) => s.options[s.selectedIndex]?.text ?? '');

  // Propose it to staff: waiting for approval.
  await page.getByTestId('personal-toggle').click();
  // Her groups are offered (the dev host's DEV_GROUPS, as the app's IGroupManager answer).
  // allInnerTexts does not wait: the panel the toggle opens must be drawn first.
  const groupSelect = page.getByTestId('personal-Helper').getByTestId('personal-group');
  await groupSelect.waitFor();
  const groups = await groupSelect.locator('option').allInnerTexts();
  await groupSelect.selectOption('staff');
  await page.getByTestId('personal-Helper').getByTestId('personal-share').click();
  await page.getByTestId('personal-status').filter({ hasText: 'proposed to staff' }).waitFor();
  const proposed = await page.getByTestId('personal-Helper').getByTestId('personal-state').innerText();
  return { offered, wider, created, picked, groups, proposed, violations };
}

async function approve(page) {
  await adminPage(page);
  const proposal = page.getByTestId('proposal-Helper');
  await proposal.waitFor();
  const before = { state: await proposal.getByTestId('proposal-state').innerText(), text: await proposal.innerText() };
  await page.getByTestId('approve-Helper').click();
  await page.getByTestId('admin-status').filter({ hasText: 'approved for staff' }).waitFor();
  const after = await page.getByTestId('proposal-Helper').getByTestId('proposal-state').innerText();
  return { before, after };
}

async function approval(page) {
  const bobBefore = await pickerOptions(page, 'bob');
  const admin = await approve(page);
  const bobAfter = await pickerOptions(page, 'bob');
  const malloryAfter = await pickerOptions(page, 'carol');
  return { bobBefore, admin, bobAfter, malloryAfter };
}

async function reapproval(page) {
  await as(page, 'alice', '/apps/tamebi/');
  await page.getByTestId('personal-toggle').click();
  await page.getByTestId('personal-Helper').getByTestId('personal-edit').click();
  const notice = await page.getByTestId('personal-form').locator('p').first().innerText();
  await page.getByTestId('personal-instructions').fill('Answer in two lines.');
  await page.getByTestId('personal-save').click();
  await page.getByTestId('personal-status').filter({ hasText: 'Helper saved.' }).waitFor();
  const edited = await page.getByTestId('personal-Helper').getByTestId('personal-state').innerText();
  const bobBefore = await pickerOptions(page, 'bob');
  const admin = await approve(page);
  const bobAfter = await pickerOptions(page, 'bob');
  return { notice, edited, bobBefore, admin, bobAfter };
}
