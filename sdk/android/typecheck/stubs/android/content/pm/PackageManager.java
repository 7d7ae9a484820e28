package android.content.pm;
public abstract class PackageManager {
  public static final int GET_META_DATA = 128;
  @Deprecated public abstract ApplicationInfo getApplicationInfo(String packageName, int flags) throws NameNotFoundException;
  public static class NameNotFoundException extends Exception {}
}
