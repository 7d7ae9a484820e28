// Container and orchestrator health check without curl: exits 0 when /readyz answers 200 on this node, 1 otherwise.
'use strict';
const port = process.env.TOLLGATE_PORT || '8080';
const host = process.env.TOLLGATE_HEALTH_HOST || '127.0.0.1';
fetch(`http://${host}:${port}/readyz`, { signal: AbortSignal.timeout(3000) })
  .then((response) => process.exit(response.status === 200 ? 0 : 1))
  .catch(() => process.exit(1));
