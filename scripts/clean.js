// Removes the previous build so that a deleted source file never lingers as stale compiled output.
require('node:fs').rmSync(require('node:path').join(__dirname, '..', 'dist'), { recursive: true, force: true });
