import { describe, expect, it } from 'vitest';
import { AppHost, appRefFromOutput, frameSrc, OUTCOME_UNKNOWN_CODE, relayTimedOut, relayUnreachable, type ConfirmRequest, type FrameRecord } from '../src/apps/host';
import type { ToolHandling } from '../src/tools';
import { ApiError } from '../src/errors';

type Listener = (event: { source: unknown; data: unknown; origin: string }) => void;

class FakeWindow {
  listeners: Listener[] = [];
  addEventListener(_type: string, l: Listener) { this.listeners.push(l); }
  removeEventListener(_type: string, l: Listener) { this.listeners = this.listeners.filter((x) => x !== l); }
  emit(source: unknown, data: unknown, origin = 'null') { for (const l of this.listeners) l({ source, data, origin }); }
}

class FakeFrame {
  received: unknown[] = [];
  postMessage(message: unknown, target: string) { expect(target).toBe('*'); this.received.push(message); }
}

const flush = () => new Promise((r) => setTimeout(r, 0));

/** How the fake orchestrator classifies tools: mail_send and mail_save_draft need the person. */
function handlingOf(name: string): ToolHandling {
  if (name === 'mail_send' || name === 'mail_save_draft') return 'confirm';
  if (name === 'files_write') return 'refused';
  return 'relay';
}

interface SetupOptions {
  /** The person's answer to each confirmation (default: they never answer). */
  answer?: (request: ConfirmRequest) => Promise<boolean>;
  /** What the dispatch door does (default: answers `{status: 'sent'}`). */
  dispatch?: () => Promise<{ content: unknown[]; structuredContent?: unknown }>;
  /** The page's theme the host reads (default light). */
  theme?: 'light' | 'dark';
}

function setup(callTool = async () => ({ content: [], structuredContent: { ok: true } }), options: SetupOptions = {}) {
  const win = new FakeWindow();
  const opened: string[] = [];
  const calls: Array<[string, string, unknown]> = [];
  const dispatched: Array<[string, string, unknown]> = [];
  /** The conversation each request to the orchestrator named, in order. */
  const conversations: string[] = [];
  const asked: ConfirmRequest[] = [];
  const host = new AppHost(
    {
      callTool: async ({ conversation, server, name }, args) => { conversations.push(conversation); calls.push([server, name, args]); return callTool(); },
      describeTool: async ({ conversation, name }) => { conversations.push(conversation); return handlingOf(name); },
      dispatchTool: async ({ conversation, server, name }, args) => {
        conversations.push(conversation);
        dispatched.push([server, name, args]);
        return options.dispatch ? options.dispatch() : { content: [], structuredContent: { status: 'sent' } };
      },
      confirm: (request) => { asked.push(request); return options.answer ? options.answer(request) : new Promise(() => {}); },
      openUrl: (url) => opened.push(url),
      linkBase: '',
      themeContext: () => ({ theme: options.theme ?? 'light', styles: { variables: { '--color-background-primary': '#ffffff' } } }),
    },
    win as unknown as Window,
  );
  const frame = new FakeFrame();
  const heights: number[] = [];
  const record: FrameRecord = {
    conversation: 'conv-1', server: 'nextcloud', resourceUri: 'ui://nextcloud/calendar-week', toolName: 'calendar_events',
    toolInput: { from: '2026-01-12' }, toolResult: { content: [], structuredContent: { events: [] } },
    onResize: (h) => heights.push(h),
  };
  host.register(frame as unknown as Window, record);
  return { win, host, frame, opened, calls, heights, dispatched, asked, conversations };
}

describe('AppHost', () => {
  it('answers ui/initialize and sends input then result after initialized', async () => {
    const { win, frame } = setup();
    win.emit(frame, { jsonrpc: '2.0', id: 1, method: 'ui/initialize', params: { protocolVersion: '2026-01-26' } });
    await flush();
    expect(frame.received[0]).toMatchObject({ id: 1, result: { protocolVersion: '2026-01-26', hostCapabilities: { openLinks: {} } } });
    win.emit(frame, { jsonrpc: '2.0', method: 'ui/notifications/initialized' });
    await flush();
    expect(frame.received[1]).toMatchObject({ method: 'ui/notifications/tool-input', params: { arguments: { from: '2026-01-12' } } });
    expect(frame.received[2]).toMatchObject({ method: 'ui/notifications/tool-result', params: { structuredContent: { events: [] } } });
  });

  it('gives the page\'s theme in hostContext and tells initialized frames when it changes', async () => {
    const { win, host, frame } = setup(undefined, { theme: 'dark' });
    const early = new FakeFrame();
    host.register(early as unknown as Window, { conversation: 'conv-1', server: 'nextcloud', resourceUri: 'ui://x', toolName: 't', toolInput: {}, toolResult: { content: [] }, onResize: () => {} });
    win.emit(frame, { jsonrpc: '2.0', id: 1, method: 'ui/initialize', params: { protocolVersion: '2026-01-26' } });
    await flush();
    expect(frame.received[0]).toMatchObject({ id: 1, result: { hostContext: { theme: 'dark', styles: { variables: { '--color-background-primary': '#ffffff' } } } } });
    win.emit(frame, { jsonrpc: '2.0', method: 'ui/notifications/initialized' });
    await flush();
    const changed = { theme: 'light' as const, styles: { variables: { '--color-background-primary': '#fff' } } };
    host.themeChanged(changed);
    expect(frame.received.at(-1)).toEqual({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: changed });
    // A frame before its handshake hears nothing yet (the spec: nothing before initialized).
    expect(early.received).toEqual([]);
  });

  it('ignores messages from windows it did not register, whatever their origin says', async () => {
    const { win, calls } = setup();
    const stranger = new FakeFrame();
    win.emit(stranger, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'files_list' } }, 'http://localhost');
    win.emit(null, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'files_list' } });
    await flush();
    expect(calls).toEqual([]);
    expect(stranger.received).toEqual([]);
  });

  it('relays tools/call to the frame\'s own server', async () => {
    const { win, frame, calls } = setup();
    win.emit(frame, { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'calendar_event_get', arguments: { href: '/e.ics', server: 'mail' } } });
    await flush();
    expect(calls).toEqual([['nextcloud', 'calendar_event_get', { href: '/e.ics', server: 'mail' }]]);
    expect(frame.received[0]).toMatchObject({ id: 'c1', result: { structuredContent: { ok: true } } });
  });

  it('names the frame\'s own conversation at every door, whatever the frame says', async () => {
    let release: (ok: boolean) => void = () => {};
    const { win, host, frame, conversations } = setup(undefined, { answer: () => new Promise((r) => { release = r; }) });
    const other = new FakeFrame();
    host.register(other as unknown as Window, { conversation: 'conv-2', server: 'nextcloud', resourceUri: 'ui://nextcloud/files-table', toolName: 'files_list', toolInput: {}, toolResult: { content: [] }, onResize: () => {} });
    win.emit(frame, { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'files_list', arguments: { conversation: 'conv-2' } } });
    await flush();
    win.emit(other, { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'mail_send', arguments: { conversation: 'conv-1' } } });
    await flush();
    release(true);
    await flush();
    await flush();
    // frame: describe + call in conv-1; other: describe + dispatch in conv-2.
    expect(conversations).toEqual(['conv-1', 'conv-1', 'conv-2', 'conv-2']);
  });

  it('tells a frame its own text by status for a tool server that timed out or was unreachable, never a body\'s', async () => {
    // The Nextcloud app's generic text, with a request id, as it really arrives; and a proxy's.
    const failures = [
      new ApiError(504, 'Something went wrong. Please try again.', 'r1'),
      new ApiError(502, 'Bad gateway from a proxy', null),
      new ApiError(500, 'x', 'r2'),
    ];
    const told: unknown[] = [];
    for (const failure of failures) {
      const { win, frame } = setup(async () => { throw failure; });
      win.emit(frame, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'files_list' } });
      await flush();
      told.push((frame.received[0] as { error?: { message?: string } }).error?.message);
    }
    expect(told).toEqual([relayTimedOut(), relayUnreachable(), 'The tool call failed.']);
    expect(relayTimedOut()).toContain('not known');
    expect(relayTimedOut()).not.toContain('try again.');
  });

  it('turns a 403 from the relay into a JSON-RPC error', async () => {
    const { win, frame } = setup(async () => { throw new ApiError(403, 'This action is not allowed.', 'r1'); });
    win.emit(frame, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'files_list' } });
    await flush();
    expect(frame.received[0]).toMatchObject({ id: 2, error: { message: 'This action is not allowed.' } });
  });

  it('leaves a tool neither door takes to the relay, which refuses and audits it', async () => {
    const { win, frame, calls, dispatched, asked } = setup(async () => { throw new ApiError(403, 'no', 'r1'); });
    win.emit(frame, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'files_write', arguments: { path: 'x' } } });
    await flush();
    expect(calls).toEqual([['nextcloud', 'files_write', { path: 'x' }]]);
    expect(asked).toEqual([]);
    expect(dispatched).toEqual([]);
    expect(frame.received[0]).toMatchObject({ id: 3, error: { message: 'This action is not allowed.' } });
  });

  it('never sends an effectful request the person has not confirmed', async () => {
    const { win, host, frame, calls, dispatched, asked } = setup();
    win.emit(frame, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'mail_send', arguments: { to: ['bob@example.com'], subject: 'Hi', body: 'x' } } });
    await flush();
    expect(asked).toHaveLength(1);
    expect(calls).toEqual([]);
    expect(dispatched).toEqual([]);
    expect(frame.received).toEqual([]);
    // A second request while the first is open is refused, not queued.
    win.emit(frame, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'mail_send', arguments: { to: ['eve@example.com'], subject: 'x', body: 'y' } } });
    await flush();
    expect(asked).toHaveLength(1);
    expect(frame.received[0]).toMatchObject({ id: 5, error: { message: 'A confirmation is already open.' } });
    // Nor may another frame replace the open question with its own.
    const other = new FakeFrame();
    host.register(other as unknown as Window, { conversation: 'conv-2', server: 'mail', resourceUri: 'ui://mail/compose', toolName: 'mail_compose', toolInput: {}, toolResult: { content: [] }, onResize: () => {} });
    win.emit(other, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'mail_send', arguments: { to: ['eve@example.com'], subject: 'x', body: 'y' } } });
    await flush();
    expect(asked).toHaveLength(1);
    expect(other.received[0]).toMatchObject({ id: 9, error: { message: 'A confirmation is already open.' } });
  });

  it('a cancelled confirmation dispatches nothing and tells the frame', async () => {
    const { win, frame, dispatched } = setup(undefined, { answer: async () => false });
    win.emit(frame, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'mail_save_draft', arguments: { to: [], subject: 's', body: 'b' } } });
    await flush();
    expect(dispatched).toEqual([]);
    expect(frame.received[0]).toMatchObject({ id: 6, error: { message: 'Cancelled by the person; nothing was done.' } });
  });

  it('dispatches exactly the arguments the person confirmed, to the frame\'s own server', async () => {
    let release: (ok: boolean) => void = () => {};
    const { win, frame, dispatched, asked, calls } = setup(undefined, { answer: () => new Promise((r) => { release = r; }) });
    const args = { to: ['bob@example.com'], cc: [], bcc: [], subject: 'Budget', body: 'Hi Bob', server: 'evil' };
    win.emit(frame, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'mail_send', arguments: args } });
    await flush();
    expect(asked[0]).toEqual({ conversation: 'conv-1', server: 'nextcloud', name: 'mail_send', arguments: args });
    // Whatever happens to the frame's copy after the question was asked changes nothing.
    args.to.push('eve@example.com');
    release(true);
    await flush();
    await flush();
    expect(calls).toEqual([]);
    expect(dispatched).toEqual([['nextcloud', 'mail_send', { to: ['bob@example.com'], cc: [], bcc: [], subject: 'Budget', body: 'Hi Bob', server: 'evil' }]]);
    expect(frame.received[0]).toMatchObject({ id: 7, result: { structuredContent: { status: 'sent' } } });
  });

  it('a confirmed dispatch without an answer is an unknown outcome; a refusal is not', async () => {
    const outcomes: unknown[] = [];
    for (const failure of [new ApiError(500, 'timeout', 'r1'), new ApiError(504, null, null), new TypeError('Failed to fetch'), new ApiError(403, 'no', 'r2')]) {
      const { win, frame } = setup(undefined, { answer: async () => true, dispatch: async () => { throw failure; } });
      win.emit(frame, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'mail_send', arguments: { to: ['bob@example.com'], subject: 's', body: 'b' } } });
      await flush();
      await flush();
      outcomes.push((frame.received[0] as { error: { code: number; message: string } }).error);
    }
    expect(outcomes.slice(0, 3).map((e) => (e as { code: number }).code)).toEqual([OUTCOME_UNKNOWN_CODE, OUTCOME_UNKNOWN_CODE, OUTCOME_UNKNOWN_CODE]);
    expect((outcomes[0] as { message: string }).message).toContain('Sent folder');
    expect(outcomes[3]).toEqual({ code: -32000, message: 'This action is not allowed.' });
  });

  it('opens only host-built links', async () => {
    const { win, frame, opened } = setup();
    win.emit(frame, { jsonrpc: '2.0', id: 1, method: 'ui/open-link', params: { url: '//evil.example' } });
    win.emit(frame, { jsonrpc: '2.0', id: 2, method: 'ui/open-link', params: { url: 'tamebi:day/2026-01-15' } });
    await flush();
    expect(opened).toEqual(['/apps/calendar/timeGridDay/2026-01-15']);
    expect(frame.received[0]).toMatchObject({ id: 1, error: { code: -32000 } });
    expect(frame.received[1]).toMatchObject({ id: 2, result: {} });
  });

  it('clamps resizes', async () => {
    const { win, frame, heights } = setup();
    win.emit(frame, { jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: 50000 } });
    win.emit(frame, { jsonrpc: '2.0', method: 'ui/notifications/size-changed', params: { height: 1 } });
    await flush();
    expect(heights).toEqual([1200, 60]);
  });

  it('drops malformed messages without answering', async () => {
    const { win, frame, calls } = setup();
    win.emit(frame, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 5 } });
    win.emit(frame, 'not json-rpc');
    await flush();
    expect(frame.received).toEqual([]);
    expect(calls).toEqual([]);
  });

  it('forgets unregistered frames', async () => {
    const { win, host, frame, calls } = setup();
    host.unregister(frame as unknown as Window);
    win.emit(frame, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'files_list' } });
    await flush();
    expect(calls).toEqual([]);
  });
});

describe('appRefFromOutput and frameSrc', () => {
  it('reads the app reference from a tool output', () => {
    const ref = appRefFromOutput({ content: [], _meta: { ui: { resourceUri: 'ui://nextcloud/files-table' }, server: 'nextcloud' } });
    expect(ref).toEqual({ server: 'nextcloud', resourceUri: 'ui://nextcloud/files-table' });
    expect(frameSrc('/apps/tamebi/frame', ref!, 'conv_1')).toBe('/apps/tamebi/frame?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Ffiles-table&conversation=conv_1');
  });
  it('refuses anything but a ui:// uri and a plain server name', () => {
    expect(appRefFromOutput({ _meta: { ui: { resourceUri: 'https://evil.example' }, server: 'n' } })).toBeNull();
    expect(appRefFromOutput({ _meta: { ui: { resourceUri: 'ui://x' }, server: '../x' } })).toBeNull();
    expect(appRefFromOutput(null)).toBeNull();
  });
});
