/**
 * The stage runner on its own (core/pipeline/pipeline.ts): the fixed order and its start-up check, synchronous stages
 * without a promise, a stage that answers by promise holding the rest until it settles, and the gateway's own headers
 * (`Tollgate-Request-Id`, `RateLimit`, `RateLimit-Policy`) set before a forward stage that does not write them into
 * its own head.
 */
import 'reflect-metadata';
import { expect } from 'chai';
import { STAGE_NAMES, ProxyContext, TollgateError, type PipelineStage, type StageName } from '../../core/contract';
import { Pipeline, setGatewayHeaders } from '../../core/pipeline/pipeline';

/** A response that records what the stages and the runner set on it. */
class RecordingResponse {
  headersSent = false;
  readonly headers: Record<string, string> = {};
  setHeader(name: string, value: string): void {
    this.headers[name.toLowerCase()] = value;
  }
}

interface Recorder {
  readonly ran: string[];
  /** The response headers each stage saw when it started. */
  readonly seen: Record<string, Record<string, string>>;
}

function stage(name: StageName, recorder: Recorder, run?: (context: ProxyContext) => void | Promise<void>, extra: Partial<PipelineStage> = {}): PipelineStage {
  return {
    name,
    ...extra,
    run(context: ProxyContext): void | Promise<void> {
      recorder.ran.push(name);
      recorder.seen[name] = { ...(context.response as unknown as RecordingResponse).headers };
      return run?.(context);
    },
  };
}

function contextWith(response: RecordingResponse): ProxyContext {
  return new ProxyContext('req-7', {} as never, response as never, { slug: 'openai', version: 'v1', providerPath: 'v1/models', query: '' }, { slug: 'openai' } as never, 0);
}

const OUTCOMES = [{ policy: 'device', limit: 60, windowSeconds: 60, remaining: 59, resetSeconds: 1 }];

function pipelineOf(recorder: Recorder, overrides: Partial<Record<StageName, PipelineStage>> = {}): Pipeline {
  const stages = STAGE_NAMES.map((name) => overrides[name] ?? stage(name, recorder, name === 'limitRate' ? (context) => context.set('limit', { outcomes: OUTCOMES }) : undefined));
  return new Pipeline(...(stages as [PipelineStage, PipelineStage, PipelineStage, PipelineStage, PipelineStage, PipelineStage, PipelineStage]));
}

describe('Pipeline: the stage runner', () => {
  it('runs the seven stages in their order and, all synchronous, returns no promise', () => {
    const recorder: Recorder = { ran: [], seen: {} };
    const result = pipelineOf(recorder).run(contextWith(new RecordingResponse()));
    expect(result).to.equal(undefined);
    expect(recorder.ran).to.deep.equal([...STAGE_NAMES]);
  });

  it('refuses at start-up a stage registered under another stage\'s name, naming both', () => {
    const recorder: Recorder = { ran: [], seen: {} };
    for (const [index, name] of STAGE_NAMES.entries()) {
      const wrong = STAGE_NAMES[(index + 1) % STAGE_NAMES.length]!;
      let thrown: unknown;
      try {
        pipelineOf(recorder, { [name]: stage(wrong, recorder) });
      } catch (error) {
        thrown = error;
      }
      expect(thrown, name).to.be.instanceOf(TollgateError);
      expect((thrown as TollgateError).code).to.equal('TG_ERR_PLUGIN_INVALID');
      expect((thrown as Error).message).to.include(`"${name}"`).and.include(`"${wrong}"`);
    }
    expect(recorder.ran).to.deep.equal([]);
  });

  it('a stage that answers by promise holds the later stages until it settles; the last stage\'s promise is the pipeline\'s', async () => {
    const recorder: Recorder = { ran: [], seen: {} };
    let release!: () => void;
    let finishForward!: () => void;
    const pipeline = pipelineOf(recorder, {
      verifyDevice: stage('verifyDevice', recorder, () => new Promise<void>((resolve) => { release = resolve; })),
      forward: stage('forward', recorder, () => new Promise<void>((resolve) => { finishForward = resolve; })),
    });
    const pending = pipeline.run(contextWith(new RecordingResponse()));
    expect(pending).to.be.instanceOf(Promise);
    let settled = false;
    void (pending as Promise<void>).then(() => { settled = true; });
    expect(recorder.ran).to.deep.equal(['verifyToken', 'verifyDevice']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorder.ran, 'nothing runs before the promise settles').to.deep.equal(['verifyToken', 'verifyDevice']);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorder.ran).to.deep.equal([...STAGE_NAMES]);
    expect(settled, 'the pipeline waits for the forward stage').to.equal(false);
    finishForward();
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).to.equal(true);
  });

  it('a refusal by promise stops the run: no later stage runs and the pipeline\'s promise rejects with it', async () => {
    const recorder: Recorder = { ran: [], seen: {} };
    const refusal = new Error('refused');
    const pipeline = pipelineOf(recorder, { limitRate: stage('limitRate', recorder, () => Promise.reject(refusal)) });
    let caught: unknown;
    await (pipeline.run(contextWith(new RecordingResponse())) as Promise<void>).catch((error: unknown) => { caught = error; });
    expect(caught).to.equal(refusal);
    expect(recorder.ran).to.deep.equal(['verifyToken', 'verifyDevice', 'verifyUser', 'limitRate']);
  });

  it('a stage returning a value that is not a promise (no then) does not stop the run', () => {
    const recorder: Recorder = { ran: [], seen: {} };
    const pipeline = pipelineOf(recorder, { verifyUser: stage('verifyUser', recorder, () => ({ then: 1 }) as never) });
    expect(pipeline.run(contextWith(new RecordingResponse()))).to.equal(undefined);
    expect(recorder.ran).to.deep.equal([...STAGE_NAMES]);
  });

  it('sets the request id and the rate-limit headers just before a forward stage that does not write them itself', () => {
    const recorder: Recorder = { ran: [], seen: {} };
    const response = new RecordingResponse();
    pipelineOf(recorder).run(contextWith(response));
    expect(recorder.seen.injectKey, 'not before the forward stage').to.deep.equal({});
    expect(recorder.seen.forward).to.deep.equal({
      'tollgate-request-id': 'req-7',
      'ratelimit-policy': '"device";q=60;w=60',
      ratelimit: '"device";r=59;t=1',
    });
  });

  it('leaves the headers to a forward stage that writes them into its own head', () => {
    const recorder: Recorder = { ran: [], seen: {} };
    const response = new RecordingResponse();
    pipelineOf(recorder, { forward: stage('forward', recorder, undefined, { writesGatewayHeaders: true }) }).run(contextWith(response));
    expect(recorder.seen.forward).to.deep.equal({});
    expect(response.headers).to.deep.equal({});
  });

  it('setGatewayHeaders: nothing on a response whose head is already sent; no RateLimit headers before the limits ran', () => {
    const sent = new RecordingResponse();
    sent.headersSent = true;
    setGatewayHeaders(contextWith(sent));
    expect(sent.headers).to.deep.equal({});

    const early = new RecordingResponse();
    setGatewayHeaders(contextWith(early));
    expect(early.headers).to.deep.equal({ 'tollgate-request-id': 'req-7' });
  });
});
