/**
 * The Tollgate contract: interfaces, DI tokens, the provider manifest schema, the plugin contract version and error
 * types. It imports nothing of ours; providers and plugins import only this.
 */
export * from './errors';
export * from './manifest';
export * from './realtime';
export * from './secret-value';
export * from './records';
export * from './context';
export * from './pipeline';
export * from './stores';
export * from './attestation';
export * from './tokens';
export * from './plugin';
export * from './directory';
