/**
 * The registry's rules as the admin page and the island's assistant editor check them before
 * sending (issue #30): `server/tool` patterns, what a pattern matches among the tools servers
 * list (the preview), and the fields of a server, an assistant and a personal assistant.
 *
 * Owns: the same rules as the PHP app's `Registry\Validation` and the orchestrator (`*` is any
 * run of characters, a server whose tools are unknown counts as matching), so a person learns
 * what is wrong before anything is sent.
 * Must never: decide anything the servers would not. It only refuses earlier; the PHP app and
 * the orchestrator check everything again, and their answer stands.
 */
import { t } from './l10n';

export const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const PATTERN = /^([A-Za-z0-9_*-]+)\/([A-Za-z0-9_.*-]+)$/;
/** The orchestrator's own tools (memory) are under this server name. */
export const LOCAL_SERVER = 'tamebi';

/** Server name => the tools it lists; null while nothing is known (an auth=nextcloud server
 *  lists its tools only to a signed-in person). */
export type ListedTools = Record<string, string[] | null>;

/** `*` is any run of characters, everything else itself (the orchestrator's rule). */
export function glob(pattern: string, text: string): boolean {
  const escaped = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'));
  return new RegExp(`^${escaped.join('.*')}$`, 's').test(text);
}

/** The `server/tool` names a pattern matches: the preview. A server of unknown tools matches as
 *  `server/<tool pattern>`, so a pattern for it is not refused for want of a listing. */
export function matches(pattern: string, tools: ListedTools): string[] {
  const m = PATTERN.exec(pattern);
  if (!m) return [];
  const [, server, tool] = m as unknown as [string, string, string];
  const found: string[] = [];
  for (const [name, listed] of Object.entries({ ...tools, [LOCAL_SERVER]: tools[LOCAL_SERVER] ?? null })) {
    if (!glob(server, name)) continue;
    if (listed === null) {
      found.push(`${name}/${tool}`);
      continue;
    }
    for (const listedTool of listed) if (glob(tool, listedTool)) found.push(`${name}/${listedTool}`);
  }
  return found;
}

/** Why a pattern would be refused, or null when it is fine. */
export function patternProblem(pattern: string, tools: ListedTools): string | null {
  const m = PATTERN.exec(pattern);
  if (!m) return t('tamebi', 'Write server/tool, with * for any run of characters (for example nextcloud/calendar_*).');
  const server = m[1] as string;
  if (!server.includes('*') && !(server in tools) && server !== LOCAL_SERVER) {
    return t('tamebi', 'No server is named "{server}".', { server });
  }
  if (matches(pattern, tools).length === 0) return t('tamebi', 'It matches none of the tools the servers list.');
  return null;
}

export interface ServerForm {
  name: string;
  url: string;
  auth: 'none' | 'nextcloud';
  trust: '' | 'reads';
}

/** Field => problem, for the fields that have one. */
export type Problems = Partial<Record<string, string>>;

export function serverProblems(form: ServerForm, taken: string[]): Problems {
  const out: Problems = {};
  if (!NAME.test(form.name) || form.name === LOCAL_SERVER) {
    out.name = t('tamebi', 'Use 1-64 letters, digits, - or _ (not "tamebi", which is the orchestrator\'s own).');
  } else if (taken.includes(form.name)) {
    out.name = t('tamebi', 'A server with this name already exists.');
  }
  if (!validUrl(form.url)) {
    out.url = t('tamebi', 'Use an absolute http(s) URL without credentials, query or fragment (for example https://mcp.example.com/mcp).');
  }
  if (form.trust === 'reads' && form.auth !== 'none') {
    out.trust = t('tamebi', 'Read-only tools can run without asking only on a server that gets no credential (auth none).');
  }
  return out;
}

function validUrl(text: string): boolean {
  if (/[;,\s]/.test(text)) return false;
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '' && url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}

export interface AssistantForm {
  name: string;
  description: string;
  instructions: string;
  tools: string[];
}

/** An admin's assistant (`requireDescription`) or a person's own (name only, 64 characters). */
export function assistantProblems(form: AssistantForm, taken: string[], tools: ListedTools, personal: boolean): Problems {
  const out: Problems = {};
  if (personal) {
    const name = form.name.trim();
    if (name === '' || [...name].length > 64 || /[\u0000-\u001f\u007f]/.test(name)) out.name = t('tamebi', 'Give it a name of 1-64 characters.');
  } else if (!NAME.test(form.name)) {
    out.name = t('tamebi', 'Use 1-64 letters, digits, - or _.');
  } else if (taken.includes(form.name)) {
    out.name = t('tamebi', 'An assistant with this name already exists.');
  }
  const description = form.description.trim();
  if ((!personal && description === '') || [...description].length > 300 || description.includes('\n')) {
    out.description = t('tamebi', 'One line of 1-300 characters.');
  }
  if ([...form.instructions].length > 8000) out.instructions = t('tamebi', 'At most 8000 characters.');
  if (form.tools.length > 100) out.tools = t('tamebi', 'At most 100 patterns.');
  for (const pattern of form.tools) {
    const problem = patternProblem(pattern, tools);
    if (problem !== null) {
      out.tools = `${pattern}: ${problem}`;
      break;
    }
  }
  return out;
}

/** Whether a personal assistant's pattern stays within the admin's ceiling: the pattern itself,
 *  read as text, is matched by a ceiling pattern, server half and tool half (the orchestrator's
 *  `ToolPattern::within`, which checks it again, server side). */
export function withinCeiling(pattern: string, ceiling: string[]): boolean {
  const m = PATTERN.exec(pattern);
  if (!m) return false;
  return ceiling.some((allowed) => {
    const c = PATTERN.exec(allowed);
    return c !== null && glob(c[1] as string, m[1] as string) && glob(c[2] as string, m[2] as string);
  });
}
