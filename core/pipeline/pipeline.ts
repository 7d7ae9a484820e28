import { inject, injectable } from 'tsyringe';
import { STAGE_NAMES, STAGE_TOKENS, TollgateError, type PipelineStage, type ProxyContext } from '../contract';
import { writeRateLimitHeaders } from './limit-rate';

const FORWARD = STAGE_NAMES.indexOf('forward');

/** For a forward stage that does not write them itself: the gateway's own headers, set before it runs. */
function setGatewayHeaders(context: ProxyContext): void {
  const response = context.response;
  if (response.headersSent) return;
  response.setHeader('Tollgate-Request-Id', context.requestId);
  const limit = context.peek('limit');
  if (limit) writeRateLimitHeaders(response, limit.outcomes);
}

/**
 * Runs the six stages in their fixed order. A stage that answers synchronously costs no microtask; the first stage that
 * returns a promise makes the rest run after it settles.
 */
@injectable()
export class Pipeline {
  readonly stages: readonly PipelineStage[];

  constructor(
    @inject(STAGE_TOKENS.verifyToken) verifyToken: PipelineStage,
    @inject(STAGE_TOKENS.verifyDevice) verifyDevice: PipelineStage,
    @inject(STAGE_TOKENS.limitRate) limitRate: PipelineStage,
    @inject(STAGE_TOKENS.resolveSecret) resolveSecret: PipelineStage,
    @inject(STAGE_TOKENS.injectKey) injectKey: PipelineStage,
    @inject(STAGE_TOKENS.forward) forward: PipelineStage,
  ) {
    this.stages = [verifyToken, verifyDevice, limitRate, resolveSecret, injectKey, forward];
    this.stages.forEach((stage, index) => {
      if (stage.name !== STAGE_NAMES[index]) {
        throw new TollgateError('TG_ERR_PLUGIN_INVALID', `the stage registered for "${STAGE_NAMES[index]}" names itself "${stage.name}"`);
      }
    });
  }

  /** Runs the stages from `from`; returns a promise only if some stage did. */
  run(context: ProxyContext, from = 0): void | Promise<void> {
    for (let index = from; index < this.stages.length; index += 1) {
      if (index === FORWARD && this.stages[FORWARD]!.writesGatewayHeaders !== true) setGatewayHeaders(context);
      const pending = this.stages[index]!.run(context);
      if (pending && typeof (pending as Promise<void>).then === 'function') {
        // The last stage's promise is the pipeline's (no further link in the chain).
        if (index === this.stages.length - 1) return pending as Promise<void>;
        return (pending as Promise<void>).then(() => this.run(context, index + 1));
      }
    }
  }
}
