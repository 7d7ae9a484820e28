package io.flutter.plugin.common;

/** Signature stub of the Flutter embedding (download.flutter.io, not Maven Central). */
public final class MethodCall {
  @org.jetbrains.annotations.NotNull public final String method;
  @org.jetbrains.annotations.Nullable public final Object arguments;

  public MethodCall(@org.jetbrains.annotations.NotNull String method, @org.jetbrains.annotations.Nullable Object arguments) {
    this.method = method;
    this.arguments = arguments;
  }

  @org.jetbrains.annotations.Nullable public <T> T argument(@org.jetbrains.annotations.NotNull String key) { throw new UnsupportedOperationException("stub"); }

  public boolean hasArgument(String key) { throw new UnsupportedOperationException("stub"); }
}
