/**
 * The dashboard in real Chromium (Debian's, driven by playwright-core): set-up link → first administrator → an app →
 * a masked secret → proxied requests seen in the usage charts → a revoked device refused by the proxy. Every page is
 * checked for a canary secret and for controls without labels, the sign-in is done from the keyboard alone, and a
 * screenshot of each page goes to test-artifacts/dashboard/.
 */
import { expect } from 'chai';
import { requireTool } from '../support/services';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { AuditRepository, DeviceRepository } from '../../core/storage/repositories';
import { DEFAULT_PRICES } from '../../providers/_shared/prices';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';

const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';
const CANARY = 'sk-CANARY-dashboard-0b9e8d7c6a5f4e3d2c1b0a9f8e7d6c5b';
const ARTIFACTS = path.resolve(__dirname, '..', '..', '..', 'test-artifacts', 'dashboard');

describe('dashboard in Chromium', function () {
  this.timeout(120_000);
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  let browser: Browser;
  let page: Page;
  const seen: string[] = [];
  let shot = 0;
  /** The gateway's clock runs this far ahead of the real one (the grace-expiry test moves it). */
  let skew = 0;

  before(async function () {
    requireTool(this, existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: .ci/run installs the Debian package "chromium"`);
    rmSync(ARTIFACTS, { recursive: true, force: true });
    mkdirSync(ARTIFACTS, { recursive: true });
    upstream = await FakeUpstream.start();
    // An OpenAI chat completion with its usage (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(
      respondJson(200, { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini-2024-07-18', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }),
    );
    // An injected clock, as the API-level rotation test has (test/core/errors.test.ts), so that a grace period can end.
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url }, clock: () => Date.now() + skew });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('response', async (response) => {
      try {
        seen.push(await response.text());
      } catch {
        // redirects and aborted responses have no body
      }
    });
  });
  after(async () => {
    await browser?.close();
    await gateway?.close();
    await upstream?.close();
  });

  /** Screenshot, canary check and label check of the page as it is now. */
  async function checkpoint(name: string): Promise<void> {
    shot += 1;
    await page.screenshot({ path: path.join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`), fullPage: true });
    const html = await page.content();
    seen.push(html);
    expect(html, `canary on ${name}`).to.not.include(CANARY);
    // Every form control has an accessible name: a <label>, an aria-label or (buttons) its text.
    const unlabelled = (await page.evaluate(`Array.from(document.querySelectorAll('input, select, textarea, button'))
      .filter((control) => { const name = control.labels && control.labels.length ? control.labels[0].textContent : (control.getAttribute('aria-label') || control.textContent); return !name || !name.trim(); })
      .map((control) => control.outerHTML)`)) as string[];
    expect(unlabelled, `controls without a label on ${name}`).to.deep.equal([]);
  }

  /** A time-series chart's points as `label|series|value`, from the numbers table drawn with it (the plot is a canvas). */
  async function timeSeries(chart: string): Promise<string[]> {
    type Cell = { textContent: string | null; getAttribute(name: string): string | null };
    type Table = { querySelectorAll(selector: string): Iterable<Cell> & ArrayLike<Cell> };
    return page.locator(`table[data-chart="${chart}"]`).evaluate((table: unknown) => {
      const element = table as Table;
      const names = Array.from(element.querySelectorAll('thead th')).slice(1).map((th) => th.textContent ?? '');
      return Array.from(element.querySelectorAll('tbody tr')).flatMap((tr) => {
        const { label, values } = JSON.parse(tr.getAttribute('data-values') ?? '{}') as { label: string; values: number[] };
        return names.map((name, index) => `${label}|${name}|${values[index]}`);
      });
    });
  }

  it('creates the first administrator from the one-time set-up link', async () => {
    await page.goto(`${gateway.url}/dashboard/setup#token=${gateway.gateway.setupToken}`);
    await page.getByRole('heading', { name: 'Set up Tollgate' }).waitFor();
    await checkpoint('setup');
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
    await page.getByLabel('Repeat the password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Create administrator' }).click();
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    expect(await page.locator('#who').textContent()).to.equal('admin');
    const cookies = await page.context().cookies();
    const session = cookies.find((cookie) => cookie.name === 'tollgate_session');
    expect(session).to.include({ httpOnly: true, sameSite: 'Strict' });
  });

  it('signs in with the keyboard alone after signing out; signed out, no top bar shows', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Tollgate' }).waitFor();
    // The signed-out page shows no top bar (a stylesheet `display: flex` once beat [hidden]) and names no user.
    expect(await page.locator('#top').isVisible()).to.equal(false);
    expect(await page.locator('#who').textContent()).to.equal('');
    await checkpoint('sign-in');
    // Focus starts on the heading; Tab reaches the user name, then the password, then Enter submits.
    await page.keyboard.press('Tab');
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    await page.keyboard.type('correct horse battery');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
  });

  let appId = '';

  it('creates an app and shows its token once, kept on screen until dismissed', async () => {
    await page.getByLabel('App name').fill('Browser app');
    await page.getByRole('button', { name: 'Create app' }).click();
    const shown = page.getByTestId('shown-once');
    await shown.waitFor();
    const token = (await shown.locator('code').textContent()) ?? '';
    expect(token).to.match(/^at_[0-9A-Za-z]{32}$/);
    // The new app opens, and the token stays visible across the navigation, with a copy button.
    await page.getByRole('heading', { name: 'Browser app', exact: true }).waitFor();
    expect(await shown.getByRole('button', { name: 'Copy' }).isVisible()).to.equal(true);
    await checkpoint('app-created');
    appId = page.url().split('#/apps/')[1]!;
    await shown.getByRole('button', { name: 'I have copied it' }).click();
    await shown.waitFor({ state: 'detached' });
    expect(await page.content()).to.not.include(token);
    await checkpoint('app-overview');
  });

  it('adds a secret and sees it masked, never the value', async () => {
    await page.getByRole('link', { name: 'Secrets' }).click();
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    await page.getByLabel('Key', { exact: true }).fill(CANARY);
    await page.getByRole('button', { name: 'Save key' }).click();
    const masked = page.getByTestId('masked-openai');
    await masked.waitFor();
    expect(await masked.textContent()).to.equal(`sk-…${CANARY.slice(-4)}`);
    expect(await page.getByLabel('Key', { exact: true }).inputValue()).to.equal('');
    await checkpoint('secrets');
  });

  it('edits limits, with a clear error for bad input that changes nothing', async () => {
    await page.getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Requests per minute per device').fill('120');
    await page.getByLabel(/Per-provider limits/).fill('openai=0');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('alert').waitFor();
    // The error names the field as the form labels it, once.
    const alert = (await page.getByRole('alert').textContent()) ?? '';
    expect(alert).to.include('Per-provider limits');
    expect(alert).to.not.include('providerLimitsPerMinute');
    expect((await gateway.gateway.management.getApp(appId)).settings.deviceLimitPerMinute).to.not.equal(120);
    await page.getByLabel(/Per-provider limits/).fill('openai=50');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    const settings = (await gateway.gateway.management.getApp(appId)).settings;
    expect(settings).to.deep.include({ deviceLimitPerMinute: 120, providerLimitsPerMinute: { openai: 50 } });
    // Token budgets per UTC day, per device and per provider.
    await page.getByLabel('Tokens per day per device').fill('100000');
    await page.getByLabel(/Per-provider token budgets/).fill('openai=2000000');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ deviceDailyTokens: 100000, providerDailyTokens: { openai: 2000000 } });
    expect(await page.getByLabel('Tokens per day per device').inputValue()).to.equal('100000');
    await checkpoint('limits');
  });

  it('opens account routes per provider with their warnings, and takes extra routes', async () => {
    await page.getByRole('link', { name: 'Policy' }).click();
    const openai = page.getByLabel('Open OpenAI account routes');
    await openai.waitFor();
    expect(await openai.isChecked()).to.equal(false);
    expect(await page.content()).to.include('lists every file uploaded with the operator key');
    await page.getByLabel(/Extra routes/).fill('openai:GET:../admin');
    await page.getByRole('button', { name: 'Save routes' }).click();
    await page.getByRole('alert').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings.extraRoutes).to.equal(undefined);
    await openai.check();
    await page.getByLabel(/Extra routes/).fill('openai:GET,POST:evals/**');
    await page.getByRole('button', { name: 'Save routes' }).click();
    await page.getByText('Routes saved.').waitFor();
    const settings = (await gateway.gateway.management.getApp(appId)).settings;
    expect(settings.openAccountRoutes).to.deep.equal(['openai']);
    expect(settings.extraRoutes).to.deep.equal([{ provider: 'openai', methods: ['GET', 'POST'], path: 'evals/**' }]);
    expect(await page.getByLabel('Open OpenAI account routes').isChecked()).to.equal(true);
    await page.getByLabel('Open OpenAI account routes').uncheck();
    await page.getByLabel(/Extra routes/).fill('');
    await page.getByRole('button', { name: 'Save routes' }).click();
    await page.getByText('Routes saved.').waitFor();
    const cleared = (await gateway.gateway.management.getApp(appId)).settings;
    expect(cleared.openAccountRoutes).to.equal(undefined);
    expect(cleared.extraRoutes).to.equal(undefined);
    await checkpoint('routes');
  });

  it('clears a limit and a setting when the field is emptied', async () => {
    await page.getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Requests per day per device').fill('500');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings.deviceDailyQuota).to.equal(500);
    await page.getByLabel('Requests per day per device').fill('');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings.deviceDailyQuota ?? null).to.equal(null);
    expect(await page.getByLabel('Requests per day per device').inputValue()).to.equal('');

    await page.getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Apple app id (TEAMID.BUNDLE)').fill('ABCDE12345.com.example.browser');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings.appleAppId).to.equal('ABCDE12345.com.example.browser');
    await page.getByLabel('Apple app id (TEAMID.BUNDLE)').fill('');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings.appleAppId ?? null).to.equal(null);
  });

  let deviceHeaders: Record<string, string> = {};
  let deviceId = '';

  it('shows proxied requests in the usage charts', async () => {
    const app = await gateway.gateway.management.rotateAppToken(appId);
    deviceId = 'browser-device-1';
    const deviceToken = await gateway.deviceToken(appId, app.appToken, deviceId);
    deviceHeaders = { 'Tollgate-App-Token': app.appToken, 'Tollgate-Device-Token': deviceToken, 'content-type': 'application/json' };
    const sentFrom = Date.now();
    for (let index = 0; index < 3; index += 1) {
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: deviceHeaders, body: '{"model":"gpt-4o-mini","messages":[]}' });
      const body = await response.text();
      expect(response.status, body).to.equal(200);
    }
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...deviceHeaders, 'Tollgate-Device-Token': 'bogus' }, body: '{}' });
    expect(refused.status).to.equal(403);
    await refused.text();
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${CANARY}`);
    await gateway.recordedUsage(appId, sentFrom, (events) => events.length === 4);

    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Browser app · Usage' }).waitFor();
    await page.getByTestId('total-requests').waitFor();
    // Every chart has a legend naming each series (never colour alone).
    for (const chart of ['chart-requests', 'chart-errors', 'chart-latency', 'chart-devices', 'chart-tokens-devices', 'chart-tokens-models']) {
      expect(await page.getByTestId(`${chart}-legend`).locator('li').count(), chart).to.be.greaterThan(0);
    }
    expect(await page.getByTestId('chart-requests-legend').textContent()).to.equal('requestserrorstoken budget refusals');
    expect(await page.getByTestId('total-requests').textContent()).to.equal('4 requests in this window.');
    const bars = async (chart: string) => page.locator(`#${chart} [data-series].bar`).evaluateAll((rects) => rects.map((rect) => `${rect.getAttribute('data-label')}|${rect.getAttribute('data-series')}|${rect.getAttribute('data-value')}`));
    const perMinute = await timeSeries('chart-requests');
    expect(perMinute.filter((bar) => bar.includes('|requests|'))).to.have.length(60);
    expect(perMinute.filter((bar) => bar.includes('|requests|')).reduce((sum, bar) => sum + Number(bar.split('|')[2]), 0)).to.equal(4);
    expect(await bars('chart-errors')).to.deep.equal(['attestationFailed|errors|1']);
    expect((await bars('chart-latency')).map((bar) => bar.split('|').slice(0, 2).join('|'))).to.deep.equal(['openai|p50', 'openai|p95']);
    expect(await bars('chart-devices')).to.deep.equal([`${deviceId}|requests|3`]);
    // Tokens per device, as the provider reported them for the three requests sent (11 + 7 each).
    expect(await page.getByTestId('chart-tokens-devices-legend').textContent()).to.equal('inputoutput');
    expect(await bars('chart-tokens-devices')).to.deep.equal([`${deviceId}|input|33`, `${deviceId}|output|21`]);
    expect(await bars('chart-tokens-models')).to.deep.equal(['gpt-4o-mini-2024-07-18|input|33', 'gpt-4o-mini-2024-07-18|output|21']);
    expect(await page.getByTestId('total-tokens').textContent()).to.equal('33 input and 21 output tokens reported by the providers.');
    // No price of the operator's: the dated default table prices gpt-4o-mini, and its date shows beside the estimate.
    const published = DEFAULT_PRICES.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')!;
    const defaultUsd = (33 * published.inputUsdPerMillion + 21 * published.outputUsdPerMillion) / 1_000_000;
    expect(await page.getByTestId('total-spend').textContent()).to.equal(`Estimated spend: $${Number(defaultUsd.toPrecision(2))}.`);
    expect(await page.getByTestId('spend-price-as-of').textContent()).to.equal(` Estimated from prices as of ${published.priceAsOf}.`);
    expect(await page.locator('#chart-spend-models figcaption').textContent()).to.include(`prices as of ${published.priceAsOf}`);
    // With a price of the operator's (USD per million tokens), the estimated spend per device follows, marked as theirs.
    await gateway.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 1000, outputUsdPerMillion: 2000 });
    await page.getByRole('button', { name: 'Refresh now' }).click();
    await page.getByTestId('total-spend').filter({ hasText: 'Estimated spend: $0.075.' }).waitFor();
    await page.getByTestId('chart-spend-devices').waitFor();
    expect(await page.getByTestId('spend-price-as-of').textContent()).to.equal(' Estimated from operator price.');
    expect(await bars('chart-spend-devices')).to.deep.equal([`${deviceId}|USD|0.075`]);
    // The overview's spend tile names the prices too.
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Overview' }).click();
    await page.getByTestId('tile-spend').waitFor();
    expect(await page.getByTestId('tile-spend').locator('.tile-note').textContent()).to.equal('operator price');
    await gateway.gateway.management.deletePrice({ provider: 'openai', model: 'gpt-4o-mini' });
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('spend-price-as-of').filter({ hasText: `prices as of ${published.priceAsOf}` }).waitFor();
    await checkpoint('usage');
  });

  it('monitor-only mode forwards a request without a device token and counts it as unverified', async () => {
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Attestation mode').selectOption('monitor');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    await page.getByTestId('monitor-banner').waitFor();
    const before = upstream.requests.length;
    const sentFrom = Date.now();
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { 'Tollgate-App-Token': deviceHeaders['Tollgate-App-Token']!, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
    expect(response.status).to.equal(200);
    await response.text();
    expect(upstream.requests.length).to.equal(before + 1);
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${CANARY}`);
    await gateway.recordedUsage(appId, sentFrom, (events) => events.length === 1);
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('chart-verification').waitFor();
    const bars = await page.locator('#chart-verification [data-series].bar').evaluateAll((rects) => rects.map((rect) => `${rect.getAttribute('data-label')}|${rect.getAttribute('data-value')}`));
    expect(bars).to.deep.equal(['verified|3', 'unverified|1']);
    await checkpoint('monitor');
    // Back to enforce: the same request is refused again.
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Attestation mode').selectOption('enforce');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { 'Tollgate-App-Token': deviceHeaders['Tollgate-App-Token']!, 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).to.equal(403);
    await refused.text();
  });

  it('lists the requests just sent in the request log, filtered by device, with a CSV export', async () => {
    // One request from another device of the app, which the device filter must leave out.
    const app = await gateway.gateway.management.getApp(appId);
    expect(app.previousToken, 'the rotation kept the old token for its grace period').to.not.equal(null);
    const otherToken = await gateway.deviceToken(appId, deviceHeaders['Tollgate-App-Token']!, 'browser-device-2');
    const sentFrom = Date.now();
    const other = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...deviceHeaders, 'Tollgate-Device-Token': otherToken }, body: '{}' });
    expect(other.status).to.equal(200);
    await other.text();
    await gateway.recordedUsage(appId, sentFrom, (events) => events.length === 1);
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Requests' }).click();
    await page.getByRole('heading', { name: 'Browser app · Requests' }).waitFor();
    await page.getByLabel('Device').fill(deviceId);
    await page.getByRole('button', { name: 'Show' }).click();
    await page.locator('tbody tr').first().waitFor();
    // Polled from the test (the dashboard's CSP forbids evaluating strings in the page).
    for (let tries = 0; tries < 100 && (await page.locator('tbody tr').count()) !== 3; tries += 1) await page.waitForTimeout(100);
    const rows = await page.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.textContent ?? ''));
    expect(rows).to.have.length(3);
    for (const row of rows) {
      expect(row).to.include(deviceId);
      expect(row).to.include('POST v1/chat/completions');
      expect(row).to.include('200');
    }
    const href = (await page.locator('a[download]').getAttribute('href')) ?? '';
    const csv = await page.evaluate(async (url) => (await fetch(url)).text(), href);
    expect(csv.split('\r\n')[0]).to.equal('createdAt,requestId,deviceId,provider,method,route,status,errorType,reason,latencyMs,bytesIn,bytesOut,truncated,inputTokens,outputTokens,model,estimatedUsd,priceAsOf,userId');
    expect(csv.trim().split('\r\n')).to.have.length(4);
    // Each row's estimated spend shows with the date of the price it used (the default table's: no operator price now).
    const asOf = DEFAULT_PRICES.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')!.priceAsOf;
    expect(await page.getByTestId('price-as-of').allTextContents()).to.deep.equal([`prices as of ${asOf}`, `prices as of ${asOf}`, `prices as of ${asOf}`]);
    // The price date, then the signed-in user (none: this app has no sign-in provider).
    for (const line of csv.trim().split('\r\n').slice(1)) expect(line.endsWith(`,${asOf},`), line).to.equal(true);
    await page.getByRole('button', { name: 'Details' }).first().click();
    expect(await page.getByTestId('request-detail').textContent()).to.match(new RegExp(`Estimated spend\\$[0-9.]+ \\(prices as of ${asOf}\\)`));
    await page.getByRole('button', { name: 'Details' }).first().click();
    await checkpoint('requests');
  });

  it('revokes a device after a confirmation, which the proxy then refuses', async () => {
    await page.getByRole('link', { name: 'Devices' }).click();
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: `Revoke ${deviceId}` }).click();
    expect(asked).to.include(deviceId);
    await page.getByText(`Device ${deviceId} is revoked.`).waitFor();
    await checkpoint('devices');
    const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: deviceHeaders, body: '{}' });
    expect(response.status).to.equal(403);
    expect(response.headers.get('tollgate-error')).to.equal('attestationFailed');
  });

  it('shows integration code for each platform from the shared generator', async () => {
    await page.getByRole('link', { name: 'Integrate' }).click();
    await page.getByTestId('initialization').waitFor();
    const expected: Record<string, RegExp> = { ios: /Tollgate\.configure\(appToken:/, android: /Tollgate\.initialize\(/, flutter: /await Tollgate\.initialize\(/, 'react-native': /Tollgate\.initialize\(\{ appToken/ };
    // Beside the request, each platform's realtime session, signed-in user, me() and provider SDK hook.
    const hooks: Record<string, RegExp> = { ios: /TollgateURLProtocol\.configuration\(client: Tollgate\.shared/, android: /\.okHttpClient\(Tollgate\.okHttpClient\(\)\)/, flutter: /client: TollgateHttpClient\(Tollgate\.client\)/, 'react-native': /fetch: Tollgate\.fetch/ };
    for (const [platform, pattern] of Object.entries(expected)) {
      await page.getByLabel('Platform').selectOption(platform);
      await page.getByRole('button', { name: 'Show code' }).click();
      await page.getByTestId('initialization').filter({ hasText: pattern }).waitFor();
      expect(await page.getByTestId('request').textContent()).to.not.include(CANARY);
      expect(await page.getByTestId('feature-realtime').textContent(), platform).to.include('openai/v1/realtime');
      expect(await page.getByTestId('feature-signed-in-user').textContent(), platform).to.include('setUserTokenProvider');
      expect(await page.getByTestId('feature-me').textContent(), platform).to.match(/\bme\(\)/);
      expect(await page.getByTestId('feature-provider-sdk').textContent(), platform).to.match(hooks[platform]!);
      expect(await page.getByRole('heading', { name: '8. Your provider SDK, through Tollgate' }).count()).to.equal(1);
    }
    // Only the capabilities the provider offers (Anthropic has no image generation), an install step, copy buttons.
    await page.getByLabel('Provider', { exact: true }).selectOption('anthropic');
    const offered = await page.getByLabel('Capability').locator('option').allTextContents();
    expect(offered).to.include('chat');
    expect(offered).to.not.include('image');
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    await page.getByLabel('Platform').selectOption('react-native');
    await page.getByRole('button', { name: 'Show code' }).click();
    await page.getByTestId('install').waitFor();
    expect(await page.getByTestId('install').textContent()).to.include('npm install');
    // The snippet runs on a simulator: a development token is created on request and wired in for debug builds only.
    await page.getByRole('button', { name: 'Create a development token for this code' }).click();
    await page.getByTestId('initialization').filter({ hasText: /dt_[0-9A-Za-z]{32}/ }).waitFor();
    expect(await page.getByTestId('initialization').textContent()).to.include('__DEV__');
    expect(await page.getByRole('button', { name: 'Copy' }).count()).to.be.greaterThan(2);
    await checkpoint('integrate');
  });

  it('adds and removes an administrator; the new one signs in', async () => {
    await page.getByRole('link', { name: 'Administrators' }).click();
    await page.getByRole('heading', { name: 'Administrators' }).waitFor();
    await page.getByLabel('User name').fill('second');
    await page.getByLabel('Password', { exact: true }).fill('another long password');
    await page.getByRole('button', { name: 'Add administrator' }).click();
    await page.getByText('second can now sign in.').waitFor();
    const signIn = await fetch(`${gateway.url}/v1/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'second', password: 'another long password' }) });
    expect(signIn.status).to.equal(200);
    await signIn.text();
    await checkpoint('users');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Remove second' }).click();
    await page.getByText('second is removed.').waitFor();
    const refused = await fetch(`${gateway.url}/v1/admin/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'second', password: 'another long password' }) });
    expect(refused.status).to.equal(401);
    await refused.text();
  });

  it('lists admin keys and the audit log with details and filters, and no page or response ever held the canary', async () => {
    await page.getByRole('link', { name: 'Admin keys' }).click();
    // The form of the page just opened (the previous page's "User name" field would match a loose 'Name' while loading).
    const form = page.getByRole('form', { name: 'Create an admin key' });
    await form.waitFor();
    await form.getByLabel('Name', { exact: true }).fill('from-dashboard');
    await page.getByRole('button', { name: 'Create admin key' }).click();
    await page.getByTestId('shown-once').filter({ hasText: 'Admin key from-dashboard' }).waitFor();
    await checkpoint('admin-keys');
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('cell', { name: 'admin.secret.set' }).waitFor();
    // Targets show the app's name, details show what changed; the filter narrows the list.
    expect(await page.locator('tbody').textContent()).to.include('Browser app / openai');
    await page.getByLabel('Filter').fill('secret.set');
    for (let tries = 0; tries < 100 && (await page.locator('tbody tr').allTextContents()).some((row) => !row.includes('secret.set')); tries += 1) await page.waitForTimeout(100);
    expect(await page.locator('tbody').textContent()).to.include(`masked: "sk-…${CANARY.slice(-4)}"`);
    await checkpoint('audit');
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage of every app' }).waitFor();
    await page.getByTestId('total-requests').waitFor();
    await checkpoint('usage-all');
    expect(seen.length).to.be.greaterThan(20);
    for (const body of seen) expect(body).to.not.include(CANARY);
    expect(gateway.logText()).to.not.include(CANARY);
  });

  it('pages the audit log past the entries fetched first: an entry older than the newest 500 is found with Older', async () => {
    const audit = new AuditRepository(gateway.gateway.database);
    // The oldest of 520 new entries is beyond the first batch the page fetches (500).
    await audit.append({ actor: 'user:admin', action: 'test.oldest-entry', target: null, details: null, createdAt: Date.now() });
    for (let index = 0; index < 519; index += 1) await audit.append({ actor: 'user:admin', action: 'test.bulk', target: null, details: { index }, createdAt: Date.now() });
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    await page.getByLabel('Filter').fill('oldest-entry');
    await page.getByText('Nothing matches.').waitFor();
    // More may be older on the server: the pager says so and offers Older.
    expect(await page.locator('p.pager').textContent()).to.include('Page 1 of 1+');
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByRole('cell', { name: 'test.oldest-entry' }).waitFor();
    expect(await page.locator('tbody tr').count()).to.equal(1);
    await checkpoint('audit-older');
  });

  // Token budgets and prices (issue 20).

  /** The app's input and output tokens as its usage page states them. */
  async function reportedTokens(): Promise<{ input: number; output: number }> {
    const [, input, output] = /^(\d+) input and (\d+) output tokens/.exec((await page.getByTestId('total-tokens').textContent()) ?? '') ?? [];
    return { input: Number(input), output: Number(output) };
  }

  it('sets token budgets per minute and per provider in the limits form; a bad line is refused naming its field', async () => {
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/limits`);
    await page.getByTestId('token-budgets').waitFor();
    await page.getByLabel('Tokens per minute per device').fill('40');
    await page.getByLabel(/Per-provider budgets per minute/).fill('openai=lots');
    await page.getByRole('button', { name: 'Save limits' }).click();
    // The form's own error (the admin key shown once above the page is an alert too).
    const alert = page.getByRole('main').getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).to.include('Per-provider budgets per minute').and.not.include('providerMinuteTokens');
    expect((await gateway.gateway.management.getApp(appId)).settings.deviceMinuteTokens ?? null, 'a refused form changes nothing').to.equal(null);
    await page.getByLabel(/Per-provider budgets per minute/).fill('openai=100000');
    await page.getByLabel(/Per-provider budgets per device/).fill('openai=500000');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    expect((await gateway.gateway.management.getApp(appId)).settings).to.deep.include({ deviceMinuteTokens: 40, providerMinuteTokens: { openai: 100000 }, providerDeviceDailyTokens: { openai: 500000 } });
    expect(await page.getByLabel('Tokens per minute per device').inputValue()).to.equal('40');
    expect(await page.getByLabel(/Per-provider budgets per device/).inputValue()).to.equal('openai=500000');
    await checkpoint('token-budgets');

    // A new device: its first request reserves 34 of the 40-token minute (54 body bytes / 4 + max_tokens 20) and is
    // charged the 18 tokens the answer reports; the next, reserving 34 more, does not fit in the same UTC minute.
    const token = await gateway.deviceToken(appId, deviceHeaders['Tollgate-App-Token']!, 'budget-device');
    const headers = { ...deviceHeaders, 'Tollgate-Device-Token': token };
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const budgetFrom = Date.now();
    const budgetEvents = (count: number) => gateway.recordedUsage(appId, budgetFrom, (events) => events.filter((event) => event.deviceId === 'budget-device').length === count);
    const first = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers, body: '{"model":"gpt-4o-mini","messages":[],"max_tokens":20}' });
    expect(first.status).to.equal(200);
    await first.text();
    // The charge lands when the answer ends (after the client has it), with the request's usage event.
    await budgetEvents(1);
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers, body: '{"model":"gpt-4o-mini","messages":[],"max_tokens":20}' });
    expect(refused.status).to.equal(429);
    expect(((await refused.json()) as { error: { reason: string } }).error.reason).to.equal('token_budget');
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    await budgetEvents(2);

    // The refusal is its own series: in the per-minute chart and among the error types.
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Usage' }).click();
    await page.getByTestId('chart-requests').waitFor();
    const bars = async (chart: string) => page.locator(`#${chart} [data-series].bar`).evaluateAll((rects) => rects.map((rect) => `${rect.getAttribute('data-label')}|${rect.getAttribute('data-series')}|${rect.getAttribute('data-value')}`));
    const refusals = (await timeSeries('chart-requests')).filter((bar) => bar.includes('|token budget refusals|'));
    expect(refusals).to.have.length(60);
    expect(refusals.reduce((sum, bar) => sum + Number(bar.split('|')[2]), 0)).to.equal(1);
    expect(await bars('chart-errors')).to.include('tokenBudget|errors|1');
    expect((await bars('chart-tokens-devices')).some((bar) => bar.startsWith('budget-device|input|'))).to.equal(true);

    // Emptied fields clear the budgets again.
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Policy' }).click();
    await page.getByLabel('Tokens per minute per device').fill('');
    await page.getByLabel(/Per-provider budgets per minute/).fill('');
    await page.getByLabel(/Per-provider budgets per device/).fill('');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    const cleared = (await gateway.gateway.management.getApp(appId)).settings;
    for (const key of ['deviceMinuteTokens', 'providerMinuteTokens', 'providerDeviceDailyTokens'] as const) expect(cleared[key] ?? null, key).to.equal(null);
  });

  it('lists, sets, edits and deletes prices; a bad price is refused naming its field; the spend follows each edit', async () => {
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Prices' }).click();
    await page.getByRole('heading', { name: 'Prices' }).waitFor();
    expect(await page.locator('main table caption').first().textContent()).to.match(/^No prices of your own: spend is estimated from the default prices below/);
    // The dated default table, each row linking its provider's price page; Override fills the form with the row.
    const defaultRow = page.getByTestId('default-prices').locator('tbody tr').filter({ hasText: 'claude-3-5-haiku' });
    const asOf = DEFAULT_PRICES.find((price) => price.provider === 'anthropic' && price.model === 'claude-3-5-haiku')!.priceAsOf;
    expect(await defaultRow.locator('a').textContent()).to.equal(asOf);
    expect(await defaultRow.locator('a').getAttribute('href')).to.equal('https://platform.claude.com/docs/en/about-claude/pricing');
    await page.getByRole('button', { name: 'Override anthropic claude-3-5-haiku' }).click();
    expect(await page.getByLabel('Provider', { exact: true }).inputValue()).to.equal('anthropic');
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).to.equal('claude-3-5-haiku');
    expect(await page.getByLabel('Input USD per million tokens').inputValue()).to.equal('0.8');
    expect(await page.getByLabel('Output USD per million tokens').inputValue()).to.equal('4');
    await page.getByLabel('Provider', { exact: true }).selectOption('openai');
    await page.getByLabel('Model', { exact: true }).fill('gpt-4o-mini');
    await page.getByLabel('Input USD per million tokens').fill('2000000');
    await page.getByLabel('Output USD per million tokens').fill('2000');
    await page.getByRole('button', { name: 'Save price' }).click();
    // The form's own error (the admin key shown once above the page is an alert too).
    const alert = page.getByRole('main').getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).to.include('Input USD per million tokens').and.not.include('inputUsdPerMillion');
    expect(await gateway.gateway.management.listPrices()).to.deep.equal([]);
    await page.getByLabel('Input USD per million tokens').fill('1000');
    await page.getByRole('button', { name: 'Save price' }).click();
    await page.getByText('The price of gpt-4o-mini is saved.').waitFor();
    expect(await page.locator('main table').first().locator('tbody tr').first().locator('td').allTextContents()).to.deep.include.members(['openaigpt-4o-mini', '1000 input, 2000 output']);
    // The default row it overrides says so.
    expect(await page.getByTestId('default-prices').locator('tbody tr').filter({ hasText: /^openaigpt-4o-mini\d/ }).textContent()).to.include('overridden by your price');
    await checkpoint('prices');

    // The spend on the app's usage page is the tokens it states times the price (the model's dated name falls back).
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/usage`);
    await page.getByTestId('chart-spend-models').waitFor();
    const tokens = await reportedTokens();
    expect(tokens.input).to.be.greaterThan(0);
    // Dollars with cents from $1, two significant digits below (dashboard/src/format.ts).
    const dollars = (usd: number) => (usd >= 1 ? usd.toFixed(2) : String(Number(usd.toPrecision(2))));
    const spend = (input: number, output: number) => `Estimated spend: $${dollars((tokens.input * input + tokens.output * output) / 1_000_000)}.`;
    expect(await page.getByTestId('total-spend').textContent()).to.equal(spend(1000, 2000));
    const bars = async (chart: string) => page.locator(`#${chart} [data-series].bar`).evaluateAll((rects) => rects.map((rect) => `${rect.getAttribute('data-label')}|${rect.getAttribute('data-series')}|${rect.getAttribute('data-value')}`));
    expect(await bars('chart-spend-models')).to.deep.equal([`gpt-4o-mini-2024-07-18|USD|${+((tokens.input * 1000 + tokens.output * 2000) / 1_000_000).toFixed(6)}`]);

    // Edit: the row fills the form; a new output price changes the spend.
    await page.goto(`${gateway.url}/dashboard/#/prices`);
    await page.getByRole('button', { name: 'Edit gpt-4o-mini' }).click();
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).to.equal('gpt-4o-mini');
    expect(await page.getByLabel('Input USD per million tokens').inputValue()).to.equal('1000');
    await page.getByLabel('Output USD per million tokens').fill('4000');
    await page.getByRole('button', { name: 'Save price' }).click();
    await page.getByText('The price of gpt-4o-mini is saved.').waitFor();
    expect(await gateway.gateway.management.listPrices()).to.have.length(1);
    expect((await gateway.gateway.management.listPrices())[0]).to.include({ inputUsdPerMillion: 1000, outputUsdPerMillion: 4000 });
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/usage`);
    await page.getByTestId('total-spend').filter({ hasText: spend(1000, 4000) }).waitFor();

    // Every app together: tokens and spend per app, by name.
    await page.goto(`${gateway.url}/dashboard/#/usage`);
    await page.getByTestId('chart-spend-apps').waitFor();
    expect(await bars('chart-tokens-apps')).to.deep.equal([`Browser app|input|${tokens.input}`, `Browser app|output|${tokens.output}`]);
    expect(await bars('chart-spend-apps')).to.deep.equal([`Browser app|USD|${+((tokens.input * 1000 + tokens.output * 4000) / 1_000_000).toFixed(6)}`]);
    await checkpoint('usage-all-spend');

    // Delete, after a confirmation.
    await page.goto(`${gateway.url}/dashboard/#/prices`);
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Delete gpt-4o-mini' }).click();
    await page.getByText('The price of gpt-4o-mini is removed.').waitFor();
    expect(asked).to.include('gpt-4o-mini');
    expect(await gateway.gateway.management.listPrices()).to.deep.equal([]);
    // Back to the default table's price, with its date.
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/usage`);
    const published = DEFAULT_PRICES.find((price) => price.provider === 'openai' && price.model === 'gpt-4o-mini')!;
    await page.getByTestId('spend-price-as-of').filter({ hasText: `prices as of ${published.priceAsOf}` }).waitFor();
    expect(await page.getByTestId('total-spend').textContent()).to.equal(spend(published.inputUsdPerMillion, published.outputUsdPerMillion));
  });

  it('fits a 390 px phone screen with token budgets, prices and spend charts: no page and no table wider than the screen', async () => {
    await gateway.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', inputUsdPerMillion: 0.15, outputUsdPerMillion: 0.6 });
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const [hash, ready] of [['#/prices', 'Prices'], [`#/apps/${appId}/limits`, 'token-budgets'], [`#/apps/${appId}/usage`, 'chart-spend-models'], ['#/usage', 'chart-spend-apps']] as const) {
        await page.goto(`${gateway.url}/dashboard/${hash}`);
        await (ready.startsWith('chart') || ready === 'token-budgets' ? page.getByTestId(ready) : page.getByRole('heading', { name: ready, exact: true })).waitFor();
        const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        expect(width, `${hash} is ${width} px wide`).to.be.at.most(390);
        // Tables scroll inside themselves at most; the price table fits whole.
        const overflowing = (await page.evaluate(`Array.from(document.querySelectorAll('main table')).filter((table) => table.getBoundingClientRect().right > 390).length`)) as number;
        expect(overflowing, `${hash}: tables past the screen's edge`).to.equal(0);
        if (hash === '#/prices') {
          const [scroll, client] = (await page.evaluate(`(() => { const table = document.querySelector('main table'); return [table.scrollWidth, table.clientWidth]; })()`)) as [number, number];
          expect(scroll, 'the price table needs no sideways scrolling').to.be.at.most(client);
        }
        await checkpoint(`phone-budgets-${hash.replace(/[^a-z]+/g, '-')}`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
      await gateway.gateway.management.deletePrice({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18' });
    }
  });

  it('fits a 390 px phone screen: no page is wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [hash, heading] of [['#/apps', 'Apps'], [`#/apps/${appId}`, 'Browser app'], [`#/apps/${appId}/devices`, 'Browser app · Devices'], [`#/apps/${appId}/requests`, 'Browser app · Requests'], [`#/apps/${appId}/usage`, 'Browser app · Usage'], ['#/audit', 'Audit log'], ['#/users', 'Administrators']] as const) {
      await page.goto(`${gateway.url}/dashboard/${hash}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
      expect(width, `${hash} is ${width} px wide`).to.be.at.most(390);
      await checkpoint(`phone-${hash.replace(/[^a-z]+/g, '-')}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  // Issue 19: provider keys' last use and "test this key", device search and the per-device page, grace expiry.

  /** The page is no wider than the screen, and no table on it scrolls sideways. */
  async function fitsWidth(name: string, width: number): Promise<void> {
    const pageWidth = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    expect(pageWidth, `${name} is ${pageWidth} px wide`).to.be.at.most(width);
    const tables = await page.locator('main table').evaluateAll((elements) => elements.map((table) => ({ scroll: table.scrollWidth, client: table.clientWidth, id: table.getAttribute('data-testid') ?? '' })));
    for (const table of tables) expect(table.scroll, `table ${table.id} on ${name} overflows (${table.scroll} > ${table.client})`).to.be.at.most(table.client + 1);
  }

  it('shows when each provider key was last used and tests it against the provider, never showing the key', async () => {
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/secrets`);
    await page.getByRole('heading', { name: 'Browser app · Secrets' }).waitFor();
    // The proxied requests above used the key: "last used" is the time the usage batches recorded.
    const [secret] = await gateway.gateway.management.listSecrets(appId);
    expect(secret!.lastUsedAt).to.be.a('string');
    expect(await page.getByTestId('last-used-openai').getAttribute('datetime')).to.equal(secret!.lastUsedAt);
    const before = upstream.requests.length;
    await page.getByRole('button', { name: 'Test openai key' }).click();
    await page.getByTestId('key-check-openai').filter({ hasText: /^Works \(HTTP 200\), \d+ ms$/ }).waitFor();
    // One GET of the manifest's key check reached the provider, with the stored key.
    expect(upstream.requests.length).to.equal(before + 1);
    expect(upstream.last()).to.deep.include({ method: 'GET', url: '/v1/models' });
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${CANARY}`);
    const audit = await new AuditRepository(gateway.gateway.database).list({ action: 'admin.secret.test' });
    expect(audit.map((entry) => `${entry.actor} ${entry.target} ${JSON.stringify(entry.details)}`)).to.deep.equal([`user:admin ${appId}/openai {"outcome":"ok","status":200}`]);
    await checkpoint('secrets-key-check');
  });

  it('finds devices by id prefix and platform, and opens a device page with its status, traffic and latest requests; revokes it after a confirmation', async () => {
    const device = 'browser-device-2';
    const appToken = deviceHeaders['Tollgate-App-Token']!;
    // A fresh token for the device, to show that the revocation reaches the proxy.
    const deviceToken = await gateway.deviceToken(appId, appToken, device);
    await page.getByRole('navigation', { name: 'Browser app sections' }).getByRole('link', { name: 'Devices' }).click();
    await page.getByRole('heading', { name: 'Browser app · Devices' }).waitFor();
    // Earlier tests attested devices of their own: the count is the database's.
    const { total } = await gateway.gateway.management.searchDevices(appId, { limit: 50, offset: 0 });
    expect(total).to.be.at.least(2);
    expect(await page.getByTestId('device-total').textContent()).to.equal(`Devices 1–${total} of ${total}.`);
    await page.getByLabel('Device id starts with').fill('BROWSER-DEVICE-2');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByTestId('device-total').filter({ hasText: 'Devices 1–1 of 1.' }).waitFor();
    expect(await page.getByTestId('device-list').locator('tbody tr').count()).to.equal(1);
    await page.getByLabel('Platform').selectOption('ios');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByTestId('device-total').filter({ hasText: 'No device matches.' }).waitFor();
    await page.getByLabel('Platform').selectOption('development');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByTestId('device-total').filter({ hasText: 'Devices 1–1 of 1.' }).waitFor();
    await checkpoint('devices-search');

    await page.getByRole('link', { name: device }).click();
    await page.getByRole('heading', { name: `Browser app · Device ${device}` }).waitFor();
    const status = (await page.getByTestId('device-status').textContent()) ?? '';
    expect(status).to.include('Development (simulators, emulators) (development)');
    expect(await page.getByTestId('device-state').textContent()).to.equal('active');
    expect(await page.getByTestId('device-last-seen').textContent()).to.not.equal('no request in the request log');
    // Its traffic: the one request the request-log test sent from it, with the tokens the provider reported (11 + 7).
    expect(await page.getByTestId('device-requests').textContent()).to.equal('1');
    expect(await page.getByTestId('device-errors').textContent()).to.equal('0');
    expect(await page.getByTestId('device-input-tokens').textContent()).to.equal('11');
    expect(await page.getByTestId('device-output-tokens').textContent()).to.equal('7');
    const rows = await page.getByTestId('device-requests-list').locator('tbody tr').allTextContents();
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include('POST v1/chat/completions').and.include('11 / 7');
    await checkpoint('device-page');

    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole('button', { name: `Revoke ${device}` }).click();
    await page.getByText(`Device ${device} is revoked.`).waitFor();
    expect(asked).to.include(device);
    await page.getByTestId('device-state').filter({ hasText: /^revoked / }).waitFor();
    expect(await page.getByRole('button', { name: `Revoke ${device}` }).count()).to.equal(0);
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...deviceHeaders, 'Tollgate-Device-Token': deviceToken }, body: '{}' });
    expect(refused.status).to.equal(403);
    expect(((await refused.json()) as { error: { reason: string } }).error.reason).to.equal('device_revoked');
    await checkpoint('device-revoked');
  });

  it('fits a 390 px phone screen on the new pages: no table scrolls sideways', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [hash, heading] of [[`#/apps/${appId}/secrets`, 'Browser app · Secrets'], [`#/apps/${appId}/devices`, 'Browser app · Devices'], [`#/apps/${appId}/devices/browser-device-2`, 'Browser app · Device browser-device-2']] as const) {
      await page.goto(`${gateway.url}/dashboard/${hash}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await fitsWidth(hash, 390);
      await checkpoint(`phone-${hash.replace(/[^a-z0-9]+/g, '-')}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('rotates with a grace period: both tokens work, and the old one stops after the period (clock injected), at 1280 and 390 px', async () => {
    let current = deviceHeaders['Tollgate-App-Token']!;
    const chat = async (appToken: string, deviceId: string) => {
      // The device token comes from the current app token; the request is made with `appToken`.
      const deviceToken = await gateway.deviceToken(appId, current, deviceId);
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { 'Tollgate-App-Token': appToken, 'Tollgate-Device-Token': deviceToken, 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
      const body = (await response.text()) || '{}';
      return { status: response.status, reason: (JSON.parse(body) as { error?: { reason?: string } }).error?.reason };
    };
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      await page.goto(`${gateway.url}/dashboard/#/apps/${appId}`);
      await page.getByRole('heading', { name: 'Browser app', exact: true }).waitFor();
      await page.getByLabel('Old token keeps working for').selectOption('1');
      let asked = '';
      page.once('dialog', (dialog) => {
        asked = dialog.message();
        void dialog.accept();
      });
      await page.getByRole('button', { name: 'Rotate app token' }).click();
      const shown = page.getByTestId('shown-once').filter({ hasText: 'New app token' });
      await shown.waitFor();
      expect(asked).to.include('1 hours');
      const fresh = (await shown.locator('code').textContent()) ?? '';
      expect(fresh).to.match(/^at_[0-9A-Za-z]{32}$/).and.not.equal(current);
      await shown.getByRole('button', { name: 'I have copied it' }).click();
      const old = current;
      current = fresh;
      // Both shown as active, the old one with its expiry; both work.
      await page.getByTestId('token-previous').waitFor();
      expect(await page.getByTestId('token-current').textContent()).to.include(fresh.slice(-4));
      expect(await page.getByTestId('token-previous').textContent()).to.include(old.slice(-4)).and.include('works until');
      await fitsWidth(`overview at ${width}`, width);
      await checkpoint(`grace-both-${width}`);
      expect(await chat(old, `grace-${width}-a`)).to.deep.equal({ status: 200, reason: undefined });
      expect(await chat(fresh, `grace-${width}-b`)).to.deep.equal({ status: 200, reason: undefined });
      // A minute before the end of the hour the old token still works; a minute after, it is refused.
      skew += 59 * 60_000;
      expect(await chat(old, `grace-${width}-c`)).to.deep.equal({ status: 200, reason: undefined });
      skew += 2 * 60_000;
      expect(await chat(old, `grace-${width}-d`)).to.deep.equal({ status: 401, reason: 'app_token_rotated' });
      expect(await chat(fresh, `grace-${width}-e`)).to.deep.equal({ status: 200, reason: undefined });
      // The overview no longer lists the old token.
      await page.reload();
      await page.getByRole('heading', { name: 'Browser app', exact: true }).waitFor();
      expect(await page.getByTestId('token-previous').count()).to.equal(0);
      expect(await page.getByTestId('token-current').textContent()).to.include(fresh.slice(-4));
      await checkpoint(`grace-ended-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    // Nothing on the new pages or in their answers held the key either.
    for (const body of seen) expect(body).to.not.include(CANARY);
    expect(gateway.logText()).to.not.include(CANARY);
  });

  it('pages through many devices with Next and Previous, with the total, searched by id and platform, at 1280 and 390 px', async () => {
    // Thirty iOS devices, stored as the App Attest route stores them (newest attestation first in the list).
    const devices = new DeviceRepository(gateway.gateway.database);
    const start = Date.now() + skew;
    for (let index = 0; index < 30; index += 1) {
      await devices.recordAttestation({ appId, deviceId: `fleet-${String(index).padStart(2, '0')}`, method: 'apple-app-attest', publicKey: null, now: start + index });
    }
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
      await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/devices`);
      await page.getByRole('heading', { name: 'Browser app · Devices' }).waitFor();
      await page.getByLabel('Device id starts with').fill('fleet-');
      await page.getByLabel('Platform').selectOption('ios');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByTestId('device-total').filter({ hasText: 'Devices 1–25 of 30.' }).waitFor();
      const ids = async () => page.getByTestId('device-list').locator('tbody tr td:first-child').allTextContents();
      expect(await ids()).to.have.length(25);
      expect((await ids())[0]).to.equal('fleet-29');
      expect(await page.getByTestId('device-list').textContent()).to.include('iOS');
      await fitsWidth(`devices at ${width}`, width);
      await checkpoint(`devices-page-1-${width}`);
      await page.getByRole('button', { name: 'Next devices' }).click();
      await page.getByTestId('device-total').filter({ hasText: 'Devices 26–30 of 30.' }).waitFor();
      expect(await ids()).to.deep.equal(['fleet-04', 'fleet-03', 'fleet-02', 'fleet-01', 'fleet-00']);
      expect(await page.getByRole('button', { name: 'Next devices' }).isVisible()).to.equal(false);
      await page.getByRole('button', { name: 'Previous devices' }).click();
      await page.getByTestId('device-total').filter({ hasText: 'Devices 1–25 of 30.' }).waitFor();
      await page.getByLabel('Platform').selectOption('android');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByTestId('device-total').filter({ hasText: 'No device matches.' }).waitFor();
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
