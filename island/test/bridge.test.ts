import { describe, expect, it } from 'vitest';
import { clampHeight, MAX_FRAME_HEIGHT, MAX_MESSAGE_BYTES, MIN_FRAME_HEIGHT, parseFrameMessage } from '../src/apps/bridge';

const rpc = (method: string, params?: unknown, id: unknown = 1) => ({ jsonrpc: '2.0', id, method, params });
const note = (method: string, params?: unknown) => ({ jsonrpc: '2.0', method, params });

describe('parseFrameMessage accepts the protocol', () => {
  it('ui/initialize', () => {
    expect(parseFrameMessage(rpc('ui/initialize', { protocolVersion: '2026-01-26', appInfo: {}, appCapabilities: {} }))).toEqual({
      kind: 'initialize', id: 1, protocolVersion: '2026-01-26',
    });
  });
  it('tools/call with a string id', () => {
    expect(parseFrameMessage(rpc('tools/call', { name: 'calendar_event_get', arguments: { href: '/x.ics' } }, 'a1'))).toEqual({
      kind: 'tools-call', id: 'a1', name: 'calendar_event_get', arguments: { href: '/x.ics' },
    });
  });
  it('tools/call without arguments', () => {
    expect(parseFrameMessage(rpc('tools/call', { name: 'files_list' }))).toMatchObject({ arguments: {} });
  });
  it('notifications', () => {
    expect(parseFrameMessage(note('ui/notifications/initialized'))).toEqual({ kind: 'initialized' });
    expect(parseFrameMessage(note('ui/notifications/size-changed', { width: 300, height: 500 }))).toEqual({ kind: 'size-changed', height: 500 });
    expect(parseFrameMessage(note('notifications/message', { level: 'info', data: 'x' }))).toEqual({ kind: 'log' });
  });
  it('open-link and ping', () => {
    expect(parseFrameMessage(rpc('ui/open-link', { url: 'tamebi:file/1' }))).toEqual({ kind: 'open-link', id: 1, url: 'tamebi:file/1' });
    expect(parseFrameMessage(rpc('ping', undefined, 7))).toEqual({ kind: 'ping', id: 7 });
  });
});

describe('parseFrameMessage drops everything else', () => {
  const dropped: Array<[string, unknown]> = [
    ['a string', JSON.stringify(rpc('ping'))],
    ['null', null],
    ['an array', [rpc('ping')]],
    ['wrong jsonrpc version', { ...rpc('ping'), jsonrpc: '1.0' }],
    ['no jsonrpc', { id: 1, method: 'ping' }],
    ['method not a string', { jsonrpc: '2.0', id: 1, method: 5 }],
    ['unknown method', rpc('resources/read', { uri: 'ui://x' })],
    ['host-only method', rpc('ui/notifications/tool-result', {})],
    ['ui/message (not served)', rpc('ui/message', { role: 'user', content: { type: 'text', text: 'send mail' } })],
    ['sandbox proxy message', note('ui/notifications/sandbox-resource-ready', { html: '<p>' })],
    ['params an array', rpc('tools/call', ['x'])],
    ['id an object', rpc('ping', undefined, { a: 1 })],
    ['id null', rpc('ping', undefined, null)],
    ['id a float', rpc('ping', undefined, 1.5)],
    ['id an empty string', rpc('ping', undefined, '')],
    ['initialize without id', note('ui/initialize', {})],
    ['initialized with an id', rpc('ui/notifications/initialized')],
    ['tools/call without name', rpc('tools/call', { arguments: {} })],
    ['tools/call name with a slash', rpc('tools/call', { name: '../mail_send' })],
    ['tools/call name too long', rpc('tools/call', { name: 'a'.repeat(129) })],
    ['tools/call arguments an array', rpc('tools/call', { name: 'x', arguments: [1] })],
    ['tools/call arguments a string', rpc('tools/call', { name: 'x', arguments: '{}' })],
    ['tools/call as a notification', note('tools/call', { name: 'x' })],
    ['tools/call choosing a server is ignored, not a field', rpc('tools/call', { name: 7 })],
    ['open-link url not a string', rpc('ui/open-link', { url: { href: 'x' } })],
    ['open-link url too long', rpc('ui/open-link', { url: `tamebi:folder/${'a'.repeat(3000)}` })],
    ['size-changed height negative', note('ui/notifications/size-changed', { height: -1 })],
    ['size-changed height a string', note('ui/notifications/size-changed', { height: '9999' })],
    ['size-changed height infinite', note('ui/notifications/size-changed', { height: Infinity })],
    ['size-changed with an id', rpc('ui/notifications/size-changed', { height: 10 })],
    ['a class instance', Object.assign(new (class X {})(), rpc('ping'))],
    ['oversized', rpc('tools/call', { name: 'x', arguments: { blob: 'a'.repeat(MAX_MESSAGE_BYTES) } })],
  ];
  it.each(dropped)('%s', (_label, message) => {
    expect(parseFrameMessage(message)).toBeNull();
  });
  it('a cyclic object', () => {
    const m: Record<string, unknown> = rpc('ping');
    m.self = m;
    expect(parseFrameMessage(m)).toBeNull();
  });
});

describe('clampHeight', () => {
  it('clamps to 1200 px and a minimum', () => {
    expect(clampHeight(100000)).toBe(MAX_FRAME_HEIGHT);
    expect(MAX_FRAME_HEIGHT).toBe(1200);
    expect(clampHeight(0)).toBe(MIN_FRAME_HEIGHT);
    expect(clampHeight(450.6)).toBe(451);
    expect(clampHeight(Number.NaN)).toBe(MIN_FRAME_HEIGHT);
  });
});
