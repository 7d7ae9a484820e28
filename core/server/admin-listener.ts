/**
 * The optional second listener (`TOLLGATE_ADMIN_PORT`, `TOLLGATE_ADMIN_HOST`): operators reach the dashboard, the
 * management API, MCP and metrics there, apps reach the proxy and attestation on the public port, and each port answers
 * the other's routes `404 no_route` as if they did not exist. Health endpoints answer on both (load balancers and
 * orchestrators probe either).
 *
 * The split is made where Express has already matched a route (a guard mounted before each surface's handlers), not by
 * comparing path prefixes before routing: Express matches paths case-insensitively and decodes them, so a prefix test
 * of its own would disagree with it on `/V1/Admin/apps` or `/%761/admin`. With one listener nothing is marked and
 * every guard passes at the cost of one property read; the proxy's hot path never meets a guard.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** Which listener a request arrived on; absent with a single listener. */
export type Surface = 'public' | 'admin';

const SURFACE = Symbol('tollgate.surface');

type Marked = IncomingMessage & { [SURFACE]?: Surface };

/** Marks a request with the listener it arrived on (only when two listeners run). */
export function markSurface(request: IncomingMessage, surface: Surface): void {
  (request as Marked)[SURFACE] = surface;
}

/** The listener a request arrived on, or undefined with a single listener. */
export function surfaceOf(request: IncomingMessage): Surface | undefined {
  return (request as Marked)[SURFACE];
}

/**
 * A guard for the routes of one surface: a request that arrived on the other listener is answered by `refuse` (the
 * gateway's `404 no_route`) before any handler of the route, so no body is read and no credential is checked.
 */
export function servedOn(surface: Surface, refuse: (request: IncomingMessage, response: ServerResponse) => void): RequestHandler {
  return (request: Request, response: Response, next: NextFunction) => {
    const arrived = surfaceOf(request);
    if (arrived === undefined || arrived === surface) next();
    else refuse(request, response);
  };
}

/** The listen address of the admin listener, or undefined when the gateway runs one listener. */
export function adminListenAddress(configuration: { readonly adminPort: number | undefined; readonly adminHost: string }): { port: number; host: string } | undefined {
  return configuration.adminPort === undefined ? undefined : { port: configuration.adminPort, host: configuration.adminHost };
}
