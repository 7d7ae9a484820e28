package com.example.tollgate

import android.os.Bundle
import android.widget.TextView
import androidx.activity.ComponentActivity
import androidx.lifecycle.lifecycleScope
import dev.tollgate.Tollgate
import dev.tollgate.core.RequestBody
import dev.tollgate.core.TollgateError
import kotlinx.coroutines.launch

/** One chat completion through the gateway: no provider key in the app. */
class MainActivity : ComponentActivity() {
    override fun onCreate(savedInstanceState: Bundle?) {
        super.onCreate(savedInstanceState)
        val output = TextView(this).also { setContentView(it) }
        lifecycleScope.launch {
            output.text = try {
                val response = Tollgate.request(
                    method = "POST",
                    endpoint = "openai/v1/chat/completions",
                    body = RequestBody.Text("""{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello!"}]}"""),
                )
                response.text
            } catch (error: TollgateError) {
                "${error.kind}: ${error.message}"
            }
        }
    }
}
