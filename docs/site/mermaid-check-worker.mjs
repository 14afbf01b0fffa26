// Runs mermaid's own parser in a worker thread. mermaid sanitises labels with DOMPurify, which
// needs a `window`; jsdom provides one here, inside the worker only, so the site build's own
// process (which renders React pages and must look like a server) never sees a global window.
import { parentPort } from 'node:worker_threads';
import { JSDOM } from 'jsdom';

globalThis.window = new JSDOM('').window;
const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false });

parentPort.on('message', async ({ id, source }) => {
  try {
    await mermaid.parse(source);
    parentPort.postMessage({ id, ok: true });
  } catch (error) {
    parentPort.postMessage({ id, ok: false, message: String(error?.message ?? error) });
  }
});
