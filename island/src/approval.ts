// What the approval card says about where a call goes (G3, issue #27). The orchestrator puts
// the server on the tool part (`toolMetadata`, from its own registry, never from the model).
// Read here fail closed: a part that does not say where its call goes is shown as going to an
// unknown server, with the third-party warning, never as one of ours.

/** Where an approval-requested call goes, as the card shows it. */
export interface ApprovalTarget {
  /** The configured server name; null when the part does not say. */
  server: string | null;
  /** The tool's name on that server (the model's name for it when the part does not say). */
  tool: string;
  /** Not one of the operator's own servers: approving sends the arguments to a third party. */
  thirdParty: boolean;
}

export function approvalTarget(part: { toolName: string; toolMetadata?: unknown }): ApprovalTarget {
  const meta = part.toolMetadata;
  const fields = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {};
  const server = typeof fields.server === 'string' && fields.server !== '' ? fields.server : null;
  const tool = typeof fields.tool === 'string' && fields.tool !== '' ? fields.tool : part.toolName;
  // Only an explicit `false` from the orchestrator makes a server one of ours.
  const thirdParty = server === null || fields.thirdParty !== false;
  return { server, tool, thirdParty };
}

/** How long a question's buttons ignore activation after it appears (the approval card, the
 *  island's confirmation): a click or Enter aimed at what was there before cannot land on them. */
export const ARM_MS = 500;

/** What a call will write that its arguments leave implicit, so the card can name it (G3: the
 *  person approves the exact effect). Today one tool has such a default: `files_convert`
 *  without `target` writes beside the source, with the source's name and the new extension
 *  (mcp-nextcloud's `resolve_target`; the two are tested on the same examples). Null when the
 *  arguments already say where everything goes, or when they are not what the tool reads (the
 *  server refuses those itself). */
export function impliedTarget(tool: string, input: unknown): string | null {
  if (tool !== 'files_convert' || input === null || typeof input !== 'object' || Array.isArray(input)) return null;
  const args = input as Record<string, unknown>;
  if (args.target !== undefined && args.target !== null) return null;
  if (typeof args.path !== 'string' || typeof args.to !== 'string') return null;
  const segments = args.path.split('/').filter((s) => s !== '');
  const name = segments.pop();
  const to = args.to.trim().replace(/^\.+/, '').toLowerCase();
  if (name === undefined || to === '') return null;
  const dot = name.lastIndexOf('.');
  const stem = dot === -1 ? name : name.slice(0, dot);
  return [...segments, `${stem}.${to}`].join('/');
}
