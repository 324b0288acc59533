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
//! Counter `i` lives in word `i / per_word` (of `copies` interleaved copies: word `w` of copy `c`
//! at `w * copies + c`), digit `i % per_word`, bits `w * digit ..` ([`word_of`], [`digit_index`]).
//!
//! 6-bit digits ([`SIX_BIT_PACKING`], five to a word) hold 280,320 bins in one block of an H100
//! or H200 but carry every 64 adds, and 4-bit digits ([`FOUR_BIT_PACKING`], eight to a word)
//! 389,120, carrying every 16; both keep their carries in a table in shared memory
//! ([`carry_table_slots`]) instead of sending each to global memory.

/// The most counters packed into a word, as `log2`: four 8-bit digits.
pub const MAX_PACKING: u32 = 2;

/// The packing code of 6-bit digits, five to a word (bits 30 and 31 of a word belong to no digit:
/// a carry out of the top digit lands there and is corrected like a carry out of the word).
/// Unlike packings 0 to 3, not the base-2 logarithm of the counters per word: a word and digit
/// take a division by 5 ([`word_of`]).
///
/// ```
/// use kernels::histogram::packed::{SIX_BIT_PACKING, digit_bits, per_word, word_of, digit_index};
/// assert_eq!((per_word(SIX_BIT_PACKING), digit_bits(SIX_BIT_PACKING)), (5, 6));
/// assert_eq!((word_of(12, SIX_BIT_PACKING), digit_index(12, SIX_BIT_PACKING)), (2, 2));
/// ```
pub const SIX_BIT_PACKING: u32 = 4;

/// The packing code of 4-bit digits, eight to a word, as counters with a carry table (the same
/// digits as the carry plane's, [`CARRY_PLANE_PACKING`]): they hold the most bins of one block,
/// 389,120 on an H100 or H200 ([`carry_table_capacity`]), but carry every 16 adds, so only with
/// the carry table, whose slot counts a counter's values once it carried ([`carry_table_slots`]).
/// A warp's merged add (up to 32) may carry twice out of a digit; see [`add_exact`].
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, digit_bits, per_word, word_of, digit_index};
/// assert_eq!((per_word(FOUR_BIT_PACKING), digit_bits(FOUR_BIT_PACKING)), (8, 4));
/// assert_eq!((word_of(12, FOUR_BIT_PACKING), digit_index(12, FOUR_BIT_PACKING)), (1, 4));
/// ```
pub const FOUR_BIT_PACKING: u32 = 3;

/// Whether counters of packing `packing` keep their carries in a carry table
/// ([`carry_table_slots`]): 6- and 4-bit digits.
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, has_carry_table};
/// assert!(has_carry_table(SIX_BIT_PACKING) && has_carry_table(FOUR_BIT_PACKING));
/// assert!(!has_carry_table(1) && !has_carry_table(2));
/// ```
#[inline(always)]
pub const fn has_carry_table(packing: u32) -> bool {
    packing == SIX_BIT_PACKING || packing == FOUR_BIT_PACKING
}

/// Counters per 32-bit word: 1, 2, 4 or 8 (the carry plane's 4-bit digits), or 5 for
/// [`SIX_BIT_PACKING`].
#[inline(always)]
pub const fn per_word(packing: u32) -> u32 {
    if packing == SIX_BIT_PACKING { 5 } else { 1 << packing }
}

/// Bits per counter: 32, 16, 8 or 4, or 6 for [`SIX_BIT_PACKING`].
#[inline(always)]
pub const fn digit_bits(packing: u32) -> u32 {
    if packing == SIX_BIT_PACKING { 6 } else { 32 >> packing }
}

/// The word of counter `counter` (in one copy): a shift, or for 6-bit digits a division by 5
/// (a multiply-high and a shift).
#[inline(always)]
pub const fn word_of(counter: u32, packing: u32) -> u32 {
    if packing == SIX_BIT_PACKING { counter / 5 } else { counter >> packing }
}

/// The digit of counter `counter` within its word ([`word_of`]).
#[inline(always)]
pub const fn digit_index(counter: u32, packing: u32) -> u32 {
    if packing == SIX_BIT_PACKING { counter - word_of(counter, packing) * 5 } else { counter & ((1 << packing) - 1) }
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
/// `2^digit_bits(packing)`, or up to 32 for 4-bit digits, whose boundary above `digit` may then
/// carry two units: see [`add_exact`]): how many boundaries it crossed, from the boundary above `digit`
/// upward (a carry into a full digit goes on, so the crossed boundaries are consecutive). Boundary
/// `b` (from 1 to `per_word`) lies above digit `b - 1`; boundary `per_word` is the top of the
/// word (bit 30 for 6-bit digits, whose last two bits no counter reads). Each crossed boundary `b` is corrected with `+2^w` to counter `b - 1` of the word and,
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
/// hot loop makes before the rare path of [`carries`]. The digits below `digit` receive nothing,
/// so the add carries exactly when the digit itself overflows: one shift, mask and compare in 32
/// bits (the hot loop's registers), not a 64-bit sum over the digits up to it.
///
/// ```
/// use kernels::histogram::packed::carried;
/// assert!(carried(0x0000_FFFF, 0, 1, 1) && !carried(0x0000_FFFE, 0, 1, 1));
/// assert!(carried(0xFFFF_0000, 1, 1, 1) && !carried(0xFFFE_FFFF, 1, 1, 1));
/// assert!(carried(0x00E0_0000, 2, 32, 2) && !carried(0x00DF_FFFF, 2, 32, 2));
/// assert!(carried(u32::MAX, 0, 1, 0) && !carried(u32::MAX - 1, 0, 1, 0));
/// ```
#[inline(always)]
pub const fn carried(old: u32, digit: u32, inc: u32, packing: u32) -> bool {
    if packing == 0 {
        return old.overflowing_add(inc).1;
    }
    let mask = (1u32 << digit_bits(packing)) - 1;
    digit_of(old, digit, packing) + inc > mask
}

/// The value of digit `digit` of `word`.
#[inline(always)]
pub const fn digit_of(word: u32, digit: u32, packing: u32) -> u32 {
    if packing == 0 { word } else { (word >> (digit_bits(packing) * digit)) & ((1 << digit_bits(packing)) - 1) }
}

/// The packing of the carry plane: 4-bit digits, eight to a word.
///
/// With 8-bit counters a digit carries out every 256 adds, and the plain correction of a carry is
/// two global atomics (`+256` to the counter, `-1` to the digit above, which received the carry).
/// A constant input makes every carry of every block land on the same two global counters, which
/// serializes in L2 (H200, 2^26 `i32` in 131,072 bins: 0.463 ms against 0.114 on uniform values).
/// The carry plane keeps each counter's carries in a 4-bit digit of its own in shared memory, and
/// the digit above is corrected in shared memory too ([`borrows`]): a counter then reaches global
/// memory once per 4,096 adds (12 bits) instead of twice per 256, and 131,072 bins take 192 KiB
/// (128 KiB of 8-bit digits and 64 KiB of carries).
pub const CARRY_PLANE_PACKING: u32 = 3;

/// Mode bit of the packed kernels: warps merge the lanes whose value falls in lane 0's bin into
/// one add (a constant input then makes one atomic per warp and value, not 32 on one address).
pub const MODE_AGGREGATE: u32 = 1 << 8;

/// Mode bit of the packed kernels: the counters' carries go to a carry plane
/// ([`CARRY_PLANE_PACKING`]) that follows the counters in shared memory.
pub const MODE_CARRY_PLANE: u32 = 1 << 9;

/// The `mode` argument of the packed kernels (`histogram_packed_*`): the packing (1 or 2) and the
/// [`MODE_AGGREGATE`] and [`MODE_CARRY_PLANE`] bits. A plain packing (1 or 2) is the mode of
/// neither.
///
/// ```
/// use kernels::histogram::packed::{MODE_AGGREGATE, MODE_CARRY_PLANE, mode, mode_parts};
/// assert_eq!(mode(2, false, false), 2);
/// assert_eq!(mode(2, true, true), 2 | MODE_AGGREGATE | MODE_CARRY_PLANE);
/// assert_eq!(mode_parts(mode(1, true, false)), (1, true, false));
/// ```
pub const fn mode(packing: u32, aggregate: bool, carry_plane: bool) -> u32 {
    packing | if aggregate { MODE_AGGREGATE } else { 0 } | if carry_plane { MODE_CARRY_PLANE } else { 0 }
}

/// The packing, aggregation and carry plane of a packed kernel's `mode` ([`mode`]).
///
/// ```
/// use kernels::histogram::packed::mode_parts;
/// assert_eq!(mode_parts(2), (2, false, false));
/// ```
pub const fn mode_parts(mode: u32) -> (u32, bool, bool) {
    (mode & 0xFF, mode & MODE_AGGREGATE != 0, mode & MODE_CARRY_PLANE != 0)
}

/// Shared memory of the carry plane of `counters` counters, bytes (one copy: the plane is indexed
/// by counter, whatever the counters' copies).
///
/// ```
/// use kernels::histogram::packed::carry_plane_bytes;
/// assert_eq!(carry_plane_bytes(131_072), 64 << 10);
/// assert_eq!(carry_plane_bytes(9), 8);
/// ```
pub const fn carry_plane_bytes(counters: u32) -> u64 {
    words_for(counters, CARRY_PLANE_PACKING) as u64 * 4
}

/// Whether `counters` 8-bit counters and their carry plane fit in `capacity` 32-bit words.
///
/// ```
/// use kernels::histogram::packed::{carry_plane_capacity, fits_with_carry_plane};
/// assert!(fits_with_carry_plane(131_072, 58_112) && !fits_with_carry_plane(232_448, 58_112));
/// // One block of the H100 or H200 (227 KiB): 154,964 counters.
/// assert_eq!(carry_plane_capacity(58_112), 154_964);
/// assert!(fits_with_carry_plane(154_964, 58_112) && !fits_with_carry_plane(154_965, 58_112));
/// ```
pub const fn fits_with_carry_plane(counters: u64, capacity: u64) -> bool {
    counters.div_ceil(per_word(2) as u64) + counters.div_ceil(per_word(CARRY_PLANE_PACKING) as u64) <= capacity
}

/// The most 8-bit counters that fit in `capacity` 32-bit words with their carry plane
/// ([`fits_with_carry_plane`]): three eighths of a word each.
pub const fn carry_plane_capacity(capacity: u64) -> u64 {
    let mut counters = capacity * 8 / 3 + 8;
    while counters > 0 && !fits_with_carry_plane(counters, capacity) {
        counters -= 1;
    }
    counters
}

/// Slots of the carry table of counters of packing `packing` ([`has_carry_table`]): a key word
/// (the counter; [`CARRY_TABLE_FREE`]: free) and a count word each, in shared memory after the
/// counters: 1,024 for 6-bit digits ([`SIX_BIT_PACKING`]), 4,096 for 4-bit ones
/// ([`FOUR_BIT_PACKING`]). A carry out of a digit (every 64 or 16 adds) adds 64 or 16 to its
/// counter's slot (found with a load, claimed with a compare-and-swap on the first carry) and is
/// taken back from the digit above in shared memory: only carries that find no slot within
/// [`CARRY_TABLE_PROBES`] of their counter's, and the rare cascades and borrows, reach the global
/// counts. A counter that holds its first slot ([`carry_table_slot`]) adds its later values there
/// directly, so that it carries no more. A slot is taken by a counter that carries in this block,
/// one that gets 64 (or 16) of its values: skewed inputs, whose hot bins carry again and again,
/// hold a few hundred to a few thousand (zipf values with exponent 1.1 over 262,144 bins, 2^26 /
/// 132 values a block: about 550 counters reach 64, about 1,900 reach 16, hence the 4-bit
/// digits' larger table). Without the table a constant input's carries were 2^26 / 64 global
/// atomics on one address, serialized in L2 (1.8 ms on the H200 in a CUDA C model of the loop).
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_table_slots};
/// assert_eq!((carry_table_slots(SIX_BIT_PACKING), carry_table_slots(FOUR_BIT_PACKING)), (1024, 4096));
/// ```
#[inline(always)]
pub const fn carry_table_slots(packing: u32) -> u32 {
    if packing == FOUR_BIT_PACKING { 4096 } else { 1024 }
}

/// Slots a carry tries, from its counter's ([`carry_table_slot`]) on, before it goes to the
/// global counts.
pub const CARRY_TABLE_PROBES: u32 = 8;

/// The carry table's first slot for `counter` (counters of packing `packing`): its low bits, so
/// that a run of up to [`carry_table_slots`] neighbouring hot bins holds distinct first slots
/// (the slot a counter's values may add to directly). Later probes step [`CARRY_TABLE_STEP`]
/// slots, so that a counter whose first slot a run holds looks beyond the run.
///
/// ```
/// use kernels::histogram::packed::{SIX_BIT_PACKING, carry_table_slot, carry_table_slots};
/// let six = SIX_BIT_PACKING;
/// assert!((0..100_000).all(|c| carry_table_slot(c, six) < carry_table_slots(six)));
/// assert_ne!(carry_table_slot(0, six), carry_table_slot(1, six));
/// ```
#[inline(always)]
pub const fn carry_table_slot(counter: u32, packing: u32) -> u32 {
    counter & (carry_table_slots(packing) - 1)
}

/// Threads a block of the 6-bit carry-table kernels (`histogram_packed6_*`) may
/// have, their `.maxntid`: the read of a counter's own slot key takes the 6-bit kernels to 74-84
/// registers a thread uncapped, so that the `f32` and `u8` kernels would run 640 and 736 threads
/// a block and 1,024 none; capped, all run 768 (ptxas holds the 6-bit kernels to 62-66 registers,
/// no spills). The 4-bit kernels, whose carry queue needs more registers, take
/// [`carry_table_threads`].
pub const CARRY_TABLE_THREADS: u32 = 768;

/// Threads a block of the carry-table kernels of packing `packing` may have, their `.maxntid`:
/// [`CARRY_TABLE_THREADS`] for 6-bit digits, 640 for 4-bit ones, whose carry queue
/// ([`carry_queue_words`]) and its settle, one carry a lane, need more than the 80 registers
/// that 768 threads leave (ptxas spilled 144-252 bytes there; 96 at 640 threads). On the H200 the
/// 6-bit kernels ran uniform values at 0.136 ms with 768 threads and 0.137 with 640.
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_table_threads};
/// assert_eq!((carry_table_threads(SIX_BIT_PACKING), carry_table_threads(FOUR_BIT_PACKING)), (768, 640));
/// ```
#[inline(always)]
pub const fn carry_table_threads(packing: u32) -> u32 {
    if packing == FOUR_BIT_PACKING { 640 } else { CARRY_TABLE_THREADS }
}

/// The `.maxntid` of `histogram_packed4_u8`, below [`carry_table_threads`]: its loop counts four
/// batches of a 16-byte vector, and with the carry queue's settle it spilled 8 bytes at 640
/// threads' 96 registers. Its queues are laid out for 640 threads all the same.
pub const FOUR_BIT_U8_THREADS: u32 = 512;

/// The stride of the carry table's probes after the first (odd, so that the probes of a
/// counter are distinct slots).
pub const CARRY_TABLE_STEP: u32 = 389;

/// The carry table's slot a probe tries after `slot` ([`CARRY_TABLE_STEP`] on, wrapping), for
/// counters of packing `packing`.
#[inline(always)]
pub const fn carry_table_next(slot: u32, packing: u32) -> u32 {
    (slot + CARRY_TABLE_STEP) & (carry_table_slots(packing) - 1)
}

/// A free slot's key in the carry table (no counter: a block's counters are fewer than 2^19).
pub const CARRY_TABLE_FREE: u32 = u32::MAX;

/// Entries of one warp's carry queue ([`carry_queue_words`]): a warp settles its queued carries
/// when the next ones would not fit, one a lane.
pub const CARRY_QUEUE_LEN: u32 = 32;

/// Words of the warps' carry queues of counters of packing `packing`, after the carry table:
/// [`CARRY_QUEUE_LEN`] entries of two words a warp of a block of [`carry_table_threads`] for 4-bit digits, none for
/// 6-bit ones. 4-bit digits carry every 16 adds: skewed values make a few thousand carries a
/// block, each a long path (the table's probes, the take-back from the digit above and its
/// borrow test) that one lane ran while its warp waited. Queued ([`queued_carry`] and the word
/// the add returned) and settled 32 at a time, one a lane, the warp runs that path once per 32
/// carries: on the H200 zipf values over 300,000 bins took 0.169 ms against 0.320 (2^26 `i32`).
/// 6-bit digits carry a quarter as often, and their table keeps its room for bins.
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_queue_words};
/// assert_eq!((carry_queue_words(SIX_BIT_PACKING), carry_queue_words(FOUR_BIT_PACKING)), (0, 1280));
/// ```
#[inline(always)]
pub const fn carry_queue_words(packing: u32) -> u32 {
    if packing == FOUR_BIT_PACKING { carry_table_threads(packing) / 32 * CARRY_QUEUE_LEN * 2 } else { 0 }
}

/// Words of the carry table of counters of packing `packing` with the warps' carry queues: a key
/// and a count per slot, then [`carry_queue_words`].
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_table_words};
/// assert_eq!((carry_table_words(SIX_BIT_PACKING), carry_table_words(FOUR_BIT_PACKING)), (2048, 9472));
/// ```
#[inline(always)]
pub const fn carry_table_words(packing: u32) -> u32 {
    2 * carry_table_slots(packing) + carry_queue_words(packing)
}

/// Shared memory of the carry table of counters of packing `packing` and of its carry queues,
/// bytes ([`carry_table_words`]).
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_table_bytes};
/// assert_eq!((carry_table_bytes(SIX_BIT_PACKING), carry_table_bytes(FOUR_BIT_PACKING)), (8 << 10, 37_888));
/// ```
pub const fn carry_table_bytes(packing: u32) -> u64 {
    carry_table_words(packing) as u64 * 4
}

/// The first word of a queued carry of 4-bit counter `counter` (below 2^19) by an add of `inc`
/// (at most 32); the second is the word the add returned. What the carry's corrections need
/// ([`carries`], how many carries left the digit) is worked out when it is settled, once for 32
/// carries, not in the loop over the values.
///
/// ```
/// use kernels::histogram::packed::{queued_carry, queued_carry_parts};
/// assert_eq!(queued_carry_parts(queued_carry(399_359, 32)), (399_359, 32));
/// ```
#[inline(always)]
pub const fn queued_carry(counter: u32, inc: u32) -> u32 {
    counter | inc << 19
}

/// The counter and increment of a [`queued_carry`] word.
#[inline(always)]
pub const fn queued_carry_parts(entry: u32) -> (u32, u32) {
    (entry & ((1 << 19) - 1), entry >> 19)
}

/// The most counters of packing `packing` ([`has_carry_table`]) that fit in `capacity` 32-bit
/// words with their carry table.
///
/// ```
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_table_capacity};
/// // One block of the H100 or H200 (227 KiB, 58,112 words).
/// assert_eq!(carry_table_capacity(58_112, SIX_BIT_PACKING), 280_320);
/// assert_eq!(carry_table_capacity(58_112, FOUR_BIT_PACKING), 389_120);
/// assert_eq!(carry_table_capacity(100, SIX_BIT_PACKING), 0);
/// ```
pub const fn carry_table_capacity(capacity: u64, packing: u32) -> u64 {
    capacity.saturating_sub(carry_table_words(packing) as u64) * per_word(packing) as u64
}

/// The borrows a subtraction of one from digit `digit` of a word that held `old` makes: how many
/// boundaries it crosses downward, from the boundary above `digit` upward (digit `digit` and the
/// digits above it that were zero wrap to all ones). Each crossed boundary `b` is corrected with
/// `-2^w` to counter `b - 1` of the word and, below the top, `+1` to counter `b`.
///
/// ```
/// use kernels::histogram::packed::borrows;
/// assert_eq!(borrows(0x0000_0100, 1, 2), 0); // digit 1 held 1
/// assert_eq!(borrows(0x0001_0000, 1, 2), 1); // digit 1 held 0: it borrows from digit 2
/// assert_eq!(borrows(0x0000_0000, 1, 2), 3); // ... and on out of the word
/// assert_eq!(borrows(0x0000_0000, 7, 3), 1);
/// ```
pub const fn borrows(old: u32, digit: u32, packing: u32) -> u32 {
    let mut count = 0;
    let mut b = digit + 1;
    while b <= per_word(packing) && digit_of(old, b - 1, packing) == 0 {
        count += 1;
        b += 1;
    }
    count
}

/// The shared and global memory the exact packed add works on ([`add_exact`]): the kernels' is
/// shared memory and global atomics; the tests' a model that lets other adds interleave.
pub trait CounterMemory {
    /// Adds `value` (modulo 2^32) to word `word` of the counters (`plane` false: the word index
    /// includes the copy) or of the carry plane (`plane` true) and returns the word before it,
    /// atomically.
    ///
    /// # Safety
    /// `word` lies inside the plane it names.
    unsafe fn fetch_add(&mut self, plane: bool, word: u32, value: u32) -> u32;

    /// Adds `value` (modulo 2^32) to the global count of counter `counter`, atomically.
    ///
    /// # Safety
    /// `counter` is below the counters' number.
    unsafe fn add_count(&mut self, counter: u32, value: u32);

    /// Counts one carry of counter `counter`, worth `unit` counts (`2^digit_bits`), in the carry
    /// table ([`carry_table_slots`]) and returns true, or returns false where the counters have
    /// no table or it has no slot left for the counter (the default: no table).
    ///
    /// # Safety
    /// `counter` is below the counters' number.
    unsafe fn count_carry(&mut self, counter: u32, unit: u32) -> bool {
        let _ = (counter, unit);
        false
    }
}

/// Applies the corrections of `crossed` boundaries crossed upward from the boundary above `digit`
/// of a word whose counters start at `first`, each worth `unit` counts per digit step, in the
/// global counts (counters at or past `counters` only ever receive carries and are left out).
#[inline(always)]
unsafe fn correct_carries<M: CounterMemory>(
    m: &mut M,
    counters: u32,
    first: u32,
    digit: u32,
    crossed: u32,
    packing: u32,
    unit: u32,
) {
    let mut b = digit + 1;
    while b <= digit + crossed {
        if first + b - 1 < counters {
            // SAFETY: checked against counters.
            unsafe { m.add_count(first + b - 1, unit << digit_bits(packing)) };
        }
        if b < per_word(packing) && first + b < counters {
            // SAFETY: checked against counters.
            unsafe { m.add_count(first + b, unit.wrapping_neg()) };
        }
        b += 1;
    }
}

/// Takes one from digit `digit` (below the top) of word `word` of a plane, in shared memory; the
/// rare borrows it makes are corrected in the global counts (see [`borrows`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn take_one<M: CounterMemory>(
    m: &mut M,
    plane: bool,
    word: u32,
    counters: u32,
    first: u32,
    digit: u32,
    packing: u32,
    unit: u32,
) {
    // SAFETY: forwarded: the word lies inside its plane.
    let old = unsafe { m.fetch_add(plane, word, (1u32 << (digit_bits(packing) * digit)).wrapping_neg()) };
    let crossed = borrows(old, digit, packing);
    let mut b = digit + 1;
    while b <= digit + crossed {
        if first + b - 1 < counters {
            // SAFETY: checked against counters.
            unsafe { m.add_count(first + b - 1, (unit << digit_bits(packing)).wrapping_neg()) };
        }
        if b < per_word(packing) && first + b < counters {
            // SAFETY: checked against counters.
            unsafe { m.add_count(first + b, unit) };
        }
        b += 1;
    }
}

/// Adds `inc` (1 to `2^digit_bits(packing) - 1`, or to 32 for [`FOUR_BIT_PACKING`]) to counter
/// `counter` (below `counters`) packed [`per_word`]`(packing)` to a word (`packing` 1, 2,
/// [`SIX_BIT_PACKING`] or [`FOUR_BIT_PACKING`]), whose word, of this lane's copy, is `slot` of the
/// counters, and corrects every carry it makes so that the counts stay exact: in the global counts
/// (see the module documentation) or, with `kept`, in shared memory: for 6- and 4-bit digits in
/// the carry table ([`CounterMemory::count_carry`]), else in the carry plane
/// ([`CARRY_PLANE_PACKING`]), whose digit of the counter is worth `2^digit_bits(packing)` counts.
/// A warp's merged add of up to 32 to a 4-bit digit carries out of it once or twice (its digit
/// plus the add over 16 or over 32): each is a carry, taken back from the digit above one at a
/// time. A single carry adds one to the counter's carry digit (or table count) and takes the
/// carry back from the digit above in shared memory; only the plane's own carries, carries that
/// find no slot in the table, the rare cascades and the borrows reach the global counts. At the
/// end, a counter's count is its digits over the copies, plus its carry digit (or table count)
/// times `2^digit_bits(packing)`, plus what reached its global count.
///
/// # Safety
/// `counter < counters`; `slot` is the word of `counter` in one copy; with `kept` and 8- or 16-bit
/// digits the plane holds `words_for(counters, CARRY_PLANE_PACKING)` words.
///
/// ```
/// use kernels::histogram::packed::{CounterMemory, add_exact};
/// struct Plain { low: Vec<u32>, plane: Vec<u32>, counts: Vec<u32> }
/// impl CounterMemory for Plain {
///     unsafe fn fetch_add(&mut self, plane: bool, word: u32, value: u32) -> u32 {
///         let w = if plane { &mut self.plane[word as usize] } else { &mut self.low[word as usize] };
///         let old = *w;
///         *w = old.wrapping_add(value);
///         old
///     }
///     unsafe fn add_count(&mut self, counter: u32, value: u32) {
///         self.counts[counter as usize] = self.counts[counter as usize].wrapping_add(value);
///     }
/// }
/// let mut m = Plain { low: vec![0; 1], plane: vec![0; 1], counts: vec![0; 4] };
/// for _ in 0..1000 {
///     unsafe { add_exact(&mut m, 2, 4, 1, 0, 1, true) };
/// }
/// // 1000 = 3 * 256 + 232: three carries wait in the plane, none reached global memory.
/// assert_eq!((m.low[0], m.plane[0], m.counts[1]), (232 << 8, 3 << 4, 0));
/// ```
#[inline(always)]
pub unsafe fn add_exact<M: CounterMemory>(
    m: &mut M,
    packing: u32,
    counters: u32,
    counter: u32,
    slot: u32,
    inc: u32,
    kept: bool,
) {
    let digit = digit_index(counter, packing);
    // SAFETY: forwarded: slot is the counter's word.
    let old = unsafe { m.fetch_add(false, slot, inc << (digit_bits(packing) * digit)) };
    if carried(old, digit, inc, packing) {
        // SAFETY: forwarded contract.
        unsafe { carry(m, packing, counters, counter, slot, old, inc, kept) };
    }
}

/// The rare path of [`add_exact`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn carry<M: CounterMemory>(
    m: &mut M,
    packing: u32,
    counters: u32,
    counter: u32,
    slot: u32,
    old: u32,
    inc: u32,
    kept: bool,
) {
    let (crossed, amount) = carry_size(packing, counter, old, inc);
    // SAFETY: forwarded contract.
    unsafe { carry_counted(m, packing, counters, counter, slot, crossed, amount, kept) };
}

/// The boundaries an add of `inc` to `counter` crossed ([`carries`]) where its word held `old`,
/// and its carries out of the counter's own digit: 1, or 2 where a merged add of over 16 met a
/// 4-bit digit (8- and 16-bit digits take every add of at most 32 with one).
#[inline(always)]
const fn carry_size(packing: u32, counter: u32, old: u32, inc: u32) -> (u32, u32) {
    let digit = digit_index(counter, packing);
    let crossed = carries(old, digit, inc, packing);
    let amount =
        if packing == FOUR_BIT_PACKING { (digit_of(old, digit, packing) + inc) >> digit_bits(packing) } else { 1 };
    (crossed, amount)
}

/// [`carry`] of an add that crossed `crossed` boundaries with `amount` carries out of its own
/// digit ([`carry_size`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn carry_counted<M: CounterMemory>(
    m: &mut M,
    packing: u32,
    counters: u32,
    counter: u32,
    slot: u32,
    crossed: u32,
    amount: u32,
    kept: bool,
) {
    let digit = digit_index(counter, packing);
    let first = counter - digit;
    if kept && has_carry_table(packing) && crossed == 1 {
        // Each carry: counted in the table (or, where it has no room for the counter, made in
        // the global counts) and taken back from the digit above in shared memory, which keeps
        // that digit's own carries rare. (Left there, with the table correcting both counters
        // at the flush, zipf values over 262,144 bins took 0.293 ms on the H200 against 0.212.)
        for _ in 0..amount {
            // SAFETY (all): counter < counters.
            if !unsafe { m.count_carry(counter, 1 << digit_bits(packing)) } {
                unsafe { m.add_count(counter, 1 << digit_bits(packing)) };
            }
            if digit + 1 < per_word(packing) {
                // SAFETY: the same word of the counters.
                unsafe { take_one(m, false, slot, counters, first, digit + 1, packing, 1) };
            }
        }
        return;
    }
    if !kept || crossed != 1 {
        // SAFETY (both): forwarded: the corrections are checked against counters.
        unsafe { correct_carries(m, counters, first, digit, crossed, packing, 1) };
        if amount > 1 {
            // The boundary above the digit carried `amount` units, of which the line above
            // corrected one.
            unsafe { correct_carries(m, counters, first, digit, 1, packing, amount - 1) };
        }
        return;
    }
    // One carry: out of this counter's digit into the digit above (or out of the word).
    let (q, unit) = (CARRY_PLANE_PACKING, 1u32 << digit_bits(packing));
    let (pword, pdigit) = (counter >> q, counter & (per_word(q) - 1));
    // SAFETY: counter < counters: its word is inside the plane.
    let pold = unsafe { m.fetch_add(true, pword, 1 << (digit_bits(q) * pdigit)) };
    if carried(pold, pdigit, 1, q) {
        let pcrossed = carries(pold, pdigit, 1, q);
        let pfirst = counter - pdigit;
        if pcrossed == 1 {
            // SAFETY: counter < counters.
            unsafe { m.add_count(counter, unit << digit_bits(q)) };
            if pdigit + 1 < per_word(q) {
                // SAFETY: the same plane word.
                unsafe { take_one(m, true, pword, counters, pfirst, pdigit + 1, q, unit) };
            }
        } else {
            // SAFETY: checked against counters.
            unsafe { correct_carries(m, counters, pfirst, pdigit, pcrossed, q, unit) };
        }
    }
    if digit + 1 < per_word(packing) {
        // SAFETY: the same word of the counters.
        unsafe { take_one(m, false, slot, counters, first, digit + 1, packing, 1) };
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{
        CARRY_PLANE_PACKING, CARRY_QUEUE_LEN, CARRY_TABLE_FREE, CARRY_TABLE_PROBES, CounterMemory, add_exact, carried,
        carries, carry_counted, carry_size, carry_table_next, carry_table_slot, carry_table_slots, digit_bits,
        digit_index, digit_of, per_word, queued_carry, queued_carry_parts, word_of, words_for,
    };
    use crate::device::shared::DynamicSharedArray;
    use crate::device::{atomic, thread, warp};
    use core::cell::Cell;

    /// `copies` interleaved copies of `counters` counters packed `per_word(P)` to a word in this
    /// block's shared memory, added into the global `counts` (one `u32` per counter).
    #[derive(Clone, Copy)]
    pub(crate) struct SharedCounters<const P: u32> {
        words: DynamicSharedArray<u32>,
        counters: u32,
        copies: u32,
        counts: *mut u32,
        /// The carry plane ([`CARRY_PLANE_PACKING`]), if the counters have one.
        plane: Option<DynamicSharedArray<u32>>,
        /// The carry table of 6- or 4-bit digits (`carry_table_slots(P)` keys, then as many
        /// counts of values), if the counters have one.
        table: Option<DynamicSharedArray<u32>>,
    }

    /// The kernels' [`CounterMemory`] of counters of packing `P`: this block's shared words and the
    /// global counts.
    struct Device<const P: u32> {
        words: DynamicSharedArray<u32>,
        plane: Option<DynamicSharedArray<u32>>,
        table: Option<DynamicSharedArray<u32>>,
        counts: *mut u32,
    }

    impl<const P: u32> CounterMemory for Device<P> {
        #[inline(always)]
        unsafe fn fetch_add(&mut self, plane: bool, word: u32, value: u32) -> u32 {
            let words = if plane { self.plane.unwrap_or(self.words) } else { self.words };
            // SAFETY: the caller's word is inside the plane; atom.shared is atomic.
            unsafe { atomic::shared_fetch_add_u32(words.address_of(word as usize), value) }
        }

        #[inline(always)]
        unsafe fn add_count(&mut self, counter: u32, value: u32) {
            // SAFETY: counter < counters, inside counts; red.global is atomic.
            unsafe { atomic::global_add_u32(self.counts.add(counter as usize), value) };
        }

        #[inline(always)]
        unsafe fn count_carry(&mut self, counter: u32, unit: u32) -> bool {
            let Some(table) = self.table else { return false };
            let key = counter;
            let mut slot = carry_table_slot(counter, P);
            for _ in 0..CARRY_TABLE_PROBES {
                // A load finds a held slot without the compare-and-swap's wait; the
                // compare-and-swap claims a free slot for one counter only.
                // SAFETY (all): slot < carry_table_slots(P), inside the table's keys and counts.
                let mut held = unsafe { atomic::shared_load_relaxed_u32(table.address_of(slot as usize)) };
                if held == CARRY_TABLE_FREE {
                    held = unsafe {
                        atomic::shared_compare_exchange_u32(table.address_of(slot as usize), CARRY_TABLE_FREE, key)
                    };
                }
                if held == CARRY_TABLE_FREE || held == key {
                    // The slot counts values (a carry is `unit` of them): the counter's later
                    // values may add there directly (SharedCounters::fetch_hot).
                    unsafe { atomic::shared_add_u32(table.address_of((carry_table_slots(P) + slot) as usize), unit) };
                    return true;
                }
                slot = carry_table_next(slot, P);
            }
            false
        }
    }

    /// This warp's queue of carries waiting to be settled ([`carry_queue_words`](super::carry_queue_words)):
    /// [`CARRY_QUEUE_LEN`] entries of two words in shared memory and their number, the same in
    /// every lane.
    pub(crate) struct CarryQueue {
        entries: DynamicSharedArray<u32>,
        len: Cell<u32>,
    }

    impl CarryQueue {
        /// The queue of this warp in `queues` (`2 * CARRY_QUEUE_LEN` words per warp of the
        /// block), empty.
        ///
        /// # Safety
        /// `queues` holds `2 * CARRY_QUEUE_LEN` words per warp of the block, used by nothing else.
        #[inline(always)]
        pub(crate) unsafe fn new(queues: DynamicSharedArray<u32>) -> Self {
            let base = thread::thread_idx_x() / 32 * 2 * CARRY_QUEUE_LEN;
            // SAFETY: this warp's words lie inside `queues` (caller's contract).
            let entries = unsafe {
                DynamicSharedArray::from_shared_address(queues.address_of(base as usize), 2 * CARRY_QUEUE_LEN as usize)
            };
            Self { entries, len: Cell::new(0) }
        }

        /// Stores entry `at`: the [`queued_carry`] word and the word its add returned.
        ///
        /// # Safety
        /// `at < CARRY_QUEUE_LEN`.
        #[inline(always)]
        unsafe fn store(&self, at: u32, entry: u32, old: u32) {
            // SAFETY (both): 2 at + 1 < 2 CARRY_QUEUE_LEN, inside this warp's words.
            unsafe { self.entries.store(2 * at as usize, entry) };
            unsafe { self.entries.store(2 * at as usize + 1, old) };
        }

        /// Queues the carries of up to four adds of each lane to `counters` in copy `copy`: the
        /// add of `incs[i]` to `counter[i]` that returned `old[i]`, where `carried[i]`. Settles
        /// the queue first, one carry a lane, when they would not fit.
        ///
        /// # Safety
        /// The whole warp calls it together, with the same queue and counters; each carried add
        /// is one to these counters in copy `copy` that carried ([`SharedCounters::carried_at`]).
        #[inline(always)]
        pub(crate) unsafe fn push<const P: u32>(
            &self,
            counters: &SharedCounters<P>,
            copy: u32,
            carried: [bool; 4],
            counter: [u32; 4],
            incs: [u32; 4],
            old: [u32; 4],
        ) {
            let below = warp::lanemask_lt();
            let len = self.len.get();
            // SAFETY (all): the whole warp is here (caller's contract).
            let lanes = unsafe {
                [warp::ballot(carried[0]), warp::ballot(carried[1]), warp::ballot(carried[2]), warp::ballot(carried[3])]
            };
            let n = lanes.map(u32::count_ones);
            if len + n[0] + n[1] + n[2] + n[3] <= CARRY_QUEUE_LEN {
                // The common case, without a loop: every carry fits.
                let at = [len, len + n[0], len + n[0] + n[1], len + n[0] + n[1] + n[2]];
                // Written out with constant indices, so that the arrays stay in registers.
                let store_if = |i: usize| {
                    if carried[i] {
                        // SAFETY: at[i] + the lanes below < len + n <= CARRY_QUEUE_LEN.
                        unsafe {
                            self.store(
                                at[i] + (lanes[i] & below).count_ones(),
                                queued_carry(counter[i], incs[i]),
                                old[i],
                            )
                        };
                    }
                };
                store_if(0);
                store_if(1);
                store_if(2);
                store_if(3);
                self.len.set(at[3] + n[3]);
                return;
            }
            // A loop over the four, not four copies: the settle it calls is long.
            let mut len = len;
            let mut k = 0u32;
            while k < 4 {
                let pick = |a: [u32; 4]| {
                    if k == 0 {
                        a[0]
                    } else if k == 1 {
                        a[1]
                    } else if k == 2 {
                        a[2]
                    } else {
                        a[3]
                    }
                };
                let ballot = pick(lanes);
                let flag = ballot & (1 << warp::lane_id()) != 0;
                let count = ballot.count_ones();
                if len + count > CARRY_QUEUE_LEN {
                    // SAFETY: forwarded: the whole warp, its queue.
                    unsafe { self.settle(counters, copy, len) };
                    len = 0;
                }
                if flag {
                    // SAFETY: len + the lanes below < len + count <= CARRY_QUEUE_LEN.
                    unsafe {
                        self.store(
                            len + (ballot & below).count_ones(),
                            queued_carry(pick(counter), pick(incs)),
                            pick(old),
                        )
                    };
                }
                len += count;
                k += 1;
            }
            self.len.set(len);
        }

        /// Settles every queued carry (at the end of the block's adds).
        ///
        /// # Safety
        /// As [`CarryQueue::push`].
        #[inline(always)]
        pub(crate) unsafe fn finish<const P: u32>(&self, counters: &SharedCounters<P>, copy: u32) {
            // SAFETY: forwarded contract.
            unsafe { self.settle(counters, copy, self.len.get()) };
            self.len.set(0);
        }

        /// Lanes below `len` settle one queued carry each.
        ///
        /// # Safety
        /// As [`CarryQueue::push`], with `len` the queue's entries.
        #[inline(always)]
        unsafe fn settle<const P: u32>(&self, counters: &SharedCounters<P>, copy: u32, len: u32) {
            // SAFETY (both): the whole warp is here; bar.warp.sync orders the lanes' stores to
            // the entries before their loads, and the loads before the next pushes' stores.
            unsafe { warp::sync_warp() };
            let lane = warp::lane_id();
            if lane < len {
                // SAFETY: lane < len <= CARRY_QUEUE_LEN; the entry was queued by push, settled once.
                unsafe {
                    counters.settle_queued(
                        self.entries.load(2 * lane as usize),
                        self.entries.load(2 * lane as usize + 1),
                        copy,
                    )
                };
            }
            unsafe { warp::sync_warp() };
        }
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
            Self { words, counters, copies, counts, plane: None, table: None }
        }

        /// These 6- or 4-bit counters ([`has_carry_table`](super::has_carry_table)) with a carry
        /// table over `table` (`2 * carry_table_slots(P)` words, apart from the counters' words):
        /// see [`add_exact`](super::add_exact).
        ///
        /// # Safety
        /// `table` holds those words; `has_carry_table(P)`.
        #[inline(always)]
        pub(crate) unsafe fn with_carry_table(self, table: DynamicSharedArray<u32>) -> Self {
            Self { table: Some(table), ..self }
        }

        /// Whether the carries of these counters stay in shared memory (a plane or a table).
        #[inline(always)]
        fn keeps_carries(&self) -> bool {
            self.plane.is_some() || self.table.is_some()
        }

        /// The [`CounterMemory`] of these counters.
        #[inline(always)]
        fn memory(&self) -> Device<P> {
            Device { words: self.words, plane: self.plane, table: self.table, counts: self.counts }
        }

        /// These counters with a carry plane over `plane` (`words_for(counters,
        /// CARRY_PLANE_PACKING)` words, apart from the counters' words): see
        /// [`add_exact`](super::add_exact).
        ///
        /// # Safety
        /// `plane` holds those words; packing `P` is 1 or 2.
        #[inline(always)]
        pub(crate) unsafe fn with_carry_plane(self, plane: DynamicSharedArray<u32>) -> Self {
            Self { plane: Some(plane), ..self }
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
            if let Some(plane) = self.plane {
                let mut i = tid;
                while i < words_for(self.counters, CARRY_PLANE_PACKING) {
                    // SAFETY: inside the plane's words; each thread zeroes its own.
                    unsafe { plane.store(i as usize, 0) };
                    i += threads;
                }
            }
            if let Some(table) = self.table {
                let mut i = tid;
                while i < 2 * carry_table_slots(P) {
                    // SAFETY: inside the table's words; each thread zeroes its own.
                    unsafe { table.store(i as usize, if i < carry_table_slots(P) { CARRY_TABLE_FREE } else { 0 }) };
                    i += threads;
                }
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
            let word = word_of(counter, P);
            let addr = self.words.address_of((word * self.copies + copy) as usize);
            if P == 0 {
                // SAFETY: inside the words by the caller's contract; red.shared is atomic.
                unsafe { atomic::shared_add_u32(addr, inc) };
                return;
            }
            if self.keeps_carries() {
                let mut m = self.memory();
                // SAFETY: forwarded contract; the word of the counter in this copy; the plane
                // holds the counters' carry digits.
                unsafe { add_exact(&mut m, P, self.counters, counter, word * self.copies + copy, inc, true) };
                return;
            }
            let digit = digit_index(counter, P);
            // SAFETY: as above; atom.shared returns the word before this add.
            let old = unsafe { atomic::shared_fetch_add_u32(addr, inc << (digit_bits(P) * digit)) };
            if carried(old, digit, inc, P) {
                // SAFETY: forwarded contract.
                unsafe { self.correct(old, word, digit, inc) };
            }
        }

        /// This lane's idle counter for [`SharedCounters::fetch`]: digit 0 of word `lane /
        /// copies` of a copy (wrapped into its words), whose word in this lane's copy is word
        /// `lane` of the block's words: a warp's idle adds fall on distinct words, and on distinct
        /// banks where a copy has 32 words or more. A counter of the histogram
        /// (`idle_counter() < counters`).
        #[inline(always)]
        pub(crate) fn idle_counter(&self) -> u32 {
            ((warp::lane_id() / self.copies) % words_for(self.counters, P)) * per_word(P)
        }

        /// The first half of [`SharedCounters::add`] for packed counters (`P` 1 or 2), which every
        /// lane of a warp runs: where `when` holds, the shared atomic of an add of `inc` to
        /// counter `counter` in copy `copy`; elsewhere an add of 0 to the word of `idle`
        /// ([`SharedCounters::idle_counter`]) in that copy, which changes nothing. Returns the
        /// word the atomic found, for [`SharedCounters::settle`], and the bit where the counter's
        /// digit starts in its word, for [`SharedCounters::carried_at`] (computed once for both:
        /// recomputed there, it took the 16-bit kernels from 0.088 to 0.092 ms at 65,536 bins on
        /// the H200). A kernel issues several values'
        /// atomics before it settles any: each settle waits on its atomic's result, and a loop
        /// that settled each add before the next waited out one shared-memory round trip per
        /// value. The atomic runs in every lane because ptxas compiled a predicated one (`@p
        /// atom.shared`, for a lane that might not add) into a branch around it: a convergence
        /// barrier, the branch, its end and a zeroed result, four more instructions a value in
        /// kernels bound by their instructions.
        ///
        /// # Safety
        /// Where `when` holds, `counter < counters` and `inc` is at most `2^digit_bits(P) - 1`;
        /// `idle` is this lane's [`SharedCounters::idle_counter`]; `copy < copies`.
        #[inline(always)]
        pub(crate) unsafe fn fetch(&self, when: bool, counter: u32, idle: u32, copy: u32, inc: u32) -> (u32, u32) {
            let word = if when { word_of(counter, P) } else { word_of(idle, P) };
            let shift = digit_bits(P) * digit_index(counter, P);
            let addr = self.words.address_of((word * self.copies + copy) as usize);
            let add = if when { inc << shift } else { 0 };
            // SAFETY: the counter (or idle) < counters and copy < copies: inside the words
            // (caller's contract); atom.shared is atomic and returns the word before this add.
            (unsafe { atomic::shared_fetch_add_u32(addr, add) }, shift)
        }

        /// [`SharedCounters::fetch`] for 6- or 4-bit counters with a carry table: where the counter
        /// holds the first table slot its carries probe (`carry_table_slot`), the value is added
        /// to that slot's count (32 bits, which counts values) instead of its digit, so that a
        /// counter hot enough to carry in this block carries no more. Returns `fetch`'s pair and
        /// whether the add went to the digit (`when` and not to the slot), for
        /// [`SharedCounters::carried_at`].
        ///
        /// # Safety
        /// As [`SharedCounters::fetch`], with a carry table.
        #[inline(always)]
        pub(crate) unsafe fn fetch_hot(
            &self,
            when: bool,
            counter: u32,
            idle: u32,
            copy: u32,
            inc: u32,
        ) -> (u32, u32, bool) {
            let Some(table) = self.table else {
                // SAFETY: forwarded contract.
                let (old, shift) = unsafe { self.fetch(when, counter, idle, copy, inc) };
                return (old, shift, when);
            };
            let slot = carry_table_slot(counter, P);
            // SAFETY: slot < carry_table_slots(P), a key of the table. A key once set stays: a
            // stale free key or another counter's sends the value to its digit, as exact.
            let key = unsafe { atomic::shared_load_relaxed_u32(table.address_of(slot as usize)) };
            let hot = when & (key == counter);
            let word = if when { word_of(counter, P) } else { word_of(idle, P) };
            let shift = digit_bits(P) * digit_index(counter, P);
            let addr = if hot {
                table.address_of((carry_table_slots(P) + slot) as usize)
            } else {
                self.words.address_of((word * self.copies + copy) as usize)
            };
            let add = if hot {
                inc
            } else if when {
                inc << shift
            } else {
                0
            };
            // SAFETY: the slot's count or the counter's (or idle's) word, as in fetch; atomic.
            (unsafe { atomic::shared_fetch_add_u32(addr, add) }, shift, when & !hot)
        }

        /// Whether the add [`SharedCounters::fetch`] made with these arguments carried out of
        /// its digit, `(old, shift)` being what it returned (an idle add carries nothing): the
        /// test before the rare path of [`SharedCounters::settle`].
        #[inline(always)]
        pub(crate) fn carried_at(&self, when: bool, inc: u32, (old, shift): (u32, u32)) -> bool {
            if P == 0 {
                return when & old.overflowing_add(inc).1;
            }
            let mask = (1u32 << digit_bits(P)) - 1;
            // `&`, not `&&`: one chain of predicates, no branch.
            when & (((old >> shift) & mask) + inc > mask)
        }

        /// The second half of [`SharedCounters::add`]: the corrections of the carries of an add
        /// [`SharedCounters::fetch`] made that carried ([`SharedCounters::carried_at`]), `old`
        /// being the word it returned. Settling adds in another order than their atomics is one
        /// more interleaving of the adds of a block's lanes, which the corrections already allow
        /// (see [`add_exact`](super::add_exact)).
        ///
        /// # Safety
        /// As [`SharedCounters::fetch`]'s, with `when` holding and the same `counter`, `copy`
        /// and `inc`.
        #[inline(always)]
        pub(crate) unsafe fn settle(&self, counter: u32, copy: u32, inc: u32, old: u32) {
            let digit = digit_index(counter, P);
            let word = word_of(counter, P);
            if self.keeps_carries() {
                let mut m = self.memory();
                // SAFETY: forwarded contract; the word of the counter in this copy; the plane
                // holds the counters' carry digits.
                unsafe { super::carry(&mut m, P, self.counters, counter, word * self.copies + copy, old, inc, true) };
            } else {
                // SAFETY: forwarded contract.
                unsafe { self.correct(old, word, digit, inc) };
            }
        }

        /// [`SharedCounters::settle`] of a carry queued as `entry` ([`queued_carry`]) whose add
        /// returned `old`.
        ///
        /// # Safety
        /// `entry` and `old` are of an add to these counters in copy `copy` that carried,
        /// settled once.
        #[inline(always)]
        pub(crate) unsafe fn settle_queued(&self, entry: u32, old: u32, copy: u32) {
            let (counter, inc) = queued_carry_parts(entry);
            let (crossed, amount) = carry_size(P, counter, old, inc);
            let mut m = self.memory();
            // SAFETY: forwarded contract: the counter's word in this copy.
            unsafe {
                carry_counted(
                    &mut m,
                    P,
                    self.counters,
                    counter,
                    word_of(counter, P) * self.copies + copy,
                    crossed,
                    amount,
                    self.keeps_carries(),
                )
            };
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

        /// Adds the counts of the carry table (its counters' carries and the values added in their
        /// slots), if the counters have one, into `counts` (the `counts` the corrections went
        /// to); the block's threads share the work. A barrier must precede it.
        #[inline(always)]
        pub(crate) fn flush_table(&self, counts: *mut u32) {
            let Some(table) = self.table else { return };
            let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
            let mut slot = tid;
            while slot < carry_table_slots(P) {
                // SAFETY: slot < carry_table_slots(P), inside the keys and counts; ordered by the
                // barrier before the flush.
                let (key, carries) =
                    unsafe { (table.load(slot as usize), table.load((carry_table_slots(P) + slot) as usize)) };
                if key != CARRY_TABLE_FREE {
                    // SAFETY: a held key is a counter, below counters.
                    unsafe { atomic::global_add_u32(counts.add(key as usize), carries) };
                }
                slot += threads;
            }
        }

        /// Stores the words of the counters (one copy) as they stand into block `block`'s
        /// `words_for(counters, P)` words of `out`, coalesced, for a kernel that sums every
        /// block's digits afterwards: a store per word where [`flush`](Self::flush) makes a global
        /// atomic per counter. A barrier must precede it.
        ///
        /// # Safety
        /// `copies == 1`; `out` holds `(block + 1) * words_for(counters, P)` words that nothing
        /// else writes during the launch.
        #[inline(always)]
        pub(crate) unsafe fn store_words(&self, out: *mut u32, block: u32) {
            let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
            let words = words_for(self.counters, P);
            // SAFETY: block * words + words words lie inside `out` (the caller's contract).
            let out = unsafe { out.add(block as usize * words as usize) };
            let mut w = tid;
            while w < words {
                // SAFETY: w < words, inside this block's words of `out` and of the counters;
                // ordered by the barrier before it.
                unsafe { out.add(w as usize).write(self.words.load(w as usize)) };
                w += threads;
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
                let word = word_of(i, P);
                let digit = digit_index(i, P);
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
                if let Some(plane) = self.plane {
                    let q = CARRY_PLANE_PACKING;
                    // SAFETY: i < counters: its word is inside the plane; ordered by the barrier.
                    let carries = unsafe { digit_of(plane.load((i >> q) as usize), i & (per_word(q) - 1), q) };
                    sum = sum.wrapping_add(carries << digit_bits(P));
                }
                if sum != 0 {
                    // SAFETY: i < counters, inside `counts`.
                    unsafe { atomic::global_add_u32(counts.add(i as usize), sum) };
                }
                i += threads;
            }
            self.flush_table(counts);
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
    fn simulate(packing: u32, incs: &[(u32, u32)]) -> [u32; 8] {
        let (w, per) = (digit_bits(packing), per_word(packing));
        let mut word = 0u32;
        let mut global = [0u32; 8];
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
        for packing in [1, 2, SIX_BIT_PACKING, FOUR_BIT_PACKING] {
            let (w, per) = (digit_bits(packing), per_word(packing));
            // A pseudo-random walk of adds that makes every digit wrap many times.
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            let mut incs = Vec::new();
            let mut truth = [0u64; 8];
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

    /// Shared words and global counts in which other lanes' whole adds may land between any two
    /// atomics of an add (each injected add may itself be interrupted, two levels deep).
    struct Interleaved {
        low: Vec<u32>,
        plane: Vec<u32>,
        counts: Vec<u32>,
        truth: Vec<u64>,
        state: u64,
        depth: u32,
        packing: u32,
        hot: u32,
        global_adds: u64,
        /// The carry table of 6- or 4-bit counters: (counter, carries), at most `table_room` of
        /// them.
        table: Vec<(u32, u32)>,
        table_room: usize,
    }

    impl Interleaved {
        fn new(packing: u32, counters: u32, hot: u32, table_room: usize) -> Self {
            Interleaved {
                low: vec![0; words_for(counters, packing) as usize],
                plane: vec![0; words_for(counters, CARRY_PLANE_PACKING) as usize],
                counts: vec![0; counters as usize],
                truth: vec![0; counters as usize],
                state: 0x9E37_79B9_7F4A_7C15 ^ (counters as u64) << 8 ^ packing as u64,
                depth: 0,
                packing,
                hot,
                global_adds: 0,
                table: Vec::new(),
                table_room,
            }
        }

        fn next(&mut self) -> u64 {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.state
        }

        /// One add of a lane: mostly the hot counter (a skewed input), by 1 or a warp's 32.
        fn add_one(&mut self) {
            let r = self.next();
            let n = self.truth.len() as u32;
            let counter = if !r.is_multiple_of(4) { self.hot } else { (r >> 8) as u32 % n };
            let inc = if (r >> 32).is_multiple_of(3) { 32 } else { 1 + (r >> 40) as u32 % 3 };
            self.truth[counter as usize] += inc as u64;
            let slot = word_of(counter, self.packing);
            // SAFETY: counter < n; the model's planes hold every word.
            unsafe { add_exact(self, self.packing, n, counter, slot, inc, true) };
        }

        fn flushed(&self) -> Vec<u32> {
            let (p, q) = (self.packing, CARRY_PLANE_PACKING);
            (0..self.truth.len() as u32)
                .map(|i| {
                    let low = digit_of(self.low[word_of(i, p) as usize], digit_index(i, p), p);
                    let carries = if has_carry_table(p) {
                        self.table.iter().filter(|&&(c, _)| c == i).map(|&(_, n)| n).sum()
                    } else {
                        digit_of(self.plane[(i >> q) as usize], i & (per_word(q) - 1), q)
                    };
                    self.counts[i as usize].wrapping_add(low).wrapping_add(carries << digit_bits(p))
                })
                .collect()
        }
    }

    impl CounterMemory for Interleaved {
        unsafe fn fetch_add(&mut self, plane: bool, word: u32, value: u32) -> u32 {
            if self.depth < 2 && self.next().is_multiple_of(5) {
                self.depth += 1;
                for _ in 0..1 + self.next() % 3 {
                    self.add_one();
                }
                self.depth -= 1;
            }
            let w = if plane { &mut self.plane[word as usize] } else { &mut self.low[word as usize] };
            let old = *w;
            *w = old.wrapping_add(value);
            old
        }

        unsafe fn add_count(&mut self, counter: u32, value: u32) {
            self.global_adds += 1;
            self.counts[counter as usize] = self.counts[counter as usize].wrapping_add(value);
        }

        unsafe fn count_carry(&mut self, counter: u32, unit: u32) -> bool {
            if !has_carry_table(self.packing) {
                return false;
            }
            assert_eq!(unit, 1 << digit_bits(self.packing), "a carry is worth one unit of the digit above");
            if let Some(slot) = self.table.iter_mut().find(|(c, _)| *c == counter) {
                slot.1 += 1;
                return true;
            }
            if self.table.len() < self.table_room {
                self.table.push((counter, 1));
                return true;
            }
            false
        }
    }

    #[test]
    fn counts_with_a_carry_plane_or_table_stay_exact_under_interleaved_adds() {
        // 4-bit digits take the model's adds of 32 as two carries (see add_exact).
        for packing in [1, 2, SIX_BIT_PACKING, FOUR_BIT_PACKING] {
            for (counters, hot) in [(9u32, 3u32), (64, 63), (13, 12), (8, 0), (10, 4), (11, 9)] {
                // A table of 3 slots: most counters' carries find none and go to global memory.
                let mut m = Interleaved::new(packing, counters, hot, 3);
                for _ in 0..200_000 {
                    m.add_one();
                }
                let want: Vec<u32> = m.truth.iter().map(|&t| t as u32).collect();
                assert_eq!(m.flushed(), want, "packing {packing}, {counters} counters");
                assert!(m.truth[hot as usize] > 1 << 18, "the hot counter wraps its plane digit many times");
            }
        }
    }

    #[test]
    fn carries_settled_late_and_out_of_order_keep_4_bit_counts_exact() {
        // The 4-bit kernels queue a warp's carries (CarryQueue) and settle up to 32 of them at
        // once, long after their adds and in any order, while other adds (and their carries)
        // land on the same words.
        let packing = FOUR_BIT_PACKING;
        for (counters, hot) in [(9u32, 3u32), (64, 63), (13, 12), (8, 0), (10, 4), (11, 9)] {
            let mut m = Interleaved::new(packing, counters, hot, 3);
            let mut queue: Vec<(u32, u32, u32)> = Vec::new();
            let settle = |m: &mut Interleaved, queue: &mut Vec<(u32, u32, u32)>| {
                // Last queued first: the reverse of the adds' order.
                while let Some((counter, inc, old)) = queue.pop() {
                    let (crossed, amount) = carry_size(packing, counter, old, inc);
                    let slot = word_of(counter, packing);
                    // SAFETY: counter < counters; the model's planes hold every word.
                    unsafe { carry_counted(m, packing, counters, counter, slot, crossed, amount, true) };
                }
            };
            for _ in 0..200_000 {
                let r = m.next();
                let counter = if !r.is_multiple_of(4) { hot } else { (r >> 8) as u32 % counters };
                let inc = if (r >> 32).is_multiple_of(3) { 32 } else { 1 + (r >> 40) as u32 % 3 };
                m.truth[counter as usize] += inc as u64;
                let digit = digit_index(counter, packing);
                // SAFETY: the counter's word; the model may land other adds first.
                let old =
                    unsafe { m.fetch_add(false, word_of(counter, packing), inc << (digit_bits(packing) * digit)) };
                if carried(old, digit, inc, packing) {
                    queue.push((counter, inc, old));
                }
                if queue.len() == CARRY_QUEUE_LEN as usize || (r >> 50).is_multiple_of(61) {
                    settle(&mut m, &mut queue);
                }
            }
            settle(&mut m, &mut queue);
            let want: Vec<u32> = m.truth.iter().map(|&t| t as u32).collect();
            assert_eq!(m.flushed(), want, "{counters} counters");
        }
    }

    #[test]
    fn a_constant_input_reaches_global_memory_once_per_4096_adds_with_the_plane() {
        // One lane adding 32 at a time to one 8-bit counter, without interleaving.
        let mut m = Interleaved::new(2, 4, 1, 0);
        m.depth = 2;
        for _ in 0..(1 << 20) / 32 {
            // SAFETY: counter 1 of 4; one word each.
            unsafe { add_exact(&mut m, 2, 4, 1, 0, 32, true) };
        }
        m.truth[1] = 1 << 20;
        assert_eq!(m.flushed(), [0, 1 << 20, 0, 0]);
        // 256 plane carries, each one global add (the take-back stays in shared memory).
        assert_eq!(m.global_adds, (1 << 20) / 4096);
    }

    #[test]
    fn a_constant_input_never_reaches_global_memory_with_the_carry_table() {
        // One lane adding 32 (or a few) at a time to the top digit of a word, then to a low one.
        for (p, counter) in
            [(SIX_BIT_PACKING, 4u32), (SIX_BIT_PACKING, 6), (FOUR_BIT_PACKING, 7), (FOUR_BIT_PACKING, 9)]
        {
            for inc in [32, 17, 3] {
                let mut m = Interleaved::new(p, 10, counter, 4);
                m.depth = 2;
                let adds = (1 << 20) / inc;
                for _ in 0..adds {
                    // SAFETY: counter < 10; the model holds every word.
                    unsafe { add_exact(&mut m, p, 10, counter, word_of(counter, p), inc, true) };
                }
                m.truth[counter as usize] = (adds * inc) as u64;
                let want: Vec<u32> = m.truth.iter().map(|&t| t as u32).collect();
                assert_eq!(m.flushed(), want, "packing {p}, counter {counter}, +{inc}");
                assert_eq!((m.global_adds, m.table.len()), (0, 1), "packing {p}, counter {counter}, +{inc}");
            }
        }
    }

    #[test]
    fn a_merged_add_over_16_carries_twice_out_of_a_4_bit_digit() {
        let p = FOUR_BIT_PACKING;
        // Digit 2 holds 13; +32 leaves it at 13 and puts 2 in digit 3, +20 at 1 and 2 in digit 3.
        assert_eq!(carries(13 << 8, 2, 32, p), 1);
        assert_eq!(carries(13 << 8, 2, 20, p), 1);
        assert!(carried(13 << 8, 2, 32, p) && carried(0, 2, 16, p) && !carried(0, 2, 15, p));
        // Digit 3 at 14 receives those 2 and carries on into digit 4.
        assert_eq!(carries(14 << 12 | 13 << 8, 2, 32, p), 2);
        // Both through the table and through the global counts, every count stays exact.
        for counters in [8u32, 12, 16] {
            for first in 0..counters {
                let mut m = Interleaved::new(p, counters, first, 2);
                m.depth = 2;
                for k in 0..5_000u32 {
                    let (counter, inc) = ((first + k % 3) % counters, [32, 17, 1, 31, 16][k as usize % 5]);
                    m.truth[counter as usize] += inc as u64;
                    // SAFETY: counter < counters; the model holds every word.
                    unsafe { add_exact(&mut m, p, counters, counter, word_of(counter, p), inc, true) };
                }
                let want: Vec<u32> = m.truth.iter().map(|&t| t as u32).collect();
                assert_eq!(m.flushed(), want, "{counters} counters from {first}");
            }
        }
    }

    #[test]
    fn four_bit_digits_pack_eight_to_a_word_with_a_larger_table() {
        let p = FOUR_BIT_PACKING;
        assert_eq!(words_for(300_000, p), 37_500);
        assert_eq!((word_of(9, p), digit_index(9, p)), (1, 1));
        assert_eq!(digit_of(0xF000_0005, 7, p), 15);
        assert_eq!(digit_of(0xF000_0005, 0, p), 5);
        assert_eq!(carries(15 << 28, 7, 1, p), 1);
        assert_eq!(borrows(0, 5, p), 3);
        // The table of 4,096 slots (32 KiB) and the warps' carry queues.
        assert_eq!(carry_table_bytes(p), (32 << 10) + 4 * carry_queue_words(p) as u64);
        assert!(carry_table_capacity(58_112, p) > carry_table_capacity(58_112, SIX_BIT_PACKING) * 13 / 10);
    }

    #[test]
    fn six_bit_digits_pack_five_to_a_word_with_two_bits_spare() {
        let p = SIX_BIT_PACKING;
        assert_eq!(words_for(262_144, p), 52_429);
        assert_eq!((word_of(9, p), digit_index(9, p), word_of(10, p), digit_index(10, p)), (1, 4, 2, 0));
        assert_eq!(digit_of(0xC000_0000 | 63 << 24 | 5, 4, p), 63);
        assert_eq!(digit_of(0xC000_0000 | 63 << 24 | 5, 0, p), 5);
        // A carry out of the top digit lands in the spare bits: the word's top is bit 30.
        assert_eq!(carries(63 << 24, 4, 1, p), 1);
        assert_eq!(carries(63 << 18 | 63 << 24, 3, 1, p), 2);
        assert!(carried(63 << 24, 4, 1, p) && !carried(62 << 24, 4, 1, p));
        assert_eq!(borrows(0, 3, p), 2);
        assert_eq!(carry_table_bytes(p), 8 << 10);
    }

    #[test]
    fn a_digit_carries_exactly_when_its_add_crosses_a_boundary() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let old = (state >> 16) as u32;
            for packing in [0, 1, 2, SIX_BIT_PACKING, FOUR_BIT_PACKING] {
                let most = (1u64 << digit_bits(packing)) - 1;
                for digit in 0..per_word(packing) {
                    for inc in [1u64, 2, 32, most] {
                        let inc = inc.min(most) as u32;
                        assert_eq!(
                            carried(old, digit, inc, packing),
                            carries(old, digit, inc, packing) > 0,
                            "{old:#x}, digit {digit}, +{inc}, packing {packing}"
                        );
                    }
                }
            }
        }
        // Full digits, the boundary cases.
        for packing in 0..=MAX_PACKING {
            assert!(carried(u32::MAX, 0, 1, packing) && !carried(0, 0, 1, packing));
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
    fn neighbouring_counters_hold_distinct_first_slots_and_a_counters_probes_are_distinct() {
        for packing in [SIX_BIT_PACKING, FOUR_BIT_PACKING] {
            let slots = carry_table_slots(packing);
            let firsts: std::collections::HashSet<u32> =
                (5_000..5_000 + slots).map(|c| carry_table_slot(c, packing)).collect();
            assert_eq!(firsts.len(), slots as usize);
            for counter in [0, 1, 1_023, 1_024, 262_143, 399_359] {
                let first = carry_table_slot(counter, packing);
                let mut slot = first;
                let mut probes = std::collections::HashSet::new();
                for _ in 0..CARRY_TABLE_PROBES {
                    assert!(slot < slots && probes.insert(slot), "counter {counter}: slot {slot}");
                    slot = carry_table_next(slot, packing);
                }
                // A run of held first slots around the counter's own is left within one probe.
                assert!(probes.iter().all(|&p| p == first || p.abs_diff(first) >= 8));
            }
        }
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
