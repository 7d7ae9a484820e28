/**
 * Integration code for each platform, provider and capability, from the gateway's shared generator: install,
 * configuration, initialization and a request, then the SDK's other features (a realtime session, a signed-in user,
 * `me()`, and the provider SDK hook), each under its own heading.
 */
import { api, type App, type Secret } from '../api.js';
import { field, formValues, h } from '../dom.js';
import { loadProviders } from '../state.js';
import { button, copyButton, onSubmit } from '../ui.js';

export async function integrateTab(app: App): Promise<(Node | null)[]> {
  const [catalog, secrets] = await Promise.all([loadProviders(), api<Secret[]>('GET', `/apps/${app.id}/secrets`)]);
  const output = h('div', { 'aria-live': 'polite' });
  const preferred = secrets[0]?.provider ?? catalog[0]?.slug ?? '';
  const form = h(
    'form',
    { class: 'inline', 'aria-label': 'Integration code' },
    field('Platform', h('select', { name: 'platform' }, ...[['ios', 'iOS (Swift)'], ['android', 'Android (Kotlin)'], ['flutter', 'Flutter (Dart)'], ['react-native', 'React Native']].map(([value, label]) => h('option', { value }, label ?? '')))),
    field('Provider', h('select', { name: 'provider' }, ...catalog.map((provider) => h('option', { value: provider.slug, selected: provider.slug === preferred }, provider.name)))),
    field('Capability', h('select', { name: 'capability' })),
    h('button', { type: 'submit', class: 'primary' }, 'Show code'),
  );
  // Only what the chosen provider offers (no placeholder paths for a capability it lacks).
  const providerSelect = form.querySelector('select[name="provider"]') as HTMLSelectElement;
  const capabilitySelect = form.querySelector('select[name="capability"]') as HTMLSelectElement;
  const fillCapabilities = () => {
    const offered = catalog.find((provider) => provider.slug === providerSelect.value)?.integrationCapabilities ?? [];
    const previous = capabilitySelect.value;
    capabilitySelect.replaceChildren(...offered.map((capability) => h('option', { value: capability, selected: capability === previous }, capability)));
  };
  fillCapabilities();
  providerSelect.addEventListener('change', fillCapabilities);
  let developmentToken = '';
  const block = (testId: string, text: string) => h('div', { class: 'code' }, h('pre', { 'data-testid': testId }, h('code', {}, text)), copyButton(text));
  const render = async (values: Record<string, string | boolean>) => {
    const query = new URLSearchParams({ platform: String(values.platform), provider: String(values.provider), capability: String(values.capability) });
    if (developmentToken) query.set('developmentToken', developmentToken);
    const snippet = await api<{
      install: string;
      configuration: Array<{ file: string; place: string; content: string }>;
      initializationPlace: string;
      initialization: string;
      request: string;
      features: Array<{ id: string; title: string; description: string; content: string }>;
      generic: boolean;
      development: boolean;
    }>('GET', `/apps/${app.id}/integration?${query}`);
    const simulator = app.settings.allowDevelopmentAttestation === true
      ? developmentToken
        ? h('p', { class: 'muted' }, 'The code below carries a development token for simulators and emulators, in debug builds only. Production builds attest the real device.')
        : h('p', {}, 'To run this code on a simulator or emulator: ', button('Create a development token for this code', async () => {
            developmentToken = (await api<{ developmentToken: string }>('POST', `/apps/${app.id}/development-tokens`, { label: 'Integrate page' })).developmentToken;
            await render(formValues(form));
          }))
      : h('p', { class: 'muted' }, 'Simulators and emulators cannot attest: allow development attestation in this app’s settings to get a development token.');
    output.replaceChildren(
      h('h2', {}, '1. Install the SDK'),
      block('install', snippet.install),
      h('h2', {}, '2. Tell the SDK where the gateway is'),
      ...snippet.configuration.flatMap((entry) => [h('p', {}, `${entry.file}: ${entry.place}`), block('configuration', entry.content)]),
      h('h2', {}, '3. Initialize at app start'),
      h('p', {}, snippet.initializationPlace),
      simulator,
      block('initialization', snippet.initialization),
      h('h2', {}, '4. Call the provider through the SDK'),
      snippet.generic ? h('p', { class: 'muted' }, 'This provider declares no example for this capability: a generic call is shown; take the path from the provider’s documentation.') : '',
      block('request', snippet.request),
      h('p', { class: 'muted' }, 'Replace at_YOUR_APP_TOKEN with the app token shown when the app was created (or rotated). No provider key belongs in the app.'),
      ...snippet.features.flatMap((feature, index) => [
        h('h2', { id: `feature-${feature.id}` }, `${index + 5}. ${feature.title}`),
        h('p', {}, feature.description),
        block(`feature-${feature.id}`, feature.content),
      ]),
    );
  };
  onSubmit(form, render);
  await render(formValues(form));
  return [form, output];
}
