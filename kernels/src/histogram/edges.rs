//! Histograms over arbitrary bin edges (`numpy.histogram(bins=edges)`, CUB's `HistogramRange`):
//! `histogram_edges_{u8,u16,i32,f32}`. `nbins + 1` sorted, strictly increasing, finite `f32`
//! edges; value `v` counts in bin `i` where `edges[i] <= v < edges[i + 1]`, the last bin also
//! taking `v == edges[nbins]`; values outside `[edges[0], edges[nbins]]` and NaN are left out.
//! Comparisons are exact for every input type: `u8`, `u16` and `f32` values compare as `f32`
//! (exactly representable), `i32` values as `f64` (both exact there).
//!
//! A binary search over 256 edges costs eight dependent shared-memory loads per value, more than
//! the H200's bandwidth leaves time for. So the host adds a lookup table over even cells of
//! `[edges[0], edges[nbins]]` ([`cell_of`]: `floor((key - lo) * scale)` in `f32`, one formula on
//! the CPU and the GPU); entry `c` is the bin of the smallest value whose cell is `c` or later
//! ([`first_in_cell`]). The cell function is monotone in the value, so a value of cell `c` has its
//! bin between entries `c` and `c + 1`, and the kernel searches only there ([`bin_in_range`]):
//! with four cells per bin, usually none or one comparison. The table only narrows the search; the
//! bin is always decided by exact comparisons with the edges, so every value, edge values and
//! their neighbours included, counts in numpy's bin.
//!
//! # Paired entries (`pairs`)
//! The search needs entries `c` and `c + 1`: two dependent-free but bank-conflicting
//! shared-memory loads per value, on top of the counter's add, where the even-bins kernel makes
//! only the add (the H200 measured 256 edges at 2.22x the even bins). With `pairs`, each block
//! copies the table into shared memory as one word per cell holding both entries (`table[c] |
//! table[c + 1] << 16`, [`pair_entry`]; bins below 65,536), so a value makes one table load; and
//! the host plans sixteen cells per bin ([`cells_for_pairs`]) instead of four, so that a cell
//! holds an edge, and a value needs a comparison, about four times less often.
//!
//! # Parameters
//! `input`: `n` values (16-byte aligned); `counts`: `nbins` `u32`, added into; `edges`: the
//! `nbins + 1` edges; `table`: `cells + 1` bins ([`first_in_cell`]); `lo`, `hi`: the first and
//! last edges; `scale`: the cells' `f32` scale; `copies`: interleaved copies of the counters per
//! block (a power of two up to 32); `pairs`: nonzero for paired entries (`nbins <= 65,536`).
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`shared_bytes`]`(nbins, cells, copies)`: the counters, then the edges, then the table.
//!
//! # Safety
//! As above; the table is the one [`first_in_cell`] defines for these edges, `cells`, `lo` and
//! `scale` (any other table can put a value in a wrong bin, never out of bounds); `n <= u32::MAX`.

use super::Element;

/// The PTX symbols, in [`super::InputType::ALL`] order.
pub const KERNELS: [&str; 4] =
    ["histogram_edges_u8", "histogram_edges_u16", "histogram_edges_i32", "histogram_edges_f32"];

/// The most cells of the lookup table.
pub const MAX_CELLS: u32 = 8192;

/// Cells of the lookup table for `nbins` bins: four per bin, from 64 to [`MAX_CELLS`].
pub const fn cells_for(nbins: u32) -> u32 {
    let c = nbins.saturating_mul(4);
    if c < 64 {
        64
    } else if c > MAX_CELLS {
        MAX_CELLS
    } else {
        c
    }
}

/// Cells of the lookup table with paired entries: sixteen per bin, from 64 to [`MAX_CELLS`].
///
/// ```
/// use kernels::histogram::edges::{cells_for, cells_for_pairs};
/// assert_eq!((cells_for(256), cells_for_pairs(256)), (1024, 4096));
/// assert_eq!((cells_for_pairs(2), cells_for_pairs(10_000)), (64, 8192));
/// ```
pub const fn cells_for_pairs(nbins: u32) -> u32 {
    let c = nbins.saturating_mul(16);
    if c < 64 {
        64
    } else if c > MAX_CELLS {
        MAX_CELLS
    } else {
        c
    }
}

/// The most bins paired entries take: both entries of a cell in 16 bits each.
pub const MAX_PAIRED_BINS: u32 = 1 << 16;

/// The paired entry of cell `c` (`c < cells`) of a table of `cells + 1` entries: entry `c` in the
/// low 16 bits, entry `c + 1` in the high ones (entries below [`MAX_PAIRED_BINS`]).
///
/// ```
/// use kernels::histogram::edges::{pair_entry, unpair};
/// let table = [0u32, 0, 3, 65_535];
/// assert_eq!(unpair(pair_entry(&table, 1)), (0, 3));
/// assert_eq!(unpair(pair_entry(&table, 2)), (3, 65_535));
/// ```
#[inline(always)]
pub fn pair_entry(table: &[u32], c: usize) -> u32 {
    table[c] | (table[c + 1] << 16)
}

/// The two entries of a paired word: (entry `c`, entry `c + 1`).
#[inline(always)]
pub const fn unpair(word: u32) -> (u32, u32) {
    (word & 0xFFFF, word >> 16)
}

/// Dynamic shared memory of a block: `copies` copies of `nbins` counters, `nbins + 1` edges and
/// `cells + 1` table entries, 4 bytes each.
pub const fn shared_bytes(nbins: u32, cells: u32, copies: u32) -> u64 {
    4 * (nbins as u64 * copies as u64 + nbins as u64 + 1 + cells as u64 + 1)
}

/// The lookup table's cell of a value whose [`EdgeValue::key`] is `key`: `floor((key - lo) *
/// scale)` in `f32` (no fused multiply-add), clamped into `0..cells`; NaN products give cell 0.
/// Monotone in `key`.
#[inline(always)]
pub fn cell_of(key: f32, lo: f32, scale: f32, cells: u32) -> u32 {
    // `as` truncates toward zero (floor of the non-negative product) and saturates; NaN gives 0.
    let c = ((key - lo) * scale) as u32;
    if c >= cells { cells - 1 } else { c }
}

/// The scale of `cells` even cells over `[lo, hi]`, computed in `f32`; 0 (every value in cell 0)
/// where it is not finite and positive, which leaves the search to the whole table range.
pub fn cell_scale(lo: f32, hi: f32, cells: u32) -> f32 {
    let scale = cells as f32 / (hi - lo);
    if scale.is_finite() && scale > 0.0 { scale } else { 0.0 }
}

/// A value type the edges kernels count, with exact comparisons against `f32` edges and a total
/// order for the host's table.
pub trait EdgeValue: Element {
    /// The order of the smallest value that can lie in a range of finite edges.
    const ORDER_MIN: u32;
    /// The order of the largest such value.
    const ORDER_MAX: u32;

    /// The value as an `f32`, rounded to nearest: non-decreasing in the value, exact for `u8`,
    /// `u16` and `f32`.
    fn key(self) -> f32;

    /// `self >= edge`, exactly (false for NaN).
    fn at_least(self, edge: f32) -> bool;

    /// `self <= edge`, exactly (false for NaN).
    fn at_most(self, edge: f32) -> bool;

    /// The value's place in the type's order (`-0.0` just below `+0.0`).
    fn order(self) -> u32;

    /// The value at `order` (an order from [`EdgeValue::ORDER_MIN`] to `ORDER_MAX`).
    fn from_order(order: u32) -> Self;
}

impl EdgeValue for u8 {
    const ORDER_MIN: u32 = 0;
    const ORDER_MAX: u32 = u8::MAX as u32;
    #[inline(always)]
    fn key(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn at_least(self, edge: f32) -> bool {
        self as f32 >= edge
    }
    #[inline(always)]
    fn at_most(self, edge: f32) -> bool {
        self as f32 <= edge
    }
    fn order(self) -> u32 {
        self as u32
    }
    fn from_order(order: u32) -> Self {
        order as u8
    }
}

impl EdgeValue for u16 {
    const ORDER_MIN: u32 = 0;
    const ORDER_MAX: u32 = u16::MAX as u32;
    #[inline(always)]
    fn key(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn at_least(self, edge: f32) -> bool {
        self as f32 >= edge
    }
    #[inline(always)]
    fn at_most(self, edge: f32) -> bool {
        self as f32 <= edge
    }
    fn order(self) -> u32 {
        self as u32
    }
    fn from_order(order: u32) -> Self {
        order as u16
    }
}

impl EdgeValue for i32 {
    const ORDER_MIN: u32 = 0;
    const ORDER_MAX: u32 = u32::MAX;
    #[inline(always)]
    fn key(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn at_least(self, edge: f32) -> bool {
        self as f64 >= edge as f64
    }
    #[inline(always)]
    fn at_most(self, edge: f32) -> bool {
        self as f64 <= edge as f64
    }
    fn order(self) -> u32 {
        (self as u32) ^ 0x8000_0000
    }
    fn from_order(order: u32) -> Self {
        (order ^ 0x8000_0000) as i32
    }
}

impl EdgeValue for f32 {
    /// `-inf`: the orders below it are negative NaNs.
    const ORDER_MIN: u32 = 0x007F_FFFF;
    /// `+inf`: the orders above it are positive NaNs.
    const ORDER_MAX: u32 = 0xFF80_0000;
    #[inline(always)]
    fn key(self) -> f32 {
        self
    }
    #[inline(always)]
    fn at_least(self, edge: f32) -> bool {
        self >= edge
    }
    #[inline(always)]
    fn at_most(self, edge: f32) -> bool {
        self <= edge
    }
    fn order(self) -> u32 {
        let b = self.to_bits();
        if b >> 31 == 1 { !b } else { b | 0x8000_0000 }
    }
    fn from_order(order: u32) -> Self {
        f32::from_bits(if order >> 31 == 1 { order & 0x7FFF_FFFF } else { !order })
    }
}

/// The bin of `v` among bins `a..=z`, given that `v >= edge(a)` and that its bin is at most
/// `z` (`z` at most `nbins - 1`, so `edge(nbins)` is never read): the largest `i` in `a..=z`
/// with `v >= edge(i)`, by binary search.
#[inline(always)]
pub fn bin_in_range<T: EdgeValue>(v: T, mut a: u32, mut z: u32, edge: impl Fn(u32) -> f32) -> u32 {
    while a < z {
        let mid = a + (z - a).div_ceil(2);
        if v.at_least(edge(mid)) {
            a = mid;
        } else {
            z = mid - 1;
        }
    }
    a
}

/// `numpy.histogram`'s bin of `v` over `edges` (at least two, sorted, strictly increasing,
/// finite): `None` outside `[edges[0], edges[last]]` and for NaN, the last bin for the last edge.
pub fn edge_bin<T: EdgeValue>(v: T, edges: &[f32]) -> Option<u32> {
    let nbins = edges.len() as u32 - 1;
    if !(v.at_least(edges[0]) && v.at_most(edges[nbins as usize])) {
        return None;
    }
    Some(bin_in_range(v, 0, nbins - 1, |i| edges[i as usize]))
}

/// The smallest order in `lo..=hi` where `pred` holds, for a `pred` that, once true, stays true
/// up to `hi`; `None` where it never holds.
fn first_order(lo: u32, hi: u32, pred: impl Fn(u32) -> bool) -> Option<u32> {
    if lo > hi || !pred(hi) {
        return None;
    }
    let (mut a, mut z) = (lo, hi);
    while a < z {
        let mid = a + (z - a) / 2;
        if pred(mid) { z = mid } else { a = mid + 1 }
    }
    Some(a)
}

/// The orders of the smallest and the largest value of `T` in `[lo, hi]` (finite `lo <= hi`);
/// `None` when no value of the type lies there.
pub fn order_range<T: EdgeValue>(lo: f32, hi: f32) -> Option<(u32, u32)> {
    let first = first_order(T::ORDER_MIN, T::ORDER_MAX, |o| T::from_order(o).at_least(lo))?;
    let past = first_order(T::ORDER_MIN, T::ORDER_MAX, |o| !T::from_order(o).at_most(hi));
    let last = match past {
        Some(0) => return None,
        Some(p) => p - 1,
        None => T::ORDER_MAX,
    };
    (first <= last).then_some((first, last))
}

/// The smallest value of `T` in `[edges[0], edges[last]]` whose cell ([`cell_of`] with `lo =
/// edges[0]`, `scale`, `cells`) is `cell` or later; `None` when none is. Table entry `cell` is its
/// [`edge_bin`] (or the last bin for `None`), and entry `cells` the last bin.
pub fn first_in_cell<T: EdgeValue>(cell: u32, orders: (u32, u32), lo: f32, scale: f32, cells: u32) -> Option<T> {
    let (first, last) = orders;
    first_order(first, last, |o| cell_of(T::from_order(o).key(), lo, scale, cells) >= cell).map(T::from_order)
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{EdgeValue, bin_in_range, cell_of, unpair};
    use crate::device::shared::DynamicSharedArray;
    use crate::device::thread;
    use crate::histogram::device_code::load_one;
    use crate::histogram::packed::device_code::SharedCounters;
    use crate::histogram::pipelined::device_code::for_each_vector;
    use crate::{dynamic_shared_array, gpu_kernel};

    /// The kernel's body; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn edges_body<T: EdgeValue, const PAIRS: bool>(
        input: *const u8,
        n: u64,
        counts: *mut u32,
        nbins: u32,
        edges: *const f32,
        table: *const u32,
        cells: u32,
        lo: f32,
        hi: f32,
        scale: f32,
        copies: u32,
    ) {
        let counter_words = nbins * copies;
        let len = (counter_words + nbins + 1 + cells + 1) as usize;
        // SAFETY: the launch provides shared_bytes(nbins, cells, copies) = len * 4 bytes.
        let shared = unsafe { dynamic_shared_array!(HISTOGRAM_EDGES_SHARED: u32, len) };
        // SAFETY: the edges and the table follow the counters inside that window.
        let (edge_s, table_s) = unsafe {
            (
                DynamicSharedArray::<f32>::from_shared_address(
                    shared.address_of(counter_words as usize),
                    nbins as usize + 1,
                ),
                DynamicSharedArray::<u32>::from_shared_address(
                    shared.address_of((counter_words + nbins + 1) as usize),
                    cells as usize + 1,
                ),
            )
        };
        // SAFETY: forwarded contract: the counters are the first nbins * copies words.
        let counters = unsafe { SharedCounters::<0>::new(shared, nbins, copies, counts) };
        counters.zero();
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        let mut i = tid;
        while i <= nbins.max(cells) {
            // SAFETY: the edges hold nbins + 1 values and the table cells + 1: both reads and
            // writes are bounded by them; each thread copies its own elements.
            unsafe {
                if i <= nbins {
                    edge_s.store(i as usize, *edges.add(i as usize));
                }
                if PAIRS && i < cells {
                    // Entries i and i + 1 (i + 1 <= cells): the pair a value of cell i needs.
                    let (e0, e1) = (*table.add(i as usize), *table.add(i as usize + 1));
                    table_s.store(i as usize, e0 | (e1 << 16));
                } else if !PAIRS && i <= cells {
                    table_s.store(i as usize, *table.add(i as usize));
                }
            }
            i += threads;
        }
        // The counters are zero and the edges and table copied before any thread counts.
        thread::sync_threads();
        let copy = counters.copy();
        let count = #[inline(always)]
        |v: T| {
            if v.at_least(lo) && v.at_most(hi) {
                let c = cell_of(v.key(), lo, scale, cells);
                // SAFETY: c < cells, so c + 1 <= cells is inside the table; the table's bins are
                // below nbins and bin_in_range stays between them.
                unsafe {
                    let (a, z) = if PAIRS {
                        unpair(table_s.load(c as usize))
                    } else {
                        (table_s.load(c as usize), table_s.load(c as usize + 1))
                    };
                    let bin = bin_in_range(v, a, z, |e| edge_s.load(e as usize));
                    counters.add(bin, copy, 1);
                }
            }
        };
        let vectors = n / T::PER_VECTOR;
        // SAFETY: the input holds n / PER_VECTOR whole 16-byte vectors (kernel contract).
        unsafe {
            for_each_vector(
                input,
                vectors,
                #[inline(always)]
                |words, _, present| {
                    if present {
                        let mut each = #[inline(always)]
                        |v: T| count(v);
                        T::for_each_in_vector(words, &mut each);
                    }
                },
            )
        };
        let tail = T::PER_VECTOR * vectors + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            count(unsafe { load_one::<T>(input, tail) });
        }
        // Every add of this block has landed before the counters are read.
        thread::sync_threads();
        counters.flush(counts, false);
    }

    macro_rules! edge_kernels {
        ($($t:ty => $name:ident),*) => {$(
            gpu_kernel! {
                #[doc = concat!("Bin edges for `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $name(input: *const u8, n: u64, counts: *mut u32, nbins: u32, edges: *const f32,
                                    table: *const u32, cells: u32, lo: f32, hi: f32, scale: f32, copies: u32,
                                    pairs: u32) {
                    // SAFETY (both): forwarded contract.
                    if pairs != 0 {
                        unsafe { edges_body::<$t, true>(input, n, counts, nbins, edges, table, cells, lo, hi, scale, copies) }
                    } else {
                        unsafe { edges_body::<$t, false>(input, n, counts, nbins, edges, table, cells, lo, hi, scale, copies) }
                    }
                }
            }
        )*};
    }

    edge_kernels!(
        u8 => histogram_edges_u8,
        u16 => histogram_edges_u16,
        i32 => histogram_edges_i32,
        f32 => histogram_edges_f32
    );
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// numpy's rule by a linear scan: the last edge at or below `v`, the last bin for the last edge.
    fn linear_bin(v: f64, edges: &[f32]) -> Option<u32> {
        let last = *edges.last().unwrap() as f64;
        if v.is_nan() || v < edges[0] as f64 || v > last {
            return None;
        }
        let i = edges.iter().rposition(|&e| v >= e as f64).unwrap() as u32;
        Some(i.min(edges.len() as u32 - 2))
    }

    /// The table a host builds, from this module's functions alone.
    fn table<T: EdgeValue>(edges: &[f32], cells: u32) -> (Vec<u32>, f32) {
        let (lo, hi) = (edges[0], *edges.last().unwrap());
        let nbins = edges.len() as u32 - 1;
        let scale = cell_scale(lo, hi, cells);
        let orders = order_range::<T>(lo, hi);
        let mut t: Vec<u32> = (0..cells)
            .map(|c| {
                orders
                    .and_then(|o| first_in_cell::<T>(c, o, lo, scale, cells))
                    .map_or(nbins - 1, |v| edge_bin(v, edges).unwrap())
            })
            .collect();
        t.push(nbins - 1);
        (t, scale)
    }

    /// The kernel's path for one value: range check, cell, search between two table entries.
    fn kernel_bin<T: EdgeValue>(v: T, edges: &[f32], table: &[u32], scale: f32) -> Option<u32> {
        let (lo, hi) = (edges[0], *edges.last().unwrap());
        if !(v.at_least(lo) && v.at_most(hi)) {
            return None;
        }
        let cells = table.len() as u32 - 1;
        let c = cell_of(v.key(), lo, scale, cells);
        let (a, z) = (table[c as usize], table[c as usize + 1]);
        assert!(a <= z, "table not monotone at cell {c}");
        Some(bin_in_range(v, a, z, |i| edges[i as usize]))
    }

    /// A deterministic stream of pseudo-random u64.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Sorted, strictly increasing edges drawn from `draw`, at least two.
    fn edges_from(rng: &mut Rng, count: usize, mut draw: impl FnMut(&mut Rng) -> f32) -> Vec<f32> {
        let mut e: Vec<f32> = (0..count).map(|_| draw(rng)).filter(|x| x.is_finite()).collect();
        e.sort_by(f32::total_cmp);
        e.dedup_by(|a, b| a == b);
        if e.len() < 2 {
            e = vec![0.0, 1.0];
        }
        e
    }

    #[test]
    fn every_u8_and_u16_value_takes_numpys_bin_through_the_table() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..40 {
            let span = if round % 2 == 0 { 300.0 } else { 70_000.0 };
            let count = 2 + (rng.next() % 300) as usize;
            let edges = edges_from(&mut rng, count, |r| (r.next() % 1_000_000) as f32 / 1e6 * span - 20.0);
            for cells in [1, 64, cells_for(edges.len() as u32 - 1)] {
                let (t8, s8) = table::<u8>(&edges, cells);
                for v in 0..=u8::MAX {
                    assert_eq!(kernel_bin(v, &edges, &t8, s8), linear_bin(v as f64, &edges), "u8 {v}, {edges:?}");
                }
                let (t16, s16) = table::<u16>(&edges, cells);
                for v in 0..=u16::MAX {
                    assert_eq!(kernel_bin(v, &edges, &t16, s16), linear_bin(v as f64, &edges), "u16 {v}");
                }
            }
        }
    }

    #[test]
    fn f32_edges_themselves_and_their_neighbours_take_numpys_bin() {
        let mut rng = Rng(7);
        let sets = [
            vec![0.0, 0.1, 0.2, f32::from_bits(0.3f32.to_bits() + 1), 0.4, 1.0],
            (0..=256).map(|i| -1.0 + i as f32 * (2.0 / 256.0)).collect(),
            vec![-3e38, -1.0, 0.0, 1e-30, 3e38],
            vec![f32::MIN_POSITIVE, 2.0 * f32::MIN_POSITIVE],
            edges_from(&mut rng, 257, |r| ((r.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32),
            edges_from(&mut rng, 64, |r| f32::from_bits((r.next() >> 32) as u32)),
        ];
        for edges in sets {
            let cells = cells_for(edges.len() as u32 - 1);
            let (t, s) = table::<f32>(&edges, cells);
            let mut probes = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MAX, f32::MIN];
            for &e in &edges {
                for d in [-2i32, -1, 0, 1, 2] {
                    probes.push(f32::from_bits(e.to_bits().wrapping_add_signed(d)));
                }
            }
            for _ in 0..20_000 {
                let (lo, hi) = (edges[0] as f64, *edges.last().unwrap() as f64);
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                probes.push((lo + u * (hi - lo)) as f32);
            }
            for v in probes {
                assert_eq!(kernel_bin(v, &edges, &t, s), linear_bin(v as f64, &edges), "f32 {v:e}, edges {edges:?}");
            }
        }
    }

    #[test]
    fn i32_values_compare_exactly_with_edges_that_are_not_integers() {
        let mut rng = Rng(11);
        let sets = [
            vec![-2.5, 0.5, 16_777_217.0, 3e9],
            vec![-2147483648.0, 0.0, 2147483648.0],
            vec![1.0e9, 1.0e9 + 64.0, 1.0e9 + 128.0],
            edges_from(&mut rng, 100, |r| (r.next() as i64 >> 33) as f32 * 1.37),
        ];
        for edges in sets {
            let (t, s) = table::<i32>(&edges, cells_for(edges.len() as u32 - 1));
            let mut probes = vec![i32::MIN, i32::MAX, 0, -1, 1];
            for &e in &edges {
                let base = (e as f64).clamp(i32::MIN as f64, i32::MAX as f64) as i64;
                for d in -3..=3 {
                    probes.push((base + d).clamp(i32::MIN as i64, i32::MAX as i64) as i32);
                }
            }
            for _ in 0..20_000 {
                probes.push(rng.next() as i32);
            }
            for v in probes {
                assert_eq!(kernel_bin(v, &edges, &t, s), linear_bin(v as f64, &edges), "i32 {v}, edges {edges:?}");
            }
        }
    }

    #[test]
    fn the_orders_are_monotone_bijections_on_the_comparable_values() {
        let floats = [f32::NEG_INFINITY, -1.0, -f32::MIN_POSITIVE, -0.0, 0.0, 1e-45, 1.0, f32::MAX, f32::INFINITY];
        for w in floats.windows(2) {
            assert!(w[0].order() < w[1].order(), "{} {}", w[0], w[1]);
            assert_eq!(f32::from_order(w[0].order()).to_bits(), w[0].to_bits());
        }
        assert_eq!(f32::NEG_INFINITY.order(), f32::ORDER_MIN);
        assert_eq!(f32::INFINITY.order(), f32::ORDER_MAX);
        assert!(i32::MIN.order() < (-1i32).order() && (-1i32).order() < 0i32.order());
        assert_eq!(i32::from_order(i32::MAX.order()), i32::MAX);
        assert_eq!(order_range::<u8>(255.5, 300.0), None);
        assert_eq!(order_range::<u8>(-1.0, 2.5), Some((0, 2)));
        assert_eq!(order_range::<i32>(-0.5, 0.5), Some((0i32.order(), 0i32.order())));
    }

    #[test]
    fn cells_are_monotone_in_the_key_and_clamped() {
        let (lo, scale, cells) = (-1.0f32, cell_scale(-1.0, 1.0, 1024), 1024);
        let mut last = 0;
        let mut x = -1.0f32;
        while x <= 1.0 {
            let c = cell_of(x, lo, scale, cells);
            assert!(c >= last && c < cells);
            last = c;
            x = f32::from_bits(if x < 0.0 { x.to_bits() - 1024 } else { x.to_bits() + 1024 });
            if x == 0.0 {
                x = 1e-38;
            }
        }
        assert_eq!(cell_of(f32::NAN, lo, scale, cells), 0);
        assert_eq!(cell_scale(-3e38, 3e38, 64), 0.0);
        assert_eq!(cells_for(1), 64);
        assert_eq!(cells_for(256), 1024);
        assert_eq!(cells_for(100_000), MAX_CELLS);
        assert_eq!(shared_bytes(256, 1024, 8), 4 * (2048 + 257 + 1025));
    }
}
