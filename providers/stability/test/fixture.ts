import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture } from '../../_shared/fixture';

const boundary = '----stability-conformance-boundary';
const multipart = Buffer.concat([
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\na lighthouse at dawn\r\n`),
  Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="output_format"\r\n\r\npng\r\n--${boundary}--\r\n`),
]);
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]);

export const fixture: ProviderFixture = {
  provenance: 'Stability AI v2beta Stable Image Core (https://platform.stability.ai/docs/api-reference#tag/Generate): multipart request, image/* answer, checked 2026-11-22',
  secret: 'sk-stability-conformance-0123456789',
  call: { method: 'POST', version: 'v2beta', path: 'stable-image/generate/core', contentType: `multipart/form-data; boundary=${boundary}`, body: multipart, headers: { accept: 'image/*' } },
  response: { status: 200, contentType: 'image/png', chunks: [png, Buffer.alloc(2048, 0x11)] },
  error: jsonResponse({ name: 'unauthorized', errors: ['Missing API key'] }, 401),
};
