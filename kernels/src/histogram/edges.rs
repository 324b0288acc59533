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
//! the CPU and the GPU, sixteen cells per bin, [`cells_for`]). The cell function is monotone in
//! the value, so the values of a cell have their bins between the bin of its smallest value
//! ([`first_in_cell`]) and that of its largest; the host writes one word per cell
//! ([`cell_entry`]): the first of those bins, and whether an edge, or several, lie between them.
//! The table only narrows the search; the bin is always decided by exact comparisons with the
//! edges, so every value, edge values and their neighbours included, counts in numpy's bin.
//!
//! # One load, at most one comparison, no branch
//! A value loads its cell's entry; where the cell holds an edge (about one value in sixteen for
//! `f32`; none for integers, whose cells are narrower than their spacing) it loads edge `a + 1`
//! under a predicate and compares ([`entry_first_bin`]); its add runs under a predicate too
//! (outside values and NaN are computed but not counted). Only a cell of several edges (narrower
//! than its bins) searches, behind the one branch. So the kernel takes four values at a time
//! and their loads overlap. The entries sit at [`entry_slot`]s, padded so that values on a
//! stride of cells (bin centres) spread over the banks. On the H200, 2^26 `f32` values over 257
//! uneven edges took 0.082 ms against 0.066 for 256 even bins (1.24x); searching between two
//! table entries with a loop per value had taken 0.145 ms (2.23x), and an 8-byte entry with the
//! edge inside it, one value at a time, 0.106.
//!
//! # Parameters
//! `input`: `n` values (16-byte aligned); `counts`: `nbins` `u32`, added into; `edges`: the
//! `nbins + 1` edges; `table`: `cells + 1` entries ([`cell_entry`]; the last is the last bin);
//! `lo`, `hi`: the first and last edges; `scale`: the cells' `f32` scale; `copies`: interleaved
//! copies of the counters per block (a power of two up to 32).
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`shared_bytes`]`(nbins, cells, copies)`: the entries, then the counters, then the edges.
//!
//! # Safety
//! As above; each entry's bin is below `nbins` and at most the next entry's, and the entries
//! flag the edges of their cells for these edges, `cells`, `lo` and `scale` (entries that flag
//! too few can put a value in a wrong bin, never out of bounds); `n <= u32::MAX`.

use super::Element;

/// The PTX symbols, in [`super::InputType::ALL`] order.
pub const KERNELS: [&str; 4] =
    ["histogram_edges_u8", "histogram_edges_u16", "histogram_edges_i32", "histogram_edges_f32"];

/// The most cells of the lookup table.
pub const MAX_CELLS: u32 = 8192;

/// Cells of the lookup table for `nbins` bins: sixteen per bin, from 64 to [`MAX_CELLS`].
pub const fn cells_for(nbins: u32) -> u32 {
    let c = nbins.saturating_mul(16);
    if c < 64 {
        64
    } else if c > MAX_CELLS {
        MAX_CELLS
    } else {
        c
    }
}

/// The flag of a cell entry for a cell that holds an edge: a value there compares with edge
/// `a + 1`.
pub const HOLDS_EDGE: u32 = 1 << 30;

/// The flag of a cell entry for a cell that holds more than one edge: a value there is searched
/// up to the next cell's first bin.
pub const SEVERAL_EDGES: u32 = 1 << 31;

/// The entry of a cell whose values have their bins in `a..=z` (the bins of its smallest and its
/// largest value; below 2^30): `a`, with [`HOLDS_EDGE`] where `z > a` and [`SEVERAL_EDGES`]
/// where `z > a + 1`. Any `z` at least the cell's largest bin (the next cell's first bin, say)
/// gives an entry that counts correctly, only with more comparisons.
///
/// ```
/// use kernels::histogram::edges::{HOLDS_EDGE, SEVERAL_EDGES, cell_entry};
/// assert_eq!((cell_entry(3, 3), cell_entry(3, 4)), (3, 3 | HOLDS_EDGE));
/// assert_eq!(cell_entry(3, 9), 3 | HOLDS_EDGE | SEVERAL_EDGES);
/// ```
#[inline(always)]
pub const fn cell_entry(a: u32, z: u32) -> u32 {
    a | if z > a { HOLDS_EDGE } else { 0 } | if z > a + 1 { SEVERAL_EDGES } else { 0 }
}

/// The bin of `v` (inside `[edges[0], edges[nbins]]`) from its cell's [`cell_entry`]: one
/// comparison with `edge(a + 1)` for a cell that holds an edge (none for a cell without), a
/// search up to the next cell's first bin (`next()`: the next cell's entry, read only then) for
/// a cell of several edges. A value outside the range gets some bin up to `nbins` and reads only
/// edges of the cell's range, so the kernel computes every value's bin before it knows whether
/// the value counts.
///
/// ```
/// use kernels::histogram::edges::{cell_entry, entry_bin};
/// let edges = [0.0f32, 1.0, 2.0, 3.0, 4.0];
/// let edge = |i: u32| edges[i as usize];
/// assert_eq!(entry_bin(0.5f32, cell_entry(0, 0), edge, || cell_entry(0, 1)), 0);
/// assert_eq!(entry_bin(1.0f32, cell_entry(0, 1), edge, || cell_entry(1, 1)), 1);
/// assert_eq!(entry_bin(3.5f32, cell_entry(1, 3), edge, || cell_entry(3, 3)), 3);
/// ```
#[inline(always)]
pub fn entry_bin<T: EdgeValue>(v: T, entry: u32, edge: impl Fn(u32) -> f32, next: impl Fn() -> u32) -> u32 {
    if entry & SEVERAL_EDGES != 0 {
        bin_in_range(v, entry & !ENTRY_FLAGS, next() & !ENTRY_FLAGS, edge)
    } else {
        entry_first_bin(v, entry, edge)
    }
}

/// Both flags of a cell entry.
pub const ENTRY_FLAGS: u32 = HOLDS_EDGE | SEVERAL_EDGES;

/// [`entry_bin`] for a cell of at most one edge: the cell's first bin, or the next where the
/// cell holds an edge and `v` reaches it. Branch-free: the edge is read under a predicate.
///
/// ```
/// use kernels::histogram::edges::{cell_entry, entry_first_bin};
/// let edge = |i: u32| [0.0f32, 1.0, 2.0][i as usize];
/// assert_eq!(entry_first_bin(0.5f32, cell_entry(0, 0), edge), 0);
/// assert_eq!(entry_first_bin(1.0f32, cell_entry(0, 1), edge), 1);
/// ```
#[inline(always)]
pub fn entry_first_bin<T: EdgeValue>(v: T, entry: u32, edge: impl Fn(u32) -> f32) -> u32 {
    let a = entry & !ENTRY_FLAGS;
    let e = if entry & HOLDS_EDGE != 0 { edge(a + 1) } else { f32::INFINITY };
    a + v.at_least(e) as u32
}

/// Entry slots in shared memory for `cells + 1` entries ([`entry_slot`]).
pub const fn entry_slots(cells: u32) -> u32 {
    entry_slot(cells) + 1
}

/// The shared-memory slot of cell `c`'s entry: `c + c / 32`, one word of padding per row of 32
/// (the 32 banks). Values that fall on a stride of cells, such as bin centres (with sixteen cells
/// per bin: every sixteenth cell, two of the 32 banks unpadded), spread over all banks.
///
/// ```
/// use kernels::histogram::edges::{entry_slot, entry_slots};
/// let banks = |cells: &[u32]| cells.iter().map(|&c| entry_slot(c) % 32).collect::<std::collections::BTreeSet<_>>().len();
/// let centres: Vec<u32> = (0..64).map(|k| 16 * k + 8).collect();
/// assert_eq!(banks(&centres), 32);
/// assert_eq!((entry_slot(31), entry_slot(32), entry_slots(4096)), (31, 33, 4225));
/// ```
#[inline(always)]
pub const fn entry_slot(c: u32) -> u32 {
    c + (c >> 5)
}

/// Dynamic shared memory of a block: [`entry_slots`]`(cells)` entries ([`cell_entry`]), `copies`
/// copies of `nbins` counters and `nbins + 1` edges, 4 bytes each.
pub const fn shared_bytes(nbins: u32, cells: u32, copies: u32) -> u64 {
    4 * (entry_slots(cells) as u64 + nbins as u64 * copies as u64 + nbins as u64 + 1)
}

/// The lookup table's cell of a value whose [`EdgeValue::key`] is `key`: `floor((key - lo) *
/// scale)` in `f32` (no fused multiply-add), clamped into `0..cells`; NaN products give cell 0.
/// Monotone in `key`.
#[inline(always)]
pub fn cell_of(key: f32, lo: f32, scale: f32, cells: u32) -> u32 {
    // Truncation toward zero (floor of the non-negative product), saturating, NaN to 0: Rust's
    // `as` on the CPU, one `cvt.rzi.sat.u32.f32` on the GPU (where `as` costs four more
    // instructions a value for its clamps).
    super::f32_to_u32_rz_sat((key - lo) * scale).min(cells - 1)
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
    use super::{EdgeValue, SEVERAL_EDGES, cell_of, entry_bin, entry_first_bin, entry_slot, entry_slots};
    use crate::device::atomic;
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
    unsafe fn edges_body<T: EdgeValue>(
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
        let slots = entry_slots(cells);
        let words = (slots + counter_words + nbins + 1) as usize;
        // SAFETY: the launch provides shared_bytes(nbins, cells, copies) = words * 4 bytes.
        let shared = unsafe { dynamic_shared_array!(HISTOGRAM_EDGES_SHARED: u32, words) };
        // SAFETY: the entries, the counters and the edges tile that window.
        let (entries, counter_s, edge_s) = unsafe {
            (
                DynamicSharedArray::<u32>::from_shared_address(shared.address_of(0), slots as usize),
                DynamicSharedArray::<u32>::from_shared_address(
                    shared.address_of(slots as usize),
                    counter_words as usize,
                ),
                DynamicSharedArray::<f32>::from_shared_address(
                    shared.address_of((slots + counter_words) as usize),
                    nbins as usize + 1,
                ),
            )
        };
        // SAFETY: forwarded contract: counter_s holds nbins * copies words.
        let counters = unsafe { SharedCounters::<0>::new(counter_s, nbins, copies, counts) };
        counters.zero();
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        let mut i = tid;
        while i <= nbins.max(cells) {
            // SAFETY: the edges hold nbins + 1 values, the table cells + 1 entries and the window
            // entry_slots(cells) entries, where entry_slot maps each cell up to cells to its own
            // slot: every read and write is bounded by them; each thread writes its own elements.
            unsafe {
                if i <= nbins {
                    edge_s.store(i as usize, *edges.add(i as usize));
                }
                if i <= cells {
                    entries.store(entry_slot(i) as usize, *table.add(i as usize));
                }
            }
            i += threads;
        }
        // The counters are zero and the edges and entries written before any thread counts.
        thread::sync_threads();
        // Bin b of this thread's copy is the word at mine + b * stride (one multiply-add a value).
        let (mine, stride) = (counter_s.address_of(counters.copy() as usize), 4 * copies);
        // Four values at a time, each computed in full whatever its range (the cell is clamped,
        // so any value reads an entry) and counted under a predicate: no branch but the rare one
        // into a several-edge cell's search, so the four values' loads overlap.
        let count = #[inline(always)]
        |q: [T; 4], valid: usize| {
            let edge = |e: u32| unsafe { edge_s.load(e as usize) };
            let c = [0, 1, 2, 3].map(|k| cell_of(q[k].key(), lo, scale, cells));
            // SAFETY: c[k] < cells, so its slot is inside the window.
            let w = [0, 1, 2, 3].map(|k| unsafe { entries.load(entry_slot(c[k]) as usize) });
            // SAFETY (edge): an entry's bins are below nbins, so the edges read (a + 1 at most,
            // or up to the next cell's first bin) are among the nbins + 1.
            let mut bin = [0, 1, 2, 3].map(|k| entry_first_bin(q[k], w[k], edge));
            if (w[0] | w[1] | w[2] | w[3]) & SEVERAL_EDGES != 0 {
                for k in 0..4 {
                    if w[k] & SEVERAL_EDGES != 0 {
                        // SAFETY: c[k] + 1 <= cells, inside the window.
                        let next = || unsafe { entries.load(entry_slot(c[k] + 1) as usize) };
                        bin[k] = entry_bin(q[k], w[k], edge, next);
                    }
                }
            }
            for k in 0..4 {
                let counted = k < valid && q[k].at_least(lo) && q[k].at_most(hi);
                // SAFETY: a counted value's bin is below nbins, so the word is inside counter_s.
                unsafe { atomic::shared_add_u32_if(counted, mine + bin[k] * stride, 1) };
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
                        |q: [T; 4]| count(q, 4);
                        T::for_each_quad_in_vector(words, &mut each);
                    }
                },
            )
        };
        let tail = T::PER_VECTOR * vectors + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            let v = unsafe { load_one::<T>(input, tail) };
            count([v; 4], 1);
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
                                    table: *const u32, cells: u32, lo: f32, hi: f32, scale: f32, copies: u32) {
                    // SAFETY: forwarded contract.
                    unsafe { edges_body::<$t>(input, n, counts, nbins, edges, table, cells, lo, hi, scale, copies) }
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
        // The next cell's entry, as the kernel reads it, only for its first bin: z.
        Some(entry_bin(v, cell_entry(a, z), |i| edges[i as usize], || z))
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
        assert_eq!(cells_for(256), 4096);
        assert_eq!(cells_for(100_000), MAX_CELLS);
        assert_eq!(shared_bytes(256, 4096, 8), 4 * (4225 + 2048 + 257));
    }
}
