// The dev host's stand-in for another app's composer with Nextcloud's Smart Picker (issue #29),
// served at /composer (see server.mjs). It plays the part of @nextcloud/vue's reference picker
// exactly as far as a custom picker element sees it (NcReferencePickerModal →
// NcCustomPickerElement): the element registered under a provider id in
// window._vue_richtext_custom_picker_elements is rendered with
// callback(el, { providerId, accessible: false }), its result's `element` is listened on for
// `submit` (detail: the text to insert) and `cancel`, and onDestroy(el, result) is called when
// the picker closes. The composer inserts the submitted text at the cursor, as Talk's does.
(function () {
  'use strict';
  var composer = document.getElementById('composer');
  var openButton = document.getElementById('smart-picker');
  var open = null;

  function registry() {
    return window._vue_richtext_custom_picker_elements || {};
  }

  function insert(text) {
    var start = composer.selectionStart;
    var end = composer.selectionEnd;
    composer.value = composer.value.slice(0, start) + text + composer.value.slice(end);
    composer.selectionStart = composer.selectionEnd = start + text.length;
  }

  function close() {
    if (!open) return;
    var entry = registry()[open.providerId];
    if (entry && open.result) entry.onDestroy(open.el, open.result);
    open.dialog.remove();
    open = null;
    openButton.focus();
  }

  function render(dialog, providerId) {
    var entry = registry()[providerId];
    var el = document.createElement('div');
    el.className = 'smart-picker__element';
    dialog.replaceChildren(el);
    open.el = el;
    Promise.resolve(entry.callback(el, { providerId: providerId, accessible: false })).then(function (result) {
      open.result = result;
      result.element.addEventListener('submit', function (e) {
        insert(String(e.detail));
        close();
      });
      result.element.addEventListener('cancel', close);
    });
  }

  // The provider list: what the picker shows first. Only providers with a registered element.
  openButton.addEventListener('click', function () {
    if (open) return;
    var dialog = document.createElement('div');
    dialog.className = 'smart-picker';
    dialog.setAttribute('role', 'dialog');
    dialog.setAttribute('aria-label', 'Smart Picker');
    dialog.dataset.testid = 'smart-picker';
    // The page lists the providers as Nextcloud's reference API would ({id, title}).
    JSON.parse(openButton.dataset.providers || '[]').forEach(function (provider) {
      if (!registry()[provider.id]) return;
      var b = document.createElement('button');
      b.type = 'button';
      b.className = 'smart-picker__provider';
      b.dataset.provider = provider.id;
      b.textContent = provider.title;
      b.addEventListener('click', function () {
        open.providerId = provider.id;
        render(dialog, provider.id);
      });
      dialog.appendChild(b);
    });
    var x = document.createElement('button');
    x.type = 'button';
    x.className = 'smart-picker__close';
    x.textContent = 'Close';
    x.addEventListener('click', close);
    dialog.appendChild(x);
    document.body.appendChild(dialog);
    open = { dialog: dialog, providerId: null, el: null, result: null };
    dialog.querySelector('button').focus();
  });
})();
