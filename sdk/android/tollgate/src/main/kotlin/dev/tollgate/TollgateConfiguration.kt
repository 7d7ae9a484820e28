package dev.tollgate

import dev.tollgate.core.RetryOptions
import okhttp3.OkHttpClient

/**
 * Settings of [Tollgate.initialize]. Nothing here is a provider key: the gateway holds those.
 *
 * @property gatewayUrl the gateway base URL; when null, read from the manifest meta-data `dev.tollgate.GATEWAY_URL`.
 * @property developmentToken a development token (`dt_…`, from `npx tollgate dev-tokens create`) for emulators. Pass it
 *   only from debug builds: `developmentToken = if (BuildConfig.DEBUG) "dt_…" else null`. It is refused in a
 *   non-debuggable app, and the gateway refuses it in production.
 * @property attestationMethods tried in order when the device has no identity yet. Default: key attestation, then Play
 *   Integrity (standard request, classic as a fallback).
 * @property cloudProjectNumber the Google Cloud project number, needed for Play Integrity **standard** requests; when
 *   null, read from the manifest meta-data `dev.tollgate.CLOUD_PROJECT_NUMBER`. Without one, Play Integrity falls back
 *   to classic requests.
 * @property retry retries of the gateway's `rateLimited` (null, the default: none), e.g. `RetryOptions()` for up to 3
 *   retries within 30 s, honouring `Retry-After`.
 * @property sendAssertions send a `Tollgate-Assertion` (key signature over the request digest) with every request from
 *   the start, instead of after the gateway's first `assertion_required`.
 * @property httpClient an OkHttp client to share (its connection pool, proxy and certificate pinning settings are used).
 */
public class TollgateConfiguration(
    public val gatewayUrl: String? = null,
    public val developmentToken: String? = null,
    public val attestationMethods: List<AttestationMethod> = listOf(AttestationMethod.KEY_ATTESTATION, AttestationMethod.PLAY_INTEGRITY),
    public val cloudProjectNumber: Long? = null,
    public val retry: RetryOptions? = null,
    public val sendAssertions: Boolean = false,
    public val httpClient: OkHttpClient? = null,
)
