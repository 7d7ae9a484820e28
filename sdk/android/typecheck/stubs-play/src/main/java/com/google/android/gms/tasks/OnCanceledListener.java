package com.google.android.gms.tasks;
public interface OnCanceledListener { void onCanceled(); }
