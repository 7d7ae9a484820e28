package com.example.tollgate;

/**
 * What the Android Gradle plugin generates for sdk/android/example from its build.gradle.kts (buildConfigField lines,
 * debug build); here so that the example's Kotlin compiles without Gradle (../pom.xml).
 */
public final class BuildConfig {
  public static final boolean DEBUG = Boolean.parseBoolean("true");
  public static final String APPLICATION_ID = "com.example.tollgate";
  public static final String BUILD_TYPE = "debug";
  public static final String TOLLGATE_APP_TOKEN = "at_YOUR_APP_TOKEN";
  public static final String TOLLGATE_DEV_TOKEN = "";
}
