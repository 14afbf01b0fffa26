/**
 * The MCP Apps host: which frames exist and what their requests do.
 *
 * Owns: the registry of live frames, keyed by their `contentWindow` (third point of
 * distrust: a sandboxed frame's origin is the string "null", so `event.source` is the only
 * honest identity), the handshake (`ui/initialize` → `ui/notifications/initialized` → tool
 * input → tool result), and what each accepted request is allowed to do:
 *   - every tool request names the frame's own server and the conversation it is shown in
 *     (the orchestrator lets a frame reach only what that conversation's assistant allows);
 *   - `tools/call` first asks the orchestrator how the tool is handled
 *     (`POST <apiBase>/apps/tools/describe`). Anything but an app-only effect tool goes to
 *     the relay `POST <apiBase>/apps/tools/call` for the frame's own server (which runs
 *     read-only app tools, refuses the rest with 403 and audits it). An app-only tool with an effect (mail_send, mail_save_draft) is never
 *     sent as the frame asked: the host freezes the arguments, shows the person ITS OWN
 *     confirmation outside the frame, and only their click there sends
 *     `POST <apiBase>/apps/tools/dispatch` with exactly the frozen arguments. A frame can
 *     post `tools/call` without any click (its script runs on its own), so the frame's
 *     button is a request, never the approval;
 *   - `ui/open-link` is honoured only for a `tamebi:` target; the host builds the URL;
 *   - `ui/notifications/size-changed` is clamped to 1200 px;
 *   - the page's theme and colours (theme.ts) go to each frame in `hostContext` and, when the
 *     page changes, in `ui/notifications/host-context-changed` to every initialized frame.
 *
 * Must never: parse a message itself (bridge.ts does), trust `event.origin`, dispatch an
 * effectful tool without the person's click on the island's own confirmation, or navigate
 * to a URL a frame wrote.
 */
import { clampHeight, parseFrameMessage, type FrameMessage, type RequestId } from './bridge';
import { buildLinkUrl, parseLinkTarget } from './links';
import { ApiError } from '../errors';
import { locale, t, timeZone } from '../l10n';
import type { ToolHandling, ToolResult, ToolTarget } from '../tools';
import type { ThemeContext } from './theme';

export const PROTOCOL_VERSION = '2026-01-26';
/** The JSON-RPC error code (server range) for a confirmed dispatch that got no usable answer:
 * it may have been done, so the frame must not offer to do it again as if nothing happened. */
export const OUTCOME_UNKNOWN_CODE = -32002;
/** Tool calls one frame may have in flight; more are refused rather than queued. */
export const MAX_CALLS_IN_FLIGHT = 4;

export interface FrameRecord {
  /** The conversation the frame is shown in: its assistant decides which tools the frame reaches. */
  conversation: string;
  server: string;
  resourceUri: string;
  toolName: string;
  toolInput: Record<string, unknown>;
  toolResult: ToolResult;
  onResize(height: number): void;
  /** Set when the frame has completed its handshake. */
  initialized?: boolean;
  inFlight?: number;
}

/** What the person is asked to confirm: exactly what will be dispatched if they do. */
export interface ConfirmRequest {
  conversation: string;
  server: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface HostDeps {
  callTool(target: ToolTarget, args: Record<string, unknown>): Promise<ToolResult>;
  describeTool(target: ToolTarget): Promise<ToolHandling>;
  dispatchTool(target: ToolTarget, args: Record<string, unknown>): Promise<ToolResult>;
  /** Shows the island's own confirmation; resolves true only on the person's click on confirm. */
  confirm(request: ConfirmRequest): Promise<boolean>;
  openUrl(url: string): void;
  linkBase: string;
  /** The page's theme and style variables now (theme.ts), never the OS setting. */
  themeContext(): ThemeContext;
  /** The person's Nextcloud time zone, if the page gave one (else the browser's is used). */
  timeZone?: string;
}

export class AppHost {
  private readonly frames = new Map<MessageEventSource, FrameRecord>();
  /** A confirmation is open (for any frame): the island asks one question at a time. */
  private confirming = false;
  private readonly listener = (event: MessageEvent) => this.onMessage(event);

  constructor(
    private readonly deps: HostDeps,
    private readonly win: Window = window,
  ) {
    this.win.addEventListener('message', this.listener);
  }

  dispose(): void {
    this.win.removeEventListener('message', this.listener);
    this.frames.clear();
  }

  register(frameWindow: Window, record: FrameRecord): void {
    this.frames.set(frameWindow, { ...record, initialized: false, inFlight: 0 });
  }

  unregister(frameWindow: Window): void {
    this.frames.delete(frameWindow);
  }

  get size(): number {
    return this.frames.size;
  }

  /** The page's look changed: every frame past its handshake hears it (the others get it in
   *  their `ui/initialize` result). */
  themeChanged(context: ThemeContext): void {
    for (const [frame, record] of this.frames) {
      if (record.initialized) notify(frame as Window, 'ui/notifications/host-context-changed', context);
    }
  }

  private onMessage(event: MessageEvent): void {
    // Identity is the window object the message came from, never event.origin.
    const source = event.source;
    if (source === null) return;
    const record = this.frames.get(source);
    if (!record) return;
    const message = parseFrameMessage(event.data);
    if (!message) return;
    void this.handle(source as Window, record, message);
  }

  private async handle(frame: Window, record: FrameRecord, message: FrameMessage): Promise<void> {
    switch (message.kind) {
      case 'initialize':
        return reply(frame, message.id, {
          protocolVersion: PROTOCOL_VERSION,
          hostInfo: { name: 'tamebi', version: '0.1.0' },
          hostCapabilities: { openLinks: {}, serverTools: {} },
          hostContext: {
            ...this.deps.themeContext(),
            displayMode: 'inline',
            availableDisplayModes: ['inline'],
            containerDimensions: { maxHeight: 1200 },
            // The person's Nextcloud locale and zone (MCP Apps `HostContext`): frames translate
            // and format dates from these.
            locale: locale(),
            timeZone: timeZone(this.deps.timeZone),
            platform: 'web',
          },
        });
      case 'initialized':
        if (record.initialized) return;
        record.initialized = true;
        notify(frame, 'ui/notifications/tool-input', { arguments: record.toolInput });
        notify(frame, 'ui/notifications/tool-result', record.toolResult);
        return;
      case 'tools-call':
        return this.relayToolCall(frame, record, message.id, message.name, message.arguments);
      case 'open-link': {
        const target = parseLinkTarget(message.url);
        if (!target) return replyError(frame, message.id, -32000, t('tamebi', 'Policy violation: unknown link target'));
        this.deps.openUrl(buildLinkUrl(target, this.deps.linkBase));
        return reply(frame, message.id, {});
      }
      case 'size-changed':
        if (message.height !== null) record.onResize(clampHeight(message.height));
        return;
      case 'ping':
        return reply(frame, message.id, {});
      case 'log':
        return;
    }
  }

  private async relayToolCall(frame: Window, record: FrameRecord, id: RequestId, name: string, args: Record<string, unknown>): Promise<void> {
    if ((record.inFlight ?? 0) >= MAX_CALLS_IN_FLIGHT) return replyError(frame, id, -32000, t('tamebi', 'Too many requests'));
    record.inFlight = (record.inFlight ?? 0) + 1;
    try {
      const target: ToolTarget = { conversation: record.conversation, server: record.server, name };
      const handling = await this.deps.describeTool(target);
      if (handling === 'confirm') return await this.confirmThenDispatch(frame, record, id, name, args);
      // Everything else goes to the read-only relay, which runs it or refuses (403) and
      // audits the attempt: the orchestrator, not the island, is the authority.
      return reply(frame, id, await this.deps.callTool(target, args));
    } catch (error) {
      replyError(frame, id, -32000, relayFailure(error));
    } finally {
      record.inFlight = (record.inFlight ?? 1) - 1;
    }
  }

  private async confirmThenDispatch(frame: Window, record: FrameRecord, id: RequestId, name: string, args: Record<string, unknown>): Promise<void> {
    // One question at a time, across every frame: a frame cannot queue up confirmations to wear
    // the person down, nor replace an open one so that other recipients sit under the cursor
    // just before the click.
    if (this.confirming) return replyError(frame, id, -32000, t('tamebi', 'A confirmation is already open.'));
    // Frozen now: what the person reads is what is dispatched, whatever the frame does meanwhile.
    const frozen = freezeArguments(args);
    this.confirming = true;
    let confirmed = false;
    try {
      confirmed = await this.deps.confirm({ conversation: record.conversation, server: record.server, name, arguments: frozen });
    } finally {
      this.confirming = false;
    }
    if (!confirmed) return replyError(frame, id, -32001, t('tamebi', 'Cancelled by the person; nothing was done.'));
    let result: ToolResult;
    try {
      result = await this.deps.dispatchTool({ conversation: record.conversation, server: record.server, name }, frozen);
    } catch (error) {
      // A 4xx is the orchestrator refusing before anything ran. Anything else (its 5xx or
      // timeout, a proxy's 502/504, a dropped connection) came after the confirmed request
      // may have left: a mail may be out, and a second click could send it twice.
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) throw error;
      return replyError(frame, id, OUTCOME_UNKNOWN_CODE, t('tamebi', 'No answer came back, so it is not known whether this was done. Check (for a mail: your Sent folder) before trying again.'));
    }
    reply(frame, id, result);
  }
}

/** What a frame is told when the relay failed, chosen here by status alone (the Nextcloud app
 *  rewrites every error body, and a proxy's text is not ours to pass on): a refusal; a timeout
 *  (504) or an unreachable tool (502), whose outcome is not known, so never "try again";
 *  anything else as a plain failure. */
function relayFailure(error: unknown): string {
  if (!(error instanceof ApiError)) return t('tamebi', 'The tool call failed.');
  if (error.status === 403) return t('tamebi', 'This action is not allowed.');
  if (error.status === 504) return relayTimedOut();
  if (error.status === 502) return relayUnreachable();
  return t('tamebi', 'The tool call failed.');
}

export function relayTimedOut(): string {
  return t('tamebi', 'The tool did not answer in time. It is not known whether it did anything: check before trying again.');
}
export function relayUnreachable(): string {
  return t('tamebi', 'The tool could not be reached or gave no usable answer. It is not known whether it did anything: check before trying again.');
}

/** A deep, plain copy (JSON round trip): no getters, prototypes or shared references survive. */
export function freezeArguments(args: Record<string, unknown>): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(args)) as unknown;
  return typeof copy === 'object' && copy !== null && !Array.isArray(copy) ? (copy as Record<string, unknown>) : {};
}

// A sandboxed frame has an opaque origin, so "*" is the only target origin that reaches it.
// The message goes to that one window object, which is what makes this safe.
function reply(frame: Window, id: RequestId, result: unknown): void {
  frame.postMessage({ jsonrpc: '2.0', id, result }, '*');
}

function replyError(frame: Window, id: RequestId, code: number, message: string): void {
  frame.postMessage({ jsonrpc: '2.0', id, error: { code, message } }, '*');
}

function notify(frame: Window, method: string, params: unknown): void {
  frame.postMessage({ jsonrpc: '2.0', method, params }, '*');
}

/** Where a tool output says its MCP App lives, if it has one. */
export interface AppRef {
  server: string;
  resourceUri: string;
}

export function appRefFromOutput(output: unknown): AppRef | null {
  if (typeof output !== 'object' || output === null) return null;
  const o = output as Record<string, unknown>;
  const meta = o._meta as Record<string, unknown> | undefined;
  const ui = meta?.ui as Record<string, unknown> | undefined;
  const resourceUri = ui?.resourceUri;
  const server = meta?.server ?? o.server;
  if (typeof resourceUri !== 'string' || !resourceUri.startsWith('ui://') || resourceUri.length > 512) return null;
  if (typeof server !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(server)) return null;
  return { server, resourceUri };
}

/** The frame route for an app: always the route, never srcdoc, blob: or data: (second point).
 *  `conversation` is the one the frame is shown in, as for the tool doors: the orchestrator
 *  serves the document only if that conversation's assistant may use the app's server. */
export function frameSrc(frameUrl: string, ref: AppRef, conversation: string): string {
  return `${frameUrl}?${new URLSearchParams({ server: ref.server, uri: ref.resourceUri, conversation }).toString()}`;
}
