/**
 * Connections whose request body was not read do not outlive their answer.
 *
 * Routes such as `/healthz`, `/metrics`, `/dashboard/`, `/v1/attest/challenge`, admin GETs, unknown routes and every
 * early refusal answer without reading a body the client may still be sending. Node then drains that body after the
 * answer to keep the connection alive (`IncomingMessage._dump`), and the connection stays open for as long as the
 * client trickles it, the body deadlines no longer applying once the response closed: a few hundred such clients held
 * every descriptor of a gateway under `ulimit -n 300`. So when an answer starts before its request body has arrived,
 * it says `Connection: close` (RFC 9112 §9.6) and Node closes the connection once the answer is written, whatever the
 * client still sends. A body that was read in full keeps the connection reusable.
 *
 * Installed only for requests that declare a body (by the body watch), so bodiless requests pay nothing, and only on
 * routes the gateway answers itself: a proxied answer's head is written by forward.ts (and sendGatewayError), which add
 * the header through `closeIfBodyUnread` (pipeline/request-body.ts) instead of wrapping the response.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export function closeWhenBodyUnread(request: IncomingMessage, response: ServerResponse): void {
  const writeHead = response.writeHead;
  // Node's implicit head (`end()` or `write()` without `writeHead`) goes through `writeHead` too (`_implicitHeader`).
  response.writeHead = function writeHeadClosingUnread(this: ServerResponse, ...args: unknown[]) {
    if (!request.complete && !this.headersSent) this.setHeader('Connection', 'close');
    return (writeHead as (...inner: unknown[]) => ServerResponse).apply(this, args);
  } as ServerResponse['writeHead'];
}
