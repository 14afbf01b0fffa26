// The runtime our MCP App documents share, placed by mcp-resource-server (apps::document) where a
// document says <!-- mcp-app-runtime -->, before the app's own script. It speaks MCP Apps
// (2026-01-26) JSON-RPC 2.0 over postMessage with the host: requests with their replies,
// notifications, the handshake, size reports and the host's theme (hostContext `theme` and
// `styles.variables`, from the `ui/initialize` result and every
// `ui/notifications/host-context-changed`: the document follows the host, never
// the OS setting). It talks only to window.parent, answers only
// messages from it (a sandboxed frame's origin is "null": the source window is the identity),
// and never uses the network.
var mcpApp = (function () {
  'use strict';
  var pending = new Map();
  var nextId = 1;
  var handlers = new Map();

  function send(message) { window.parent.postMessage(message, '*'); }

  /** Sends a request; the promise settles with the host's reply. */
  function request(method, params) {
    var id = nextId++;
    send({ jsonrpc: '2.0', id: id, method: method, params: params });
    return new Promise(function (resolve, reject) { pending.set(id, { resolve: resolve, reject: reject }); });
  }

  function notify(method, params) { send({ jsonrpc: '2.0', method: method, params: params }); }

  /** Handles the host's notification `method` (e.g. ui/notifications/tool-result) with its params. */
  function on(method, handler) { handlers.set(method, handler); }

  window.addEventListener('message', function (event) {
    if (event.source !== window.parent) return;
    var m = event.data;
    if (!m || m.jsonrpc !== '2.0') return;
    if (m.id !== undefined && pending.has(m.id) && !m.method) {
      var p = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) {
        // The code travels with the error: an app tells "refused" from "outcome unknown" by it.
        var error = new Error(String(m.error.message || 'error'));
        error.code = m.error.code;
        p.reject(error);
      } else {
        p.resolve(m.result);
      }
      return;
    }
    var handler = typeof m.method === 'string' ? handlers.get(m.method) : undefined;
    if (handler) handler(m.params || {});
  });

  // The host's look: `theme` becomes <html data-theme> and color-scheme (the apps' CSS keys
  // their dark palette on [data-theme="dark"]); `styles.variables` become custom properties on
  // <html>, only the spec's names (--color-*, --font-*, --border-*, --shadow-*) with plain
  // values. A later context replaces the variables it carries and keeps what it leaves out.
  var VARIABLE = /^--(color|font|border|shadow)-[a-z0-9-]{1,48}$/;
  var hostVariables = [];
  function applyHostContext(context) {
    if (!context || typeof context !== 'object') return;
    var root = document.documentElement;
    if (context.theme === 'light' || context.theme === 'dark') {
      root.setAttribute('data-theme', context.theme);
      root.style.colorScheme = context.theme;
    }
    var variables = context.styles && context.styles.variables;
    if (!variables || typeof variables !== 'object') return;
    hostVariables.forEach(function (name) { root.style.removeProperty(name); });
    hostVariables = Object.keys(variables).filter(function (name) {
      var value = variables[name];
      return VARIABLE.test(name) && typeof value === 'string' && value.length <= 400 && !/[;{}<>\\]|url\(/i.test(value);
    });
    hostVariables.forEach(function (name) { root.style.setProperty(name, variables[name]); });
  }
  handlers.set('ui/notifications/host-context-changed', applyHostContext);

  /** An element whose text is set with textContent: what apps show is untrusted data. */
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  var lastHeight = 0;
  function reportSize() {
    // The body's own height: the root's scrollHeight is never less than the frame's current
    // height, so a frame measured that way could grow but never shrink to its content.
    var h = Math.ceil(document.body.getBoundingClientRect().height);
    if (h !== lastHeight) { lastHeight = h; notify('ui/notifications/size-changed', { width: Math.ceil(document.documentElement.scrollWidth), height: h }); }
  }

  /** Reports sizes and starts the handshake; call it once the app's handlers are registered. */
  function start(name) {
    new ResizeObserver(reportSize).observe(document.body);
    request('ui/initialize', { protocolVersion: '2026-01-26', appInfo: { name: name, version: '1.0.0' }, appCapabilities: { availableDisplayModes: ['inline'] } })
      .then(function (result) {
        applyHostContext(result && result.hostContext);
        notify('ui/notifications/initialized', {});
      })
      .catch(function () {});
  }

  return { request: request, notify: notify, on: on, el: el, start: start };
})();
