//! Two-dimensional histograms of `f32` pairs (`numpy.histogram2d(x, y, bins=(bx, by),
//! range=...)`): `histogram_2d_f32` counts, `histogram_2d_weighted_f32` sums `f32` weights in
//! `f64`. Pair `i` is `(x[i], y[i])`; each coordinate is binned like a one-dimensional `f32`
//! histogram over its own range ([`super::bin_of_f32`]: even bins, the upper end in the last bin),
//! and a pair counts only when both coordinates are in range (NaN is never in range). Bin `(ix,
//! iy)` is counter `ix * by + iy`: numpy's `H[ix, iy]`, row-major.
//!
//! Counters as in [`super::packed`]: one block holds 256 x 256 bins in 16-bit digits (128 KiB), so
//! the common 2-D histogram runs in shared memory; beyond what a block holds every pair is one
//! `red.global.add` (`global`). Weighted sums as in [`super::weighted`] (`f64`, shared or global).
//!
//! # Parameters
//! `x`, `y` (and `w`): `n` `f32` each, 16-byte aligned; `counts`: `bx * by` `u32` (or `sums`:
//! `bx * by` `f64`), added into; `bx, xlo, xhi, xscale` and `by, ylo, yhi, yscale`: each axis as
//! [`super::Binning::range`]; `copies`: a power of two up to 32; `packing`: 0, 1 or 2 (counts);
//! `global`: no shared memory, every pair added into global memory; `aggregate` (weighted): warp
//! merging as in [`super::weighted`].
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`count_shared_bytes`] or [`sum_shared_bytes`] (none with `global`).
//!
//! # Safety
//! As above, nothing else writes the outputs during the launch, `bx * by` fits in `u32`, and
//! `n <= u32::MAX`.

use super::bin_of_f32;

/// PTX symbol of the counting kernel.
pub const KERNEL: &str = "histogram_2d_f32";

/// PTX symbol of the counting kernel in 16-bit digits whose flush adds two adjacent counters
/// per `red.global.add.u64` (half the global atomics at the end of every block: 65,536 bins of
/// 132 blocks are 8.6 million atomics, one per counter, while no block reads input). Exact while
/// each counter's total in the output stays below 2^32 (what a `u32` counter holds; beyond it a
/// carry would reach the neighbouring counter instead of wrapping).
pub const KERNEL_PAIRED_FLUSH: &str = "histogram_2d_paired_flush_f32";

/// PTX symbol of the weighted kernel.
pub const KERNEL_WEIGHTED: &str = "histogram_2d_weighted_f32";

/// One axis: `bins` even bins over `[lo, hi]`, `scale = bins / (hi - lo)` in `f32`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    /// Bins along the axis.
    pub bins: u32,
    /// Lowest counted coordinate.
    pub lo: f32,
    /// Highest counted coordinate (in the last bin).
    pub hi: f32,
    /// `bins as f32 / (hi - lo)`.
    pub scale: f32,
}

impl Axis {
    /// `bins` even bins over `[lo, hi]`; the caller checks the range as for one-dimensional `f32`
    /// histograms.
    pub fn new(bins: u32, lo: f32, hi: f32) -> Self {
        Self { bins, lo, hi, scale: bins as f32 / (hi - lo) }
    }

    /// The bin of coordinate `v`, `None` outside the range and for NaN.
    #[inline(always)]
    pub fn bin(&self, v: f32) -> Option<u32> {
        bin_of_f32(v, self.lo, self.hi, self.scale, self.bins)
    }
}

/// The counter of pair `(x, y)`: `ix * y.bins + iy`, or `None` when either coordinate is out of
/// range.
#[inline(always)]
pub fn bin_2d(x: f32, y: f32, ax: &Axis, ay: &Axis) -> Option<u32> {
    match (ax.bin(x), ay.bin(y)) {
        (Some(ix), Some(iy)) => Some(ix * ay.bins + iy),
        _ => None,
    }
}

/// Dynamic shared memory of the counting kernel: `copies` copies of `bins` counters at `packing`.
pub const fn count_shared_bytes(bins: u32, packing: u32, copies: u32) -> u64 {
    super::packed::counter_bytes(bins, packing, copies)
}

/// Dynamic shared memory of the weighted kernel: `copies` copies of `bins` `f64` sums.
pub const fn sum_shared_bytes(bins: u32, copies: u32) -> u64 {
    8 * bins as u64 * copies as u64
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{Axis, bin_2d};
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::NO_BIN;
    use crate::histogram::packed::device_code::SharedCounters;
    use crate::histogram::packed::words_for;
    use crate::histogram::pipelined::device_code::for_each_group;
    use crate::histogram::weighted::device_code::{Sums, add_weight};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// `f32` value `i` of `p`.
    ///
    /// # Safety
    /// `i` is inside the array.
    #[inline(always)]
    unsafe fn load_f32(p: *const f32, i: u64) -> f32 {
        // SAFETY: forwarded.
        unsafe { mem::load_global_nc_f32(p.add(i as usize)) }
    }

    /// Vector `i` (four `f32`) of `p`, as words.
    ///
    /// # Safety
    /// The vector is inside the array, which is 16-byte aligned.
    #[inline(always)]
    unsafe fn load_v4(p: *const f32, i: u64) -> [u32; 4] {
        // SAFETY: forwarded.
        unsafe { mem::load_global_nc_v4_u32(p.cast::<u8>().add(16 * i as usize)) }
    }

    /// The counting kernel's body, with counters packed `2^P` to a word, or in global memory.
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn count_pairs<const P: u32, const GLOBAL: bool, const PAIRED_FLUSH: bool>(
        x: *const f32,
        y: *const f32,
        n: u64,
        counts: *mut u32,
        ax: Axis,
        ay: Axis,
        copies: u32,
    ) {
        let total = ax.bins * ay.bins;
        let len = if GLOBAL { 0 } else { (words_for(total, P) * copies) as usize };
        // SAFETY: the launch provides len words of dynamic shared memory.
        let words = unsafe { dynamic_shared_array!(HISTOGRAM_2D_COUNTERS: u32, len) };
        // SAFETY: forwarded contract.
        let counters = unsafe { SharedCounters::<P>::new(words, total, copies, counts) };
        if !GLOBAL {
            counters.zero();
            // Every counter is zero before any thread adds to it.
            thread::sync_threads();
        }
        let copy = counters.copy();
        let count = #[inline(always)]
        |xv: f32, yv: f32| {
            if let Some(bin) = bin_2d(xv, yv, &ax, &ay) {
                // SAFETY: bin < total, the length of `counts` and of the counters.
                unsafe {
                    if GLOBAL {
                        atomic::global_add_u32(counts.add(bin as usize), 1);
                    } else {
                        counters.add(bin, copy, 1);
                    }
                }
            }
        };
        // SAFETY: the grid's lanes hold consecutive indices and its size is a multiple of 32;
        // every vector below n / 4 lies inside both inputs.
        unsafe {
            for_each_group(
                0,
                n / 4,
                thread::index_1d(),
                thread::grid_size_1d(),
                ([0u32; 4], [0u32; 4]),
                #[inline(always)]
                |i| (load_v4(x, i), load_v4(y, i)),
                #[inline(always)]
                |(xs, ys), _, present| {
                    if present {
                        count(f32::from_bits(xs[0]), f32::from_bits(ys[0]));
                        count(f32::from_bits(xs[1]), f32::from_bits(ys[1]));
                        count(f32::from_bits(xs[2]), f32::from_bits(ys[2]));
                        count(f32::from_bits(xs[3]), f32::from_bits(ys[3]));
                    }
                },
            )
        };
        let tail = n / 4 * 4 + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            count(unsafe { load_f32(x, tail) }, unsafe { load_f32(y, tail) });
        }
        if !GLOBAL {
            // Every add of this block has landed before the counters are read.
            thread::sync_threads();
            if PAIRED_FLUSH {
                counters.flush_pairs(counts);
            } else {
                counters.flush(counts, false);
            }
        }
    }

    /// The weighted kernel's body; shared or global sums.
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn sum_pairs<const GLOBAL: bool, const AGGREGATE: bool>(
        x: *const f32,
        y: *const f32,
        w: *const f32,
        n: u64,
        out: *mut f64,
        ax: Axis,
        ay: Axis,
        copies: u32,
    ) {
        let total = ax.bins * ay.bins;
        let len = if GLOBAL { 0 } else { (total * copies) as usize };
        // SAFETY: in shared mode the launch provides total * copies * 8 bytes.
        let shared = unsafe { dynamic_shared_array!(HISTOGRAM_2D_SUMS: f64, len) };
        let sums = Sums::<GLOBAL>::new(shared, out, copies);
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        if !GLOBAL {
            sums.zero();
            // Every sum is zero before any thread adds to it.
            thread::sync_threads();
        }
        let copy = warp::lane_id() & (copies - 1);
        // SAFETY: the grid's lanes hold consecutive indices and its size is a multiple of 32;
        // every vector below n / 4 lies inside the three inputs. Each call is made by the whole
        // warp (for_each_group), as add_weight needs.
        unsafe {
            for_each_group(
                0,
                n / 4,
                thread::index_1d(),
                thread::grid_size_1d(),
                ([0u32; 4], [0u32; 4], [0u32; 4]),
                #[inline(always)]
                |i| (load_v4(x, i), load_v4(y, i), load_v4(w, i)),
                #[inline(always)]
                |(xs, ys, ws), _, present| {
                    let each = #[inline(always)]
                    |j: usize| {
                        let bin = if present {
                            bin_2d(f32::from_bits(xs[j]), f32::from_bits(ys[j]), &ax, &ay).unwrap_or(NO_BIN)
                        } else {
                            NO_BIN
                        };
                        add_weight::<GLOBAL, AGGREGATE>(&sums, bin, copy, f32::from_bits(ws[j]));
                    };
                    each(0);
                    each(1);
                    each(2);
                    each(3);
                },
            )
        };
        let tail = n / 4 * 4 + thread::index_1d();
        if tail - (warp::lane_id() as u64) < n {
            let (bin, wv) = if tail < n {
                // SAFETY: tail < n.
                unsafe { (bin_2d(load_f32(x, tail), load_f32(y, tail), &ax, &ay).unwrap_or(NO_BIN), load_f32(w, tail)) }
            } else {
                (NO_BIN, 0.0)
            };
            // SAFETY: the whole warp is here.
            unsafe { add_weight::<GLOBAL, AGGREGATE>(&sums, bin, copy, wv) };
        }
        if !GLOBAL {
            // Every add of this block has landed before the sums are read.
            thread::sync_threads();
            sums.flush(out, total, tid, threads);
        }
    }

    gpu_kernel! {
        /// Pair counts; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's.
        pub unsafe fn histogram_2d_f32(x: *const f32, y: *const f32, n: u64, counts: *mut u32, bx: u32, xlo: f32,
                                       xhi: f32, xscale: f32, by: u32, ylo: f32, yhi: f32, yscale: f32, copies: u32,
                                       packing: u32, global: u32) {
            let ax = Axis { bins: bx, lo: xlo, hi: xhi, scale: xscale };
            let ay = Axis { bins: by, lo: ylo, hi: yhi, scale: yscale };
            // SAFETY (all): forwarded contract.
            match (global != 0, packing) {
                (true, _) => unsafe { count_pairs::<0, true, false>(x, y, n, counts, ax, ay, 1) },
                (false, 0) => unsafe { count_pairs::<0, false, false>(x, y, n, counts, ax, ay, copies) },
                (false, 1) => unsafe { count_pairs::<1, false, false>(x, y, n, counts, ax, ay, copies) },
                (false, 2) => unsafe { count_pairs::<2, false, false>(x, y, n, counts, ax, ay, copies) },
                _ => {}
            }
        }

        /// Pair counts in 16-bit digits (`packing` 1, shared tier only), flushed two counters per
        /// `red.global.add.u64` ([`super::KERNEL_PAIRED_FLUSH`]); see the [module
        /// documentation](super).
        ///
        /// # Safety
        /// As the module's, with `packing` 1 and `global` 0; each counter's total in `counts` below
        /// 2^32.
        pub unsafe fn histogram_2d_paired_flush_f32(x: *const f32, y: *const f32, n: u64, counts: *mut u32, bx: u32,
                                                    xlo: f32, xhi: f32, xscale: f32, by: u32, ylo: f32, yhi: f32,
                                                    yscale: f32, copies: u32, _packing: u32, _global: u32) {
            let ax = Axis { bins: bx, lo: xlo, hi: xhi, scale: xscale };
            let ay = Axis { bins: by, lo: ylo, hi: yhi, scale: yscale };
            // SAFETY: forwarded contract.
            unsafe { count_pairs::<1, false, true>(x, y, n, counts, ax, ay, copies) }
        }

        /// Weighted pair sums; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's.
        pub unsafe fn histogram_2d_weighted_f32(x: *const f32, y: *const f32, w: *const f32, n: u64, sums: *mut f64,
                                                bx: u32, xlo: f32, xhi: f32, xscale: f32, by: u32, ylo: f32,
                                                yhi: f32, yscale: f32, copies: u32, global: u32, aggregate: u32) {
            let ax = Axis { bins: bx, lo: xlo, hi: xhi, scale: xscale };
            let ay = Axis { bins: by, lo: ylo, hi: yhi, scale: yscale };
            // SAFETY (all): forwarded contract.
            match (global != 0, aggregate != 0) {
                (false, false) => unsafe { sum_pairs::<false, false>(x, y, w, n, sums, ax, ay, copies) },
                (false, true) => unsafe { sum_pairs::<false, true>(x, y, w, n, sums, ax, ay, copies) },
                (true, false) => unsafe { sum_pairs::<true, false>(x, y, w, n, sums, ax, ay, 1) },
                (true, true) => unsafe { sum_pairs::<true, true>(x, y, w, n, sums, ax, ay, 1) },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_count_in_row_major_bins_and_only_inside_both_ranges() {
        let ax = Axis::new(4, 0.0, 1.0);
        let ay = Axis::new(3, -1.0, 2.0);
        assert_eq!(bin_2d(0.0, -1.0, &ax, &ay), Some(0));
        assert_eq!(bin_2d(0.0, 2.0, &ax, &ay), Some(2));
        assert_eq!(bin_2d(1.0, 2.0, &ax, &ay), Some(3 * 3 + 2));
        assert_eq!(bin_2d(0.3, 0.5, &ax, &ay), Some(3 + 1));
        assert_eq!(bin_2d(f32::NAN, 0.5, &ax, &ay), None);
        assert_eq!(bin_2d(0.5, f32::INFINITY, &ax, &ay), None);
        assert_eq!(bin_2d(1.0001, 0.5, &ax, &ay), None);
        assert_eq!(bin_2d(0.5, -1.0001, &ax, &ay), None);
        assert_eq!(count_shared_bytes(256 * 256, 1, 1), 128 << 10);
        assert_eq!(sum_shared_bytes(64 * 64, 2), 64 << 10);
    }
}
