/**
 * Token budgets on their own, without a gateway: which budgets apply and their counter keys, the ends of their UTC
 * windows, when their counters expire, the 80 % and 100 % marks, the after-the-fact charge, the reservation estimate
 * from a request body (and the stream-usage request merged into it), the reservation of a request from its context
 * (which unread bodies count their declared length, the refusals), its settlement and the marks it tells, and the
 * read-then-add fallback for a store without `reserve`/`settle`. The same code behind a gateway: token-budgets.test.ts
 * and token-budget-reservations.test.ts.
 */
import { expect } from 'chai';
import { rejection } from '../support/refusals';
import { GatewayError, ProxyContext, type AppSettings, type ProviderManifest, type RateLimitStore } from '../../core/contract';
import {
  budgetExpiresAt,
  budgetPolicyName,
  budgetsFor,
  chargeTokenBudgets,
  chargeTokens,
  checkTokenBudgets,
  secondsToNextUtcMinute,
  secondsToUtcMidnight,
  tellThreshold,
  type Budget,
} from '../../core/pipeline/token-budget';
import { PassThrough } from 'node:stream';
import { estimateTokens, requestFieldsFor, reservationOf, reserveIn, reserveTokenBudgets, settleIn, settleTokenBudgets, tokensToCharge } from '../../core/pipeline/token-reservation';

const DAY = 86_400_000;
// 2026-12-05T13:45:30.250Z
const NOW = Date.UTC(2026, 11, 5, 13, 45, 30, 250);
const settings = (values: Partial<Record<keyof AppSettings, unknown>>): AppSettings => values as unknown as AppSettings;

describe('token budgets: which apply, and their counter keys', () => {
  it('applies none when no budget is set (and per-user budgets only with a user)', () => {
    expect(budgetsFor(settings({}), 'app_1', 'dev', 'openai', NOW)).to.deep.equal([]);
    expect(budgetsFor(settings({ userDailyTokens: 10, userMinuteTokens: 5 }), 'app_1', 'dev', 'openai', NOW)).to.deep.equal([]);
    expect(budgetsFor(settings({ providerDailyTokens: { anthropic: 10 }, providerMinuteTokens: { anthropic: 1 }, providerDeviceDailyTokens: { anthropic: 2 } }), 'app_1', 'dev', 'openai', NOW)).to.deep.equal([]);
  });

  it('names every budget with its limit, window and a key carrying the app tag, the subject and the window', () => {
    const all = settings({
      deviceDailyTokens: 1,
      appDailyTokens: 2,
      providerDailyTokens: { openai: 3 },
      providerDeviceDailyTokens: { openai: 4 },
      userDailyTokens: 5,
      deviceMinuteTokens: 6,
      appMinuteTokens: 7,
      providerMinuteTokens: { openai: 8 },
      userMinuteTokens: 9,
    });
    const minute = Math.floor(NOW / 60_000);
    const tag = '{app_1}\u0000tok\u0000';
    expect(budgetsFor(all, 'app_1', 'dev', 'openai', NOW, 'user-7')).to.deep.equal([
      { policy: 'device', key: `${tag}d\u0000dev\u000020261205`, limit: 1, windowMs: DAY },
      { policy: 'app', key: `${tag}a\u000020261205`, limit: 2, windowMs: DAY },
      { policy: 'provider', key: `${tag}p\u0000openai\u000020261205`, limit: 3, windowMs: DAY },
      { policy: 'provider-device', key: `${tag}pd\u0000openai\u0000dev\u000020261205`, limit: 4, windowMs: DAY },
      { policy: 'user', key: `${tag}u\u0000user-7\u000020261205`, limit: 5, windowMs: DAY },
      { policy: 'device-minute', key: `${tag}dm\u0000dev\u0000${minute}`, limit: 6, windowMs: 60_000 },
      { policy: 'app-minute', key: `${tag}am\u0000${minute}`, limit: 7, windowMs: 60_000 },
      { policy: 'provider-minute', key: `${tag}pm\u0000openai\u0000${minute}`, limit: 8, windowMs: 60_000 },
      { policy: 'user-minute', key: `${tag}um\u0000user-7\u0000${minute}`, limit: 9, windowMs: 60_000 },
    ]);
  });

  it('applies each budget on its own: any single one set is enough', () => {
    const single: Array<[Partial<Record<keyof AppSettings, unknown>>, string]> = [
      [{ deviceDailyTokens: 1 }, 'device'],
      [{ appDailyTokens: 1 }, 'app'],
      [{ providerDailyTokens: { openai: 1 } }, 'provider'],
      [{ providerDeviceDailyTokens: { openai: 1 } }, 'provider-device'],
      [{ userDailyTokens: 1 }, 'user'],
      [{ deviceMinuteTokens: 1 }, 'device-minute'],
      [{ appMinuteTokens: 1 }, 'app-minute'],
      [{ providerMinuteTokens: { openai: 1 } }, 'provider-minute'],
      [{ userMinuteTokens: 1 }, 'user-minute'],
    ];
    for (const [values, policy] of single) {
      expect(budgetsFor(settings(values), 'a', 'd', 'openai', NOW, 'u').map((budget) => budget.policy), policy).to.deep.equal([policy]);
    }
  });

  it('names the policies in messages', () => {
    expect(['device', 'app', 'provider', 'provider-device', 'device-minute', 'app-minute', 'provider-minute', 'user', 'user-minute'].map((policy) => budgetPolicyName(policy as Budget['policy']))).to.deep.equal([
      'device per day', 'app per day', 'provider per day', 'device with this provider per day', 'device per minute', 'app per minute', 'provider per minute', 'user per day', 'user per minute',
    ]);
  });
});

describe('token budgets: windows and expiry', () => {
  it('counts the seconds to 00:00 UTC and to the next whole minute, at least one', () => {
    expect(secondsToUtcMidnight(NOW)).to.equal(10 * 3600 + 14 * 60 + 30);
    expect(secondsToNextUtcMinute(NOW)).to.equal(30);
    // Exactly at the start of a window: a whole window; a millisecond before its end: one second.
    expect(secondsToUtcMidnight(Date.UTC(2026, 11, 5))).to.equal(86_400);
    expect(secondsToNextUtcMinute(Date.UTC(2026, 11, 5, 0, 1))).to.equal(60);
    expect(secondsToUtcMidnight(Date.UTC(2026, 11, 6) - 1)).to.equal(1);
    expect(secondsToNextUtcMinute(Date.UTC(2026, 11, 5, 0, 1) - 1)).to.equal(1);
    expect(secondsToNextUtcMinute(Date.UTC(2026, 11, 5, 0, 1) - 1001)).to.equal(2);
  });

  it('keeps a day counter an hour past its day and a minute counter a minute past its minute', () => {
    const [day, minute] = budgetsFor(settings({ deviceDailyTokens: 1, deviceMinuteTokens: 1 }), 'a', 'd', 'p', NOW);
    expect(budgetExpiresAt(day!, NOW)).to.equal(Date.UTC(2026, 11, 6, 1));
    expect(budgetExpiresAt(minute!, NOW)).to.equal(Date.UTC(2026, 11, 5, 13, 47));
  });

  it('tells the highest mark a charge crossed, once: 80 %, 100 %, or both at once as 100 %', () => {
    const budget: Budget = { policy: 'app', key: 'k', limit: 1000, windowMs: DAY };
    const told: Array<[number, number]> = [];
    const listener = (_budget: Budget, percent: 80 | 100, total: number) => told.push([percent, total]);
    tellThreshold(budget, 799, 799, listener);
    tellThreshold(budget, 800, 1, listener);
    tellThreshold(budget, 900, 100, listener);
    tellThreshold(budget, 1000, 100, listener);
    tellThreshold(budget, 1200, 200, listener);
    tellThreshold(budget, 1000, 1000, listener);
    expect(told).to.deep.equal([[80, 800], [100, 1000], [100, 1000]]);
  });
});

describe('token budgets: the after-the-fact charge', () => {
  it('adds the tokens to every budget that applies, each counter living to its expiry', async () => {
    const spends: Array<[string, number, number]> = [];
    const store = { spend: async (key: string, amount: number, ttlMs: number) => (spends.push([key, amount, ttlMs]), amount) } as unknown as RateLimitStore;
    const app = settings({ deviceDailyTokens: 100, appMinuteTokens: 50 });
    expect(chargeTokens(store, app, 'a', 'd', 'p', 0, NOW)).to.equal(undefined);
    expect(chargeTokens(store, app, 'a', 'd', 'p', Number.NaN, NOW)).to.equal(undefined);
    expect(chargeTokens(store, settings({}), 'a', 'd', 'p', 10, NOW)).to.equal(undefined);
    expect(spends).to.deep.equal([]);
    expect(await chargeTokens(store, app, 'a', 'd', 'p', 7, NOW)).to.equal(undefined);
    const [day, minute] = budgetsFor(app, 'a', 'd', 'p', NOW);
    // The day counter lives an hour past midnight, the minute counter to the end of the next minute.
    expect(spends).to.deep.equal([
      [day!.key, 7, Date.UTC(2026, 11, 6, 1) - NOW],
      [minute!.key, 7, Date.UTC(2026, 11, 5, 13, 47) - NOW],
    ]);
  });

  it('answers a store failure as a rejected promise, not a throw', async () => {
    const failing = { spend: () => { throw new Error('store down'); } } as unknown as RateLimitStore;
    const pending = chargeTokens(failing, settings({ appDailyTokens: 5 }), 'a', 'd', 'p', 1, NOW);
    expect(pending).to.be.an.instanceOf(Promise);
    let caught: unknown;
    await pending!.catch((error: unknown) => (caught = error));
    expect((caught as Error).message).to.equal('store down');
  });
});

describe('token budgets: the check before and the charge after a request, from its context', () => {
  function contextFor(values: Partial<Record<keyof AppSettings, unknown>>, usage?: { inputTokens?: number; outputTokens?: number }, user?: { key: string; values: Partial<Record<keyof AppSettings, unknown>> }): ProxyContext {
    const context = new ProxyContext('r', {} as never, {} as never, { slug: 'openai', version: 'v1', providerPath: '', query: '' }, { slug: 'openai' } as never, 0);
    context.set('app', { id: 'app_1', settings: settings(values) } as never);
    context.set('device', { deviceId: 'dev' } as never);
    if (user) context.set('user', { key: user.key, settings: settings(user.values) } as never);
    if (usage) context.outcome.usage = usage as never;
    return context;
  }
  function recordingStore(totals: Record<string, number> = {}, asPromise = false) {
    const spends: Array<[string, number, number]> = [];
    const store = {
      spend: async (key: string, amount: number, ttlMs: number) => {
        spends.push([key, amount, ttlMs]);
        totals[key] = (totals[key] ?? 0) + amount;
        return totals[key];
      },
      spent: (keys: readonly string[]) => {
        const values = keys.map((key) => totals[key] ?? 0);
        return asPromise ? Promise.resolve(values) : values;
      },
    } as unknown as RateLimitStore;
    return { store, spends };
  }
  const refusal = (run: () => unknown): GatewayError => {
    try {
      run();
    } catch (error) {
      return error as GatewayError;
    }
    throw new Error('not refused');
  };

  it('lets a request through while every budget has room, and refuses it once one is used up, naming it and when it resets', async () => {
    const day = budgetsFor(settings({ deviceDailyTokens: 100 }), 'app_1', 'dev', 'openai', NOW)[0]!;
    const minute = budgetsFor(settings({ appMinuteTokens: 10 }), 'app_1', 'dev', 'openai', NOW)[0]!;
    const both = { deviceDailyTokens: 100, appMinuteTokens: 10 };
    expect(checkTokenBudgets(recordingStore().store, contextFor({}), NOW)).to.equal(undefined);
    // No budget: the store is not asked, so even one answering by promise gives no promise.
    expect(checkTokenBudgets(recordingStore({}, true).store, contextFor({}), NOW)).to.equal(undefined);
    expect(checkTokenBudgets(recordingStore({ [day.key]: 99, [minute.key]: 9 }).store, contextFor(both), NOW)).to.equal(undefined);
    const byMinute = refusal(() => checkTokenBudgets(recordingStore({ [day.key]: 99, [minute.key]: 10 }).store, contextFor(both), NOW));
    expect(byMinute).to.be.an.instanceOf(GatewayError);
    expect(byMinute.message).to.equal('Token budget used up (app per minute); it starts again at the next UTC minute, in 30 s.');
    expect(byMinute).to.deep.include({ type: 'rateLimited', status: 429, retryAfterSeconds: 30, reason: 'token_budget' });
    // Both used up: the later reset (the day's) is the one to wait for.
    const byBoth = refusal(() => checkTokenBudgets(recordingStore({ [day.key]: 150, [minute.key]: 10 }).store, contextFor(both), NOW));
    expect(byBoth.message).to.equal(`Token budget used up (device per day and app per minute); it starts again at 00:00 UTC, in ${secondsToUtcMidnight(NOW)} s.`);
    expect(byBoth.retryAfterSeconds).to.equal(secondsToUtcMidnight(NOW));
    // A store answering with a promise: the same decision, as a rejection.
    const pending = checkTokenBudgets(recordingStore({ [day.key]: 100 }, true).store, contextFor(both), NOW);
    expect(pending).to.be.an.instanceOf(Promise);
    const rejected = await (pending as Promise<void>).then(() => undefined, (error: unknown) => error as GatewayError);
    expect(rejected!.message).to.equal(`Token budget used up (device per day); it starts again at 00:00 UTC, in ${secondsToUtcMidnight(NOW)} s.`);
    expect(await checkTokenBudgets(recordingStore({ [day.key]: 99 }, true).store, contextFor(both), NOW)).to.equal(undefined);
  });

  it('checks a signed-in user\'s budgets with the user\'s settings', () => {
    const userDay = budgetsFor(settings({ userDailyTokens: 5 }), 'app_1', 'dev', 'openai', NOW, 'u1')[0]!;
    const context = contextFor({ deviceDailyTokens: 1_000 }, undefined, { key: 'u1', values: { userDailyTokens: 5 } });
    expect(refusal(() => checkTokenBudgets(recordingStore({ [userDay.key]: 5 }).store, context, NOW)).message).to.include('(user per day)');
  });

  it('charges the reported input and output tokens to every budget that applies, telling the marks crossed', async () => {
    const { store, spends } = recordingStore();
    const told: Array<[string, number, number]> = [];
    const context = contextFor({ deviceDailyTokens: 100, appMinuteTokens: 1_000 }, { inputTokens: 60, outputTokens: 25 });
    await chargeTokenBudgets(store, context, NOW, (budget, percent, total) => told.push([budget.policy, percent, total]));
    const [day, minute] = budgetsFor(settings({ deviceDailyTokens: 100, appMinuteTokens: 1_000 }), 'app_1', 'dev', 'openai', NOW);
    expect(spends).to.deep.equal([
      [day!.key, 85, Date.UTC(2026, 11, 6, 1) - NOW],
      [minute!.key, 85, Date.UTC(2026, 11, 5, 13, 47) - NOW],
    ]);
    expect(told).to.deep.equal([['device', 80, 85]]);
    // Without a listener it charges all the same, crossing a mark or not.
    await chargeTokenBudgets(store, contextFor({ deviceDailyTokens: 100 }, { outputTokens: 3 }), NOW);
    expect(spends.at(-1)).to.deep.equal([day!.key, 3, Date.UTC(2026, 11, 6, 1) - NOW]);
    await chargeTokenBudgets(store, contextFor({ deviceDailyTokens: 100 }, { outputTokens: 20 }), NOW);
    expect(spends.at(-1)).to.deep.equal([day!.key, 20, Date.UTC(2026, 11, 6, 1) - NOW]);
    // A user's budgets are charged under the user's key.
    await chargeTokenBudgets(store, contextFor({}, { inputTokens: 2 }, { key: 'u1', values: { userDailyTokens: 50 } }), NOW);
    expect(spends.at(-1)![0]).to.equal(budgetsFor(settings({ userDailyTokens: 50 }), 'app_1', 'dev', 'openai', NOW, 'u1')[0]!.key);
  });

  it('charges nothing without usage, without tokens, without a budget, or before the app and device are known', () => {
    const { store, spends } = recordingStore();
    expect(chargeTokenBudgets(store, contextFor({ deviceDailyTokens: 100 }), NOW)).to.equal(undefined);
    expect(chargeTokenBudgets(store, contextFor({ deviceDailyTokens: 100 }, {}), NOW)).to.equal(undefined);
    expect(chargeTokenBudgets(store, contextFor({ deviceDailyTokens: 100 }, { inputTokens: 0, outputTokens: 0 }), NOW)).to.equal(undefined);
    expect(chargeTokenBudgets(store, contextFor({}, { inputTokens: 5 }), NOW)).to.equal(undefined);
    const bare = new ProxyContext('r', {} as never, {} as never, { slug: 'openai', version: 'v1', providerPath: '', query: '' }, { slug: 'openai' } as never, 0);
    bare.outcome.usage = { inputTokens: 5 } as never;
    expect(chargeTokenBudgets(store, bare, NOW)).to.equal(undefined);
    bare.set('app', { id: 'app_1', settings: settings({ deviceDailyTokens: 100 }) } as never);
    expect(chargeTokenBudgets(store, bare, NOW)).to.equal(undefined);
    expect(spends).to.deep.equal([]);
  });

  it('answers a store that throws as a rejected promise', async () => {
    const failing = { spend: () => { throw new Error('store down'); } } as unknown as RateLimitStore;
    const pending = chargeTokenBudgets(failing, contextFor({ appDailyTokens: 5 }, { inputTokens: 1 }), NOW);
    expect(pending).to.be.an.instanceOf(Promise);
    expect(await pending!.then(() => 'resolved', (error: Error) => error.message)).to.equal('store down');
  });
});

describe('token reservations: the estimate from a request body', () => {
  const manifest = {
    requestFields: [
      { methods: ['POST'], path: 'v1/chat/completions', outputLimit: ['max_completion_tokens', 'max_tokens'], defaultOutputTokens: 16, stream: 'stream', streamUsageRequest: { stream_options: { include_usage: true } } },
      { methods: ['POST'], path: 'v1beta/models/*', outputLimit: ['generationConfig.maxOutputTokens'] },
    ],
  } as unknown as ProviderManifest;
  const body = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

  it('finds the route\'s fields by method and path, slashes trimmed', () => {
    expect(requestFieldsFor(manifest, 'post', '/v1/chat/completions/')).to.equal((manifest.requestFields as unknown[])[0]);
    expect(requestFieldsFor(manifest, 'GET', 'v1/chat/completions')).to.equal(undefined);
    expect(requestFieldsFor(manifest, 'POST', 'v1/chat/completions/extra')).to.equal(undefined);
    expect(requestFieldsFor(manifest, 'POST', 'v1beta/models/gemini:generateContent')).to.equal((manifest.requestFields as unknown[])[1]);
    expect(requestFieldsFor({ requestFields: [] } as unknown as ProviderManifest, 'POST', 'x')).to.equal(undefined);
    expect(requestFieldsFor({} as ProviderManifest, 'POST', 'x')).to.equal(undefined);
  });

  it('counts four bytes a token, rounded up, plus the first output limit named, or the route default', () => {
    const plain = body({ max_tokens: 100 });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', plain, false)).to.deep.equal({ inputTokens: Math.ceil(plain.length / 4), outputTokens: 100, body: plain, addedStreamUsage: false });
    const both = body({ max_completion_tokens: 7.2, max_tokens: 100 });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', both, false).outputTokens).to.equal(8);
    // A limit that is not a finite non-negative number is skipped for the next one, or the default.
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body({ max_completion_tokens: -1, max_tokens: 50 }), false).outputTokens).to.equal(50);
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body({ max_tokens: '50' }), false).outputTokens).to.equal(16);
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body({ max_tokens: 0 }), false).outputTokens).to.equal(0);
    expect(estimateTokens(manifest, 'POST', 'v1beta/models/g:generateContent', body({ generationConfig: { maxOutputTokens: 30 } }), false).outputTokens).to.equal(30);
    expect(estimateTokens(manifest, 'POST', 'v1beta/models/g:generateContent', body({ generationConfig: [30] }), false).outputTokens).to.equal(0);
    // No fields for the route: input only. A body that is not a JSON object: the default.
    expect(estimateTokens(manifest, 'POST', 'v1/audio', Buffer.alloc(9), true)).to.include({ inputTokens: 3, outputTokens: 0, addedStreamUsage: false });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body('[{"max_tokens":5}]'), true)).to.include({ outputTokens: 16, addedStreamUsage: false });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body(' \n\t{"max_tokens":5}'), false).outputTokens).to.equal(5);
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', body('{"max_tokens":5'), false).outputTokens).to.equal(16);
  });

  it('asks a stream for usage only when asked to, when it streams and does not ask already, keeping its other options', () => {
    const streaming = body({ stream: true, stream_options: { other: 1 }, max_tokens: 1 });
    const asked = estimateTokens(manifest, 'POST', 'v1/chat/completions', streaming, true);
    expect(asked.addedStreamUsage).to.equal(true);
    expect(JSON.parse(asked.body.toString())).to.deep.equal({ stream: true, stream_options: { other: 1, include_usage: true }, max_tokens: 1 });
    // The estimate is of the client's body.
    expect(asked.inputTokens).to.equal(Math.ceil(streaming.length / 4));
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', streaming, false)).to.include({ body: streaming, addedStreamUsage: false });
    const notStreaming = body({ stream: false });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', notStreaming, true)).to.include({ body: notStreaming, addedStreamUsage: false });
    const already = body({ stream: true, stream_options: { include_usage: true } });
    expect(estimateTokens(manifest, 'POST', 'v1/chat/completions', already, true)).to.include({ body: already, addedStreamUsage: false });
    // A non-object stream_options is replaced.
    const replaced = estimateTokens(manifest, 'POST', 'v1/chat/completions', body({ stream: true, stream_options: 'x' }), true);
    expect(JSON.parse(replaced.body.toString())).to.deep.equal({ stream: true, stream_options: { include_usage: true } });
    const other = body({ stream: true, stream_options: { include_usage: false } });
    expect(JSON.parse(estimateTokens(manifest, 'POST', 'v1/chat/completions', other, true).body.toString()).stream_options).to.deep.equal({ include_usage: true });
  });

  it('merges the usage request into a member that is null, an array, absent or holds a non-object, replacing it, other members in place', () => {
    const sent = (client: string) => estimateTokens(manifest, 'POST', 'v1/chat/completions', Buffer.from(client), true);
    const cases: Array<[client: string, upstream: string]> = [
      ['{"stream":true,"stream_options":null,"n":1}', '{"stream":true,"stream_options":{"include_usage":true},"n":1}'],
      ['{"stream":true,"stream_options":[],"n":1}', '{"stream":true,"stream_options":{"include_usage":true},"n":1}'],
      ['{"stream":true,"stream_options":[{"include_usage":true}],"n":1}', '{"stream":true,"stream_options":{"include_usage":true},"n":1}'],
      ['{"stream":true,"n":1}', '{"stream":true,"n":1,"stream_options":{"include_usage":true}}'],
      ['{"stream":true,"stream_options":{"include_usage":null,"x":2}}', '{"stream":true,"stream_options":{"include_usage":true,"x":2}}'],
      ['{"stream":true,"stream_options":{"include_usage":[true]}}', '{"stream":true,"stream_options":{"include_usage":true}}'],
      // An object where the request has a plain value: replaced by the value, not merged into.
      ['{"stream":true,"stream_options":{"include_usage":{"enabled":true},"x":2}}', '{"stream":true,"stream_options":{"include_usage":true,"x":2}}'],
      ['{"stream":true,"stream_options":{"include_usage":"true"}}', '{"stream":true,"stream_options":{"include_usage":true}}'],
      ['{"stream":true,"stream_options":7}', '{"stream":true,"stream_options":{"include_usage":true}}'],
    ];
    for (const [client, upstream] of cases) {
      const estimate = sent(client);
      expect(estimate.body.toString(), client).to.equal(upstream);
      expect(estimate.addedStreamUsage, client).to.equal(true);
      expect(estimate.inputTokens, client).to.equal(Math.ceil(Buffer.byteLength(client) / 4));
    }
  });

  it('leaves a body alone only when it has every member of the usage request, compared member by member', () => {
    // A request of several members (a provider may declare any object): all must be present, with the same values.
    const several = { requestFields: [{ methods: ['POST'], path: 'v1/responses', stream: 'stream', streamUsageRequest: { stream_options: { include_usage: true, continuous: true }, usage: 'detailed', trace: null } }] } as unknown as ProviderManifest;
    const sent = (client: string) => estimateTokens(several, 'POST', 'v1/responses', Buffer.from(client), true);
    const complete = '{"stream":true,"stream_options":{"continuous":true,"include_usage":true,"more":1},"usage":"detailed","trace":null}';
    expect(sent(complete)).to.include({ addedStreamUsage: false });
    expect(sent(complete).body.toString()).to.equal(complete);
    const cases: Array<[client: string, upstream: string]> = [
      // One of two nested members present: the other is added.
      ['{"stream":true,"stream_options":{"include_usage":true},"usage":"detailed","trace":null}', '{"stream":true,"stream_options":{"include_usage":true,"continuous":true},"usage":"detailed","trace":null}'],
      ['{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"trace":null}', '{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"trace":null,"usage":"detailed"}'],
      // A null in the request is a value like any other: it replaces an object, and an absent member is not null.
      ['{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"usage":"detailed","trace":{"id":1}}', '{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"usage":"detailed","trace":null}'],
      ['{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"usage":"detailed"}', '{"stream":true,"stream_options":{"continuous":true,"include_usage":true},"usage":"detailed","trace":null}'],
      // A body whose member is null where the request has an object.
      ['{"stream":true,"stream_options":null,"usage":"detailed","trace":null}', '{"stream":true,"stream_options":{"include_usage":true,"continuous":true},"usage":"detailed","trace":null}'],
    ];
    for (const [client, upstream] of cases) {
      const estimate = sent(client);
      expect(estimate.body.toString(), client).to.equal(upstream);
      expect(estimate.addedStreamUsage, client).to.equal(true);
    }
    // An array in the request replaces what the body has there, an object included (arrays are not merged into).
    const listed = { requestFields: [{ methods: ['POST'], path: 'v1/responses', stream: 'stream', streamUsageRequest: { include: ['usage'] } }] } as unknown as ProviderManifest;
    expect(estimateTokens(listed, 'POST', 'v1/responses', Buffer.from('{"stream":true,"include":{"a":1}}'), true).body.toString()).to.equal('{"stream":true,"include":["usage"]}');
    expect(estimateTokens(listed, 'POST', 'v1/responses', Buffer.from('{"stream":true,"include":["logs"]}'), true).body.toString()).to.equal('{"stream":true,"include":["usage"]}');
  });
});

describe('token reservations: what a finished request is charged', () => {
  const finished = (status: number, usage?: { inputTokens?: number; outputTokens?: number }, truncated = false) => {
    const context = new ProxyContext('r', {} as never, {} as never, { slug: 'openai', version: 'v1', providerPath: '', query: '' }, { slug: 'openai' } as never, 0);
    context.outcome.status = status;
    context.outcome.truncated = truncated;
    if (usage) context.outcome.usage = usage as never;
    return context;
  };

  it('charges a 2xx its reported usage, at least the reservation when the usage is partial or cut, and nothing otherwise', () => {
    expect(tokensToCharge(finished(200, { inputTokens: 30, outputTokens: 12 }), 100)).to.equal(42);
    expect(tokensToCharge(finished(299, { inputTokens: 300, outputTokens: 12 }), 100)).to.equal(312);
    expect(tokensToCharge(finished(200, { inputTokens: 30 }), 100)).to.equal(100);
    expect(tokensToCharge(finished(200, { inputTokens: 90, outputTokens: 30 }, true), 100)).to.equal(120);
    expect(tokensToCharge(finished(200, { outputTokens: 130 }), 100)).to.equal(130);
    expect(tokensToCharge(finished(200), 100)).to.equal(100);
    // Not a 2xx (refused after admission, the provider unreachable or refusing): the reservation is given back.
    for (const status of [0, 199, 300, 429, 500]) expect(tokensToCharge(finished(status, { inputTokens: 30, outputTokens: 12 }), 100), String(status)).to.equal(0);
  });
});

describe('token reservations: reserving a request\'s estimate and settling it, from its context', () => {
  const manifest = {
    slug: 'openai',
    requestFields: [{ methods: ['POST'], path: 'v1/chat/completions', outputLimit: ['max_tokens'], defaultOutputTokens: 16, stream: 'stream', streamUsageRequest: { stream_options: { include_usage: true } } }],
  } as unknown as ProviderManifest;

  /** A store with reserve and settle (all or nothing, as the real ones), recording what it was asked. */
  function budgetStore(options: { asPromise?: boolean; totals?: Record<string, number> } = {}) {
    const totals = new Map<string, number>(Object.entries(options.totals ?? {}));
    const reserved: number[] = [];
    const settled: Array<[readonly string[], number]> = [];
    const answer = <T>(value: T): T | Promise<T> => (options.asPromise ? Promise.resolve(value) : value);
    const store = {
      spend: async (key: string, amount: number) => {
        totals.set(key, (totals.get(key) ?? 0) + amount);
        return totals.get(key)!;
      },
      spent: (keys: readonly string[]) => answer(keys.map((key) => totals.get(key) ?? 0)),
      reserve: (keys: readonly string[], limits: readonly number[], amount: number) => {
        reserved.push(amount);
        const before = keys.map((key) => totals.get(key) ?? 0);
        if (before.some((total, index) => total + amount > limits[index]!)) return answer({ admitted: false, totals: before });
        return answer({ admitted: true, totals: keys.map((key) => (totals.set(key, (totals.get(key) ?? 0) + amount), totals.get(key)!)) });
      },
      settle: (keys: readonly string[], delta: number) => {
        settled.push([keys, delta]);
        for (const key of keys) totals.set(key, Math.max(0, (totals.get(key) ?? 0) + delta));
      },
    } as unknown as RateLimitStore;
    return { store, totals, reserved, settled };
  }

  /**
   * A request as the gateway sees it: `request` stands for the IncomingMessage, a stream when its body is to be read;
   * a plain object of headers when it must not be (reading it would throw).
   */
  function requestContext(values: Partial<Record<keyof AppSettings, unknown>>, providerPath: string, request: object): ProxyContext {
    const incoming = request instanceof PassThrough ? request : { method: 'POST', ...request };
    const context = new ProxyContext('r', incoming as never, {} as never, { slug: 'openai', version: 'v1', providerPath, query: '' }, manifest, 0);
    context.set('app', { id: 'app_1', settings: settings(values) } as never);
    context.set('device', { deviceId: 'dev' } as never);
    return context;
  }
  const thrown = (run: () => unknown): GatewayError => {
    try {
      run();
    } catch (error) {
      return error as GatewayError;
    }
    throw new Error('not refused');
  };

  it('counts the declared length of an unread JSON or text body as input, and nothing for media or a length it cannot use', () => {
    // [Content-Type, Content-Length, Transfer-Encoding, tokens reserved]: a route without body fields, so nothing is read.
    const cases: Array<[string | undefined, string | undefined, string | undefined, number]> = [
      ['application/json', '4000', undefined, 1000],
      ['application/json; charset=utf-8', '4001', undefined, 1001],
      ['Application/JSON ; Charset=UTF-8', '400', undefined, 100],
      ['application/vnd.api+json', '4000', undefined, 1000],
      ['application/merge-patch+json; charset=utf-8', '40', undefined, 10],
      ['text/plain', '4000', undefined, 1000],
      ['text/csv;charset=utf-8', '4003', undefined, 1001],
      // Media (providers bill them in their own units), other structured types, and none at all: 1 token.
      ['audio/mpeg', '4000', undefined, 1],
      ['image/png', '4000', undefined, 1],
      ['video/mp4', '4000', undefined, 1],
      ['multipart/form-data; boundary=x', '4000', undefined, 1],
      ['application/octet-stream', '4000', undefined, 1],
      ['application/x-ndjson', '4000', undefined, 1],
      ['application/json+zip', '4000', undefined, 1],
      ['json/text', '4000', undefined, 1],
      [undefined, '4000', undefined, 1],
      // A length of 0, none (a chunked body), or not a finite number: 1 token, never NaN or Infinity.
      ['application/json', '0', undefined, 1],
      ['application/json', undefined, 'chunked', 1],
      ['text/plain', undefined, 'chunked', 1],
      ['application/json', 'abc', undefined, 1],
      ['application/json', 'Infinity', undefined, 1],
      ['application/json', '1e400', undefined, 1],
      ['application/json', '-4000', undefined, 1],
    ];
    for (const [type, length, transfer, tokens] of cases) {
      const { store, reserved } = budgetStore();
      const headers: Record<string, string> = {};
      if (type !== undefined) headers['content-type'] = type;
      if (length !== undefined) headers['content-length'] = length;
      if (transfer !== undefined) headers['transfer-encoding'] = transfer;
      // No stream behind the request: reading it would throw.
      const context = requestContext({ deviceDailyTokens: 1_000_000 }, 'v1/audio/transcriptions', { headers });
      const label = `${type} ${length} ${transfer}`;
      expect(reserveTokenBudgets(store, context, NOW, 1_000), label).to.equal(undefined);
      expect(reserved, label).to.deep.equal([tokens]);
      expect(reservationOf(context), label).to.include({ tokens, startedMs: NOW, addedStreamUsage: false, settled: false });
      expect(context.requestBody, label).to.equal(undefined);
    }
  });

  it('reserves nothing and reads nothing when no budget applies', () => {
    const { store, reserved } = budgetStore();
    const context = requestContext({}, 'v1/chat/completions', { headers: { 'content-type': 'application/json', 'content-length': '10' } });
    expect(reserveTokenBudgets(store, context, NOW, 1_000)).to.equal(undefined);
    expect(reserved).to.deep.equal([]);
    expect(reservationOf(context)).to.equal(undefined);
  });

  it('reads the body of a route with body fields: its output limit counts, and a streaming body is sent with the usage request', async () => {
    const { store, reserved } = budgetStore({ asPromise: true });
    const client = '{"stream":true,"stream_options":null,"max_tokens":50}';
    const request = Object.assign(new PassThrough(), { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(client.length) } });
    const context = requestContext({ deviceDailyTokens: 1_000 }, 'v1/chat/completions', request);
    const pending = reserveTokenBudgets(store, context, NOW, 1_000);
    request.end(client);
    await pending;
    expect(reserved).to.deep.equal([Math.ceil(client.length / 4) + 50]);
    expect(context.requestBody!.toString()).to.equal('{"stream":true,"stream_options":{"include_usage":true},"max_tokens":50}');
    expect(reservationOf(context)).to.include({ tokens: Math.ceil(client.length / 4) + 50, addedStreamUsage: true });
  });

  it('answers a body cut short as the client gone, and a body over the limit as it is', async () => {
    const { store, reserved } = budgetStore();
    const cut = Object.assign(new PassThrough(), { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } });
    const pending = reserveTokenBudgets(store, requestContext({ deviceDailyTokens: 1_000 }, 'v1/chat/completions', cut), NOW, 1_000);
    cut.write('{"max_tokens":');
    cut.destroy(new Error('aborted'));
    const gone = await rejection(pending);
    expect(gone).to.be.an.instanceOf(GatewayError);
    expect(gone).to.deep.include({ type: 'invalidRequest', status: 400, reason: 'client_aborted', message: 'The client closed the connection before the request was complete.' });
    const large = Object.assign(new PassThrough(), { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '1001' } });
    const over = await rejection(reserveTokenBudgets(store, requestContext({ deviceDailyTokens: 1_000 }, 'v1/chat/completions', large), NOW, 1_000));
    expect(over).to.deep.include({ status: 413, reason: 'body_too_large' });
    expect(reserved).to.deep.equal([]);
  });

  it('refuses a reservation that does not fit, naming the full budgets, when they start again, or that it can never fit', async () => {
    const budgets = budgetsFor(settings({ deviceDailyTokens: 100, appMinuteTokens: 50 }), 'app_1', 'dev', 'openai', NOW);
    const [day, minute] = budgets;
    const both = { deviceDailyTokens: 100, appMinuteTokens: 50 };
    const bodyOf = (bytes: number) => ({ headers: { 'content-type': 'application/json', 'content-length': String(bytes) } });
    // 20 tokens, the day budget holding 90: the day is full.
    const byDay = thrown(() => reserveTokenBudgets(budgetStore({ totals: { [day!.key]: 90 } }).store, requestContext(both, 'v1/x', bodyOf(80)), NOW, 1_000));
    expect(byDay).to.be.an.instanceOf(GatewayError);
    expect(byDay).to.deep.include({ type: 'rateLimited', status: 429, reason: 'token_budget', retryAfterSeconds: secondsToUtcMidnight(NOW) });
    expect(byDay.message).to.equal(`Token budget used up (device per day): this request's reservation of 20 tokens does not fit; it starts again at 00:00 UTC, in ${secondsToUtcMidnight(NOW)} s.`);
    // The minute full, from a store answering with a promise.
    const byMinute = await rejection(reserveTokenBudgets(budgetStore({ asPromise: true, totals: { [minute!.key]: 31 } }).store, requestContext(both, 'v1/x', bodyOf(80)), NOW, 1_000));
    expect(byMinute).to.deep.include({ reason: 'token_budget', retryAfterSeconds: 30 });
    expect(byMinute.message).to.equal("Token budget used up (app per minute): this request's reservation of 20 tokens does not fit; it starts again at the next UTC minute, in 30 s.");
    // Larger than both budgets: it never fits.
    const tooLarge = thrown(() => reserveTokenBudgets(budgetStore().store, requestContext(both, 'v1/x', bodyOf(404)), NOW, 1_000));
    expect(tooLarge.message).to.equal('This request reserves 101 tokens (its input and its output limit), more than the token budget allows (device per day and app per minute); ask for fewer output tokens.');
    expect(tooLarge.retryAfterSeconds).to.equal(secondsToUtcMidnight(NOW));
    // A store that refuses although no total it reports is full (it changed in between): every budget is named.
    const racing = { ...budgetStore().store, reserve: () => ({ admitted: false, totals: [0, 0] }) } as RateLimitStore;
    const raced = thrown(() => reserveTokenBudgets(racing, requestContext(both, 'v1/x', bodyOf(80)), NOW, 1_000));
    expect(raced.message).to.equal(`Token budget used up (device per day and app per minute): this request's reservation of 20 tokens does not fit; it starts again at 00:00 UTC, in ${secondsToUtcMidnight(NOW)} s.`);
  });

  /** A request admitted with a reservation of 100 tokens (a 400-byte JSON body on a route without body fields). */
  function admitted(values: Partial<Record<keyof AppSettings, unknown>>, budget = budgetStore()) {
    const context = requestContext(values, 'v1/x', { headers: { 'content-type': 'application/json', 'content-length': '400' } });
    reserveTokenBudgets(budget.store, context, NOW, 1_000);
    expect(reservationOf(context)).to.include({ tokens: 100 });
    return { context, ...budget };
  }
  const marks = () => {
    const told: Array<[string, number, number]> = [];
    return { told, listener: (budget: Budget, percent: 80 | 100, total: number) => told.push([budget.policy, percent, total]) };
  };

  it('tells the marks a request charged exactly its reservation crossed, with nothing to settle in the store', async () => {
    // 100 tokens reserved and reported (60 + 40): the counters already hold the charge. 100 is 80 % of 125 and 100 % of 100.
    const { context, store, settled } = admitted({ deviceDailyTokens: 125, appDailyTokens: 100, appMinuteTokens: 1_000 });
    context.outcome.status = 200;
    context.outcome.usage = { inputTokens: 60, outputTokens: 40 } as never;
    const { told, listener } = marks();
    const pending = settleTokenBudgets(store, context, NOW + 1_000, listener);
    expect(pending).to.be.an.instanceOf(Promise);
    await pending;
    expect(told).to.deep.equal([['device', 80, 100], ['app', 100, 100]]);
    expect(settled).to.deep.equal([]);
    // Settled once: a second call does nothing.
    expect(settleTokenBudgets(store, context, NOW + 2_000, listener)).to.equal(undefined);
    expect(told).to.have.length(2);
  });

  it('tells no mark when the exact charge crosses none, and without a listener answers no promise for an exact charge', async () => {
    const quiet = admitted({ deviceDailyTokens: 1_000 });
    quiet.context.outcome.status = 200;
    quiet.context.outcome.usage = { inputTokens: 100, outputTokens: 0 } as never;
    const { told, listener } = marks();
    await settleTokenBudgets(quiet.store, quiet.context, NOW, listener);
    expect(told).to.deep.equal([]);
    // The same exact charge past 80 %, no listener: nothing to settle, nothing to tell, so no promise at all.
    const unheard = admitted({ deviceDailyTokens: 110 });
    unheard.context.outcome.status = 200;
    unheard.context.outcome.usage = { inputTokens: 50, outputTokens: 50 } as never;
    expect(settleTokenBudgets(unheard.store, unheard.context, NOW)).to.equal(undefined);
    expect(unheard.settled).to.deep.equal([]);
    expect(reservationOf(unheard.context)).to.include({ settled: true });
  });

  it('settles the difference to the reported usage and tells the marks the charge crossed', async () => {
    const { context, store, settled, totals } = admitted({ deviceDailyTokens: 200 });
    context.outcome.status = 200;
    context.outcome.usage = { inputTokens: 150, outputTokens: 20 } as never;
    const { told, listener } = marks();
    await settleTokenBudgets(store, context, NOW, listener);
    const [day] = budgetsFor(settings({ deviceDailyTokens: 200 }), 'app_1', 'dev', 'openai', NOW);
    expect(settled).to.deep.equal([[[day!.key], 70]]);
    expect(totals.get(day!.key)).to.equal(170);
    expect(told).to.deep.equal([['device', 80, 170]]);
  });

  it('gives the reservation of a request that was not a 2xx back and tells no mark, even with the budget past 80 % already', async () => {
    const [day] = budgetsFor(settings({ deviceDailyTokens: 500 }), 'app_1', 'dev', 'openai', NOW);
    // Other requests hold 400 of 500 (80 %); this one's 100 fits, then the provider refuses it.
    const { context, store, settled, totals } = admitted({ deviceDailyTokens: 500 }, budgetStore({ totals: { [day!.key]: 400 } }));
    expect(totals.get(day!.key)).to.equal(500);
    context.outcome.status = 502;
    context.outcome.usage = { inputTokens: 60, outputTokens: 40 } as never;
    const { told, listener } = marks();
    await settleTokenBudgets(store, context, NOW, listener);
    expect(settled).to.deep.equal([[[day!.key], -100]]);
    expect(totals.get(day!.key)).to.equal(400);
    expect(told).to.deep.equal([]);
  });

  it('settles nothing in windows that have ended, and answers a store that throws as a rejected promise', async () => {
    const minuteOnly = admitted({ deviceMinuteTokens: 1_000 });
    minuteOnly.context.outcome.status = 200;
    minuteOnly.context.outcome.usage = { inputTokens: 500, outputTokens: 500 } as never;
    // The minute counter expired (a minute past its minute): nothing left to settle or tell.
    const { told, listener } = marks();
    expect(settleTokenBudgets(minuteOnly.store, minuteOnly.context, NOW + 120_000, listener)).to.equal(undefined);
    expect(minuteOnly.settled).to.deep.equal([]);
    expect(told).to.deep.equal([]);
    const failing = admitted({ deviceDailyTokens: 1_000 });
    failing.context.outcome.status = 200;
    failing.context.outcome.usage = { inputTokens: 1, outputTokens: 1 } as never;
    const broken = { ...failing.store, settle: () => { throw new Error('store down'); } } as unknown as RateLimitStore;
    const pending = settleTokenBudgets(broken, failing.context, NOW);
    expect((await rejection(pending)).message).to.equal('store down');
  });
});

describe('token reservations: a store without reserve and settle (read, then add)', () => {
  function plainStore(): RateLimitStore & { totals: Map<string, number> } {
    const totals = new Map<string, number>();
    return {
      totals,
      consume: () => [],
      acquireSlot: () => true,
      renewSlot: () => undefined,
      releaseSlot: () => undefined,
      spend: async (key: string, amount: number) => {
        totals.set(key, (totals.get(key) ?? 0) + amount);
        return totals.get(key)!;
      },
      spent: async (keys: readonly string[]) => keys.map((key) => totals.get(key) ?? 0),
    } as unknown as RateLimitStore & { totals: Map<string, number> };
  }

  it('admits up to the limit on every key, refuses past it on any, and settles by spending the delta', async () => {
    const store = plainStore();
    expect(await reserveIn(store, ['a', 'b'], [10, 20], 10, [1, 1])).to.deep.equal({ admitted: true, totals: [10, 10] });
    expect(await reserveIn(store, ['a', 'b'], [10, 20], 1, [1, 1])).to.deep.equal({ admitted: false, totals: [10, 10] });
    expect(await reserveIn(store, ['b'], [20], 10, [1])).to.deep.equal({ admitted: true, totals: [20] });
    await settleIn(store, ['a', 'b'], -4, [1, 1]);
    expect([...store.totals]).to.deep.equal([['a', 6], ['b', 16]]);
  });
});
