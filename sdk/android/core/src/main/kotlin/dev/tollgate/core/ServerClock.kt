package dev.tollgate.core

import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter

/**
 * The gateway's clock as seen from this device: the device clock plus an offset learnt from the `Date` header of the
 * gateway's answers (RFC 9110 §6.6.1, one-second resolution). A phone whose clock runs an hour ahead would otherwise
 * stamp `Tollgate-Request-Time` an hour off (refused as `request_time_skew` in every-request mode) and read a token's
 * absolute `expiresAt` as already past (attesting on every call until the attest rate limit refuses it).
 *
 * Token lifetimes are measured on the device clock from the moment the answer arrived (`expiresIn`), so they need no
 * offset; only absolute times from the gateway (`expiresAt`, the JWS `exp`) and times sent to it are converted.
 */
public class ServerClock(private val deviceClock: () -> Long = System::currentTimeMillis) {
    @Volatile
    private var offset: Long = 0

    @Volatile
    private var known: Boolean = false

    /** Milliseconds to add to the device clock to get the gateway's; 0 until a `Date` header was seen. */
    public val offsetMs: Long get() = offset

    /** True once a gateway answer carried a readable `Date`. */
    public val isKnown: Boolean get() = known

    /** The device clock (for lifetimes measured on the device). */
    public fun deviceNow(): Long = deviceClock()

    /** The gateway's time now, for `Tollgate-Request-Time`. */
    public fun now(): Long = deviceClock() + offset

    /** A gateway time turned into the device clock (an absolute expiry, for refresh decisions made on the device). */
    public fun toDevice(serverMs: Long): Long = serverMs - offset

    /**
     * Learns the offset from a response's `Date` header, received at [receivedAtMs] on the device clock. The header is
     * rounded down to the second, so half a second is added to centre the estimate; offsets under two seconds are read as
     * none (they are within the header's precision and the gateway's 5-minute skew allowance).
     */
    public fun observe(headers: Map<String, List<String>>, receivedAtMs: Long = deviceClock()) {
        val date = parseHttpDate(Headers.first(headers, "Date")) ?: return
        val measured = date + 500 - receivedAtMs
        offset = if (kotlin.math.abs(measured) < 2_000) 0 else measured
        known = true
    }

    public companion object {
        /** An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) in unix ms, or null. */
        public fun parseHttpDate(value: String?): Long? = try {
            value?.trim()?.takeIf { it.isNotEmpty() }?.let { ZonedDateTime.parse(it, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli() }
        } catch (_: Exception) {
            null
        }
    }
}
