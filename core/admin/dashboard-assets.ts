/**
 * Serves the dashboard (`/dashboard/`) from the assets compiled at build time into `dist/dashboard/` (never fetched at
 * run time), with a strict Content-Security-Policy: scripts, styles and requests from this origin only, no inline
 * script, no framing. The management API gets the same headers via {@link adminSecurityHeaders}.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import helmet from 'helmet';

/** `dist/dashboard`, next to the compiled `dist/core`. */
export const DASHBOARD_ASSETS = path.resolve(__dirname, '..', '..', 'dashboard');

const CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    fontSrc: ["'self'"],
    formAction: ["'self'"],
    baseUri: ["'none'"],
    frameAncestors: ["'none'"],
  },
};

/** helmet's headers for the management API and the dashboard (no inline script, no framing, no MIME sniffing, no referrer). */
export function adminSecurityHeaders(): RequestHandler {
  return helmet({ contentSecurityPolicy: CSP, referrerPolicy: { policy: 'no-referrer' }, crossOriginResourcePolicy: { policy: 'same-origin' }, strictTransportSecurity: false });
}

export function createDashboardRouter(assets = DASHBOARD_ASSETS): Router {
  const router = express.Router({ strict: true });
  router.use(adminSecurityHeaders());
  if (!existsSync(path.join(assets, 'index.html'))) {
    router.use((_request: Request, response: Response) => {
      response.status(503).type('text/plain').send('The dashboard assets are missing: run `npm run build`.');
    });
    return router;
  }
  router.get('/', (request: Request, response: Response, next) => {
    // `/dashboard` (no slash) would break the pages' relative URLs.
    if (!request.originalUrl.split('?')[0]!.endsWith('/')) return response.redirect(301, `${request.baseUrl}/`);
    next();
  });
  // Source maps are never built for the dashboard (dashboard/tsconfig.json) and never served, even if one is dropped in.
  router.use((request: Request, response: Response, next) => {
    if (/\.map$/i.test(request.path)) {
      response.status(404).type('text/plain').send('Not found.');
      return;
    }
    next();
  });
  router.use(express.static(assets, { index: 'index.html', fallthrough: true, setHeaders: (response) => response.setHeader('Cache-Control', 'no-cache') }));
  // Client-side pages (`/dashboard/setup`, …) get the shell; missing files with an extension stay 404.
  router.get(/^\/[a-z-]*$/, (_request: Request, response: Response) => {
    response.setHeader('Cache-Control', 'no-cache');
    response.sendFile(path.join(assets, 'index.html'));
  });
  return router;
}
