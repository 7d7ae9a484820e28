package com.google.android.gms.tasks;
public interface OnSuccessListener<T> { void onSuccess(T result); }
