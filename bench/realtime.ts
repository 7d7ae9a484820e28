/**
 * `npm run bench:realtime`: realtime sessions through a real `tollgate serve` beside a bare `ws` relay of our own
 * (bench/bare-ws-relay.ts), both in front of the same echoing provider socket (bench/realtime-upstream.ts), in one run:
 *
 * 1. CPU per relayed message, of the relay process only (/proc, bench/cpu.ts): small JSON events (a Realtime
 *    `input_audio_buffer.append`-sized text event is larger; these are the control events) and 20 ms audio frames
 *    (960 bytes: 24 kHz mono PCM16), BENCH_FRAMES each way per round, BENCH_WINDOW in flight, alternating the two relays
 *    over BENCH_ROUNDS rounds; the median per relay. Target: the gateway within 1.2x the bare relay.
 * 2. Latency added per message: one message at a time (BENCH_PINGS), round trips through each relay less the round trip
 *    straight to the provider, p50 and p99.
 * 3. Open idle sessions: BENCH_SESSIONS (default 5,000) sessions opened through each relay in batches, then the relay's
 *    resident memory per session (RSS after, less RSS before, over the sessions), after checking that every session
 *    still answers. Target: 5,000 sessions under 500 MB. Each session holds two descriptors in the relay; the npm script
 *    raises the soft descriptor limit up to the hard limit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { WebSocket } from 'ws';
import { gatewayNodeFlags, startBenchTargets } from './harness';
import { median, processCpuMicros, processRssBytes } from './cpu';

const FRAMES = Number(process.env.BENCH_FRAMES ?? 20_000);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PINGS = Number(process.env.BENCH_PINGS ?? 2000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 5000);
const BATCH = Number(process.env.BENCH_OPEN_BATCH ?? 100);

const percentile = (values: readonly number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/** The relays run with the gateway's node flags (as `npm start`), so that they differ in their code only. */
function startChild(children: ChildProcess[], script: string, args: string[]): Promise<{ port: number; pid: number }> {
  const child = spawn(process.execPath, [...gatewayNodeFlags(), script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (chunk: Buffer) => resolve({ port: Number(chunk.toString().trim()), pid: child.pid! }));
    child.once('exit', (code) => reject(new Error(`${path.basename(script)} exited with ${code}`)));
  });
}

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
  });
}

/** Sends `count` messages with at most `window` unanswered, resolving when every echo came back. */
function pump(socket: WebSocket, message: Buffer, binary: boolean, count: number, window: number): Promise<void> {
  return new Promise((resolve) => {
    let sent = 0;
    let received = 0;
    const onMessage = () => {
      received += 1;
      if (received === count) {
        socket.off('message', onMessage);
        resolve();
      } else if (sent < count) {
        sent += 1;
        socket.send(message, { binary });
      }
    };
    socket.on('message', onMessage);
    for (; sent < Math.min(window, count); sent += 1) socket.send(message, { binary });
  });
}

async function roundTrips(socket: WebSocket, count: number): Promise<number[]> {
  const times: number[] = [];
  const message = Buffer.from(JSON.stringify({ type: 'input_audio_buffer.commit', event_id: 'event_bench' }));
  for (let index = 0; index < count; index += 1) {
    const started = process.hrtime.bigint();
    await new Promise<void>((resolve) => {
      socket.once('message', () => resolve());
      socket.send(message, { binary: false });
    });
    times.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  return times;
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  const upstream = await startChild(children, path.join(__dirname, 'realtime-upstream.js'), []);
  const bare = await startChild(children, path.join(__dirname, 'bare-ws-relay.js'), [String(upstream.port)]);
  const bench = await startBenchTargets({ extraEnv: { TOLLGATE_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${upstream.port}`, TOLLGATE_LOG_LEVEL: process.env.TOLLGATE_LOG_LEVEL ?? 'warn' } });
  const headers = { ...bench.tollgateHeaders };
  const path_ = '/v1/realtime?model=bench-model';
  const targets = {
    bare: { url: `ws://127.0.0.1:${bare.port}${path_}`, headers: {}, pid: bare.pid },
    tollgate: { url: `${bench.tollgateUrl.replace(/^http/, 'ws')}/v1/proxy/openai${path_}`, headers, pid: bench.tollgatePid },
  };
  try {
    const event = Buffer.from(JSON.stringify({ type: 'response.output_text.delta', event_id: 'event_4821', response_id: 'resp_001', item_id: 'item_001', output_index: 0, content_index: 0, delta: 'Hello there, ' }));
    const audio = Buffer.alloc(960, 7);
    console.log(`realtime relay: ${FRAMES} messages each way per round, ${WINDOW} in flight, ${ROUNDS} rounds; CPU of the relay process only`);
    for (const [kind, message, binary] of [['small JSON events', event, false], ['20 ms audio frames', audio, true]] as const) {
      const perFrame: Record<string, number[]> = { bare: [], tollgate: [] };
      const sockets = { bare: await open(targets.bare.url), tollgate: await open(targets.tollgate.url, targets.tollgate.headers) };
      for (const name of ['bare', 'tollgate'] as const) await pump(sockets[name], message, binary, 2000, WINDOW);
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const name of ['bare', 'tollgate'] as const) {
          const before = processCpuMicros(targets[name].pid);
          await pump(sockets[name], message, binary, FRAMES, WINDOW);
          perFrame[name]!.push((processCpuMicros(targets[name].pid) - before) / (2 * FRAMES));
        }
      }
      for (const socket of Object.values(sockets)) socket.close();
      const bareMedian = median(perFrame.bare!);
      const tollgateMedian = median(perFrame.tollgate!);
      console.log(`  ${kind} (${message.length} B): bare ${bareMedian.toFixed(2)} µs/message, tollgate ${tollgateMedian.toFixed(2)} µs/message, ratio ${(tollgateMedian / bareMedian).toFixed(2)} (target <= 1.2)`);
    }

    const direct = await open(`ws://127.0.0.1:${upstream.port}/`);
    const latency: Record<string, number[]> = { direct: await roundTrips(direct, PINGS) };
    direct.close();
    for (const name of ['bare', 'tollgate'] as const) {
      const socket = await open(targets[name].url, targets[name].headers);
      await roundTrips(socket, 200);
      latency[name] = await roundTrips(socket, PINGS);
      socket.close();
    }
    const directP50 = percentile(latency.direct!, 50);
    const directP99 = percentile(latency.direct!, 99);
    console.log(`latency added per message (round trip through the relay less the round trip to the provider, ${PINGS} messages one at a time):`);
    for (const name of ['bare', 'tollgate'] as const) {
      console.log(`  ${name}: p50 ${(percentile(latency[name]!, 50) - directP50).toFixed(0)} µs, p99 ${(percentile(latency[name]!, 99) - directP99).toFixed(0)} µs`);
    }

    console.log(`open idle sessions: ${SESSIONS} per relay, opened ${BATCH} at a time`);
    for (const name of ['bare', 'tollgate'] as const) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const rssBefore = processRssBytes(targets[name].pid);
      const sockets: WebSocket[] = [];
      const started = Date.now();
      let failures = 0;
      for (let opened = 0; opened < SESSIONS; opened += BATCH) {
        const batch = await Promise.allSettled(Array.from({ length: Math.min(BATCH, SESSIONS - opened) }, () => open(targets[name].url, targets[name].headers)));
        for (const result of batch) {
          if (result.status === 'fulfilled') sockets.push(result.value);
          else failures += 1;
        }
      }
      const openedIn = Date.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // Every session still answers.
      const answered = await Promise.all(sockets.map((socket) => new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 30_000);
        socket.once('message', () => {
          clearTimeout(timer);
          resolve(true);
        });
        socket.send('{"type":"ping"}');
      })));
      const rssAfter = processRssBytes(targets[name].pid);
      const perSession = (rssAfter - rssBefore) / Math.max(1, sockets.length);
      console.log(`  ${name}: ${sockets.length} open (${failures} refused or failed) in ${(openedIn / 1000).toFixed(1)} s, ${answered.filter(Boolean).length} answering; RSS ${(rssBefore / 1048576).toFixed(0)} -> ${(rssAfter / 1048576).toFixed(0)} MB, ${(perSession / 1024).toFixed(1)} KB per session${name === 'tollgate' ? ` (target: ${SESSIONS} sessions under 500 MB)` : ''}`);
      for (const socket of sockets) socket.terminate();
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  } finally {
    bench.stop();
    for (const child of children) child.kill('SIGTERM');
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
