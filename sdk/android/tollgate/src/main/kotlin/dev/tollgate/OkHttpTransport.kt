package dev.tollgate

/** The OkHttp transport now lives in tollgate-core (so that the JVM tests exercise it); this name stays for apps that used it. */
public typealias OkHttpTransport = dev.tollgate.core.OkHttpTransport
