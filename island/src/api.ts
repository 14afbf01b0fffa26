/**
 * HTTP calls from the island to our API (the Nextcloud app, or the dev host in development).
 *
 * Owns: the `requesttoken` header on every request, JSON in and out, and turning a failed
 * answer into an `ApiError`. The chat stream itself goes through the AI SDK transport
 * (see chat.ts), which gets the same header.
 *
 * Must never: put a uid in a body (G1: the server takes identity from the session only).
 */
import type { IslandConfig } from './config';
import { ApiError, parseErrorBody } from './errors';
import type { ToolHandling, ToolResult, ToolTarget } from './tools';

export interface ConversationSummary {
  id: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  /** Where it was started, when that was another app's Smart Picker (orchestrator's closed set). */
  origin?: string;
}

/** An assistant the person may pick (name, description, tool patterns; never the operator's instructions). */
export interface AssistantInfo {
  name: string;
  description: string;
  tools: string[];
  /** `operator`, `personal` (the person's own: `name` is its id, `label` its name) or `shared` (a colleague's, approved). */
  kind?: 'operator' | 'personal' | 'shared';
  label?: string;
  owner?: string;
}

export interface AssistantList {
  assistants: AssistantInfo[];
  /** What a new conversation gets when the request names no assistant. */
  default: string;
}

/** A fact the person let Tamebi remember (memory.db). */
export interface MemoryFact {
  id: number;
  text: string;
  createdAt: number;
  sourceConversation: string | null;
}

export class Api {
  constructor(private readonly config: IslandConfig) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { requesttoken: this.config.requestToken, ...extra };
  }

  async listConversations(): Promise<ConversationSummary[]> {
    const body = (await this.request('GET', '/conversations')) as { conversations?: ConversationSummary[] };
    return Array.isArray(body.conversations) ? body.conversations : [];
  }

  /** `assistant` is the one the conversation is bound to (absent: it predates assistants, so the default). */
  async getConversation(id: string): Promise<{ id: string; title: string; assistant?: string; messages: unknown[] }> {
    return (await this.request('GET', `/conversations/${encodeURIComponent(id)}`)) as { id: string; title: string; assistant?: string; messages: unknown[] };
  }

  async listAssistants(): Promise<AssistantList> {
    const body = (await this.request('GET', '/assistants')) as Partial<AssistantList>;
    return { assistants: Array.isArray(body.assistants) ? body.assistants : [], default: typeof body.default === 'string' ? body.default : '' };
  }

  async deleteConversation(id: string): Promise<void> {
    await this.request('DELETE', `/conversations/${encodeURIComponent(id)}`);
  }

  /** Stop pressed: the server stops writing this conversation's reply (204 also when none runs). */
  async stopChat(id: string): Promise<void> {
    await this.request('POST', `/chat/${encodeURIComponent(id)}/stop`);
  }

  async listMemory(): Promise<MemoryFact[]> {
    const body = (await this.request('GET', '/memory')) as { facts?: MemoryFact[] };
    return Array.isArray(body.facts) ? body.facts : [];
  }

  /** The person's own deletion: no approval needed. */
  async forgetMemory(id: number): Promise<void> {
    await this.request('DELETE', `/memory/${encodeURIComponent(String(id))}`);
  }

  /** The relay for frames: read-only, app-visible tools only (the server answers 403 otherwise). */
  async callAppTool(target: ToolTarget, args: Record<string, unknown>): Promise<ToolResult> {
    return (await this.request('POST', '/apps/tools/call', { ...target, arguments: args })) as ToolResult;
  }

  /** How a frame's request for a tool must be handled: relay, confirm first, or refused. */
  async describeAppTool(target: ToolTarget): Promise<ToolHandling> {
    const body = (await this.request('POST', '/apps/tools/describe', { ...target })) as { handling?: unknown };
    // Anything unexpected is a refusal: the island never guesses towards running something.
    return body.handling === 'relay' || body.handling === 'confirm' ? body.handling : 'refused';
  }

  /** Effectful app-only tools; called only after the person's click on the island's own confirmation. */
  async dispatchAppTool(target: ToolTarget, args: Record<string, unknown>): Promise<ToolResult> {
    return (await this.request('POST', '/apps/tools/dispatch', { ...target, arguments: args })) as ToolResult;
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const init: RequestInit = { method, credentials: 'same-origin', headers: this.headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    const response = await fetch(`${this.config.apiBase}${path}`, init);
    if (!response.ok) {
      const { message, requestId, code } = parseErrorBody(await response.text());
      throw new ApiError(response.status, message, requestId ?? response.headers.get('X-Request-Id'), code);
    }
    if (response.status === 204) return {};
    return response.json();
  }
}
