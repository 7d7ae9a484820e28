package io.flutter.plugin.common;

/** Signature stub of the Flutter embedding (download.flutter.io, not Maven Central). */
public interface BinaryMessenger {}
