// An async-iterable queue of events: pushed by the connection, pulled by `for await`.

/** A stream of values that ends when `end()` is called or the consumer stops iterating. */
export class EventStream<T> implements AsyncIterableIterator<T> {
  private readonly buffered: T[] = [];
  private readonly waiting: Array<(r: IteratorResult<T>) => void> = [];
  private ended = false;
  private failure: Error | undefined;

  /** `onDone` runs once, when the stream ends for any reason (to unsubscribe it). */
  constructor(private readonly onDone: () => void = () => {}) {}

  push(value: T): void {
    if (this.ended) return;
    const waiter = this.waiting.shift();
    if (waiter) waiter({ value, done: false });
    else this.buffered.push(value);
  }

  /** Ends the stream; values already pushed are still delivered. With `error`, the next pull after them throws. */
  end(error?: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = error;
    this.onDone();
    for (const waiter of this.waiting.splice(0)) waiter({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T>> {
    const value = this.buffered.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.ended) {
      const failure = this.failure;
      this.failure = undefined;
      return failure ? Promise.reject(failure) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    this.buffered.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
