// Copies the dashboard's static files next to its compiled scripts (dist/dashboard), at build time, with the chart
// library it loads (uPlot's ES module and stylesheet, from node_modules, served from the dashboard's own origin).
const fs = require('node:fs');
const path = require('node:path');
const source = path.join(__dirname, '..', 'dashboard');
const target = path.join(__dirname, '..', 'dist', 'dashboard');
fs.mkdirSync(path.join(target, 'vendor'), { recursive: true });
for (const file of ['index.html', 'styles.css', 'favicon.svg']) fs.copyFileSync(path.join(source, file), path.join(target, file));
const uplot = path.dirname(require.resolve('uplot/package.json'));
fs.copyFileSync(path.join(uplot, 'dist', 'uPlot.esm.js'), path.join(target, 'vendor', 'uplot.js'));
fs.copyFileSync(path.join(uplot, 'dist', 'uPlot.min.css'), path.join(target, 'vendor', 'uplot.css'));
fs.copyFileSync(path.join(uplot, 'LICENSE'), path.join(target, 'vendor', 'uplot.LICENSE'));
