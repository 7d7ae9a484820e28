/**
 * The app's model policy (`modelPolicy`) inside realtime sessions (protocol.md, "Realtime sessions"; operations.md
 * `modelPolicy`): where a realtime route names the model is declared in the provider's manifest
 * ({@link RealtimeModelFields}); core never knows the names.
 *
 * - The upgrade URL's model parameter is checked by the model-policy step of `verifyUser`, like an HTTP body, before any
 *   connection to the provider (`applyPolicyToQuery`, core/pipeline/model-policy.ts).
 * - Client frames are checked by a {@link ClientFramePolicy}, made only when a policy applies to the provider for this
 *   app (or user profile) and the route declares frames: without one, a frame costs nothing more than the relay.
 *
 * A client frame is read only when it may be one of the declared frames: it contains one of their markers (the JSON
 * text of the `equals` value, or of the member's name) or a backslash. Without a backslash a JSON text has no escape,
 * so every string in it (member names and values) appears literally, and a frame without a marker cannot be a declared
 * one: audio appends and deltas pass with two substring searches. A frame that is read is forwarded as re-serialized
 * from what was read (`JSON.stringify`: member order kept, whitespace not), so the provider reads what was checked
 * (a duplicated member or an escape cannot show it something else); one that is not a JSON object closes the session
 * (4400 `frame_not_json`), since the provider's parser might read what `JSON.parse` refused.
 */
import { GatewayError, type ModelPolicy, type RealtimeFrameFields, type RealtimeModelFields } from '../contract';
import { clampOutputLimit, policyModel, readMember, writeMember } from '../pipeline/model-policy';

const BACKSLASH = 0x5c;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function matches(frame: Record<string, unknown>, declared: RealtimeFrameFields): boolean {
  return declared.frame.every((condition) => {
    const value = readMember(frame, condition.member);
    return condition.equals === undefined ? value !== undefined : value === condition.equals;
  });
}

/** Checks and rewrites one session's client frames under the model policy that applied at its upgrade. */
export class ClientFramePolicy {
  private readonly markers: readonly Buffer[];
  private readonly frames: readonly RealtimeFrameFields[];
  private readonly checksModel: boolean;

  constructor(
    private readonly policy: ModelPolicy,
    private readonly fields: RealtimeModelFields,
    private readonly slug: string,
  ) {
    this.frames = fields.frames ?? [];
    this.checksModel = policy.allow !== undefined || policy.aliases !== undefined;
    // One condition's text is enough: a frame lacking it fails that condition.
    const markers = new Set(this.frames.map(({ frame: [first] }) => JSON.stringify(first!.equals ?? first!.member.split('.').at(-1)!)));
    this.markers = [...markers].map((marker) => Buffer.from(marker, 'utf8'));
  }

  /**
   * The frame to forward: `data` itself when it cannot be a declared frame, else the frame as re-serialized after the
   * policy (an alias replaced, the output limit clamped). Throws `invalidRequest` (`model_not_allowed`,
   * `frame_not_json`) for a frame that must not reach the provider.
   */
  apply(data: Buffer, isBinary: boolean): Buffer {
    if (isBinary && this.fields.jsonInBinaryFrames !== true) return data;
    if (!data.includes(BACKSLASH) && !this.markers.some((marker) => data.includes(marker))) return data;
    let frame: unknown;
    try {
      frame = JSON.parse(data.toString('utf8'));
    } catch {
      frame = undefined;
    }
    if (!isObject(frame)) {
      throw new GatewayError('invalidRequest', 'This app has a model policy for this provider: a frame that may name a model must be a JSON object.', { reason: 'frame_not_json' });
    }
    for (const declared of this.frames) {
      if (!matches(frame, declared)) continue;
      if (declared.model !== undefined && this.checksModel) {
        const named = readMember(frame, declared.model);
        if (named !== undefined) {
          const model = policyModel(named, this.policy, this.slug, this.fields.modelPrefix);
          if (model !== named) writeMember(frame, declared.model, model);
        }
      }
      if (this.policy.maxOutputTokens !== undefined && declared.outputLimit?.length) clampOutputLimit(frame, declared.outputLimit, this.policy.maxOutputTokens);
    }
    return Buffer.from(JSON.stringify(frame), 'utf8');
  }
}
