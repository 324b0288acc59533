//! Block-private counters in shared memory, as whole `u32` words or packed two or four to a word
//! (16- or 8-bit digits), for the kernels of [`super::channels`], [`super::edges`],
//! [`super::segmented`] and [`super::hist2d`].
//!
//! Packing doubles (or quadruples) the bins one block holds: 65,536 bins in 128 KiB of 16-bit
//! digits, where `u32` counters would need 256 KiB, more than a block gets. Every add stays one
//! native `atom.shared.add.u32` (Hopper has native shared-memory atomics for 32-bit integers
//! only), and the counts stay exact for any input: a digit that wraps carries into the digit above
//! it (or out of the word), and the lane whose add made the carry sees it in the value the atomic
//! returns. Atomics are linearizable, so every carry is seen by exactly one lane, which adds its
//! correction into the global counters at once ([`carries`]): a carry out of digit `j` is worth
//! `2^w` to counter `j` and `-1` to counter `j + 1` (whose digit received it), `w` being the digit
//! width. The block then adds its digits as they stand, and the global counters end exact
//! (modulo 2^32, which `n <= u32::MAX` values never reach). Carries are rare: one per 65,536
//! adds to one 16-bit digit.
//!
//! Counter `i` lives in word `i >> packing` (of `copies` interleaved copies: word `w` of copy `c`
//! at `w * copies + c`), digit `i & (per_word - 1)`, bits `w * digit ..`.

/// The most counters packed into a word, as `log2`: four 8-bit digits.
pub const MAX_PACKING: u32 = 2;

/// Counters per 32-bit word: 1, 2 or 4.
pub const fn per_word(packing: u32) -> u32 {
    1 << packing
}

/// Bits per counter: 32, 16 or 8.
pub const fn digit_bits(packing: u32) -> u32 {
    32 >> packing
}

/// Words that hold `counters` counters (one copy).
pub const fn words_for(counters: u32, packing: u32) -> u32 {
    counters.div_ceil(per_word(packing))
}

/// Whether `counters` counters packed `2^packing` to a word fit in `capacity` 32-bit words.
///
/// ```
/// use kernels::histogram::packed::fits;
/// assert!(fits(65_536, 1, 58_112) && !fits(65_536, 0, 58_112));
/// assert!(fits(232_448, 2, 58_112) && !fits(232_449, 2, 58_112));
/// ```
pub const fn fits(counters: u64, packing: u32, capacity: u64) -> bool {
    counters.div_ceil(per_word(packing) as u64) <= capacity
}

/// The narrowest packing from `least` up to [`MAX_PACKING`] at which `counters` counters fit in
/// `capacity` words ([`fits`]); `None` when not even 8-bit digits fit.
///
/// ```
/// use kernels::histogram::packed::narrowest_packing;
/// assert_eq!(narrowest_packing(256, 0, 58_112), Some(0));
/// assert_eq!(narrowest_packing(256, 1, 58_112), Some(1));
/// assert_eq!(narrowest_packing(116_225, 0, 58_112), Some(2));
/// assert_eq!(narrowest_packing(232_449, 0, 58_112), None);
/// ```
pub const fn narrowest_packing(counters: u64, least: u32, capacity: u64) -> Option<u32> {
    let mut p = least;
    while p <= MAX_PACKING {
        if fits(counters, p, capacity) {
            return Some(p);
        }
        p += 1;
    }
    None
}

/// Shared memory of `copies` copies of `counters` counters, bytes.
pub const fn counter_bytes(counters: u32, packing: u32, copies: u32) -> u64 {
    words_for(counters, packing) as u64 * copies as u64 * 4
}

/// The carries an add of `inc` to digit `digit` makes in a word that held `old` (`inc` below
/// `2^digit_bits(packing)`): how many boundaries it crossed, from the boundary above `digit`
/// upward (a carry into a full digit goes on, so the crossed boundaries are consecutive). Boundary
/// `b` (from 1 to `per_word`) lies above digit `b - 1`; boundary `per_word` is the top of the
/// word. Each crossed boundary `b` is corrected with `+2^w` to counter `b - 1` of the word and,
/// below the top, `-1` to counter `b`.
///
/// ```
/// use kernels::histogram::packed::carries;
/// assert_eq!(carries(0x0000_FFFF, 0, 1, 1), 1); // the low 16-bit digit wraps into the high one
/// assert_eq!(carries(0xFFFF_FFFF, 0, 1, 1), 2); // ... which wraps out of the word
/// assert_eq!(carries(0xFFFF_0000, 1, 1, 1), 1); // the high digit wraps out of the word
/// assert_eq!(carries(0x0000_FFFE, 0, 1, 1), 0);
/// ```
pub const fn carries(old: u32, digit: u32, inc: u32, packing: u32) -> u32 {
    let w = digit_bits(packing);
    let add = (inc as u64) << (w * digit);
    let mut count = 0;
    let mut b = digit + 1;
    while b <= per_word(packing) {
        let bits = w * b;
        let low = old as u64 & ((1u64 << bits) - 1);
        if (low + add) >> bits == 0 {
            break;
        }
        count += 1;
        b += 1;
    }
    count
}

/// Whether an add of `inc` to digit `digit` of a word that held `old` carried at all: the test the
/// hot loop makes before the rare path of [`carries`].
#[inline(always)]
pub const fn carried(old: u32, digit: u32, inc: u32, packing: u32) -> bool {
    let w = digit_bits(packing);
    let bits = w * (digit + 1);
    let low = old as u64 & ((1u64 << bits) - 1);
    (low + ((inc as u64) << (w * digit))) >> bits != 0
}

/// The value of digit `digit` of `word`.
#[inline(always)]
pub const fn digit_of(word: u32, digit: u32, packing: u32) -> u32 {
    if packing == 0 { word } else { (word >> (digit_bits(packing) * digit)) & ((1 << digit_bits(packing)) - 1) }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{carried, carries, digit_bits, digit_of, per_word, words_for};
    use crate::device::shared::DynamicSharedArray;
    use crate::device::{atomic, thread, warp};

    /// `copies` interleaved copies of `counters` counters packed `2^P` to a word in this block's
    /// shared memory, added into the global `counts` (one `u32` per counter).
    #[derive(Clone, Copy)]
    pub(crate) struct SharedCounters<const P: u32> {
        words: DynamicSharedArray<u32>,
        counters: u32,
        copies: u32,
        counts: *mut u32,
    }

    impl<const P: u32> SharedCounters<P> {
        /// The counters over `words` (at least `words_for(counters, P) * copies` words).
        ///
        /// # Safety
        /// `copies` is a power of two from 1 to 32; `words` holds the words above; `counts` holds
        /// `counters` `u32` in global memory that nothing but the histogram kernels accesses
        /// during the launch.
        #[inline(always)]
        pub(crate) unsafe fn new(words: DynamicSharedArray<u32>, counters: u32, copies: u32, counts: *mut u32) -> Self {
            Self { words, counters, copies, counts }
        }

        /// Words of all copies.
        #[inline(always)]
        fn len(&self) -> u32 {
            words_for(self.counters, P) * self.copies
        }

        /// Zeroes every word; the block's threads share the work. A barrier must follow before
        /// any add.
        #[inline(always)]
        pub(crate) fn zero(&self) {
            let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
            let mut i = tid;
            while i < self.len() {
                // SAFETY: i < len, inside the words; each thread zeroes its own.
                unsafe { self.words.store(i as usize, 0) };
                i += threads;
            }
        }

        /// This lane's copy: lane `l` adds into copy `l % copies`, so equal counters of one warp
        /// land on different addresses and banks.
        #[inline(always)]
        pub(crate) fn copy(&self) -> u32 {
            warp::lane_id() & (self.copies - 1)
        }

        /// Adds `inc` (at most `2^digit_bits(P) - 1`) to counter `counter` in copy `copy`.
        ///
        /// # Safety
        /// `counter < counters` and `copy < copies`.
        #[inline(always)]
        pub(crate) unsafe fn add(&self, counter: u32, copy: u32, inc: u32) {
            let word = counter >> P;
            let addr = self.words.address_of((word * self.copies + copy) as usize);
            if P == 0 {
                // SAFETY: inside the words by the caller's contract; red.shared is atomic.
                unsafe { atomic::shared_add_u32(addr, inc) };
                return;
            }
            let digit = counter & (per_word(P) - 1);
            // SAFETY: as above; atom.shared returns the word before this add.
            let old = unsafe { atomic::shared_fetch_add_u32(addr, inc << (digit_bits(P) * digit)) };
            if carried(old, digit, inc, P) {
                // SAFETY: forwarded contract.
                unsafe { self.correct(old, word, digit, inc) };
            }
        }

        /// The shared-window address of copy `copy`'s first counter (plain counters): the base of
        /// [`SharedCounters::add_one_in_32`]'s addresses for a lane of that copy.
        #[inline(always)]
        pub(crate) fn copy_address(&self, copy: u32) -> u32 {
            self.words.address_of(copy as usize)
        }

        /// [`SharedCounters::add`] of 1 to plain counters in 32 copies, from this lane's
        /// [`SharedCounters::copy_address`]: a shift by a constant folds into the address
        /// arithmetic, one instruction before the atomic (8-bit values at 256 bins: 91-94% of the
        /// H200's copy bandwidth in a CUDA C model of this loop, against 76% with `add`'s
        /// multiply by the run-time copy count and the clamp of the value into the bins).
        ///
        /// # Safety
        /// `P == 0`, 32 copies, `copy_address` is [`SharedCounters::copy_address`] of this lane's
        /// copy, and `counter < counters`.
        #[inline(always)]
        pub(crate) unsafe fn add_one_in_32(&self, copy_address: u32, counter: u32) {
            // SAFETY: inside the words by the caller's contract; red.shared is atomic.
            unsafe { atomic::shared_add_u32(copy_address + (counter << 7), 1) };
        }

        /// The rare path of [`SharedCounters::add`]: the carries of one add, corrected in the
        /// global counters (see the module documentation).
        ///
        /// # Safety
        /// As [`SharedCounters::add`].
        #[inline(always)]
        unsafe fn correct(&self, old: u32, word: u32, digit: u32, inc: u32) {
            let crossed = carries(old, digit, inc, P);
            let first = word * per_word(P);
            let mut b = digit + 1;
            while b <= digit + crossed {
                // Digits past the last counter (in the last word) only ever receive carries and
                // are never flushed: their corrections are left out. The adds wrap modulo 2^32.
                // SAFETY (both): the indices are checked against `counters`, the length of `counts`.
                if first + b - 1 < self.counters {
                    unsafe { atomic::global_add_u32(self.counts.add((first + b - 1) as usize), 1 << digit_bits(P)) };
                }
                if b < per_word(P) && first + b < self.counters {
                    unsafe { atomic::global_add_u32(self.counts.add((first + b) as usize), u32::MAX) };
                }
                b += 1;
            }
        }

        /// [`flush`](Self::flush) without re-zeroing, for 16-bit digits (`P = 1`): each thread
        /// takes a word, both counters of which are adjacent in `counts`, and adds their sums in
        /// one `red.global.add.u64` (half the global atomics of one per counter) where `counts`
        /// is 8-byte aligned (else one per counter, as `flush`). The low counter of a pair takes
        /// only non-negative adds (its own digit sums and carries from its digit), so its
        /// running value stays below its final count and carries nothing into its neighbour
        /// while that count stays below 2^32; the high counter's wrapping corrections
        /// (`u32::MAX`) wrap within its own 32 bits, the carry out of bit 63 being dropped.
        #[inline(always)]
        pub(crate) fn flush_pairs(&self, counts: *mut u32) {
            if P != 1 || !(counts as usize).is_multiple_of(8) {
                self.flush(counts, false);
                return;
            }
            let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
            let copies = self.copies;
            let words = words_for(self.counters, 1);
            let mut w = tid;
            while w < words {
                let (mut lo, mut hi) = (0u32, 0u32);
                for c in 0..copies {
                    // Rotating the first copy by the word puts a warp's loads in different banks.
                    let c = (c + w) & (copies - 1);
                    // SAFETY: w * copies + c < len; the barrier before the flush ordered it.
                    let word = unsafe { self.words.load((w * copies + c) as usize) };
                    lo += word & 0xFFFF;
                    hi += word >> 16;
                }
                let first = 2 * w;
                if first + 1 < self.counters {
                    if lo | hi != 0 {
                        // SAFETY: counters first and first + 1 lie inside `counts`, 8-byte aligned
                        // there (counts is, and first is even).
                        unsafe {
                            atomic::global_add_u64(
                                counts.add(first as usize).cast::<u64>(),
                                lo as u64 | (hi as u64) << 32,
                            )
                        };
                    }
                } else if lo != 0 {
                    // SAFETY: first < counters: the last counter, alone in its word.
                    unsafe { atomic::global_add_u32(counts.add(first as usize), lo) };
                }
                w += threads;
            }
        }

        /// Adds every counter (summed over the copies) into `counts` (`counters` `u32`; for
        /// packed counters the `counts` the corrections went to); the block's threads share the
        /// work. A barrier must precede it (every add has landed). With `rezero` it leaves the
        /// counters zero, so that after a barrier the block can count again: plain counters are
        /// zeroed by the thread that read them, packed ones after a barrier of their own (several
        /// threads read one word).
        #[inline(always)]
        pub(crate) fn flush(&self, counts: *mut u32, rezero: bool) {
            let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
            let copies = self.copies;
            let mut i = tid;
            while i < self.counters {
                let word = i >> P;
                let digit = i & (per_word(P) - 1);
                let mut sum = 0u32;
                for c in 0..copies {
                    // Rotating the first copy by the counter puts a warp's loads in different banks.
                    let c = (c + i) & (copies - 1);
                    let at = (word * copies + c) as usize;
                    // SAFETY: at < len; the barrier before the flush ordered it. With P = 0 this
                    // thread is the only one to read word `word` of each copy, so it may zero it.
                    unsafe {
                        sum += digit_of(self.words.load(at), digit, P);
                        if rezero && P == 0 {
                            self.words.store(at, 0);
                        }
                    }
                }
                if sum != 0 {
                    // SAFETY: i < counters, inside `counts`.
                    unsafe { atomic::global_add_u32(counts.add(i as usize), sum) };
                }
                i += threads;
            }
            if rezero && P != 0 {
                // Every thread's reads of a word come before any zeroing of it.
                thread::sync_threads();
                self.zero();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Adds `incs` (counter, amount) one after another to one word, applying the corrections the
    /// way the kernels do, and returns the word's counters reconstructed as the flush would add
    /// them (digits plus corrections, modulo 2^32).
    fn simulate(packing: u32, incs: &[(u32, u32)]) -> [u32; 4] {
        let (w, per) = (digit_bits(packing), per_word(packing));
        let mut word = 0u32;
        let mut global = [0u32; 4];
        for &(digit, inc) in incs {
            let old = word;
            word = word.wrapping_add(inc << (w * digit));
            let crossed = carries(old, digit, inc, packing);
            assert_eq!(carried(old, digit, inc, packing), crossed > 0);
            for b in digit + 1..=digit + crossed {
                global[(b - 1) as usize] = global[(b - 1) as usize].wrapping_add(1 << w);
                if b < per {
                    global[b as usize] = global[b as usize].wrapping_sub(1);
                }
            }
        }
        for d in 0..per {
            global[d as usize] = global[d as usize].wrapping_add(digit_of(word, d, packing));
        }
        global
    }

    #[test]
    fn packed_counts_are_exact_through_every_carry_and_wrap_out_of_the_word() {
        for packing in 1..=MAX_PACKING {
            let (w, per) = (digit_bits(packing), per_word(packing));
            // A pseudo-random walk of adds that makes every digit wrap many times.
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            let mut incs = Vec::new();
            let mut truth = [0u64; 4];
            let limit = 1u32 << w;
            for _ in 0..(per as usize * (limit as usize) * 6) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mostly the top digit and single adds, sometimes a warp's 32 at once.
                let digit = if state.is_multiple_of(3) { per - 1 } else { (state >> 8) as u32 % per };
                let inc = if (state >> 20).is_multiple_of(16) { 32.min(limit - 1) } else { 1 };
                incs.push((digit, inc));
                truth[digit as usize] += inc as u64;
            }
            let got = simulate(packing, &incs);
            for d in 0..per as usize {
                assert_eq!(got[d], truth[d] as u32, "packing {packing}, counter {d}");
                assert!(truth[d] > limit as u64, "the walk wraps counter {d}");
            }
        }
    }

    #[test]
    fn one_carry_per_wrap_of_a_16_bit_digit() {
        let incs = vec![(0u32, 1u32); 65_536 * 3 + 5];
        assert_eq!(simulate(1, &incs)[..2], [65_536 * 3 + 5, 0]);
        let (mut word, mut seen) = (0u32, 0);
        for _ in 0..incs.len() {
            seen += carries(word, 0, 1, 1);
            word = word.wrapping_add(1);
        }
        assert_eq!(seen, 3);
    }

    #[test]
    fn carries_cascade_through_full_digits_only() {
        // 8-bit digits: digit 1 full, an add to digit 0 carries through it into digit 2.
        assert_eq!(carries(0x0000_FFFF, 0, 1, 2), 2);
        assert_eq!(carries(0x0000_FEFF, 0, 1, 2), 1);
        assert_eq!(carries(0xFFFF_FFFF, 1, 1, 2), 3);
        assert_eq!(carries(0x00FF_0000, 2, 1, 2), 1);
        assert_eq!(carries(0x00FE_0000, 2, 1, 2), 0);
        assert_eq!(carries(0x00E0_0000, 2, 32, 2), 1);
        assert_eq!(carries(u32::MAX, 0, 1, 0), 1);
    }

    #[test]
    fn layout_sizes_round_up_to_whole_words() {
        assert_eq!(words_for(65_536, 1), 32_768);
        assert_eq!(words_for(65_537, 1), 32_769);
        assert_eq!(words_for(5, 2), 2);
        assert_eq!(counter_bytes(65_536, 1, 1), 128 << 10);
        assert_eq!(counter_bytes(256, 0, 32), 32 << 10);
        assert_eq!(digit_of(0xAABB_CCDD, 1, 2), 0xCC);
        assert_eq!(digit_of(0xAABB_CCDD, 1, 1), 0xAABB);
        assert_eq!(digit_of(0xAABB_CCDD, 0, 0), 0xAABB_CCDD);
    }
}
