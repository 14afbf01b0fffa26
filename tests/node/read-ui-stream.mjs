#!/usr/bin/env node
// Reads one raw orchestrator SSE body (a file path argument, or stdin) with the AI SDK's own
// UI message stream reader and prints the UIMessage it builds, as JSON, on stdout.
//
// Owns: nothing but the glue. Parsing is the AI SDK's: `parseJsonEventStream` with
// `uiMessageChunkSchema` validates every `data:` frame against the SDK's chunk schema, and
// `readUIMessageStream` assembles the message exactly as `useChat` would in a browser.
//
// Must never: repair, filter or reinterpret a chunk. A frame the SDK rejects is a failure
// (exit 1, the SDK's error on stderr), because a real client would reject it too.
import { readFile } from 'node:fs/promises';
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

async function readInput() {
  const file = process.argv[2];
  if (file && file !== '-') return readFile(file);
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function main() {
  const raw = await readInput();
  const bytes = new ReadableStream({
    start(controller) {
      controller.enqueue(new Uint8Array(raw));
      controller.close();
    },
  });
  const problems = [];
  const chunkTypes = [];
  let finishReason = null;
  const chunks = parseJsonEventStream({ stream: bytes, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) {
          problems.push(String(result.error?.message ?? result.error).slice(0, 800));
          return;
        }
        chunkTypes.push(result.value.type);
        if (result.value.type === 'finish') finishReason = result.value.finishReason ?? null;
        controller.enqueue(result.value);
      },
    }),
  );
  let message = null;
  for await (const state of readUIMessageStream({
    stream: chunks,
    terminateOnError: true,
    onError: (error) => problems.push(String(error?.message ?? error)),
  })) {
    message = state;
  }
  if (problems.length > 0) {
    console.error(`the AI SDK rejected the stream:\n${problems.join('\n')}`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ message, chunkTypes, finishReason })}\n`);
}

main().catch((error) => {
  console.error(`read-ui-stream: ${error?.stack ?? error}`);
  process.exit(1);
});
