package com.google.android.play.core.integrity;

import com.google.android.gms.tasks.Task;

/**
 * Signature stub of com.google.android.play:integrity's standard API (developer.android.com/google/play/integrity/standard):
 * prepareIntegrityToken(PrepareIntegrityTokenRequest) warms a StandardIntegrityTokenProvider up, whose
 * request(StandardIntegrityTokenRequest) returns a StandardIntegrityToken. Google's Maven repository only.
 */
public interface StandardIntegrityManager {
  Task<StandardIntegrityTokenProvider> prepareIntegrityToken(PrepareIntegrityTokenRequest request);

  abstract class PrepareIntegrityTokenRequest {
    public static Builder builder() { throw new UnsupportedOperationException("stub"); }

    public abstract long getCloudProjectNumber();

    public abstract static class Builder {
      public abstract Builder setCloudProjectNumber(long cloudProjectNumber);
      public abstract PrepareIntegrityTokenRequest build();
    }
  }

  interface StandardIntegrityTokenProvider {
    Task<StandardIntegrityToken> request(StandardIntegrityTokenRequest request);
  }

  abstract class StandardIntegrityTokenRequest {
    public static Builder builder() { throw new UnsupportedOperationException("stub"); }

    public abstract String getRequestHash();

    public abstract static class Builder {
      public abstract Builder setRequestHash(String requestHash);
      public abstract StandardIntegrityTokenRequest build();
    }
  }

  abstract class StandardIntegrityToken {
    public abstract String token();
  }
}
