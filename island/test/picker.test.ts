// @vitest-environment jsdom
// The Smart Picker mode (issue #29): where a picker conversation comes from, what may be
// inserted (the answer, or links the host builds; never a URL a tool wrote), and the picker
// element's contract with Nextcloud's reference picker.
import type { UIMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { chatBody } from '../src/chat';
import { answerText, awaitsDecision, insertableLinks } from '../src/picker/choices';
import { knownOrigin, originOfPage } from '../src/picker/origin';
import { PICKER_PROVIDER_ID, registerPickerElement, renderPicker } from '../src/picker/register';

const ORIGIN = 'https://cloud.example';

function page(contentClass: string | null): Document {
  const doc = document.implementation.createHTMLDocument('x');
  if (contentClass !== null) doc.body.innerHTML = `<main id="content" class="${contentClass}"></main>`;
  return doc;
}

function tool(output: unknown, state: 'output-available' | 'output-error' = 'output-available'): UIMessage['parts'][number] {
  return (state === 'output-available'
    ? { type: 'dynamic-tool', toolName: 't', toolCallId: 'c', state, input: {}, output }
    : { type: 'dynamic-tool', toolName: 't', toolCallId: 'c', state, input: {}, errorText: 'no' }) as UIMessage['parts'][number];
}

function reply(...parts: UIMessage['parts']): UIMessage {
  return { id: crypto.randomUUID(), role: 'assistant', parts };
}

const ask: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'Where is the report?' }] };

describe('the origin of a picker conversation', () => {
  it('comes from the app Nextcloud renders the page for, mapped onto the closed set', () => {
    expect(originOfPage(page('app-spreed'))).toBe('talk');
    expect(originOfPage(page('app-mail'))).toBe('mail');
    expect(originOfPage(page('app-collectives'))).toBe('collectives');
    expect(originOfPage(page('app-files'))).toBe('text');
    expect(originOfPage(page('app-notes'))).toBe('text');
    // Anything else is the Smart Picker of some app; an app id never goes out as it is.
    for (const other of ['app-deck', 'app-__proto__', 'app-constructor', 'spreed', '']) expect(originOfPage(page(other))).toBe('picker');
    expect(originOfPage(page(null))).toBe('picker');
  });

  it('is sent with every turn of the picker and never from the main page', () => {
    const base = { id: 'c1', messages: [] };
    expect(chatBody(base, null, 'talk')).toEqual({ id: 'c1', messages: [], origin: 'talk' });
    expect(chatBody(base, 'planner', null)).toEqual({ id: 'c1', messages: [], assistant: 'planner' });
    expect(chatBody(base, null, null)).toEqual(base);
  });

  it('is read back from the list only when it is one of ours', () => {
    expect(knownOrigin('talk')).toBe('talk');
    for (const bad of ['spreed', 'Talk', '', null, 3, undefined]) expect(knownOrigin(bad)).toBeNull();
  });
});

describe('the answer to insert', () => {
  it('is the latest reply\'s Markdown, text parts only', () => {
    const messages = [ask, reply({ type: 'text', text: '**The report** is in /Reports. ' }, tool({}), { type: 'text', text: 'Anything else?' })];
    expect(answerText(messages)).toBe('**The report** is in /Reports.\n\nAnything else?');
  });

  it('is not offered while an approval card waits, even after text', () => {
    const asking = { type: 'dynamic-tool', toolName: 'files_write', toolCallId: 'c', state: 'approval-requested', input: {}, approval: { id: 'ap' } } as UIMessage['parts'][number];
    expect(awaitsDecision([ask, reply({ type: 'text', text: 'I will write it.' }, asking)])).toBe(true);
    expect(awaitsDecision([ask, reply({ type: 'text', text: 'Done.' }, tool({}))])).toBe(false);
    expect(awaitsDecision([ask])).toBe(false);
  });

  it('does not exist before a reply with text', () => {
    expect(answerText([])).toBeNull();
    expect(answerText([ask])).toBeNull();
    expect(answerText([ask, reply(tool({}))])).toBeNull();
  });
});

describe('the links to insert', () => {
  const listing = { structuredContent: { path: 'Reports', entries: [
    { name: 'Q3.pdf', path: 'Reports/Q3.pdf', file_id: 42, is_dir: false },
    { name: 'Old', path: 'Reports/Old', file_id: 43, is_dir: true },
  ] } };

  it('are built by the host from ids, paths and dates, absolute, newest result first, each once', () => {
    const events = { structuredContent: { events: [
      { title: 'Planning', start: '2026-01-15T09:00:00Z', end: '2026-01-15T10:00:00Z', all_day: false },
      { title: 'Holiday', start: '2026-01-19', end: '2026-01-20', all_day: true },
    ] } };
    const board = { structuredContent: { board_id: 3, stacks: [{ stack_id: 1, title: 'To do', order: 0, cards: [{ card_id: 9, title: 'Ship it', order: 0 }] }] } };
    const links = insertableLinks([ask, reply(tool(listing)), reply(tool(events), tool(board)), reply(tool(listing))], '/index.php', ORIGIN, 'Europe/Berlin');
    expect(links).toEqual([
      { kind: 'file', label: 'Q3.pdf', url: `${ORIGIN}/index.php/apps/files/?fileid=42` },
      { kind: 'folder', label: 'Old', url: `${ORIGIN}/index.php/apps/files/?dir=%2FReports%2FOld` },
      { kind: 'card', label: 'Ship it', url: `${ORIGIN}/index.php/apps/deck/board/3/card/9` },
      { kind: 'event', label: 'Planning', url: `${ORIGIN}/index.php/apps/calendar/timeGridDay/2026-01-15` },
      { kind: 'event', label: 'Holiday', url: `${ORIGIN}/index.php/apps/calendar/timeGridDay/2026-01-19` },
    ]);
    // A single file's result (files_read, files_write) names its file too.
    expect(insertableLinks([reply(tool({ structuredContent: { path: 'notes.md', file_id: 7, created: true } }))], '', ORIGIN)).toEqual([
      { kind: 'file', label: 'notes.md', url: `${ORIGIN}/apps/files/?fileid=7` },
    ]);
  });

  it('put an event on its day in the person\'s time zone', () => {
    const late = { structuredContent: { events: [{ title: 'Late call', start: '2026-01-15T23:30:00Z', all_day: false }] } };
    expect(insertableLinks([reply(tool(late))], '', ORIGIN, 'Europe/Berlin')[0]?.url).toBe(`${ORIGIN}/apps/calendar/timeGridDay/2026-01-16`);
    expect(insertableLinks([reply(tool(late))], '', ORIGIN, 'America/New_York')[0]?.url).toBe(`${ORIGIN}/apps/calendar/timeGridDay/2026-01-15`);
  });

  it('never carry a URL a tool wrote, nor an id or path that is not clean', () => {
    const hostile = { structuredContent: {
      url: 'https://evil.example/', link: '//evil.example', href: 'javascript:alert(1)',
      entries: [
        { name: 'phish', path: 'x', url: 'https://evil.example/', is_dir: false },
        { name: 'a', path: 'a', file_id: '42', is_dir: false },
        { name: 'b', path: 'b', file_id: 1.5, is_dir: false },
        { name: 'c', path: 'c', file_id: -1, is_dir: false },
        { name: 'up', path: '../../etc', is_dir: true },
        { name: 'dot', path: 'a/./b', is_dir: true },
        { name: 'ctl', path: 'a\u0000b', is_dir: true },
        { name: 'bs', path: 'a\\b', is_dir: true },
      ],
      events: [{ title: 'bad', start: 'tomorrow', all_day: false }, { title: 'Feb 30', start: '2026-02-30', all_day: true }],
    } };
    const cards = { structuredContent: { board_id: '3', stacks: [{ cards: [{ card_id: 9, title: 'x' }] }] } };
    expect(insertableLinks([reply(tool(hostile), tool(cards))], '', ORIGIN)).toEqual([]);
  });

  it('come only from results that arrived, not from errors or the model\'s text', () => {
    const failed = { isError: true, structuredContent: listing.structuredContent };
    const said = reply({ type: 'text', text: 'See https://evil.example/ or /apps/files/?fileid=42' });
    expect(insertableLinks([reply(tool(failed)), reply(tool(listing, 'output-error')), said], '', ORIGIN)).toEqual([]);
    // The person's own message is never a source either.
    const user: UIMessage = { id: 'u', role: 'user', parts: [tool(listing)] as UIMessage['parts'] };
    expect(insertableLinks([user], '', ORIGIN)).toEqual([]);
  });
});

describe('the picker element', () => {
  afterEach(() => {
    delete window._vue_richtext_custom_picker_elements;
    document.head.removeAttribute('data-requesttoken');
    document.body.innerHTML = '';
  });

  it('is registered once under the provider id, in @nextcloud/vue\'s registry, next to others', () => {
    const other = { id: 'assistant_text', callback: () => ({}), onDestroy: () => undefined, size: 'normal' };
    const registry: Record<string, unknown> = { assistant_text: other };
    Object.assign(window, { _vue_richtext_custom_picker_elements: registry });
    expect(registerPickerElement()).toBe(true);
    const entry = window._vue_richtext_custom_picker_elements?.[PICKER_PROVIDER_ID];
    expect(entry).toMatchObject({ id: 'tamebi', size: 'large' });
    expect(typeof entry?.callback).toBe('function');
    expect(typeof entry?.onDestroy).toBe('function');
    expect(registry.assistant_text).toBe(other);
    // Never replaced by a second load of the bundle.
    expect(registerPickerElement()).toBe(false);
    expect(window._vue_richtext_custom_picker_elements?.[PICKER_PROVIDER_ID]).toBe(entry);
  });

  it('mounts the chat in picker mode and says cancel only on the person\'s click', async () => {
    document.head.dataset.requesttoken = 'tok';
    document.body.innerHTML = `<main id="content" class="app-spreed"></main><div id="tamebi-config" data-config='${JSON.stringify({ apiBase: '/apps/tamebi/api', frameUrl: '/apps/tamebi/frame', user: { uid: 'alice', displayName: 'Alice' }, workspaceConnected: true })}'></div><div id="modal"></div>`;
    const el = document.getElementById('modal') as HTMLElement;
    const result = renderPicker(el);
    const events: string[] = [];
    result.element.addEventListener('submit', (e) => events.push(`submit:${(e as unknown as CustomEvent<string>).detail}`));
    result.element.addEventListener('cancel', () => events.push('cancel'));
    await Promise.resolve();
    expect(result.element.classList.contains('tamebi-island')).toBe(true);
    // One conversation: no list, no memory panel; nothing to insert yet.
    expect(el.querySelector('nav')).toBeNull();
    expect(el.querySelector('[data-testid="memory-toggle"]')).toBeNull();
    expect(el.querySelector('[data-testid="picker-insert-answer"]')).toBeNull();
    expect(events).toEqual([]);
    (el.querySelector('[data-testid="picker-cancel"]') as HTMLButtonElement).click();
    expect(events).toEqual(['cancel']);
    window._vue_richtext_custom_picker_elements = {};
    registerPickerElement();
    window._vue_richtext_custom_picker_elements?.[PICKER_PROVIDER_ID]?.onDestroy(el, result);
    expect(result.element.childElementCount).toBe(0);
  });

  it('shows one sentence instead of a half-working chat without a configuration', () => {
    const el = document.createElement('div');
    document.body.appendChild(el);
    const result = renderPicker(el);
    expect(result.object).toBeNull();
    expect(result.element.textContent).toMatch(/^Tamebi cannot start: /);
  });
});
