/**
 * `tollgate users list --app ID [--search PREFIX] [--limit N]` / `get --app ID --user USER_ID` /
 * `show --app ID --user USER_ID [--minutes N]` / `block --app ID --user USER_ID` / `unblock --app ID --user USER_ID`:
 * the end users the gateway has seen for an app (by the sign-in provider's `sub`). `show` adds the user's devices,
 * usage over the last N minutes (default a day) and latest requests, as the dashboard's user page shows them; the
 * limits' counters live in the serving gateway, so it names where to read them. A block reaches every node within its
 * change-poll interval.
 */
import { parseArgs } from 'node:util';
import { endUserOverview } from '../../core/users/end-user-overview';
import { EndUserService } from '../../core/users/end-user-service';
import type { CommandHelpers } from './types';

export const USERS_USAGE = `  tollgate users list --app ID [--search USER_ID_PREFIX] [--limit N]   (end users seen, most recent first)
  tollgate users get --app ID --user USER_ID | block --app ID --user USER_ID | unblock --app ID --user USER_ID
  tollgate users show --app ID --user USER_ID [--minutes N]   (devices, usage over N minutes (default 1440), latest requests)`;

export async function usersCommand(argv: readonly string[], helpers: CommandHelpers): Promise<void> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { app: { type: 'string' }, user: { type: 'string' }, search: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' }, minutes: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const app = values.app;
  if (!app) throw helpers.usage('--app is required');
  const service = (core: Parameters<Parameters<CommandHelpers['withCore']>[0]>[0]) => new EndUserService(core.database, Date.now);
  const user = (): string => {
    if (!values.user) throw helpers.usage('--user is required');
    return values.user;
  };
  switch (positionals[0]) {
    case 'list': {
      const limit = values.limit === undefined ? 100 : Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw helpers.usage('--limit must be from 1 to 1000');
      const offset = values.offset === undefined ? 0 : Number(values.offset);
      if (!Number.isInteger(offset) || offset < 0) throw helpers.usage('--offset must be 0 or more');
      return helpers.withCore(async (core) => ({ users: await service(core).list(app, { search: values.search || undefined, limit, offset }) }));
    }
    case 'get':
      return helpers.withCore((core) => service(core).get(app, user()));
    case 'show': {
      const subject = user();
      const minutes = values.minutes === undefined ? 1440 : Number(values.minutes);
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > 10_080) throw helpers.usage('--minutes must be from 1 to 10080');
      return helpers.withCore((core) => endUserOverview(service(core), core.management, app, subject, { minutes, requests: 20 }));
    }
    case 'block':
    case 'unblock': {
      const subject = user();
      const blocked = positionals[0] === 'block';
      return helpers.change(`end_user.${positionals[0]}`, () => `${app}/${subject}`, (core) => service(core).setBlocked(app, subject, blocked));
    }
    default:
      throw helpers.usage(`unknown command "users ${positionals.join(' ')}"; see tollgate --help`);
  }
}
