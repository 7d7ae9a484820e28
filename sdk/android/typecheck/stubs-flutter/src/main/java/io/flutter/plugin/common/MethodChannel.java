package io.flutter.plugin.common;

/** Signature stub of the Flutter embedding (download.flutter.io, not Maven Central). */
public class MethodChannel {
  public MethodChannel(BinaryMessenger messenger, String name) {}

  public void setMethodCallHandler(@org.jetbrains.annotations.Nullable MethodCallHandler handler) {}

  public interface MethodCallHandler {
    void onMethodCall(@org.jetbrains.annotations.NotNull MethodCall call, @org.jetbrains.annotations.NotNull Result result);
  }

  public interface Result {
    void success(@org.jetbrains.annotations.Nullable Object result);

    void error(@org.jetbrains.annotations.NotNull String errorCode, @org.jetbrains.annotations.Nullable String errorMessage, @org.jetbrains.annotations.Nullable Object errorDetails);

    void notImplemented();
  }
}
