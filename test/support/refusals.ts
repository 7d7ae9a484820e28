import { expect } from 'chai';
import { GatewayError } from '../../core/contract';

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

/** The error `run` throws: it must throw, and what it throws must be a GatewayError (a typed refusal, not a crash). */
export function refusal(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(GatewayError);
    return error as GatewayError;
  }
  return expect.fail('not refused');
}
