/**
 * `tollgate COMMAND [SUBCOMMAND] --help`: the part of the usage text about that command. The usage text is the one
 * source: each entry starts with `  tollgate …` and its continuation lines are indented further, so command groups
 * added later (bin/commands/*.ts, listed in the usage text) get their help without a table of their own here.
 */

/** The usage text cut into entries: an entry's first line and its continuation lines. */
function entries(usage: string): string[][] {
  const out: string[][] = [];
  for (const line of usage.split('\n')) {
    if (/^ {2}tollgate\b/.test(line)) out.push([line]);
    else if (/^ {3,}\S/.test(line) && out.length) out[out.length - 1]!.push(line);
  }
  return out;
}

/** Words of an entry's first line that name commands: `tollgate apps list | get --app ID` → apps, list, get. */
function names(first: string): { group: string; subcommands: string[] } {
  const words = first.trim().split(/\s+/).slice(1);
  const group = words[0] ?? '';
  const subcommands = [words[1] ?? '', ...words.flatMap((word, index) => (word === '|' && words[index + 1] ? [words[index + 1]!] : []))].filter((word) => /^[a-z][a-z-]*$/.test(word));
  return { group, subcommands };
}

/**
 * The help of one command, or undefined when the usage text does not know it. `command` alone gives every entry of the
 * group; with a subcommand, the entries that name it (falling back to the group's).
 */
export function commandHelp(usage: string, command: string, subcommand?: string): string | undefined {
  const all = entries(usage);
  const group = all.filter((entry) => names(entry[0]!).group === command);
  if (!group.length) return undefined;
  const exact = subcommand ? group.filter((entry) => names(entry[0]!).subcommands.includes(subcommand)) : [];
  const chosen = exact.length ? exact : group;
  return `Usage:\n${chosen.map((entry) => entry.join('\n')).join('\n')}\n\nOptions are --kebab-case; --output table prints a readable table instead of JSON. See docs/reference/configuration.md for the TOLLGATE_* settings.`;
}
