package com.example.tollgate

import android.app.Activity
import android.os.Bundle
import android.widget.TextView
import dev.tollgate.Tollgate
import dev.tollgate.core.ChatApi
import dev.tollgate.core.ChatRequest
import dev.tollgate.core.RealtimeMessage
import dev.tollgate.core.TollgateError
import dev.tollgate.core.textDeltas
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.MainScope
import kotlinx.coroutines.cancel
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.launch

/** What is left today, a streamed answer token by token, and a short realtime session: no provider key in the app. */
class MainActivity : Activity() {
    private val scope: CoroutineScope = MainScope()

    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val output = TextView(this).also { setContentView(it) }
        scope.launch {
            try {
                val requests = Tollgate.me().limit("device-requests-day")
                if (requests != null) output.append("${requests.remaining.toLong()} requests left today\n\n")
                val body = ChatRequest(ChatApi.OPENAI, model = "gpt-4o-mini").user("Count to 5.").stream().body()
                Tollgate.stream("POST", "openai/v1/chat/completions", body).textDeltas(ChatApi.OPENAI).collect { output.append(it) }

                val session = Tollgate.realtime("openai/v1/realtime?model=gpt-realtime")
                session.send("""{"type":"response.create","response":{"modalities":["text"],"instructions":"Say hi."}}""")
                session.messages.take(3).collect { message ->
                    if (message is RealtimeMessage.Text) output.append("\n" + message.text.take(80))
                }
                session.close()
            } catch (error: TollgateError) {
                output.append("\n" + describe(error))
            }
        }
    }

    override fun onDestroy() {
        scope.cancel()
        super.onDestroy()
    }

    private fun describe(error: TollgateError): String = when {
        error is TollgateError.AttestationFailed && error.reason == "device_revoked" -> "This device was revoked by the operator."
        error is TollgateError.RateLimited -> "Busy: retry in ${error.retryAfterSeconds ?: 1} s (${error.reason})."
        else -> "${error.kind} (${error.reason}): ${error.message}"
    }
}
