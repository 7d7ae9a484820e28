package android.content;
public abstract class Context {
  public static final int MODE_PRIVATE = 0;
  public abstract Context getApplicationContext();
  public abstract SharedPreferences getSharedPreferences(String name, int mode);
  public abstract android.content.pm.ApplicationInfo getApplicationInfo();
  public abstract android.content.pm.PackageManager getPackageManager();
  public abstract String getPackageName();
}
