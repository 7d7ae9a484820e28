/**
 * The alert settings of `tollgate apps update` (the management API's names in kebab case): `--daily-spend-alert-usd N`
 * (`dailySpendAlertUsd`) and `--attestation-failure-alert PERCENT:MIN_ATTEMPTS` (`attestationFailureAlert`). An empty
 * value clears a setting. The values are checked by the management service, as the API's.
 */

export const ALERT_OPTIONS = {
  'daily-spend-alert-usd': { type: 'string' },
  'attestation-failure-alert': { type: 'string' },
} as const;

export const ALERT_USAGE = `                        [--daily-spend-alert-usd USD] [--attestation-failure-alert PERCENT:MIN_ATTEMPTS]   (webhook alerts: spend.threshold, attestation.failure_rate; '' clears)`;

type AlertValues = { [K in keyof typeof ALERT_OPTIONS]?: string };

/** The settings these options change, for `management.updateApp` (absent options are left out). */
export function alertSettings(values: AlertValues, fail: (message: string) => Error): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  const amount = values['daily-spend-alert-usd'];
  if (amount !== undefined) {
    if (amount === '') settings.dailySpendAlertUsd = null;
    else if (!/^\d+(\.\d+)?$/.test(amount.trim())) throw fail(`--daily-spend-alert-usd must be an amount in USD such as 25 or 12.5, got "${amount}"`);
    else settings.dailySpendAlertUsd = Number(amount);
  }
  const share = values['attestation-failure-alert'];
  if (share !== undefined) {
    const match = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(share);
    if (share === '') settings.attestationFailureAlert = null;
    else if (!match) throw fail(`--attestation-failure-alert must be PERCENT:MIN_ATTEMPTS such as 30:20, got "${share}"`);
    else settings.attestationFailureAlert = { percent: Number(match[1]), minAttempts: Number(match[2]) };
  }
  return settings;
}
