/**
 * Compact sets of small non-negative integers ("slots") for the access index: each entity of a kind is
 * given a slot, and a policy's members are a bitset over those slots instead of a set of id strings.
 */

/** Number of set bits of a 32-bit word. */
export function popcount(x: number): number {
  x = x - ((x >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Calls `fn` with every set bit of `words`, in ascending order. */
export function forEachBit(words: Uint32Array, fn: (slot: number) => void): void {
  for (let w = 0; w < words.length; w++) {
    let x = words[w];
    while (x !== 0) {
      const low = x & -x;
      fn((w << 5) + (31 - Math.clz32(low)));
      x ^= low;
    }
  }
}

/** A growable bitset that keeps its population count. */
export class Bitset {
  words: Uint32Array;
  size = 0;

  constructor(words?: Uint32Array) {
    this.words = words ?? new Uint32Array(0);
    if (words) for (let i = 0; i < words.length; i++) this.size += popcount(words[i]);
  }

  has(slot: number): boolean {
    const w = slot >>> 5;
    return w < this.words.length && (this.words[w] & (1 << (slot & 31))) !== 0;
  }

  /** Sets the bit; true when it was not set. */
  add(slot: number): boolean {
    const w = slot >>> 5;
    if (w >= this.words.length) this.grow(w + 1);
    const mask = 1 << (slot & 31);
    if ((this.words[w] & mask) !== 0) return false;
    this.words[w] |= mask;
    this.size++;
    return true;
  }

  /** Clears the bit; true when it was set. */
  delete(slot: number): boolean {
    const w = slot >>> 5;
    if (w >= this.words.length) return false;
    const mask = 1 << (slot & 31);
    if ((this.words[w] & mask) === 0) return false;
    this.words[w] &= ~mask;
    this.size--;
    return true;
  }

  /** this |= other. */
  or(other: Bitset): void {
    const src = other.words;
    if (src.length > this.words.length) this.grow(src.length);
    const dst = this.words;
    let size = 0;
    for (let i = 0; i < src.length; i++) dst[i] |= src[i];
    for (let i = 0; i < dst.length; i++) size += popcount(dst[i]);
    this.size = size;
  }

  clone(): Bitset {
    const copy = new Bitset();
    copy.words = this.words.slice();
    copy.size = this.size;
    return copy;
  }

  forEach(fn: (slot: number) => void): void {
    if (this.size > 0) forEachBit(this.words, fn);
  }

  equals(other: Bitset): boolean {
    if (this.size !== other.size) return false;
    const a = this.words;
    const b = other.words;
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
    // Equal sizes and equal common words leave no bits in the longer tail.
    return true;
  }

  private grow(minWords: number): void {
    const next = new Uint32Array(Math.max(minWords, Math.ceil(this.words.length * 1.5), 2));
    next.set(this.words);
    this.words = next;
  }
}

export const EMPTY_BITSET: Bitset = new Bitset();

/**
 * The slots carrying one role attribute: a plain Set while small, a bitset once it holds more than
 * 1/32 of the slots in use (where a bitset is smaller than the Set), so that widely used attributes
 * are OR-ed word by word while rare ones cost a few bytes.
 */
export class SlotSet {
  private set: Set<number> | undefined = new Set();
  private bits: Bitset | undefined;

  constructor(readonly name: string) {}

  get size(): number {
    return this.bits ? this.bits.size : this.set!.size;
  }

  get bitset(): Bitset | undefined {
    return this.bits;
  }

  has(slot: number): boolean {
    return this.bits ? this.bits.has(slot) : this.set!.has(slot);
  }

  add(slot: number, slotsInUse: number): void {
    if (this.bits) {
      this.bits.add(slot);
      return;
    }
    const set = this.set!;
    set.add(slot);
    if (set.size > 64 && set.size * 32 > slotsInUse) {
      const bits = new Bitset();
      for (const s of set) bits.add(s);
      this.bits = bits;
      this.set = undefined;
    }
  }

  delete(slot: number): void {
    if (this.bits) this.bits.delete(slot);
    else this.set!.delete(slot);
  }

  forEach(fn: (slot: number) => void): void {
    if (this.bits) this.bits.forEach(fn);
    else for (const s of this.set!) fn(s);
  }

  /** target |= this. */
  orInto(target: Bitset): void {
    if (this.bits) target.or(this.bits);
    else for (const s of this.set!) target.add(s);
  }
}
