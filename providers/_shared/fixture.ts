/**
 * The shape of a provider's conformance fixture (`providers/<slug>/test/fixture.ts`): one representative call, the
 * provider's recorded response shapes, and where they come from. The conformance suite in `test/conformance/` runs every
 * registered provider through the same checks with it (style.md, lesson 5).
 */
import type { RecordedRequestView } from './fixture-types';

export type { RecordedRequestView } from './fixture-types';

export interface FixtureCall {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly version: string;
  /** Provider path after the version, without a leading slash. */
  readonly path: string;
  /** Raw query string without `?`. */
  readonly query?: string;
  readonly contentType?: string;
  readonly body?: string | Buffer;
  /** Extra request headers the SDK would send (e.g. `Accept`). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface FixtureResponse {
  readonly status: number;
  readonly contentType: string;
  /** The whole body, or the chunks of a stream in the order the provider sends them. */
  readonly chunks: readonly (string | Buffer)[];
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ProviderFixture {
  /** Where the recorded shapes come from (documentation page or public test data, with the date checked). */
  readonly provenance: string;
  /** The secret value stored for the provider (a function when it must be generated, e.g. a key pair). */
  readonly secret: string | (() => Promise<string>);
  /** A tenant base URL for providers whose host comes from the secret record. */
  readonly baseUrl?: string;
  /** The representative non-streamed call and its answer. */
  readonly call: FixtureCall;
  readonly response: FixtureResponse;
  /** A streamed call and its chunks, for providers that stream. */
  readonly stream?: { readonly call: FixtureCall; readonly response: FixtureResponse };
  /** The provider's own error for a bad request or key, passed through unchanged. */
  readonly error: FixtureResponse;
  /**
   * For computed credentials: checks that the request the upstream received carries a valid credential. Throws when it
   * does not. Receives the secret value that was stored.
   */
  readonly verifyComputedCredential?: (request: RecordedRequestView, secret: string) => void | Promise<void>;
  /** Upstream routes a computed credential needs (e.g. a fake OAuth token endpoint): path → JSON answer. */
  readonly auxiliaryRoutes?: Readonly<Record<string, unknown>>;
  /** Operator settings the provider needs in tests, given the fake upstream's URL (e.g. a token endpoint override). */
  readonly environment?: (upstreamUrl: string) => Readonly<Record<string, string>>;
}
