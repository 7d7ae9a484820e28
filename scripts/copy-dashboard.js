// Copies the dashboard's static files next to its compiled scripts (dist/dashboard), at build time.
const fs = require('node:fs');
const path = require('node:path');
const source = path.join(__dirname, '..', 'dashboard');
const target = path.join(__dirname, '..', 'dist', 'dashboard');
fs.mkdirSync(target, { recursive: true });
for (const file of ['index.html', 'styles.css']) fs.copyFileSync(path.join(source, file), path.join(target, file));
