package com.example.tollgate

import android.app.Activity
import android.os.Bundle
import android.widget.TextView
import dev.tollgate.Tollgate
import dev.tollgate.core.RequestBody
import dev.tollgate.core.StreamEvent
import dev.tollgate.core.TollgateError
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.launch

/** One chat completion, then one streamed answer, through the gateway: no provider key in the app. */
class MainActivity : Activity() {
    private val scope: CoroutineScope = MainScope()

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val output = TextView(this).also { setContentView(it) }
        scope.launch {
            output.text = try {
                val response = Tollgate.request(
                    method = "POST",
                    endpoint = "openai/v1/chat/completions",
                    body = RequestBody.Text("""{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}"""),
                )
                response.text + "\n\n"
            } catch (error: TollgateError) {
                describe(error)
            }
            try {
                // The format follows the response's Content-Type (text/event-stream here).
                Tollgate.stream(
                    method = "POST",
                    endpoint = "openai/v1/chat/completions",
                    body = RequestBody.Text("""{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Count to 5."}]}"""),
                ).collect { event -> if (event is StreamEvent.Sse) output.append(event.data + "\n") }
            } catch (error: TollgateError) {
                output.append(describe(error))
            }
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    private fun describe(error: TollgateError): String = when {
        error is TollgateError.AttestationFailed && error.reason == "device_revoked" -> "This device was revoked by the operator."
        error is TollgateError.RateLimited -> "Busy: retry in ${error.retryAfterSeconds ?: 1} s."
        else -> "${error.kind} (${error.reason}): ${error.message}"
    }
}
