/**
 * What a node keeps for each request in flight, for a periodic sweep (the body watch, the held stream slots): an array
 * whose members know their place, not a `Set` or `Map`.
 *
 * Why not a `Set`: V8 rehashes a `Map` or `Set` into a new table every few dozen inserts when each insert has a delete
 * beside it, and the table it leaves keeps a pointer to its successor and its old entries. Once one of those tables
 * has reached the old generation, each dead table keeps the next one, and every request in it, alive through the
 * young-generation collections until a full collection: whole requests were copied and promoted, and a gateway that
 * fell into that state (after an idle minute, or from one install path and not another) spent 20-40% more CPU per
 * request (docs/benchmarks.md). An array grows or shrinks in place and points nowhere else.
 */
export interface InFlightMember {
  /** The member's place in its list; -1 when it is in none. */
  inFlightIndex: number;
}

export class InFlightList<T extends InFlightMember> {
  private readonly members: T[] = [];

  get size(): number {
    return this.members.length;
  }

  add(member: T): void {
    member.inFlightIndex = this.members.length;
    this.members.push(member);
  }

  /** Removes `member` (the last one takes its place); false when it is not in the list. */
  delete(member: T): boolean {
    const index = member.inFlightIndex;
    if (index < 0 || this.members[index] !== member) return false;
    const last = this.members.pop()!;
    if (last !== member) {
      this.members[index] = last;
      last.inFlightIndex = index;
    }
    member.inFlightIndex = -1;
    return true;
  }

  /** Calls `visit` with each member, the newest first. `visit` may delete the member it is given, no other. */
  forEach(visit: (member: T) => void): void {
    for (let index = this.members.length - 1; index >= 0; index -= 1) {
      const member = this.members[index];
      if (member !== undefined) visit(member);
    }
  }

  clear(): void {
    for (const member of this.members) member.inFlightIndex = -1;
    this.members.length = 0;
  }
}
