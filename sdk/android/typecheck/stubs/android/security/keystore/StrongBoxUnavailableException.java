package android.security.keystore;
public class StrongBoxUnavailableException extends java.security.ProviderException {}
