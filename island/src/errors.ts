/**
 * What the person sees when something fails.
 *
 * Owns: turning any failure into one short sentence. A server message is shown only when it
 * carries a request id — that is how we know it is one of our own fixed messages
 * (`{"error":{"message","requestId"}}`, or an SSE error part ending in "(request id: …)").
 * The host (the Nextcloud app, the dev host) has already picked that message by the
 * orchestrator's refusal `code` where it knows the code (docs/api.md), so the sentence fits the
 * refusal; the code itself is kept on an `ApiError` for code that must tell refusals apart.
 *
 * Must never: show raw exception text, upstream bodies or stack traces.
 */
import { n, t } from './l10n';

/** The two sentences of our own, in the person's language (read when shown). */
export const GENERIC = {
  get network(): string {
    return t('tamebi', 'Could not reach Tamebi. Check your connection and try again.');
  },
  get failed(): string {
    return t('tamebi', 'Something went wrong. Please try again.');
  },
};

/** An HTTP answer from our API that was not a success. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly serverMessage: string | null,
    readonly requestId: string | null,
    /** The refusal's code as the host passed it on (a word from docs/api.md), or null. */
    readonly code: string | null = null,
  ) {
    super(`HTTP ${status}`);
  }
}

const CODE = /^[a-z_]{1,40}$/;

/** Parses our error body; anything else yields nulls. `retryAfter` (whole seconds) comes with
 * a 429 that refused a turn because the person's own share was used up (goal B6), and with a
 * 503: `owned_elsewhere` (another instance serves the conversation) or `unavailable` when the
 * shared replay records cannot be reached. */
export function parseErrorBody(text: string): { message: string | null; requestId: string | null; retryAfter: number | null; code: string | null } {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; requestId?: unknown; retryAfter?: unknown; code?: unknown } };
    const message = typeof body?.error?.message === 'string' ? body.error.message : null;
    const requestId = typeof body?.error?.requestId === 'string' ? body.error.requestId : null;
    const raw = body?.error?.retryAfter;
    const retryAfter = typeof raw === 'number' && Number.isInteger(raw) && raw > 0 && raw <= 86400 ? raw : null;
    const code = typeof body?.error?.code === 'string' && CODE.test(body.error.code) ? body.error.code : null;
    return { message, requestId, retryAfter, code };
  } catch {
    return { message: null, requestId: null, retryAfter: null, code: null };
  }
}

/** "Try again in 5 seconds." for a known wait, else nothing. */
export function retryHint(seconds: number | null): string {
  if (seconds === null) return '';
  if (seconds < 60) return ` ${n('tamebi', 'You can send again in %n second.', 'You can send again in %n seconds.', seconds)}`;
  const minutes = Math.ceil(seconds / 60);
  return ` ${n('tamebi', 'You can send again in %n minute.', 'You can send again in %n minutes.', minutes)}`;
}

const WITH_REQUEST_ID = /^([^\n]{1,200}) \(request id: ([A-Za-z0-9._:\-]{1,100})\)$/;

/**
 * One of the orchestrator's fixed sentences of a stream's `error` part (docs/api.md, the chat
 * stream; src/error.rs `messages`, src/store/lease.rs), English on the wire, in the person's
 * language: no host stands between the stream and the page to translate them. A sentence not
 * listed here is shown as it came (it still ends with our request id).
 */
function streamSentence(sentence: string): string {
  switch (sentence) {
    case 'Something went wrong. Please try again.':
      return t('tamebi', 'Something went wrong. Please try again.');
    case 'The service is restarting. Please try again in a moment.':
      return t('tamebi', 'The service is restarting. Please try again in a moment.');
    case 'This reply was stopped: this server no longer holds the conversation (it moved to another server or was deleted). Reload the conversation in a moment.':
      return t('tamebi', 'This reply was stopped: this server no longer holds the conversation (it moved to another server or was deleted). Reload the conversation in a moment.');
    case 'This answer stopped here: it reached the token limit set for one turn. Ask again to continue.':
      return t('tamebi', 'This answer stopped here: it reached the token limit set for one turn. Ask again to continue.');
    case 'This reply was interrupted: the server writing it stopped. Send your message again to continue.':
      return t('tamebi', 'This reply was interrupted: the server writing it stopped. Send your message again to continue.');
    case 'This reply was stopped: it was no longer being read (the page was closed or lost its connection). Send your message again to continue.':
      return t('tamebi', 'This reply was stopped: it was no longer being read (the page was closed or lost its connection). Send your message again to continue.');
    case 'You stopped this reply. Send your message again to continue.':
      return t('tamebi', 'You stopped this reply. Send your message again to continue.');
    default:
      return sentence;
  }
}

/** A stream `error` part's text in the person's language, or null if it is not one of ours. */
export function streamErrorText(text: string): string | null {
  const match = WITH_REQUEST_ID.exec(text);
  if (!match) return null;
  const [, sentence = '', requestId = ''] = match;
  return withRequestId(streamSentence(sentence), requestId);
}

/** The sentence to show for a failure. */
export function userMessage(error: unknown): string {
  if (error instanceof ApiError) {
    return error.serverMessage && error.requestId ? withRequestId(error.serverMessage, error.requestId) : GENERIC.failed;
  }
  if (error instanceof Error) {
    // The chat transport puts a failed response's body into the message.
    const { message, requestId, retryAfter } = parseErrorBody(error.message);
    if (message && requestId) return withRequestId(`${message}${retryHint(retryAfter)}`, requestId);
    // An SSE `error` part from the orchestrator ends with its request id.
    const streamed = streamErrorText(error.message);
    if (streamed) return streamed;
    if (error.name === 'TypeError' || /network|fetch/i.test(error.message)) return GENERIC.network;
  }
  return GENERIC.failed;
}

/** A server's sentence (already in the person's language: the host picked it) and its id. */
function withRequestId(message: string, requestId: string): string {
  return t('tamebi', '{message} (request id: {requestId})', { message, requestId });
}
