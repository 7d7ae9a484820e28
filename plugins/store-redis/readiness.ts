import Redis, { Cluster } from 'ioredis';

/**
 * `/readyz` for Redis. One server: `PING`. A cluster: every master known answers `CLUSTER INFO` and reports every
 * slot served (`cluster_state:ok`): a failed shard made `/readyz` say 200 while a third of the apps were refused.
 */
export async function readiness(client: Redis | Cluster): Promise<void> {
  if (!(client instanceof Cluster)) {
    if ((await client.ping()) !== 'PONG') throw new Error('redis did not answer PONG');
    return;
  }
  const masters = client.nodes('master');
  if (masters.length === 0) throw new Error('redis cluster: no master is known');
  await Promise.all(
    masters.map(async (node) => {
      const where = `${node.options.host}:${node.options.port}`;
      const info = await node.cluster('INFO').catch((error: Error) => {
        throw new Error(`redis cluster node ${where}: ${error.message}`);
      });
      if (!/cluster_state:ok/.test(String(info))) throw new Error(`redis cluster node ${where} reports the cluster failing (cluster_state is not ok)`);
    }),
  );
}

