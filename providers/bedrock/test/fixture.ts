import aws4 from 'aws4';
import { jsonResponse } from '../../_shared/fixture-helpers';
import type { ProviderFixture, RecordedRequestView } from '../../_shared/fixture';

const credentials = { accessKeyId: 'AKIACONFORMANCE0001', secretAccessKey: 'conformance/secret/0123456789abcdefghij', region: 'eu-west-1' };
const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello' }] }] });

/** CRC-32 (IEEE), as the AWS event-stream encoding uses for its prelude and message checksums. */
function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** One AWS event-stream message with a `:event-type` string header and a JSON payload. */
export function eventStreamFrame(eventType: string, payload: unknown): Buffer {
  const name = Buffer.from(':event-type');
  const value = Buffer.from(eventType);
  const header = Buffer.concat([Buffer.from([name.length]), name, Buffer.from([7]), Buffer.from([value.length >> 8, value.length & 0xff]), value]);
  const data = Buffer.from(JSON.stringify(payload));
  const total = 12 + header.length + data.length + 4;
  const prelude = Buffer.alloc(8);
  prelude.writeUInt32BE(total, 0);
  prelude.writeUInt32BE(header.length, 4);
  const preludeCrc = Buffer.alloc(4);
  preludeCrc.writeUInt32BE(crc32(prelude), 0);
  const withoutCrc = Buffer.concat([prelude, preludeCrc, header, data]);
  const messageCrc = Buffer.alloc(4);
  messageCrc.writeUInt32BE(crc32(withoutCrc), 0);
  return Buffer.concat([withoutCrc, messageCrc]);
}

/** Recomputes the SigV4 signature over what the upstream received, with the headers the request says it signed. */
function verifySignature(request: RecordedRequestView, secret: string): void {
  const stored = JSON.parse(secret) as typeof credentials;
  const authorization = String(request.headers.authorization ?? '');
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
  if (!authorization.startsWith('AWS4-HMAC-SHA256 ') || !signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date')) {
    throw new Error(`not a SigV4 authorization: ${authorization}`);
  }
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = String(request.headers[name]);
  const expected = aws4.sign(
    { host: headers.host, method: request.method, path: request.url, service: 'bedrock', region: stored.region, headers, body: request.body },
    { accessKeyId: stored.accessKeyId, secretAccessKey: stored.secretAccessKey },
  );
  if (expected.headers?.Authorization !== authorization && expected.headers?.authorization !== authorization) {
    throw new Error('the SigV4 signature does not match the request the upstream received');
  }
}

export const fixture: ProviderFixture = {
  provenance: 'Bedrock Runtime Converse / ConverseStream (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html), SigV4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html), event-stream encoding (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html), checked 2026-11-22',
  secret: JSON.stringify(credentials),
  call: { method: 'POST', version: 'v1', path: 'model/anthropic.claude-3-haiku-20240307-v1:0/converse', contentType: 'application/json', body },
  response: jsonResponse({ output: { message: { role: 'assistant', content: [{ text: 'Hello!' }] } }, stopReason: 'end_turn', usage: { inputTokens: 8, outputTokens: 2, totalTokens: 10 } }),
  stream: {
    call: { method: 'POST', version: 'v1', path: 'model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream', contentType: 'application/json', body },
    response: {
      status: 200,
      contentType: 'application/vnd.amazon.eventstream',
      chunks: [
        eventStreamFrame('messageStart', { role: 'assistant' }),
        eventStreamFrame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hello!' } }),
        eventStreamFrame('messageStop', { stopReason: 'end_turn' }),
      ],
    },
  },
  error: jsonResponse({ message: 'The security token included in the request is invalid.' }, 403),
  verifyComputedCredential: verifySignature,
};
