/**
 * Token budgets on their own, without a gateway: which budgets apply and their counter keys, the ends of their UTC
 * windows, when their counters expire, the 80 % and 100 % marks, the after-the-fact charge, the reservation estimate
 * from a request body, and the read-then-add fallback for a store without `reserve`/`settle`. The same code behind a
 * gateway: token-budgets.test.ts and token-budget-reservations.test.ts.
 */
import { expect } from 'chai';
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
import { estimateTokens, requestFieldsFor, reserveIn, settleIn, tokensToCharge } from '../../core/pipeline/token-reservation';

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
