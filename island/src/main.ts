/**
 * Entry point of the island bundle (`dist/tamebi-island.js`).
 *
 * On the Tamebi page it mounts the chat into `#tamebi-island`, after reading the configuration
 * the page provides; a page without a valid configuration gets one clear sentence instead of a
 * half-working chat. On every page it registers the Smart Picker element (issue #29), which
 * does nothing until the person picks "Ask Tamebi" in another app's composer; a page without
 * `#tamebi-island` (Talk, Text, Mail) gets only that.
 */
import { createApp } from 'vue';
import App from './components/App.vue';
import { ConfigError, readConfig } from './config';
import { t } from './l10n';
import { registerPickerElement } from './picker/register';
import './style.css';

registerPickerElement();

function mount(): void {
  const root = document.getElementById('tamebi-island');
  if (!root) return;
  // The stylesheet is scoped to this class (it is loaded on other apps' pages too).
  root.classList.add('tamebi-island');
  try {
    const config = readConfig(document);
    createApp(App, { config }).mount(root);
  } catch (error) {
    root.textContent = error instanceof ConfigError ? t('tamebi', 'Tamebi cannot start: {reason}', { reason: error.message }) : t('tamebi', 'Tamebi cannot start.');
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', mount);
} else {
  mount();
}
