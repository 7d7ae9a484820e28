/**
 * The dashboard's Users, Alerts and realtime views and the Policy sections for sessions and signed-in users, in real
 * Chromium against a real gateway: what each page does is checked on the management API and on the wire (the proxy
 * refuses a blocked user, the webhook receiver gets the test delivery, the settings saved are the API's names and
 * shapes), and realtime sessions show apart from HTTP requests with their figures.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { adminClient, realtimeSession, SignedInUsers, WebhookReceiver } from '../support/dashboard-data';
import { FakeRealtimeUpstream, eventually } from '../support/fake-realtime';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway, type Provisioned } from '../support/gateway';
import { requireTool } from '../support/services';

const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';

describe('dashboard: users, alerts, realtime sessions and their policy', function () {
  this.timeout(120_000);
  let upstream: FakeUpstream;
  let voice: FakeRealtimeUpstream;
  let users: SignedInUsers;
  let receiver: WebhookReceiver;
  let gateway: TestGateway;
  let browser: Browser;
  let page: Page;
  let device: Provisioned;
  let admin: Awaited<ReturnType<typeof adminClient>>;
  const dialogs: string[] = [];

  const chat = async (sub: string) => {
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...device.headers, 'Tollgate-User-Token': await users.token(sub), 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    const body = (await response.json()) as { error?: { reason?: string } };
    return { status: response.status, reason: body.error?.reason };
  };
  const open = async (hash: string, heading: string) => {
    await page.goto(`${gateway.url}/dashboard/#/apps/${device.appId}/${hash}`);
    await page.getByRole('heading', { name: heading, exact: true }).waitFor();
  };

  before(async function () {
    requireTool(this, existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: .ci/run installs the Debian package "chromium"`);
    upstream = await FakeUpstream.start();
    // An OpenAI chat completion (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(respondJson(200, { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }));
    voice = await FakeRealtimeUpstream.start();
    users = await SignedInUsers.start();
    receiver = await WebhookReceiver.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, deepgram: voice.url } });
    device = await gateway.provision({ openai: 'sk-dashboard-users-0000000000000000', deepgram: 'dg-dashboard-users-00000000000' }, users.settings('required'));
    admin = await adminClient(gateway);
    expect((await chat('ada-lovelace')).status).to.equal(200);
    expect((await chat('grace-hopper')).status).to.equal(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
    await page.goto(`${gateway.url}/dashboard/setup#token=${gateway.gateway.setupToken}`);
    await page.getByLabel('User name').fill('operator');
    await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
    await page.getByLabel('Repeat the password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create administrator' }).click();
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await gateway?.close();
    await upstream?.close();
    await voice?.close();
    await users?.close();
    await receiver?.close();
  });

  it('Users: lists and finds signed-in users; Block refuses the user at the proxy, Unblock lets them in again', async () => {
    await open('users', 'Test app · Users');
    const list = page.getByTestId('end-user-list');
    await list.waitFor();
    expect(await list.locator('tbody tr').count()).to.equal(2);
    await page.getByLabel('User id starts with').fill('grace');
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    await page.getByRole('button', { name: 'Block ada-lovelace' }).waitFor({ state: 'detached' });
    expect(await list.locator('tbody tr').count()).to.equal(1);
    await page.getByRole('button', { name: 'Block grace-hopper' }).click();
    await page.getByRole('button', { name: 'Unblock grace-hopper' }).waitFor();
    expect(dialogs.pop()).to.match(/^Block grace-hopper\?/);
    expect((await admin('GET', `/apps/${device.appId}/users/grace-hopper`)).json).to.include({ blocked: true });
    expect(await chat('grace-hopper')).to.deep.equal({ status: 403, reason: 'user_blocked' });
    expect((await chat('ada-lovelace')).status).to.equal(200);
    await page.getByRole('button', { name: 'Unblock grace-hopper' }).click();
    await page.getByRole('button', { name: 'Block grace-hopper' }).waitFor();
    expect((await admin('GET', `/apps/${device.appId}/users/grace-hopper`)).json).to.include({ blocked: false });
    expect((await chat('grace-hopper')).status).to.equal(200);
  });

  it('User page: identity, limits, usage, the user\'s devices and latest requests; blocks from the page; a user id with markup stays text', async () => {
    await gateway.recordedUsage(device.appId, 0, (events) => events.filter((event) => event.userId === 'ada-lovelace').length >= 2);
    // From another page: the list is drawn afresh (the search of the test before is not kept).
    await open('', 'Test app');
    await open('users', 'Test app · Users');
    await page.getByRole('link', { name: 'ada-lovelace' }).click();
    await page.getByRole('heading', { name: 'Test app · User ada-lovelace', exact: true }).waitFor();
    expect(await page.getByTestId('user-identity').textContent()).to.include('ada-lovelace').and.include(users.provider.issuer);
    expect(await page.getByTestId('user-state').textContent()).to.equal('active');
    // The limits that hold (the app's per-minute limit at least), as the API reads them.
    const limits = (await admin('GET', `/apps/${device.appId}/users/ada-lovelace/limits`)).json as { limits: Array<{ name: string; limit: number }> };
    expect(await page.getByTestId('user-limits').locator('tbody tr').count()).to.equal(limits.limits.length);
    expect(await page.getByTestId('user-limits').textContent()).to.include('Requests per minute').and.include('the whole app, every user');
    // Usage: the user's requests in the window, drawn as a chart.
    const usage = (await admin('GET', `/apps/${device.appId}/usage?minutes=1440&user=ada-lovelace`)).json as { totalRequests: number };
    expect(usage.totalRequests).to.be.at.least(2);
    expect(await page.getByTestId('user-requests').textContent()).to.equal(String(usage.totalRequests));
    await page.getByTestId('chart-user-requests-plot').locator('canvas').waitFor();
    // The device the requests came from, linked to its page, and the latest requests through the fake provider.
    const devices = page.getByTestId('user-devices');
    expect(await devices.locator('tbody tr').count()).to.equal(1);
    expect(await devices.textContent()).to.include(device.deviceId).and.include('Development').and.include('active');
    const requests = page.getByTestId('user-requests-list').locator('tbody tr');
    expect(await requests.count()).to.equal(usage.totalRequests);
    expect(await requests.first().textContent()).to.include('POST v1/chat/completions').and.include('gpt-4o-mini').and.include('200').and.include('3 / 2');
    // Blocked from its own page, and unblocked again.
    await page.getByRole('button', { name: 'Block ada-lovelace' }).click();
    await page.getByRole('button', { name: 'Unblock ada-lovelace' }).waitFor();
    expect(dialogs.pop()).to.match(/^Block ada-lovelace\?/);
    expect(await page.getByTestId('user-state').textContent()).to.match(/^blocked/);
    expect(await chat('ada-lovelace')).to.deep.equal({ status: 403, reason: 'user_blocked' });
    await page.getByRole('button', { name: 'Unblock ada-lovelace' }).click();
    await page.getByRole('button', { name: 'Block ada-lovelace' }).waitFor();
    expect((await chat('ada-lovelace')).status).to.equal(200);
    await devices.getByRole('link', { name: device.deviceId }).click();
    await page.getByRole('heading', { name: `Test app · Device ${device.deviceId}`, exact: true }).waitFor();

    // The sign-in provider's sub is the user's own text: shown as text, never run as markup.
    const odd = '<img src=x onerror="document.body.dataset.pwned=1">';
    expect((await chat(odd)).status).to.equal(200);
    await gateway.recordedUsage(device.appId, 0, (events) => events.some((event) => event.userId === odd));
    await page.goto(`${gateway.url}/dashboard/#/apps/${device.appId}/users/${encodeURIComponent(odd)}`);
    await page.getByRole('heading', { name: `Test app · User ${odd}`, exact: true }).waitFor();
    expect(await page.getByTestId('user-identity').textContent()).to.include(odd);
    expect(await page.getByTestId('user-requests-list').locator('tbody tr').count()).to.equal(1);
    expect(await page.locator('main img').count()).to.equal(0);
    expect(await page.evaluate('document.body.dataset.pwned ?? null')).to.equal(null);
  });

  it('Alerts: adds a webhook with its signing secret shown once, sends a test the receiver gets, lists the delivery', async () => {
    await open('alerts', 'Test app · Alerts');
    await page.getByLabel('Address (https URL)').fill(receiver.url);
    await page.getByLabel(/^attestation\.failure_rate/).uncheck();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const once = page.getByTestId('shown-once');
    await once.waitFor();
    const secret = (await once.locator('code').textContent()) ?? '';
    expect(secret).to.match(/^whsec_/);
    const [webhook] = (await admin('GET', `/apps/${device.appId}/webhooks`)).json as Array<{ id: string; url: string; events: string[] }>;
    expect(webhook).to.deep.include({ url: receiver.url, events: ['budget.threshold', 'spend.threshold', 'provider.key_rejected', 'device.revoked', 'user.blocked'] });
    expect(JSON.stringify(webhook)).to.not.include(secret);
    await page.getByRole('button', { name: `Send a test to ${receiver.url}` }).click();
    await eventually(() => receiver.types.includes('webhook.test'), 10_000, 'the test delivery');
    // Delivered: the list shows it once the page is drawn again.
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const deliveries = (await admin('GET', `/apps/${device.appId}/webhook-deliveries`)).json as Array<{ status: string }>;
      if (deliveries.some((delivery) => delivery.status === 'delivered')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The same address: drawn again by a reload.
    await page.reload();
    await page.getByRole('heading', { name: 'Test app · Alerts', exact: true }).waitFor();
    const row = page.getByTestId('webhook-deliveries').locator('tbody tr').first();
    const deliveries = JSON.stringify((await admin('GET', `/apps/${device.appId}/webhook-deliveries`)).json);
    expect(await row.textContent(), deliveries).to.include('webhook.test').and.include(receiver.url).and.include('delivered').and.include('HTTP 204');
    // Shown once: not on the page drawn again, nor in any answer of the API.
    expect(await page.content()).to.not.include(secret);
    expect(deliveries).to.not.include(secret);
  });

  it('Alerts: shows and saves the spend and refused-attestation thresholds under the API\'s names, and clears them', async () => {
    await open('alerts', 'Test app · Alerts');
    const form = page.getByRole('form', { name: 'Alert thresholds' });
    await form.getByLabel('Daily spend alert (USD)').fill('12.5');
    await form.getByLabel('Refused share (%)').fill('30');
    await form.getByLabel('Fewest attempts in 15 minutes').fill('20');
    await form.getByRole('button', { name: 'Save thresholds' }).click();
    await page.getByText('Alert thresholds saved.').waitFor();
    expect((await admin('GET', `/apps/${device.appId}`)).json.settings).to.deep.include({ dailySpendAlertUsd: 12.5, attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    // Drawn again: the page shows what is set.
    await page.reload();
    await page.getByRole('heading', { name: 'Test app · Alerts', exact: true }).waitFor();
    expect(await page.getByRole('form', { name: 'Alert thresholds' }).getByLabel('Refused share (%)').inputValue()).to.equal('30');
    // Out of range: the API's error is shown at the field, nothing changes.
    await page.getByRole('form', { name: 'Alert thresholds' }).getByLabel('Refused share (%)').fill('130');
    await page.getByRole('form', { name: 'Alert thresholds' }).evaluate((element) => { (element as unknown as { noValidate: boolean }).noValidate = true; });
    await page.getByRole('form', { name: 'Alert thresholds' }).getByRole('button', { name: 'Save thresholds' }).click();
    await page.getByRole('form', { name: 'Alert thresholds' }).getByText(/^Refused attestations: must be \{"percent": 1-100/).waitFor();
    expect((await admin('GET', `/apps/${device.appId}`)).json.settings).to.deep.include({ attestationFailureAlert: { percent: 30, minAttempts: 20 } });
    // Emptied: cleared.
    const again = page.getByRole('form', { name: 'Alert thresholds' });
    await again.getByLabel('Daily spend alert (USD)').fill('');
    await again.getByLabel('Refused share (%)').fill('');
    await again.getByLabel('Fewest attempts in 15 minutes').fill('');
    await again.getByRole('button', { name: 'Save thresholds' }).click();
    await page.getByText('Alert thresholds saved.').waitFor();
    expect((await admin('GET', `/apps/${device.appId}`)).json.settings).to.not.have.any.keys('dailySpendAlertUsd', 'attestationFailureAlert');
  });

  it('Policy, realtime sessions: saves every field under the API\'s names, warns before opening a credential route', async () => {
    await open('sessions', 'Test app · Policy');
    const form = page.getByRole('form', { name: 'Realtime sessions' });
    expect(await page.getByTestId('credential-warning').isVisible()).to.equal(true);
    await form.getByLabel('Longest realtime session (seconds)').fill('600');
    await form.getByLabel('Idle time before a session closes (seconds)').fill('45');
    await form.getByLabel('Realtime seconds per day per device').fill('3600');
    await form.getByLabel('Realtime seconds per day for the app').fill('36000');
    await form.getByLabel(/^Open credential routes for/).fill('deepgram');
    await form.getByLabel('Longest lifetime of a minted credential (seconds)').fill('30');
    await form.getByRole('button', { name: 'Save session settings' }).click();
    await page.getByText('Session settings saved.').waitFor();
    expect(dialogs.pop()).to.match(/^Open credential routes for deepgram\?/);
    expect((await admin('GET', `/apps/${device.appId}`)).json.settings).to.deep.include({ maxSessionSeconds: 600, sessionIdleSeconds: 45, deviceDailySessionSeconds: 3600, appDailySessionSeconds: 36000, openCredentialRoutes: ['deepgram'], credentialTtlSeconds: 30 });
    // Emptied fields clear their settings.
    await form.getByLabel(/^Open credential routes for/).fill('');
    await form.getByLabel('Longest lifetime of a minted credential (seconds)').fill('');
    await form.getByRole('button', { name: 'Save session settings' }).click();
    await page.getByText('Session settings saved.').waitFor();
    const settings = (await admin('GET', `/apps/${device.appId}`)).json.settings as Record<string, unknown>;
    expect(settings.openCredentialRoutes ?? null).to.equal(null);
    // The default lifetime (60 s) again.
    expect([null, 60]).to.include(settings.credentialTtlSeconds ?? null);
  });

  it('shows a realtime session apart from HTTP requests: in the request log with its figures, on its device\'s page, and as minutes on the overview', async () => {
    // Deepgram's live transcription answers Results, then Metadata with the audio duration at the end
    // (https://developers.deepgram.com/reference/speech-to-text/listen-streaming).
    const results = (transcript: string) => JSON.stringify({ type: 'Results', channel_index: [0, 1], duration: 6.25, start: 0, is_final: true, channel: { alternatives: [{ transcript, confidence: 0.98, words: [] }] } });
    const metadata = JSON.stringify({ type: 'Metadata', transaction_key: 'deprecated', request_id: 'b3b7d4c2-0a1e-4c55-9d3b-8f4f2b1f6c11', sha256: 'd1f2', created: '2026-12-05T10:00:00.000Z', duration: 12.5, channels: 1 });
    await realtimeSession(gateway, voice, 'deepgram/v1/listen?model=nova-3', { ...device.headers, 'Tollgate-User-Token': await users.token('ada-lovelace') }, 2, [results('hello'), results('world'), metadata]);
    const recorded = await gateway.recordedUsage(device.appId, 0, (events) => events.some((event) => event.session));
    // The session's row names its signed-in user, as an HTTP request's does.
    expect(recorded.find((event) => event.session)!.userId).to.equal('ada-lovelace');
    await open('requests', 'Test app · Requests');
    const session = page.locator('button[data-kind="session"]');
    await session.first().waitFor();
    expect(await session.count()).to.equal(1);
    expect(await page.locator('button[data-kind="request"]').count()).to.be.greaterThan(0);
    const row = session.locator('xpath=ancestor::tr');
    expect(await row.textContent()).to.include('realtime').and.include('deepgram').and.include('1000').and.include('closed by the app');
    await session.click();
    const facts = await page.getByTestId('session-detail').textContent();
    expect(facts).to.include('Realtime session (WebSocket)').and.include('Frames from the app / to the app2 / 3').and.include('Closed bythe app').and.include('Audio12.5 s');
    await page.goto(`${gateway.url}/dashboard/#/apps/${device.appId}/devices/${device.deviceId}`);
    await page.getByTestId('device-sessions').waitFor();
    expect(await page.getByTestId('device-sessions').textContent()).to.equal('1');
    expect(await page.getByTestId('device-requests-list').textContent()).to.include('realtime').and.include('2 in / 3 out, 12.5 s audio');
    await open('', 'Test app');
    expect(await page.getByTestId('tile-realtime').textContent()).to.match(/Realtime minutes \(1 session\)/);
    await open('usage', 'Test app · Usage');
    expect(await page.getByTestId('total-realtime').textContent()).to.match(/^1 realtime session, 0\.\d minutes open/);
  });

  it('Policy, signed-in users: a sign-in preset with its parameters, user limits, profiles and model policy in the API\'s shapes', async () => {
    await open('sign-in', 'Test app · Policy');
    const form = page.getByRole('form', { name: 'Signed-in users' });
    await form.getByLabel('Sign-in provider').selectOption('firebase');
    expect(await form.getByLabel('Firebase project id').isVisible()).to.equal(true);
    expect(await form.getByLabel('Key set URL (JWKS)').isVisible(), 'the parameters of other presets are hidden').to.equal(false);
    await form.getByLabel('Firebase project id').fill('demo-project');
    await form.getByLabel('Tier claim').fill('tier');
    await form.getByLabel('User tokens').selectOption('optional');
    await form.getByLabel('Tokens per day per user').fill('5000');
    await form.getByLabel('Realtime seconds per day per user').fill('1800');
    await form.getByLabel('Profiles by tier (JSON)').fill('{"pro": {"userDailyTokens": 50000}}');
    await form.getByLabel('Model policy (JSON)').fill('{"openai": {"allow": ["gpt-4o-mini"], "maxOutputTokens": 512}}');
    await form.getByRole('button', { name: 'Save user settings' }).click();
    await page.getByText('User settings saved.').waitFor();
    const settings = (await admin('GET', `/apps/${device.appId}`)).json.settings as Record<string, unknown>;
    expect(settings).to.deep.include({ userAuth: { preset: 'firebase', projectId: 'demo-project', tierClaim: 'tier' }, userTokenMode: 'optional', userDailyTokens: 5000, userDailySessionSeconds: 1800, profiles: { pro: { userDailyTokens: 50000 } } });
    expect(settings.modelPolicy).to.deep.equal({ openai: { allow: ['gpt-4o-mini'], maxOutputTokens: 512 } });
    // A preset missing its parameter is refused naming the field, and nothing changes.
    await form.getByLabel('Sign-in provider').selectOption('cognito');
    await form.getByLabel('Region').fill('eu-west-1');
    await form.getByRole('button', { name: 'Save user settings' }).click();
    await page.locator('.field-error, .error').first().waitFor();
    expect(await page.locator('.error').first().textContent()).to.match(/Sign-in provider|userPoolId/);
    expect(((await admin('GET', `/apps/${device.appId}`)).json.settings as Record<string, unknown>).userAuth).to.deep.equal({ preset: 'firebase', projectId: 'demo-project', tierClaim: 'tier' });
  });
});
