/** The provider keys of an app (write-only, masked), when each was last used and "test this key", and the Play Integrity credentials. */
import { api, type App, type KeyCheck, type Provider, type Secret } from '../api.js';
import { field, h, stackTable, table } from '../dom.js';
import { loadProviders, refresh } from '../state.js';
import { button, onSubmit, say } from '../ui.js';

export async function secretsTab(app: App): Promise<(Node | null)[]> {
  const [secrets, catalog, attestationSecrets] = await Promise.all([
    api<Secret[]>('GET', `/apps/${app.id}/secrets`),
    loadProviders(),
    api<Array<{ name: string; masked: string; updatedAt: string }>>('GET', `/apps/${app.id}/attestation-secrets`),
  ]);
  const attestationForm = h(
    'form',
    { 'aria-label': 'Set an attestation credential' },
    field('Credential', h('select', { name: 'name' }, ...[['play-integrity-decryption-key', 'Play Integrity decryption key (base64)'], ['play-integrity-verification-key', 'Play Integrity verification key (base64)'], ['play-integrity-service-account', 'Service-account JSON (standard requests)']].map(([value, label]) => h('option', { value }, label ?? '')))),
    field('Value', h('textarea', { name: 'value', rows: 3, autocomplete: 'off', required: true }), 'Stored encrypted; never shown again.'),
    h('button', { type: 'submit' }, 'Save credential'),
  );
  const form = h(
    'form',
    { 'aria-label': 'Set a provider key' },
    field('Provider', h('select', { name: 'provider', required: true }, ...catalog.map((provider) => h('option', { value: provider.slug }, `${provider.name} (${provider.slug})`)))),
    field('Key', h('input', { name: 'value', type: 'password', autocomplete: 'off', required: true }), 'Stored encrypted; it is never shown again, only masked.'),
    field('Base URL (per-tenant providers such as Azure OpenAI only)', h('input', { name: 'baseUrl', type: 'url', placeholder: 'https://my-resource.openai.azure.com' })),
    h('button', { type: 'submit', class: 'primary' }, 'Save key'),
  );
  return [
    stackTable(
      ['Provider', 'Key', 'Base URL', 'Updated', 'Last used', 'Check', ''],
      secrets.map((secret) => [
        secret.provider,
        h('code', { 'data-testid': `masked-${secret.provider}` }, secret.masked),
        secret.baseUrl ?? '',
        new Date(secret.updatedAt).toLocaleString(),
        keyLastUsed(secret),
        keyCheckControl(app, secret, catalog),
        button(`Delete ${secret.provider} key`, async () => { await api('DELETE', `/apps/${app.id}/secrets/${secret.provider}`); await refresh(); }, 'danger', `Delete the ${secret.provider} key?`),
      ]),
      secrets.length ? undefined : 'No provider keys yet.',
      'secret-list',
    ),
    h('h2', {}, 'Set a provider key'),
    onSubmit(form, async (values) => {
      await api('PUT', `/apps/${app.id}/secrets/${encodeURIComponent(String(values.provider))}`, { value: values.value, ...(values.baseUrl ? { baseUrl: values.baseUrl } : {}) });
      // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
      await refresh();
      say(`The ${String(values.provider)} key is saved.`);
    }),
    h('h2', {}, 'Attestation credentials (Play Integrity)'),
    table(
      ['Credential', 'Value', 'Updated'],
      attestationSecrets.map((secret) => [secret.name, h('code', {}, secret.masked), new Date(secret.updatedAt).toLocaleString()]),
      attestationSecrets.length ? undefined : 'None yet: Play Integrity needs the keys from Play Console (classic) or a service account (standard).',
    ),
    onSubmit(attestationForm, async (values) => {
      await api('PUT', `/apps/${app.id}/attestation-secrets/${encodeURIComponent(String(values.name))}`, { value: values.value });
      // Said once the page shows what was saved: a form filled in meanwhile is not redrawn under the operator.
      await refresh();
      say(`${String(values.name)} is saved.`);
    }),
  ];
}

/** When the key was last used: the last request forwarded with it (written with each usage batch). */
function keyLastUsed(secret: Secret): HTMLElement {
  const testId = `last-used-${secret.provider}`;
  return secret.lastUsedAt
    ? h('time', { datetime: secret.lastUsedAt, 'data-testid': testId }, new Date(secret.lastUsedAt).toLocaleString())
    : h('span', { class: 'muted', 'data-testid': testId }, 'not used yet');
}

const KEY_CHECK_OUTCOMES: Record<KeyCheck['outcome'], string> = {
  ok: 'Works',
  rejected: 'Rejected by the provider',
  unexpected: 'Unexpected answer',
  unreachable: 'Provider unreachable',
};

/** "Test this key": one harmless request the provider documents, sent by the gateway with the stored key. */
function keyCheckControl(app: App, secret: Secret, catalog: Provider[]): HTMLElement {
  const check = catalog.find((provider) => provider.slug === secret.provider)?.keyCheck;
  if (!check) return h('span', { class: 'muted', title: 'This provider’s manifest declares no harmless request to test a key with.' }, 'no key check');
  const result = h('span', { class: 'key-check', role: 'status', 'data-testid': `key-check-${secret.provider}` });
  const run = button(`Test ${secret.provider} key`, async () => {
    result.className = 'key-check';
    result.textContent = 'Testing…';
    try {
      const outcome = await api<KeyCheck>('POST', `/apps/${app.id}/secrets/${encodeURIComponent(secret.provider)}/test`);
      result.className = `key-check ${outcome.outcome === 'ok' ? 'ok' : 'bad'}`;
      result.textContent = `${KEY_CHECK_OUTCOMES[outcome.outcome]}${outcome.status === null ? '' : ` (HTTP ${outcome.status})`}, ${outcome.latencyMs} ms`;
    } catch (error) {
      result.textContent = '';
      throw error;
    }
  });
  run.title = `Sends ${check} to the provider with this key; only the outcome is shown.`;
  return h('span', {}, run, ' ', result);
}

