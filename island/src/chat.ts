/**
 * The chat session: the AI SDK's `useChat` wired to our API.
 *
 * Owns: the transport (POST `<apiBase>/chat`, resume via GET `<apiBase>/chat/<id>/stream`,
 * Stop: the stream let go, then POST `<apiBase>/chat/<id>/stop`,
 * the `requesttoken` header), sending only the last message (the server's chat.db is the
 * truth, see docs/api.md), sending automatically once every approval is answered, and
 * reconnecting after a dropped connection, and naming the conversation's assistant (the server
 * binds a new conversation to it and refuses another one later).
 *
 * Must never: decide anything about approvals itself (G3 is the orchestrator's; the card only
 * reports the person's click).
 */
import { useChat } from '@ai-sdk/vue';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { shallowRef, watch } from 'vue';
import type { IslandConfig } from './config';
import { ApiError } from './errors';
import type { Origin } from './picker/origin';

/** How often we try to reattach to a reply after the connection dropped. */
const MAX_RESUME_ATTEMPTS = 3;

export function newConversationId(): string {
  return crypto.randomUUID();
}

/** `assistant` says which assistant the current conversation talks to (null: the server's default);
 *  `origin` is the app whose Smart Picker this chat runs in (null on the Tamebi page). */
export function useTamebiChat(config: IslandConfig, assistant: () => string | null = () => null, origin: Origin | null = null) {
  const init = shallowRef(chatInit(config, newConversationId(), [], assistant, origin));
  const chat = useChat(init);
  let resumeAttempts = 0;

  /** Switches to a conversation (its stored messages), reattaching to a reply in flight. */
  function open(id: string, messages: UIMessage[]): void {
    init.value = chatInit(config, id, messages, assistant, origin);
    resumeAttempts = 0;
    void chat.resumeStream();
  }

  // A dropped connection (not an answer from the server) gets a few resume attempts.
  watch(chat.error, (error) => {
    if (!error || !isDroppedConnection(error) || resumeAttempts >= MAX_RESUME_ATTEMPTS) return;
    resumeAttempts += 1;
    chat.clearError();
    void chat.resumeStream();
  });

  return { ...chat, open };
}

/**
 * Stop pressed. The stream is let go at once (`stopStream`, the AI SDK's own stop), which alone
 * would leave the server writing the reply until nobody had read it for its grace (30 s), with
 * every new message in this conversation refused meanwhile. So the server is told too
 * (`stopOnServer`, POST `<apiBase>/chat/<id>/stop`): it keeps the partial answer, marks it
 * stopped, and answers once the turn is over, so a message sent after this resolves is taken.
 * Resolves true when the server has the conversation (its stored reply now says it was
 * stopped), false when it does not know it (the first message never reached it: nothing runs).
 * Any other failure is thrown.
 */
export async function stopReply(id: string, stopStream: () => Promise<void> | void, stopOnServer: (id: string) => Promise<void>): Promise<boolean> {
  await stopStream();
  try {
    await stopOnServer(id);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

function chatInit(config: IslandConfig, id: string, messages: UIMessage[], assistant: () => string | null, origin: Origin | null) {
  return {
    id,
    messages,
    transport: new DefaultChatTransport<UIMessage>({
      api: `${config.apiBase}/chat`,
      credentials: 'same-origin',
      headers: () => ({ requesttoken: config.requestToken }),
      prepareSendMessagesRequest: ({ id: chatId, messages: all, trigger, messageId }) => {
        const name = assistant();
        return { body: chatBody({ id: chatId, messages: all.slice(-1), trigger, messageId }, name, origin) };
      },
      prepareReconnectToStreamRequest: ({ id: chatId }) => ({
        api: `${config.apiBase}/chat/${encodeURIComponent(chatId)}/stream`,
        credentials: 'same-origin',
        headers: { requesttoken: config.requestToken },
      }),
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  };
}

/** The request body: the AI SDK's fields, the assistant when one is named, and the Smart
 *  Picker's origin (the orchestrator records it when the message creates the conversation). */
export function chatBody<T extends object>(base: T, assistant: string | null, origin: Origin | null): T & { assistant?: string; origin?: Origin } {
  return { ...base, ...(assistant ? { assistant } : {}), ...(origin ? { origin } : {}) };
}

function isDroppedConnection(error: Error): boolean {
  return error.name === 'TypeError' || /network error|failed to fetch|terminated/i.test(error.message);
}
