/**
 * The shapes of an MCP App's tool request as the island's API carries them: which tool, how
 * the orchestrator says it is handled, and its result.
 *
 * Owns: these types only. A leaf: it imports nothing of the island, so the API client
 * (api.ts) and the Apps host (apps/host.ts) both use it without importing each other.
 */

/** Which tool a frame's request names, and the conversation the frame belongs to. */
export interface ToolTarget {
  conversation: string;
  server: string;
  name: string;
}

/** How the orchestrator says a frame's tool request must be handled. */
export type ToolHandling = 'relay' | 'confirm' | 'refused';

/** What a tool call answered (MCP's `CallToolResult`, as far as the island reads it). */
export interface ToolResult {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}
