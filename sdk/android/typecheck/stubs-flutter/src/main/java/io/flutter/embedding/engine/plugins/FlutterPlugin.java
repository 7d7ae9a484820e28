package io.flutter.embedding.engine.plugins;

import android.content.Context;
import io.flutter.plugin.common.BinaryMessenger;

/** Signature stub of the Flutter embedding (io.flutter:flutter_embedding_*, served by download.flutter.io, not Maven Central). */
public interface FlutterPlugin {
  void onAttachedToEngine(FlutterPluginBinding binding);

  void onDetachedFromEngine(FlutterPluginBinding binding);

  class FlutterPluginBinding {
    public Context getApplicationContext() { throw new UnsupportedOperationException("stub"); }

    public BinaryMessenger getBinaryMessenger() { throw new UnsupportedOperationException("stub"); }
  }
}
