import { inject, injectable } from 'tsyringe';
import { STAGE_NAMES, STAGE_TOKENS, TollgateError, type PipelineStage, type ProxyContext } from '../contract';
import { writeRateLimitHeaders } from './limit-rate';

const FORWARD = STAGE_NAMES.indexOf('forward');

/**
 * The gateway's own headers (`Tollgate-Request-Id`, `RateLimit`, `RateLimit-Policy`) on a response whose head is not
 * written yet: before a forward stage that does not put them into its head itself, and on a refusal after the limits.
 */
export function setGatewayHeaders(context: ProxyContext): void {
  const response = context.response;
  if (response.headersSent) return;
  response.setHeader('Tollgate-Request-Id', context.requestId);
  const limit = context.peek('limit');
  if (limit) writeRateLimitHeaders(response, limit.outcomes);
}

/**
 * Runs the stages in their fixed order. A stage that answers synchronously costs no microtask; the first stage that
 * returns a promise makes the rest run after it settles.
 */
@injectable()
export class Pipeline {
  readonly stages: readonly PipelineStage[];
  /** The forward stage writes the gateway's headers into its own head (else they are set before it runs). */
  private readonly forwardWritesHeaders: boolean;

  constructor(
    @inject(STAGE_TOKENS.verifyToken) verifyToken: PipelineStage,
    @inject(STAGE_TOKENS.verifyDevice) verifyDevice: PipelineStage,
    @inject(STAGE_TOKENS.verifyUser) verifyUser: PipelineStage,
    @inject(STAGE_TOKENS.limitRate) limitRate: PipelineStage,
    @inject(STAGE_TOKENS.resolveSecret) resolveSecret: PipelineStage,
    @inject(STAGE_TOKENS.injectKey) injectKey: PipelineStage,
    @inject(STAGE_TOKENS.forward) forward: PipelineStage,
  ) {
    this.stages = [verifyToken, verifyDevice, verifyUser, limitRate, resolveSecret, injectKey, forward];
    this.forwardWritesHeaders = forward.writesGatewayHeaders === true;
    this.stages.forEach((stage, index) => {
      if (stage.name !== STAGE_NAMES[index]) {
        throw new TollgateError('TG_ERR_PLUGIN_INVALID', `the stage registered for "${STAGE_NAMES[index]}" names itself "${stage.name}"`);
      }
    });
  }

  /** Runs the stages from `from`; returns a promise only if some stage did. */
  run(context: ProxyContext, from = 0): void | Promise<void> {
    for (let index = from; index < this.stages.length; index += 1) {
      if (index === FORWARD && !this.forwardWritesHeaders) setGatewayHeaders(context);
      const pending = this.stages[index]!.run(context);
      if (pending && typeof (pending as Promise<void>).then === 'function') {
        // The last stage's promise is the pipeline's (no further link in the chain).
        if (index === this.stages.length - 1) return pending as Promise<void>;
        return (pending as Promise<void>).then(() => this.run(context, index + 1));
      }
    }
  }
}
