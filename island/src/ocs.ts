/**
 * Calls to the app's OCS routes (/ocs/v2.php/apps/tamebi/api/v1/…): the registry for admins and
 * a person's own assistants (issue #30).
 *
 * Owns: what Nextcloud's OCS needs of a page's request (`OCS-APIRequest: true`, the page's
 * `requesttoken`, JSON), unwrapping the OCS v2 envelope (`{"ocs": {"meta", "data"}}`), and
 * turning a failed answer (`data: {"error": code, "message"}`) into an `ApiError`.
 * Must never: put a uid in a body (G1: the app takes identity from the session only).
 */
import { ApiError } from './errors';
import type { ListedTools } from './registry';

export interface ServerEntry {
  name: string;
  url: string;
  auth: 'none' | 'nextcloud';
  trust?: string;
  /** `environment` (TAMEBI_MCP_SERVERS: read-only here) or `admin`. */
  source: 'environment' | 'admin';
  /** The environment and the database disagree about its credential: not used at all. */
  conflict: boolean;
  running: boolean;
  health?: { reachable: boolean; circuit: string; consecutiveUnreachable: number; lastError: { kind?: string } | string | null; toolCount: number | null };
  tools: string[];
}

export interface OperatorAssistant {
  name: string;
  description: string;
  instructions: string;
  model: string;
  tools: string[];
  source: 'environment' | 'admin';
}

/** A personal assistant as its owner (and an admin asked to approve it) sees it. */
export interface PersonalAssistant {
  id: string;
  owner: string;
  group: string | null;
  version: number;
  approved: boolean;
  approvedVersion: number | null;
  name: string;
  description: string;
  instructions: string;
  tools: string[];
  folders: string[];
}

export interface Policy {
  personalTools: string[];
  fallbackToDefault: boolean;
}

export class Ocs {
  constructor(
    private readonly base: string,
    private readonly requestToken: string,
  ) {}

  async servers(): Promise<ServerEntry[]> {
    const data = (await this.request('GET', '/admin/servers')) as { servers?: ServerEntry[] };
    return Array.isArray(data.servers) ? data.servers : [];
  }

  saveServer(body: { name: string; url: string; auth: string; trust?: string }, existing: boolean): Promise<unknown> {
    return existing ? this.request('PUT', `/admin/servers/${encodeURIComponent(body.name)}`, body) : this.request('POST', '/admin/servers', body);
  }

  removeServer(name: string): Promise<unknown> {
    return this.request('DELETE', `/admin/servers/${encodeURIComponent(name)}`);
  }

  async assistants(): Promise<{ assistants: OperatorAssistant[]; proposed: PersonalAssistant[]; policy: Policy }> {
    const data = (await this.request('GET', '/admin/assistants')) as { assistants?: OperatorAssistant[]; proposed?: PersonalAssistant[]; policy?: Partial<Policy> };
    return {
      assistants: Array.isArray(data.assistants) ? data.assistants : [],
      proposed: Array.isArray(data.proposed) ? data.proposed : [],
      policy: { personalTools: data.policy?.personalTools ?? [], fallbackToDefault: data.policy?.fallbackToDefault === true },
    };
  }

  saveAssistant(body: { name: string; description: string; instructions: string; model?: string; tools: string[] }, existing: boolean): Promise<unknown> {
    return existing ? this.request('PUT', `/admin/assistants/${encodeURIComponent(body.name)}`, body) : this.request('POST', '/admin/assistants', body);
  }

  removeAssistant(name: string): Promise<unknown> {
    return this.request('DELETE', `/admin/assistants/${encodeURIComponent(name)}`);
  }

  /** Approves exactly the version the admin looked at (a later edit is a new version). */
  approve(id: string, version: number): Promise<unknown> {
    return this.request('POST', `/admin/assistants/${encodeURIComponent(id)}/approve`, { version });
  }

  savePolicy(policy: Policy): Promise<unknown> {
    return this.request('PUT', '/admin/policy', policy);
  }

  /** The person's own assistants and the admin's ceiling for them. */
  async mine(): Promise<{ mine: PersonalAssistant[]; personalTools: string[] }> {
    const data = (await this.request('GET', '/assistants')) as { mine?: PersonalAssistant[]; personalTools?: string[] };
    return { mine: Array.isArray(data.mine) ? data.mine : [], personalTools: Array.isArray(data.personalTools) ? data.personalTools : [] };
  }

  savePersonal(id: string | null, body: { name: string; description: string; instructions: string; tools: string[]; folders: string[] }): Promise<unknown> {
    return id === null ? this.request('POST', '/assistants', body) : this.request('PUT', `/assistants/${encodeURIComponent(id)}`, body);
  }

  removePersonal(id: string): Promise<unknown> {
    return this.request('DELETE', `/assistants/${encodeURIComponent(id)}`);
  }

  /** Proposes it to a group (null: stops sharing); it is visible there once an admin approves. */
  share(id: string, group: string | null): Promise<unknown> {
    return this.request('POST', `/assistants/${encodeURIComponent(id)}/share`, { group });
  }

  private async request(method: string, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { 'OCS-APIRequest': 'true', Accept: 'application/json', requesttoken: this.requestToken };
    const init: RequestInit = { method, credentials: 'same-origin', headers };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(`${this.base}${path}`, init);
    const data = unwrap(await response.text());
    if (!response.ok) {
      const failure = (data ?? {}) as { error?: unknown; message?: unknown };
      throw new ApiError(response.status, typeof failure.message === 'string' ? failure.message : null, response.headers.get('X-Request-Id'), typeof failure.error === 'string' ? failure.error : null);
    }
    return data ?? {};
  }
}

/** The `data` of an OCS v2 answer, or null when the body is not one. */
export function unwrap(text: string): unknown {
  try {
    const parsed = JSON.parse(text) as { ocs?: { data?: unknown } };
    return parsed?.ocs?.data ?? null;
  } catch {
    return null;
  }
}

/** Server name => its listed tools (null: none known yet), for pattern previews. */
export function listedTools(servers: ServerEntry[]): ListedTools {
  const out: ListedTools = {};
  for (const s of servers) if (!s.conflict) out[s.name] = s.tools.length > 0 ? s.tools : null;
  return out;
}
