require('reflect-metadata');
const { chromium } = require('playwright-core');
const { TestGateway } = require('./dist/test/support/gateway');
(async () => {
  const g = await TestGateway.start({});
  const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless','--no-sandbox','--disable-gpu'] });
  const p = await b.newPage();
  p.on('console', m => console.log('console:', m.text()));
  p.on('pageerror', e => console.log('pageerror:', e.message));
  p.on('response', r => console.log('resp', r.status(), r.url()));
  await p.goto(`${g.url}/dashboard/setup#token=${g.gateway.setupToken}`);
  await new Promise(r => setTimeout(r, 1500));
  console.log((await p.content()).slice(0, 1500));
  await b.close(); await g.close();
})();
