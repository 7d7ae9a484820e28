package dev.tollgate

import okhttp3.OkHttpClient

/**
 * Settings of [Tollgate.initialize]. Nothing here is a provider key: the gateway holds those.
 *
 * @property gatewayUrl the gateway base URL; when null, read from the manifest meta-data `dev.tollgate.GATEWAY_URL`.
 * @property developmentToken a development token (`dt_…`, from `npx tollgate dev-tokens create`) for emulators. Pass it
 *   only from debug builds: `developmentToken = if (BuildConfig.DEBUG) "dt_…" else null`. It is refused in a
 *   non-debuggable app, and the gateway refuses it in production.
 * @property attestationMethods tried in order until one earns a device token. Default: key attestation, then Play Integrity.
 * @property cloudProjectNumber the Google Cloud project number for Play Integrity (needed when the app is not on Play).
 * @property httpClient an OkHttp client to share (its connection pool, proxy and certificate pinning settings are used).
 */
public class TollgateConfiguration(
    public val gatewayUrl: String? = null,
    public val developmentToken: String? = null,
    public val attestationMethods: List<AttestationMethod> = listOf(AttestationMethod.KEY_ATTESTATION, AttestationMethod.PLAY_INTEGRITY),
    public val cloudProjectNumber: Long? = null,
    public val httpClient: OkHttpClient? = null,
)
