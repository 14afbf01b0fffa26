/**
 * Entry point of the admin settings bundle (`dist/tamebi-admin.js`), loaded only by the Tamebi
 * section of Nextcloud's admin settings (lib/Settings/Admin.php).
 *
 * Mounts AdminApp into `#tamebi-admin-app`, whose `data-ocs-base` is the app's OCS base
 * (`<webroot>/ocs/v2.php/apps/tamebi/api/v1`), with the page's CSRF token
 * (`<head data-requesttoken>`, as Nextcloud renders it). Must never: read its configuration from
 * anywhere else (the URL, storage).
 */
import { createApp } from 'vue';
import AdminApp from './AdminApp.vue';
import { t } from '../l10n';
import { Ocs } from '../ocs';
import './admin.css';

const OCS_BASE = /^(\/[A-Za-z0-9._~\-/]*)?\/ocs\/v2\.php\/apps\/tamebi\/api\/v1$/;

function mount(): void {
  const root = document.getElementById('tamebi-admin-app');
  if (!root) return;
  const base = root.dataset.ocsBase ?? '';
  const token = document.head?.dataset.requesttoken ?? '';
  if (!OCS_BASE.test(base) || token === '') {
    root.textContent = t('tamebi', 'Tamebi cannot start.');
    return;
  }
  createApp(AdminApp, { ocs: new Ocs(base, token) }).mount(root);
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', mount);
} else {
  mount();
}
