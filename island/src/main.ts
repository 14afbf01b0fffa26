/**
 * Entry point of the island bundle (`dist/tamebi-island.js`).
 *
 * Mounts the chat into `#tamebi-island` (created at the end of <body> if the page has none),
 * after reading the configuration the page provides. A page without a valid configuration
 * gets one clear sentence instead of a half-working chat.
 */
import { createApp } from 'vue';
import App from './components/App.vue';
import { ConfigError, readConfig } from './config';
import { t } from './l10n';
import './style.css';

function mount(): void {
  let root = document.getElementById('tamebi-island');
  if (!root) {
    root = document.createElement('div');
    root.id = 'tamebi-island';
    document.body.appendChild(root);
  }
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
