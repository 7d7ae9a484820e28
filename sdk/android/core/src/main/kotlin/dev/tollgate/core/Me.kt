package dev.tollgate.core

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.doubleOrNull
import java.time.Instant

/**
 * One limit or budget from `GET /v1/me` (protocol.md, "What the device may still spend"): e.g. `requests` per `day` for
 * the `device`, 12 of 100 `remaining`, reset at [resetsAtMs]. Numbers the gateway did not send are null.
 */
public class MeLimit(
    public val name: String,
    public val scope: String,
    public val unit: String,
    public val limit: Double?,
    public val remaining: Double?,
    public val window: String?,
    /** The reset time (gateway clock, unix ms), or null when the limit does not reset. */
    public val resetsAtMs: Long?,
) {
    override fun toString(): String = "MeLimit(name=$name, scope=$scope, unit=$unit, limit=$limit, remaining=$remaining, window=$window, resetsAtMs=$resetsAtMs)"
}

/** The answer of `GET /v1/me`: who the gateway sees ([device], [user], as it sent them) and every limit that applies. */
public class Me(
    public val device: JsonElement,
    public val user: JsonElement?,
    public val limits: List<MeLimit>,
) {
    /** The device's id: `device` itself when a string, else its `id` or `deviceId`. */
    public val deviceId: String? get() = idOf(device)

    /** The user's id (`sub` scoped by issuer, as the gateway names it), or null when no user is signed in. */
    public val userId: String? get() = user?.let(::idOf)

    /** The limit named [name] (and [scope] when given), or null. */
    public fun limit(name: String, scope: String? = null): MeLimit? = limits.firstOrNull { it.name == name && (scope == null || it.scope == scope) }

    public companion object {
        private val json = Json { ignoreUnknownKeys = true }

        /** Parses the JSON body; a body that is not the documented object is a [TollgateError.NetworkError]. */
        public fun parse(body: String): Me {
            val root = try {
                json.parseToJsonElement(body) as JsonObject
            } catch (error: Exception) {
                throw TollgateError.NetworkError(error, "The gateway's /v1/me answer is not a JSON object.")
            }
            val limits = (root["limits"] as? kotlinx.serialization.json.JsonArray ?: throw TollgateError.NetworkError(null, "The gateway's /v1/me answer has no \"limits\"."))
                .mapNotNull { it as? JsonObject }
                .map { entry ->
                    MeLimit(
                        name = entry.text("name") ?: "",
                        scope = entry.text("scope") ?: "",
                        unit = entry.text("unit") ?: "",
                        limit = entry.number("limit"),
                        remaining = entry.number("remaining"),
                        window = entry.text("window"),
                        resetsAtMs = entry["resetsAt"]?.let(::instantMs),
                    )
                }
            val user = root["user"]?.takeIf { it !is JsonNull }
            return Me(root["device"] ?: JsonNull, user, limits)
        }

        private fun JsonObject.text(name: String): String? = (this[name] as? JsonPrimitive)?.takeIf { it.isString }?.content

        private fun JsonObject.number(name: String): Double? = (this[name] as? JsonPrimitive)?.takeIf { !it.isString }?.doubleOrNull

        /** `resetsAt` as ISO 8601 or unix ms. */
        private fun instantMs(value: JsonElement): Long? {
            val primitive = value as? JsonPrimitive ?: return null
            if (!primitive.isString) return primitive.doubleOrNull?.toLong()
            return runCatching { Instant.parse(primitive.content).toEpochMilli() }.getOrNull()
        }

        private fun idOf(value: JsonElement): String? = when (value) {
            is JsonPrimitive -> value.takeIf { it.isString }?.content
            is JsonObject -> value.text("id") ?: value.text("deviceId") ?: value.text("userId")
            else -> null
        }
    }
}
