/**
 * A write burst for the crash-safety test: creates apps and stores a secret for each, printing one line per
 * acknowledged write (after its transaction committed), until it is killed.
 */
import { createGatewayCore } from '../../core/server/gateway';

async function main(): Promise<void> {
  const core = await createGatewayCore({ env: process.env });
  for (let index = 0; ; index += 1) {
    const app = await core.management.createApp({ name: `crash-${index}` });
    process.stdout.write(`app ${app.id}\n`);
    const value = `sk-crash-${index}-${'x'.repeat(32)}`;
    await core.management.setSecret({ appId: app.id, provider: 'openai', value });
    process.stdout.write(`secret ${app.id} ${value}\n`);
  }
}

void main();
