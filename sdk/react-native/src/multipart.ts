/**
 * `multipart/form-data` bodies (RFC 7578) for uploads through Tollgate: Whisper and other transcription APIs, image
 * edits, Deepgram pre-recorded audio. React Native's fetch would serialize a FormData itself, but the SDK must know the
 * exact bytes (the request digest covers them) and `JSON.stringify(formData)` is `"{}"`: so the SDK encodes the form
 * itself, from a WHATWG FormData, React Native's FormData (`{ uri, name, type }` files), or {@link MultipartBuilder}.
 */
import { invalidRequest } from './errors';
import type { PreparedBody } from './request-builder';
import { globalFetch, describe } from './transport';
import { encodeUtf8 } from './utf8';

/** One part: a text field, or a file (bytes with a file name and a media type). */
export type MultipartPart =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly bytes: Uint8Array; readonly filename: string; readonly contentType?: string };

/** Builds a multipart body: `new MultipartBuilder().field('model', 'whisper-1').file('file', bytes, 'a.m4a', 'audio/mp4').build()`. */
export class MultipartBuilder {
  private readonly parts: MultipartPart[] = [];

  constructor(private readonly boundary: string = randomBoundary()) {
    if (!/^[0-9A-Za-z'()+_,\-./:=?]{1,70}$/.test(boundary)) throw invalidRequest('A multipart boundary is 1-70 characters of RFC 2046 bchars.', 'bad_body');
  }

  field(name: string, value: string): this {
    this.parts.push({ name, value });
    return this;
  }

  file(name: string, bytes: Uint8Array, filename: string, contentType = 'application/octet-stream'): this {
    this.parts.push({ name, bytes, filename, contentType });
    return this;
  }

  /** The body bytes and its Content-Type (with the boundary). */
  build(): { readonly bytes: Uint8Array; readonly contentType: string } {
    return { bytes: encodeMultipart(this.parts, this.boundary), contentType: `multipart/form-data; boundary=${this.boundary}` };
  }
}

function randomBoundary(): string {
  let random = '';
  for (let index = 0; index < 24; index += 1) random += Math.floor(Math.random() * 36).toString(36);
  return `----TollgateBoundary${random}`;
}

/** A quoted-string parameter (RFC 7578 section 4.2: CR, LF and `"` percent-encoded, as browsers do). */
function quoted(value: string): string {
  return `"${value.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22')}"`;
}

/** The multipart bytes for `parts` with `boundary`. */
export function encodeMultipart(parts: readonly MultipartPart[], boundary: string): Uint8Array {
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(part.name)}`;
    if ('bytes' in part) head += `; filename=${quoted(part.filename)}\r\nContent-Type: ${part.contentType ?? 'application/octet-stream'}`;
    head += '\r\n\r\n';
    chunks.push(encodeUtf8(head), 'bytes' in part ? part.bytes : encodeUtf8(part.value.replace(/\r?\n/g, '\r\n')), encodeUtf8('\r\n'));
  }
  chunks.push(encodeUtf8(`--${boundary}--\r\n`));
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

interface BlobLike {
  readonly type?: string;
  readonly name?: string;
  arrayBuffer(): Promise<ArrayBuffer>;
}

interface NativeFileLike {
  readonly uri: string;
  readonly name?: string;
  readonly type?: string;
}

/** True for a WHATWG or React Native FormData (not a plain object, which is sent as JSON). */
export function isFormData(body: unknown): boolean {
  if (!body || typeof body !== 'object') return false;
  const candidate = body as { getParts?: unknown; entries?: unknown; append?: unknown };
  return typeof candidate.append === 'function' && (typeof candidate.getParts === 'function' || typeof candidate.entries === 'function');
}

async function fileBytes(value: BlobLike | NativeFileLike): Promise<Uint8Array> {
  if (typeof (value as BlobLike).arrayBuffer === 'function') return new Uint8Array(await (value as BlobLike).arrayBuffer());
  // React Native's `{ uri, name, type }`: its own fetch reads file:// and content:// addresses.
  const fetch = globalFetch();
  if (!fetch) throw invalidRequest('A { uri } file needs fetch to be read.', 'bad_body');
  const response = (await fetch((value as NativeFileLike).uri, {})) as { arrayBuffer(): Promise<ArrayBuffer> };
  return new Uint8Array(await response.arrayBuffer());
}

/** Encodes a FormData as multipart bytes (files read whole: the digest needs every byte before sending). */
export async function prepareFormData(form: unknown): Promise<PreparedBody> {
  const entries: Array<[string, unknown]> = [];
  const rn = form as { getParts?: () => Array<{ fieldName: string; string?: string; uri?: string; name?: string; type?: string }> };
  if (typeof rn.getParts === 'function') {
    for (const part of rn.getParts()) entries.push([part.fieldName, typeof part.string === 'string' ? part.string : part]);
  } else {
    for (const [name, value] of (form as { entries(): Iterable<[string, unknown]> }).entries()) entries.push([name, value]);
  }
  const parts: MultipartPart[] = [];
  for (const [name, value] of entries) {
    if (typeof value === 'string') {
      parts.push({ name, value });
      continue;
    }
    const file = value as (BlobLike & NativeFileLike) | null;
    if (!file || (typeof file.arrayBuffer !== 'function' && typeof file.uri !== 'string')) throw invalidRequest(`Form field "${name}" is neither text nor a file.`, 'bad_body');
    let bytes: Uint8Array;
    try {
      bytes = await fileBytes(file);
    } catch (error) {
      throw invalidRequest(`Form field "${name}" could not be read: ${describe(error)}`, 'bad_body');
    }
    parts.push({ name, bytes, filename: file.name || 'blob', contentType: file.type || 'application/octet-stream' });
  }
  const boundary = randomBoundary();
  return { bytes: encodeMultipart(parts, boundary), defaultContentType: `multipart/form-data; boundary=${boundary}` };
}
