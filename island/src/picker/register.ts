/**
 * "Ask Tamebi" as a Smart Picker element (issue #29): registers the island's picker mode with
 * Nextcloud's reference picker, so Talk's, Text's, Collectives' and Mail's composers can open it.
 *
 * The contract is @nextcloud/vue's (src/components/NcRichText/NcReferencePicker/
 * customPickerElements.js and NcCustomPickerElement.vue, the same in its Vue 2 and Vue 3
 * releases): a global registry `window._vue_richtext_custom_picker_elements`, keyed by the
 * reference provider's id, holding `{ id, callback, onDestroy, size }`. The picker calls
 * `callback(el, { providerId, accessible })`, which returns `{ element, object }`; it listens on
 * `element` for a `submit` event whose `detail` is the text to insert and for `cancel`, and
 * calls `onDestroy(el, result)` when it closes. We write that registry ourselves instead of
 * importing `registerCustomPickerElement`: the host app's own copy of @nextcloud/vue reads the
 * same global, and the library would add its whole component set to a bundle that every page
 * with a composer loads.
 *
 * Owns: the registration and the element's life. Must never: insert anything itself (only the
 * person's click in PickerActions.vue emits `submit`), or replace another app's registration.
 */
import { createApp, type App as VueApp } from 'vue';
import App from '../components/App.vue';
import { ConfigError, readConfig } from '../config';
import { t } from '../l10n';
import { originOfPage } from './origin';

/** The reference provider's id (nextcloud-app/lib/Reference/TamebiReferenceProvider.php). */
export const PICKER_PROVIDER_ID = 'tamebi';

/** What the picker element's callback returns (@nextcloud/vue's NcCustomPickerRenderResult). */
export class PickerRenderResult {
  constructor(
    public element: HTMLElement,
    public object: VueApp | null,
  ) {}
}

interface PickerEntry {
  id: string;
  callback: (el: HTMLElement, props: { providerId: string; accessible: boolean }) => PickerRenderResult;
  onDestroy: (el: HTMLElement, result?: PickerRenderResult) => void;
  size: 'small' | 'normal' | 'large' | 'full';
}

type Registry = Record<string, PickerEntry | undefined>;

declare global {
  interface Window {
    _vue_richtext_custom_picker_elements?: Registry;
  }
}

/** Registers the element once per page; false when the id is already taken. */
export function registerPickerElement(win: Window = window): boolean {
  const registry = (win._vue_richtext_custom_picker_elements ??= {});
  if (registry[PICKER_PROVIDER_ID]) return false;
  registry[PICKER_PROVIDER_ID] = { id: PICKER_PROVIDER_ID, callback: renderPicker, onDestroy: destroyPicker, size: 'large' };
  return true;
}

/** Mounts a compact chat into the picker's element; its answers leave as DOM events on it. */
export function renderPicker(el: HTMLElement): PickerRenderResult {
  const doc = el.ownerDocument;
  const root = doc.createElement('div');
  root.className = 'tamebi-island tamebi-island--picker';
  el.replaceChildren(root);
  try {
    const config = readConfig(doc);
    const app = createApp(App, {
      config,
      picker: { origin: originOfPage(doc) },
      // Not bubbling: a `submit` that reached a form of the host page would submit it.
      onPickerSubmit: (text: string) => root.dispatchEvent(new CustomEvent('submit', { detail: text })),
      onPickerCancel: () => root.dispatchEvent(new CustomEvent('cancel')),
    });
    app.mount(root);
    return new PickerRenderResult(root, app);
  } catch (error) {
    root.textContent = error instanceof ConfigError ? t('tamebi', 'Tamebi cannot start: {reason}', { reason: error.message }) : t('tamebi', 'Tamebi cannot start.');
    return new PickerRenderResult(root, null);
  }
}

function destroyPicker(_el: HTMLElement, result?: PickerRenderResult): void {
  result?.object?.unmount();
}
