// The runtime our MCP App documents share, placed by mcp-resource-server (apps::document) where a
// document says <!-- mcp-app-runtime -->, before the app's own script. It speaks MCP Apps
// (2026-01-26) JSON-RPC 2.0 over postMessage with the host: requests with their replies,
// notifications, the handshake, size reports and the host's theme (hostContext `theme` and
// `styles.variables`, from the `ui/initialize` result and every
// `ui/notifications/host-context-changed`: the document follows the host, never
// the OS setting). It talks only to window.parent, answers only
// messages from it (a sandboxed frame's origin is "null": the source window is the identity),
// and never uses the network. The host's `ui/initialize` answer carries the person's locale
// (BCP 47) and time zone in `hostContext` (MCP Apps `HostContext.locale` / `.timeZone`): the
// runtime gives apps a translator over their own small tables (English is the key; one table
// per language, picked by the locale's language) and the locale, zone and first day of the
// week for Intl.
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

  var context = {};
  var readyHandlers = [];

  /** The person's locale as a canonical BCP 47 tag (the host's, else the browser's, else en). */
  function locale() {
    var candidates = [context.locale, (window.navigator || {}).language, 'en'];
    for (var i = 0; i < candidates.length; i++) {
      if (typeof candidates[i] !== 'string' || candidates[i] === '') continue;
      try { return Intl.getCanonicalLocales(candidates[i])[0]; } catch (e) { /* not a tag: next */ }
    }
    return 'en';
  }

  /** The person's IANA time zone from the host, if Intl knows it; else undefined (the browser's). */
  function timeZone() {
    if (typeof context.timeZone !== 'string' || context.timeZone === '') return undefined;
    try { return new Intl.DateTimeFormat('en', { timeZone: context.timeZone }).resolvedOptions().timeZone; } catch (e) { return undefined; }
  }

  /** The first day of the week for the locale, 0 = Sunday … 6 = Saturday (Intl.Locale weekInfo,
   *  else the regions that start on Sunday or Saturday, else Monday as ISO 8601). */
  function firstDay() {
    var tag = locale();
    try {
      var loc = new Intl.Locale(tag);
      var info = typeof loc.getWeekInfo === 'function' ? loc.getWeekInfo() : loc.weekInfo;
      if (info && typeof info.firstDay === 'number') return info.firstDay % 7;
      var region = loc.maximize().region || '';
      if (/^(US|CA|MX|BR|JP|KR|TW|HK|IL|PH|ZA|IN|SA|AU)$/.test(region)) return 0;
      if (/^(AE|AF|BH|DZ|EG|IQ|IR|JO|KW|LY|OM|QA|SD|SY)$/.test(region)) return 6;
    } catch (e) { /* an old engine without Intl.Locale: ISO */ }
    return 1;
  }

  /** A translator over `tables` ({ de: { 'English text {name}': 'Deutscher Text {name}' } }):
   *  t(text, vars) gives the locale language's text, else the English one, with {name} filled. */
  function translator(tables) {
    return function t(text, vars) {
      var language = locale().split('-')[0].toLowerCase();
      var table = Object.prototype.hasOwnProperty.call(tables, language) ? tables[language] : null;
      var out = table && typeof table[text] === 'string' ? table[text] : text;
      return out.replace(/\{([A-Za-z0-9_]+)\}/g, function (match, key) {
        return vars && Object.prototype.hasOwnProperty.call(vars, key) ? String(vars[key]) : match;
      });
    };
  }

  /** Runs `handler` once the host has said who the person is (locale, zone), before any tool data. */
  function onReady(handler) { readyHandlers.push(handler); }

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
        var hostContext = result && result.hostContext;
        context = hostContext && typeof hostContext === 'object' ? hostContext : {};
        applyHostContext(hostContext);
        document.documentElement.lang = locale();
        readyHandlers.forEach(function (handler) { handler(); });
        notify('ui/notifications/initialized', {});
      })
      .catch(function () {});
  }

  return { request: request, notify: notify, on: on, el: el, start: start, onReady: onReady, translator: translator, locale: locale, timeZone: timeZone, firstDay: firstDay };
})();
