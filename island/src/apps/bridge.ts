/**
 * The one chokepoint for messages from MCP App frames (fourth point of distrust).
 *
 * Owns: turning an untrusted `postMessage` payload into a typed request, or into nothing.
 * Every message a frame sends passes through `parseFrameMessage` before anything looks at
 * it. A message that is not JSON-RPC 2.0, names a method we do not serve, carries params of
 * the wrong type, or is oversized is dropped here and never reaches a handler.
 *
 * Must never: act on a message (no fetch, no DOM), trust `event.origin` (a sandboxed frame's
 * origin is the string "null"), or let a frame choose which MCP server a tool call goes to
 * (the server comes from the frame record the host made, not from the message).
 */

/** Largest message we parse, measured as serialised JSON. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
/** Largest `ui/open-link` URL we look at. */
export const MAX_URL_LENGTH = 2048;
/** Frame heights are clamped into this range (CSS pixels). */
export const MIN_FRAME_HEIGHT = 60;
export const MAX_FRAME_HEIGHT = 1200;

export type RequestId = string | number;

/** The only requests and notifications a frame may send, already validated. */
export type FrameMessage =
  | { kind: 'initialize'; id: RequestId; protocolVersion: string }
  | { kind: 'initialized' }
  | { kind: 'tools-call'; id: RequestId; name: string; arguments: Record<string, unknown> }
  | { kind: 'open-link'; id: RequestId; url: string }
  | { kind: 'size-changed'; height: number | null }
  | { kind: 'ping'; id: RequestId }
  | { kind: 'log' };

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Parses one message from a frame. Returns null for anything malformed: the caller drops it.
 */
export function parseFrameMessage(data: unknown): FrameMessage | null {
  if (!isPlainObject(data) || !fitsSize(data)) return null;
  if (data.jsonrpc !== '2.0' || typeof data.method !== 'string') return null;
  // A response from the frame (result/error without method) is not something we expect.
  const params = data.params === undefined ? {} : data.params;
  if (!isPlainObject(params)) return null;
  const hasId = 'id' in data;
  const id = hasId ? requestId(data.id) : null;
  if (hasId && id === null) return null;

  switch (data.method) {
    case 'ui/initialize':
      if (id === null) return null;
      return {
        kind: 'initialize',
        id,
        protocolVersion: typeof params.protocolVersion === 'string' ? params.protocolVersion : '',
      };
    case 'ui/notifications/initialized':
      return hasId ? null : { kind: 'initialized' };
    case 'tools/call': {
      if (id === null || typeof params.name !== 'string' || !TOOL_NAME.test(params.name)) return null;
      const args = params.arguments === undefined ? {} : params.arguments;
      if (!isPlainObject(args)) return null;
      return { kind: 'tools-call', id, name: params.name, arguments: args };
    }
    case 'ui/open-link':
      if (id === null || typeof params.url !== 'string' || params.url.length > MAX_URL_LENGTH) return null;
      return { kind: 'open-link', id, url: params.url };
    case 'ui/notifications/size-changed': {
      if (hasId) return null;
      const height = optionalSize(params.height);
      const width = optionalSize(params.width);
      if (height === undefined || width === undefined) return null;
      return { kind: 'size-changed', height };
    }
    case 'ping':
      return id === null ? null : { kind: 'ping', id };
    case 'notifications/message':
      return hasId ? null : { kind: 'log' };
    default:
      return null;
  }
}

/** Clamps a height a frame asked for: its own content decides it, so it is not trusted to be sane. */
export function clampHeight(height: number): number {
  if (!Number.isFinite(height)) return MIN_FRAME_HEIGHT;
  return Math.min(MAX_FRAME_HEIGHT, Math.max(MIN_FRAME_HEIGHT, Math.round(height)));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function fitsSize(value: unknown): boolean {
  try {
    const text = JSON.stringify(value);
    return typeof text === 'string' && text.length <= MAX_MESSAGE_BYTES;
  } catch {
    // Cycles, BigInt: not JSON, so not JSON-RPC.
    return false;
  }
}

function requestId(value: unknown): RequestId | null {
  if (typeof value === 'string' && value.length > 0 && value.length <= 128) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  return null;
}

/** undefined = invalid; null = absent; otherwise a finite, non-negative number. */
function optionalSize(value: unknown): number | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return undefined;
  return value;
}
