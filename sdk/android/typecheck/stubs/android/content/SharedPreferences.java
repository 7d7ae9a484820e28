package android.content;
public interface SharedPreferences {
  String getString(String key, String defValue);
  long getLong(String key, long defValue);
  Editor edit();
  interface Editor {
    Editor putString(String key, String value);
    Editor putLong(String key, long value);
    Editor remove(String key);
    void apply();
  }
}
