/**
 * The dashboard's layout measured in real Chromium at a phone's width (390 × 844) and a desktop's (1280 × 900): every
 * page reachable from the apps list is visited, and in the page itself the test measures that nothing scrolls sideways,
 * that no word of a table, heading, label or navigation is broken across lines, that the top bar takes at most a quarter
 * of a phone's screen, and that every chart's labels lie inside the chart. The app has signed-in users (one blocked),
 * a webhook with a delivery, and a realtime session in its request log, so that the Users, User and Alerts pages, the Policy
 * page's realtime and users sections, and the session rows are measured with data. Then: the Routes section of an app with one
 * provider key shows that provider's routes first, open, with the others collapsed; a failed save moves focus to the
 * field in error with the error on screen. Last, no source file of the dashboard is over 400 lines.
 */
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { adminClient, realtimeSession, SignedInUsers, WebhookReceiver } from '../support/dashboard-data';
import { FakeRealtimeUpstream } from '../support/fake-realtime';
import { FakeUpstream, respondJson } from '../support/fake-upstream';
import { TestGateway } from '../support/gateway';
import { requireTool } from '../support/services';

const CHROMIUM = process.env.TOLLGATE_CHROMIUM ?? '/usr/bin/chromium';
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

/** Measured in the page: words split over two lines, in tables, headings, labels and navigation. */
async function brokenWords(page: Page): Promise<string[]> {
  return page.locator('main th, main td, main h1, main h2, main h3, main label, main legend, header nav a, .tabs a, main figcaption').evaluateAll((elements: unknown[]) => {
    type Rect = { top: number; width: number };
    type TextNode = { nodeValue: string | null };
    type Doc = { createRange(): { setStart(node: unknown, offset: number): void; setEnd(node: unknown, offset: number): void; getClientRects(): ArrayLike<Rect> }; createTreeWalker(root: unknown, what: number): { nextNode(): TextNode | null } };
    const document = (globalThis as unknown as { document: Doc }).document;
    const broken: string[] = [];
    for (const element of elements as Array<{ checkVisibility(): boolean }>) {
      if (!element.checkVisibility()) continue;
      const walker = document.createTreeWalker(element, 4 /* NodeFilter.SHOW_TEXT */);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.nodeValue ?? '';
        for (const match of text.matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(node, match.index!);
          range.setEnd(node, match.index! + match[0].length);
          const tops = new Set(Array.from(range.getClientRects()).filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
          if (tops.size > 1) broken.push(match[0]);
        }
      }
    }
    return broken;
  });
}

/** Labels, legends and plots that reach outside their chart's box. */
async function labelsOutsideCharts(page: Page): Promise<string[]> {
  return page.locator('figure.chart-figure').evaluateAll((figures: unknown[]) => {
    type Box = { left: number; right: number; top: number; bottom: number; width: number };
    type Node = { getBoundingClientRect(): Box; querySelectorAll(selector: string): ArrayLike<Node>; textContent: string | null; id: string; checkVisibility(): boolean };
    const outside: string[] = [];
    for (const figure of figures as Node[]) {
      const frame = figure.getBoundingClientRect();
      for (const part of Array.from(figure.querySelectorAll('figcaption, .legend li, .bar-label, .bar-value, .bar, canvas'))) {
        if (!part.checkVisibility()) continue;
        const box = part.getBoundingClientRect();
        if (box.width === 0) continue;
        if (box.left < frame.left - 0.5 || box.right > frame.right + 0.5 || box.top < frame.top - 0.5 || box.bottom > frame.bottom + 0.5) outside.push(`${figure.id}: ${part.textContent || 'plot'}`);
      }
    }
    return outside;
  });
}

describe('dashboard layout at 390 and 1280 px', function () {
  this.timeout(180_000);
  let upstream: FakeUpstream;
  let voice: FakeRealtimeUpstream;
  let users: SignedInUsers;
  let receiver: WebhookReceiver;
  let gateway: TestGateway;
  let browser: Browser;
  let page: Page;
  let appId = '';
  let deviceId = '';

  before(async function () {
    requireTool(this, existsSync(CHROMIUM), `Chromium is missing at ${CHROMIUM}: .ci/run installs the Debian package "chromium"`);
    upstream = await FakeUpstream.start();
    // An OpenAI chat completion with usage (https://platform.openai.com/docs/api-reference/chat/object).
    upstream.respond(respondJson(200, { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o-mini-2024-07-18', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 1200, completion_tokens: 800, total_tokens: 2000 } }));
    voice = await FakeRealtimeUpstream.start();
    users = await SignedInUsers.start();
    receiver = await WebhookReceiver.start();
    gateway = await TestGateway.start({ upstreams: { openai: upstream.url, deepgram: voice.url } });
    // Signed-in users through the app's sign-in provider (tokens optional, so the unsigned request below counts too).
    const provisioned = await gateway.provision({ openai: 'sk-layout-test-key-0000000000000000', deepgram: 'dg-layout-test-key-000000000000' }, users.settings('optional'));
    appId = provisioned.appId;
    deviceId = provisioned.deviceId;
    await gateway.gateway.management.setPrice({ provider: 'openai', model: 'gpt-4o-mini', inputUsdPerMillion: 0.15, outputUsdPerMillion: 0.6 });
    const from = Date.now();
    for (const sub of ['ada-lovelace-0b6d2a', 'grace-hopper-7c1e9f', 'ada-lovelace-0b6d2a']) {
      const response = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...provisioned.headers, 'Tollgate-User-Token': await users.token(sub, { tier: 'pro' }), 'content-type': 'application/json' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
      expect(response.status).to.equal(200);
      await response.text();
    }
    const refused = await fetch(`${gateway.url}/v1/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { ...provisioned.headers, 'Tollgate-Device-Token': 'forged' }, body: '{}' });
    expect(refused.status).to.equal(403);
    await refused.text();
    // A realtime session (Deepgram live transcription's socket) in the request log, beside the HTTP requests.
    await realtimeSession(gateway, voice, 'deepgram/v1/listen?model=nova-3', provisioned.headers);
    await gateway.recordedUsage(appId, from, (events) => events.length === 5 && events.some((event) => event.session));
    const admin = await adminClient(gateway);
    expect((await admin('POST', `/apps/${appId}/users/grace-hopper-7c1e9f/block`)).json).to.include({ blocked: true });
    expect((await admin('GET', `/apps/${appId}/users`)).json).to.have.length(2);
    const webhook = await admin('POST', `/apps/${appId}/webhooks`, { url: receiver.url, events: ['budget.threshold', 'user.blocked', 'device.revoked'] });
    expect(webhook.status).to.equal(201);
    expect((await admin('POST', `/apps/${appId}/webhooks/${webhook.json.id as string}/test`)).status).to.equal(202);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'] });
    page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${gateway.url}/dashboard/setup#token=${gateway.gateway.setupToken}`);
    await page.getByLabel('User name').fill('layout');
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

  /** Every page reachable from the apps list, with what shows that it has drawn. */
  const pages = (): Array<readonly [string, string]> => [
    ['#/apps', 'Apps'],
    [`#/apps/${appId}`, 'Test app'],
    [`#/apps/${appId}/policy`, 'Test app · Policy'],
    [`#/apps/${appId}/secrets`, 'Test app · Secrets'],
    [`#/apps/${appId}/devices`, 'Test app · Devices'],
    [`#/apps/${appId}/devices/${deviceId}`, `Test app · Device ${deviceId}`],
    [`#/apps/${appId}/requests`, 'Test app · Requests'],
    [`#/apps/${appId}/usage`, 'Test app · Usage'],
    [`#/apps/${appId}/users`, 'Test app · Users'],
    [`#/apps/${appId}/users/ada-lovelace-0b6d2a`, 'Test app · User ada-lovelace-0b6d2a'],
    [`#/apps/${appId}/alerts`, 'Test app · Alerts'],
    // The Policy page opened at its realtime and signed-in users sections.
    [`#/apps/${appId}/sessions`, 'Test app · Policy'],
    [`#/apps/${appId}/sign-in`, 'Test app · Policy'],
    [`#/apps/${appId}/integrate`, 'Test app · Integrate'],
    ['#/usage', 'Usage of every app'],
    ['#/prices', 'Prices'],
    ['#/admin-keys', 'Admin keys'],
    ['#/audit', 'Audit log'],
    ['#/users', 'Administrators'],
  ];

  for (const viewport of [PHONE, DESKTOP]) {
    it(`fits every page at ${viewport.width} px: no sideways scroll, no broken word, charts keep their labels`, async () => {
      await page.setViewportSize(viewport);
      for (const [hash, heading] of pages()) {
        await page.goto(`${gateway.url}/dashboard/${hash}`);
        await page.getByRole('heading', { name: heading, exact: true }).waitFor();
        // The pages with data show it (the measurements below are of filled tables, not of empty states).
        const filled: Record<string, string> = { [`#/apps/${appId}/users`]: 'end-user-list', [`#/apps/${appId}/users/ada-lovelace-0b6d2a`]: 'user-requests-list', [`#/apps/${appId}/alerts`]: 'webhook-deliveries', [`#/apps/${appId}/requests`]: 'request-log' };
        const testId = filled[hash];
        if (testId) expect(await page.getByTestId(testId).locator('tbody tr').count(), `rows on ${hash}`).to.be.greaterThan(0);
        if (hash.endsWith('/sessions') || hash.endsWith('/sign-in')) {
          const section = page.locator(hash.endsWith('/sessions') ? '#section-sessions' : '#section-users');
          expect(await section.locator('h2').isVisible(), `the section heading of ${hash}`).to.equal(true);
          const box = (await section.locator('h2').boundingBox())!;
          expect(box.y, `${hash} opens at its section`).to.be.within(-1, viewport.height - box.height);
        }
        // Charts are drawn once their box has a width (the next animation frame).
        await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
        const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        const past = width > viewport.width ? await page.evaluate(`Array.from(document.querySelectorAll('body *')).filter((e) => e.getBoundingClientRect().right > ${viewport.width} + 0.5 || e.scrollWidth > e.clientWidth + 1).map((e) => e.tagName + '.' + e.className + ' ' + String(e.textContent).slice(0, 30)).slice(-5).join(' | ')`) : '';
        expect(width, `${hash} at ${viewport.width} px is ${width} px wide: ${past}`).to.be.at.most(viewport.width);
        expect(await brokenWords(page), `words broken across lines on ${hash} at ${viewport.width} px`).to.deep.equal([]);
        expect(await labelsOutsideCharts(page), `chart parts outside their chart on ${hash} at ${viewport.width} px`).to.deep.equal([]);
        if (viewport === PHONE) {
          const bar = (await page.locator('#top').boundingBox())!;
          expect(bar.height, `top bar on ${hash}`).to.be.at.most(PHONE.height / 4);
        }
      }
    });
  }

  it('on a phone the sections are behind a menu that opens and closes', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${gateway.url}/dashboard/#/apps`);
    await page.getByRole('heading', { name: 'Apps', exact: true }).waitFor();
    const sections = page.getByRole('navigation', { name: 'Sections' });
    expect(await sections.getByRole('link', { name: 'Prices' }).isVisible()).to.equal(false);
    await page.getByRole('button', { name: 'Menu' }).click();
    expect(await page.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded')).to.equal('true');
    await sections.getByRole('link', { name: 'Prices' }).click();
    await page.getByRole('heading', { name: 'Prices', exact: true }).waitFor();
    expect(await sections.getByRole('link', { name: 'Prices' }).isVisible(), 'the menu closes once a section is chosen').to.equal(false);
    const bar = (await page.locator('#top').boundingBox())!;
    expect(bar.height).to.be.at.most(PHONE.height / 4);
  });

  for (const viewport of [PHONE, DESKTOP]) {
    it(`shows the routes of the one provider with a key first, open, the others collapsed, at ${viewport.width} px`, async () => {
      await page.setViewportSize(viewport);
      await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/routes`);
      const openai = page.getByTestId('routes-openai');
      await openai.waitFor();
      const groups = await page.locator('form[aria-label="Providers and routes"] .route-group').evaluateAll((elements: unknown[]) => (elements as Array<{ getAttribute(name: string): string | null; checkVisibility(): boolean }>).filter((element) => element.checkVisibility()).map((element) => element.getAttribute('data-provider')));
      expect(groups, 'only the provider with a key shows until the others are opened').to.deep.equal(['openai']);
      expect(await openai.locator('details').getAttribute('open')).to.not.equal(null);
      // Its routes are on screen once the section is scrolled to, the others' are not in the way.
      const list = openai.locator('.route-list');
      await list.scrollIntoViewIfNeeded();
      expect(await list.isVisible()).to.equal(true);
      const others = page.locator('details.other-providers');
      expect(await others.getAttribute('open')).to.equal(null);
      expect(await others.locator('> summary').textContent()).to.match(/^Other providers \(\d+\)$/);
      // The save button stays in view while the list scrolls.
      const save = page.getByRole('button', { name: 'Save routes' });
      const box = (await save.boundingBox())!;
      expect(box.y + box.height).to.be.at.most(viewport.height);
    });
  }

  it('moves focus to the field in error after a failed save, with its message on screen', async () => {
    await page.setViewportSize(PHONE);
    await page.goto(`${gateway.url}/dashboard/#/apps/${appId}/limits`);
    const field = page.getByLabel(/Per-provider limits/);
    await field.waitFor();
    await field.fill('openai=0');
    // The Save button is pressed from the bottom of a long form.
    await page.getByRole('button', { name: 'Save limits' }).click();
    const message = page.locator('.field-error');
    await message.waitFor();
    const focused = (await page.evaluate('[document.activeElement.name, document.activeElement.getAttribute("aria-invalid")]')) as [string, string];
    expect(focused).to.deep.equal(['providerLimitsPerMinute', 'true']);
    const box = (await message.boundingBox())!;
    expect(box.y, 'the message is on screen').to.be.within(0, PHONE.height - box.height);
    expect((await gateway.gateway.management.getApp(appId)).settings.providerLimitsPerMinute ?? null, 'nothing was saved').to.equal(null);
    await field.fill('openai=5');
    await page.getByRole('button', { name: 'Save limits' }).click();
    await page.getByText('Limits saved.').waitFor();
    expect(await page.locator('[aria-invalid="true"]').count()).to.equal(0);
  });
});

describe('dashboard sources', () => {
  it('keeps every source file of the dashboard under 400 lines (one module per page)', () => {
    const root = path.resolve(__dirname, '..', '..', '..', 'dashboard', 'src');
    const files: string[] = [];
    const walk = (directory: string): void => {
      for (const name of readdirSync(directory)) {
        const full = path.join(directory, name);
        if (statSync(full).isDirectory()) walk(full);
        else if (name.endsWith('.ts')) files.push(full);
      }
    };
    walk(root);
    expect(files.length).to.be.greaterThan(10);
    const long = files.map((file) => [path.relative(root, file), readFileSync(file, 'utf8').split('\n').length] as const).filter(([, lines]) => lines > 400);
    expect(long).to.deep.equal([]);
  });
});
