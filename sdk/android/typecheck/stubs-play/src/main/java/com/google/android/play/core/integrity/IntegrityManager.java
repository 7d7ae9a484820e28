package com.google.android.play.core.integrity;
public interface IntegrityManager { com.google.android.gms.tasks.Task<IntegrityTokenResponse> requestIntegrityToken(IntegrityTokenRequest request); }
