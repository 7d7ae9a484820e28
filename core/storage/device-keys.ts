/** The database-backed {@link DeviceKeyStore}: attested public keys and their assertion counters (the `devices` table). */
import type { Knex } from 'knex';
import type { DeviceKeyRecord, DeviceKeyStore } from '../contract';
import { DeviceRepository } from './repositories';

export class DatabaseDeviceKeys implements DeviceKeyStore {
  constructor(private readonly database: Knex) {}

  async find(appId: string, deviceId: string): Promise<DeviceKeyRecord | null> {
    const row = await new DeviceRepository(this.database).find(appId, deviceId);
    return row ? { publicKey: row.publicKey, counter: row.counter, revoked: row.revokedAt !== null } : null;
  }

  advanceCounter(appId: string, deviceId: string, expected: number, next: number): Promise<boolean> {
    return new DeviceRepository(this.database).advanceCounter(appId, deviceId, expected, next);
  }
}
