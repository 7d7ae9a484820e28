/** Types of `cluster-key-slot`, the hash-slot function ioredis itself uses; the package ships none. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0–16383) of `key`: CRC16 of its `{…}` hash tag when it has a non-empty one, else of the key. */
  function calculateSlot(key: string | Buffer): number;
  export = calculateSlot;
}
