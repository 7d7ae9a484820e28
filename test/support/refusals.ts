import { expect } from 'chai';
import type { GatewayError } from '../../core/contract';

/** The error a stage's answer rejects with: the answer must be a promise, and it must reject. */
export async function rejection(pending: unknown): Promise<GatewayError> {
  expect(pending).to.be.an.instanceOf(Promise);
  return (pending as Promise<unknown>).then(
    () => {
      throw new Error('not refused');
    },
    (error: unknown) => error as GatewayError,
  );
}
