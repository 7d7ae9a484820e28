package com.google.android.play.core.integrity;

/** Signature stub of com.google.android.play:integrity (Google's Maven repository only, not Maven Central). */
public class IntegrityManagerFactory {
  public static IntegrityManager create(android.content.Context context) { throw new UnsupportedOperationException("stub"); }
  public static StandardIntegrityManager createStandard(android.content.Context context) { throw new UnsupportedOperationException("stub"); }
}
