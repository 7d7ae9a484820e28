/**
 * Tests only: a plugin (loaded through `TOLLGATE_PLUGINS=<path of this compiled file>`) whose pipeline observer throws
 * from both hooks on every request, as a buggy third-party observer (a billing exporter, say) would.
 */
import type { TollgatePlugin } from '../../core/contract';

export class ThrowingObserverCalls {
  static onResponse = 0;
  static onError = 0;
}

export const tollgatePlugin: TollgatePlugin = {
  name: 'test-throwing-observer',
  contractVersion: 1,
  register(host) {
    host.registerObserver({
      onResponse(context) {
        ThrowingObserverCalls.onResponse += 1;
        throw new Error(`exporter bug: cannot read ${context.request.url}`);
      },
      onError() {
        ThrowingObserverCalls.onError += 1;
        throw new TypeError('exporter bug in onError');
      },
    });
  },
};
