/**
 * Who is subscribed to which resource on one upstream session. The upstream hears one
 * `resources/subscribe` per URI, when its first subscriber comes, and one unsubscribe, when the
 * last one goes, however many clients subscribe through the proxy.
 */
export class Subscriptions<M> {
  private readonly byUri = new Map<string, Set<M>>();

  get size(): number {
    return this.byUri.size;
  }

  /** Subscribes `member` to `uri`; true when it is the first (the upstream must be told). */
  add(member: M, uri: string): boolean {
    let set = this.byUri.get(uri);
    if (!set) this.byUri.set(uri, (set = new Set()));
    const first = set.size === 0;
    set.add(member);
    return first;
  }

  /** Unsubscribes `member` from `uri`; true when it was the last (the upstream must be told). */
  remove(member: M, uri: string): boolean {
    const set = this.byUri.get(uri);
    if (!set?.delete(member)) return false;
    if (set.size > 0) return false;
    this.byUri.delete(uri);
    return true;
  }

  /** Unsubscribes `member` from everything; the URIs nobody is subscribed to any more. */
  removeAll(member: M): string[] {
    return [...this.byUri.keys()].filter((uri) => this.remove(member, uri));
  }

  subscribers(uri: string): Iterable<M> {
    return this.byUri.get(uri) ?? [];
  }
}
