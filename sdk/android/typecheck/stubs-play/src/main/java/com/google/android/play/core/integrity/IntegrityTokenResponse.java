package com.google.android.play.core.integrity;
public abstract class IntegrityTokenResponse { public abstract String token(); }
