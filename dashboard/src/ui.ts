/**
 * The pieces every page uses: the page frame (`show`), status messages, error boxes that name fields as the forms label
 * them, forms whose failed save marks the fields in error and moves focus to the first, buttons, copy boxes, badges,
 * empty states and values shown once.
 */
import { ApiError } from './api.js';
import { formValues, h, words, type Child } from './dom.js';
import { currentSession, navigation } from './state.js';

const main = (): HTMLElement => document.getElementById('main') as HTMLElement;

export function say(message: string): void {
  (document.getElementById('status') as HTMLElement).textContent = message;
}

let focusHeading = true;

/** Whether the next page shown takes focus on its heading: yes after a navigation, no when a page is drawn again. */
export function headingFocus(take: boolean): void {
  focusHeading = take;
}

/**
 * Shows a page: replaces the main region. After a navigation focus moves to the page's heading (a screen reader
 * announces the new page; styles.css draws no ring around it); a page drawn again after a save leaves focus alone.
 */
export function show(title: string, ...content: (Node | null)[]): void {
  document.title = `${title} · Tollgate`;
  const heading = h('h1', { tabindex: -1 }, words(title));
  main().replaceChildren(heading, ...content.filter((node): node is Node => node !== null));
  if (focusHeading) heading.focus({ preventScroll: true });
}

/** What the forms call each API field, so that an error names the control the operator sees, not an internal name. */
export const FIELD_LABELS: Record<string, string> = {
  name: 'Name', appleAppId: 'Apple app id', androidPackage: 'Android package', androidCertSha256: 'Android signing certificate',
  deviceTokenTtlSeconds: 'Device token lifetime', allowedProviders: 'Allowed providers', allowedRoutes: 'Allowed routes',
  deviceLimitPerMinute: 'Requests per minute per device', appLimitPerMinute: 'Requests per minute for the app',
  deviceDailyQuota: 'Requests per day per device', appDailyQuota: 'Requests per day for the app', maxConcurrentStreamsPerDevice: 'Open streams per device',
  providerLimitsPerMinute: 'Per-provider limits', deviceDailyTokens: 'Tokens per day per device', appDailyTokens: 'Tokens per day for the app',
  providerDailyTokens: 'Per-provider token budgets', value: 'Key', baseUrl: 'Base URL', username: 'User name', password: 'Password',
  currentPassword: 'Current password', newPassword: 'New password', graceHours: 'Grace period', label: 'Label',
  deviceMinuteTokens: 'Tokens per minute per device', appMinuteTokens: 'Tokens per minute for the app',
  providerMinuteTokens: 'Per-provider budgets per minute', providerDeviceDailyTokens: 'Per-provider budgets per device',
  provider: 'Provider', model: 'Model', inputUsdPerMillion: 'Input USD per million tokens', outputUsdPerMillion: 'Output USD per million tokens',
  url: 'Address', events: 'Events', maxSessionSeconds: 'Longest realtime session', sessionIdleSeconds: 'Idle time before a session closes',
  deviceDailySessionSeconds: 'Realtime seconds per day per device', appDailySessionSeconds: 'Realtime seconds per day for the app',
  openCredentialRoutes: 'Open credential routes', credentialTtlSeconds: 'Longest lifetime of a minted credential', userAuth: 'Sign-in provider',
  userTokenMode: 'User tokens', userLimitPerMinute: 'Requests per minute per user', userDailyQuota: 'Requests per day per user',
  userDailyTokens: 'Tokens per day per user', userMinuteTokens: 'Tokens per minute per user', userDailySessionSeconds: 'Realtime seconds per day per user',
  profiles: 'Profiles by tier', modelPolicy: 'Model policy',
  dailySpendAlertUsd: 'Daily spend alert (USD)', attestationFailureAlert: 'Refused attestations',
};

/** A validator message without its leading field name ("deviceLimitPerMinute must be …" → "must be …"). */
function fieldMessage(name: string, message: string): string {
  return message.startsWith(`${name} `) ? message.slice(name.length + 1) : message;
}

export function errorBox(error: unknown): HTMLElement {
  if (error instanceof ApiError) {
    const fields = Object.entries(error.body.fields ?? {});
    // With field errors, list each once under the label the operator sees; the summary sentence would repeat them.
    if (fields.length) {
      return h('div', { class: 'error', role: 'alert' }, 'Please correct:', h('ul', {}, ...fields.map(([name, messages]) => h('li', {}, `${FIELD_LABELS[name] ?? name}: ${messages.map((message) => fieldMessage(name, message)).join('; ')}`))));
    }
    return h('div', { class: 'error', role: 'alert' }, error.body.message);
  }
  // fetch() rejects with a bare TypeError ("Failed to fetch") when the gateway cannot be reached at all.
  if (error instanceof TypeError) return h('div', { class: 'error', role: 'alert' }, 'The gateway cannot be reached. Check that it is running and that this page points at it, then try again.');
  return h('div', { class: 'error', role: 'alert' }, error instanceof Error ? error.message : String(error));
}

/** Removes the marks a failed save left on a form. */
function clearFieldErrors(form: HTMLFormElement): void {
  form.querySelectorAll('.error, .field-error').forEach((element) => element.remove());
  form.querySelectorAll('[aria-invalid="true"]').forEach((control) => {
    control.removeAttribute('aria-invalid');
    const described = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((id) => id && !id.endsWith('-error'));
    if (described.length) control.setAttribute('aria-describedby', described.join(' '));
    else control.removeAttribute('aria-describedby');
  });
}

/**
 * Marks each field the API named (`aria-invalid`, its message beside it, linked by `aria-describedby`) and moves focus
 * to the first, scrolled into view: the error is where the operator looks, not at the top of a long form.
 * Returns whether a field was marked.
 */
function markFieldErrors(form: HTMLFormElement, error: unknown): boolean {
  if (!(error instanceof ApiError)) return false;
  let first: HTMLElement | null = null;
  for (const [name, messages] of Object.entries(error.body.fields ?? {})) {
    const control = form.elements.namedItem(name);
    if (!(control instanceof HTMLInputElement || control instanceof HTMLSelectElement || control instanceof HTMLTextAreaElement)) continue;
    const id = `${control.id || name}-error`;
    control.setAttribute('aria-invalid', 'true');
    control.setAttribute('aria-describedby', [control.getAttribute('aria-describedby'), id].filter(Boolean).join(' '));
    control.after(h('span', { class: 'field-error', id }, messages.map((message) => fieldMessage(name, message)).join('; ')));
    first ??= control;
  }
  if (!first) return false;
  first.focus({ preventScroll: true });
  first.scrollIntoView({ block: 'center' });
  return true;
}

/** Wires a form: on submit, runs `action`; on failure marks the fields in error and changes nothing. */
export function onSubmit(form: HTMLFormElement, action: (values: Record<string, string | boolean>) => Promise<void>): HTMLFormElement {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearFieldErrors(form);
    // The last action's message ("Settings saved.") must not stand for this one while it runs.
    say('');
    const submit = form.querySelector('button[type="submit"]') as HTMLButtonElement | null;
    if (submit) submit.disabled = true;
    action(formValues(form))
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 401 && currentSession()) return navigation.signedOut();
        const box = errorBox(error);
        if (markFieldErrors(form, error)) form.prepend(box);
        else {
          // No field to point at: the message goes beside the button that was pressed, in view.
          (submit ?? form.lastElementChild ?? form).before(box);
          box.scrollIntoView({ block: 'nearest' });
        }
      })
      .finally(() => {
        if (submit) submit.disabled = false;
      });
  });
  return form;
}

export function button(label: string, action: () => Promise<void>, className = '', confirmText?: string): HTMLButtonElement {
  const element = h('button', { type: 'button', class: className }, label);
  element.addEventListener('click', () => {
    if (confirmText && !window.confirm(confirmText)) return;
    element.disabled = true;
    action()
      .catch((error: unknown) => element.after(errorBox(error)))
      .finally(() => {
        element.disabled = false;
      });
  });
  return element;
}

/** A button that copies `text` to the clipboard and says so. */
export function copyButton(text: string, label = 'Copy'): HTMLButtonElement {
  const element = h('button', { type: 'button', class: 'copy' }, label);
  element.addEventListener('click', () => {
    void navigator.clipboard?.writeText(text).then(
      () => {
        element.textContent = 'Copied';
        say('Copied to the clipboard.');
        setTimeout(() => (element.textContent = label), 2000);
      },
      () => say('Copying was refused by the browser: select the text and copy it.'),
    );
  });
  return element;
}

/** A value with its copy button, e.g. an id. */
export const copyBox = (value: string, label = 'Copy'): HTMLElement => h('span', { class: 'copy-box' }, h('code', {}, value), ' ', copyButton(value, label));

export function badge(text: string, tone: 'ok' | 'bad' | 'muted'): HTMLElement {
  return h('span', { class: `badge ${tone}` }, text);
}

/** The one empty state every page uses: what is missing, and the next step. */
export function emptyState(message: string, next?: Child): HTMLElement {
  return h('div', { class: 'empty-state', 'data-testid': 'empty-state' }, h('p', {}, message), next ? h('p', {}, next) : null);
}

/**
 * A value shown once (a new token): it cannot be shown again, so it stays on screen, above the page, across actions and
 * page changes, until the operator dismisses it.
 */
export function once(label: string, value: string): void {
  const box = h('div', { class: 'once', role: 'alert', 'data-testid': 'shown-once' }, h('strong', {}, label), h('p', {}, 'Copy it now: it will not be shown again.'), h('code', {}, value), ' ', copyButton(value));
  box.append(' ', button('I have copied it', async () => box.remove()));
  document.getElementById('once')?.append(box);
}

/** A setting's value as a form shows it. */
export const text = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

/** A date and time in the operator's locale. */
export const when = (value: string | number | null | undefined, none = ''): string => (value === null || value === undefined ? none : new Date(value).toLocaleString());
