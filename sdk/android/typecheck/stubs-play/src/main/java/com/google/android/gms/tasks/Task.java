package com.google.android.gms.tasks;
public abstract class Task<T> {
  public abstract Task<T> addOnSuccessListener(OnSuccessListener<? super T> listener);
  public abstract Task<T> addOnFailureListener(OnFailureListener listener);
  public Task<T> addOnCanceledListener(OnCanceledListener listener) { return this; }
}
