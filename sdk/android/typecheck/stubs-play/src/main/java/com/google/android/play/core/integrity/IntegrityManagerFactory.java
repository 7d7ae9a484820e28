package com.google.android.play.core.integrity;
public class IntegrityManagerFactory { public static IntegrityManager create(android.content.Context context) { return null; } }
