package android.security.keystore;
public final class KeyGenParameterSpec implements java.security.spec.AlgorithmParameterSpec {
  public static final class Builder {
    public Builder(String alias, int purposes) {}
    public Builder setAlgorithmParameterSpec(java.security.spec.AlgorithmParameterSpec spec) { return this; }
    public Builder setDigests(String... digests) { return this; }
    public Builder setAttestationChallenge(byte[] challenge) { return this; }
    public Builder setIsStrongBoxBacked(boolean b) { return this; }
    public KeyGenParameterSpec build() { return null; }
  }
}
