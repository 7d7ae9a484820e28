package android.os;
public class Bundle { public String getString(String key) { return null; } }
