package com.google.android.play.core.integrity;

/** Signature stub of com.google.android.play:integrity (classic API; Google's Maven repository only, not Maven Central). */
public abstract class IntegrityTokenRequest {
  public static Builder builder() { throw new UnsupportedOperationException("stub"); }
  public abstract static class Builder {
    public abstract Builder setNonce(String nonce);
    public abstract Builder setCloudProjectNumber(long number);
    public abstract IntegrityTokenRequest build();
  }
}
