import { describe, expect, it } from 'vitest';
import { AppHost, appRefFromOutput, frameSrc, type FrameRecord } from '../src/apps/host';
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

function setup(callTool = async () => ({ content: [], structuredContent: { ok: true } })) {
  const win = new FakeWindow();
  const opened: string[] = [];
  const calls: Array<[string, string, unknown]> = [];
  const host = new AppHost(
    {
      callTool: async (server, name, args) => { calls.push([server, name, args]); return callTool(); },
      openUrl: (url) => opened.push(url),
      linkBase: '',
      theme: () => 'light',
    },
    win as unknown as Window,
  );
  const frame = new FakeFrame();
  const heights: number[] = [];
  const record: FrameRecord = {
    server: 'nextcloud', resourceUri: 'ui://nextcloud/calendar-week', toolName: 'calendar_events',
    toolInput: { from: '2026-01-12' }, toolResult: { content: [], structuredContent: { events: [] } },
    onResize: (h) => heights.push(h),
  };
  host.register(frame as unknown as Window, record);
  return { win, host, frame, opened, calls, heights };
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

  it('turns a 403 from the relay into a JSON-RPC error', async () => {
    const { win, frame } = setup(async () => { throw new ApiError(403, 'This action is not allowed.', 'r1'); });
    win.emit(frame, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'mail_send' } });
    await flush();
    expect(frame.received[0]).toMatchObject({ id: 2, error: { message: 'This action is not allowed.' } });
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
    expect(frameSrc('/apps/tamebi/frame', ref!)).toBe('/apps/tamebi/frame?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Ffiles-table');
  });
  it('refuses anything but a ui:// uri and a plain server name', () => {
    expect(appRefFromOutput({ _meta: { ui: { resourceUri: 'https://evil.example' }, server: 'n' } })).toBeNull();
    expect(appRefFromOutput({ _meta: { ui: { resourceUri: 'ui://x' }, server: '../x' } })).toBeNull();
    expect(appRefFromOutput(null)).toBeNull();
  });
});
