package com.google.android.play.core.integrity;

/** Signature stub of com.google.android.play:integrity (classic API; Google's Maven repository only, not Maven Central). */
public interface IntegrityManager { com.google.android.gms.tasks.Task<IntegrityTokenResponse> requestIntegrityToken(IntegrityTokenRequest request); }
