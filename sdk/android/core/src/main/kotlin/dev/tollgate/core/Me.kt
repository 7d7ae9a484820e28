package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.doubleOrNull
import java.time.Instant

/**
 * One limit or budget from `GET /v1/me` (protocol.md, "What the device may still spend"): e.g. `requests_per_day` for
 * the `device`, 12 of 100 `remaining`, reset at [resetsAtMs]. Strings the gateway did not send are null.
 */
public class MeLimit(
    public val name: String,
    /** `device`, `user`, `app`, …, or null when the gateway did not say. */
    public val scope: String?,
    /** `requests`, `tokens`, `seconds`, …, or null. */
    public val unit: String?,
    public val limit: Double,
    public val remaining: Double,
    /** e.g. `1m`, `1d`, or null. */
    public val window: String?,
    /** The reset time (gateway clock, unix ms), or null when the limit does not reset or the time is unreadable. */
    public val resetsAtMs: Long?,
) {
    override fun toString(): String = "MeLimit(name=$name, scope=$scope, unit=$unit, limit=$limit, remaining=$remaining, window=$window, resetsAtMs=$resetsAtMs)"
}

/** The answer of `GET /v1/me`: who the gateway sees ([device], [user], as it sent them) and every limit that applies. */
public class Me(
    public val device: JsonObject,
    public val user: JsonObject?,
    public val limits: List<MeLimit>,
) {
    /** The gateway's id of this device (`device.id`). */
    public val deviceId: String? get() = device.text("id")

    /** The signed-in user's id (`user.id`, issuer-scoped), or null when no user is signed in. */
    public val userId: String? get() = user?.text("id")

    /** True when the gateway accepted a user token for this call (`user` is an object). */
    public val signedIn: Boolean get() = user != null

    /** The limit named [name] (and [scope] when given), or null. */
    public fun limit(name: String, scope: String? = null): MeLimit? = limits.firstOrNull { it.name == name && (scope == null || it.scope == scope) }

    public companion object {
        /**
         * Parses a 200 answer (sdk/conformance/README.md, "me.json"): a body that is not a JSON object with a `device`
         * object and a `limits` array is a [TollgateError.NetworkError] (`malformed_response`); a limit entry without a
         * string `name` and numeric `limit` and `remaining` is skipped (a newer gateway's).
         */
        public fun parse(body: String): Me {
            val root = try {
                Json.parseToJsonElement(body) as? JsonObject
            } catch (error: Exception) {
                null
            } ?: throw TollgateError.NetworkError(null, "The gateway's /v1/me answer is not a JSON object.", reason = "malformed_response")
            val device = root["device"] as? JsonObject
            val entries = root["limits"] as? JsonArray
            if (device == null || entries == null) {
                throw TollgateError.NetworkError(null, "The gateway's /v1/me answer has no device or limits.", reason = "malformed_response")
            }
            val limits = entries.mapNotNull { element ->
                val entry = element as? JsonObject ?: return@mapNotNull null
                val name = entry.text("name") ?: return@mapNotNull null
                val limit = entry.number("limit") ?: return@mapNotNull null
                val remaining = entry.number("remaining") ?: return@mapNotNull null
                MeLimit(
                    name = name,
                    scope = entry.text("scope"),
                    unit = entry.text("unit"),
                    limit = limit,
                    remaining = remaining,
                    window = entry.text("window"),
                    resetsAtMs = entry.text("resetsAt")?.let { runCatching { Instant.parse(it).toEpochMilli() }.getOrNull() },
                )
            }
            return Me(device, root["user"] as? JsonObject, limits)
        }

        private fun JsonObject.text(name: String): String? = (this[name] as? JsonPrimitive)?.takeIf { it.isString }?.content

        private fun JsonObject.number(name: String): Double? = (this[name] as? JsonPrimitive)?.takeIf { !it.isString }?.doubleOrNull?.takeIf { it.isFinite() }
    }
}
