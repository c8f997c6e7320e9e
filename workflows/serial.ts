// Runs async sections one at a time, in arrival order. A promise chain, not a flag + condition():
// condition() would wake every waiter in the same activation and let them all in at once.
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.tail.then(section);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
