package com.google.android.play.core.integrity;

/** Signature stub of com.google.android.play:integrity (classic API; Google's Maven repository only, not Maven Central). */
public abstract class IntegrityTokenResponse { public abstract String token(); }
