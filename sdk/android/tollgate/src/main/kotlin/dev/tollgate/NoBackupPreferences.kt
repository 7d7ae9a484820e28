package dev.tollgate

import java.io.File
import java.io.FileOutputStream
import java.util.Properties

/**
 * The few string and number entries [SecureStorage] keeps, in one properties file written atomically (a temporary file
 * renamed over the old one). Used instead of SharedPreferences because a preferences file lives in `shared_prefs/`,
 * which Auto Backup copies unless the app's manifest excludes it; this file lives in `no_backup/`.
 */
internal class NoBackupPreferences(private val file: File) {
    private val values: Properties by lazy {
        Properties().apply { runCatching { if (file.exists()) file.inputStream().use { load(it) } } }
    }

    @Synchronized
    fun getString(name: String, default: String?): String? = values.getProperty(name) ?: default

    @Synchronized
    fun getLong(name: String, default: Long): Long = values.getProperty(name)?.toLongOrNull() ?: default

    fun edit(): Editor = Editor()

    inner class Editor {
        private val changes = LinkedHashMap<String, String?>()

        fun putString(name: String, value: String): Editor = apply { changes[name] = value }
        fun putLong(name: String, value: Long): Editor = apply { changes[name] = value.toString() }
        fun remove(name: String): Editor = apply { changes[name] = null }

        fun apply() {
            synchronized(this@NoBackupPreferences) {
                for ((name, value) in changes) if (value == null) values.remove(name) else values.setProperty(name, value)
                file.parentFile?.mkdirs()
                val temporary = File(file.parentFile, file.name + ".tmp")
                FileOutputStream(temporary).use { out ->
                    values.store(out, null)
                    out.fd.sync()
                }
                if (!temporary.renameTo(file)) throw java.io.IOException("Cannot write ${file.path}.")
            }
        }
    }
}
