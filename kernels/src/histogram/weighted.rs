//! Weighted histograms (`numpy.histogram(weights=)`, `torch.bincount(weights=)`):
//! `histogram_weighted_{u8,u16,i32,f32}`. Value `i` adds its `f32` weight `weights[i]` to its bin
//! (binned like the unweighted kernels, [`super::Element::bin`]); the sums are `f64`.
//!
//! # Accumulation
//! Sums are `f64` from the first addition: in shared memory, `copies` interleaved private copies
//! of the `nbins` sums per block (`red.shared.add.f64`, which Hopper runs as a compare-and-store
//! loop: it has no native shared-memory float add, of any width), added into the global sums at the
//! end with `red.global.add.f64` (native); or, for bin counts beyond one block, every weight added
//! into the global sums directly. With `aggregate`, a warp whose 32 lanes hold the same bin adds the
//! sum of its 32 weights once (a fixed butterfly), so a constant input does not serialize 32 lanes
//! on one address.
//!
//! The order of the additions is not fixed (atomics), so the sums are deterministic exactly where
//! every partial sum is exact in `f64`: integer weights, or weights that are multiples of one
//! power of two `2^-k`, while each bin's sum of `|w| * 2^k` stays below `2^53` (for example
//! `f32` weights in `(-1, 1)` with 24 fraction bits, up to 2^29 values per bin). Otherwise each
//! sum is within [`error_bound`] of the exact sum of the weights: `(m + p) * 2^-53 * sum |w|`
//! over the bin, `m` the bin's values and `p` the partial sums added into it (one per block and
//! copy), the standard bound of recursive summation in any order, to first order.
//!
//! # Parameters
//! `input`: `n` values, `weights`: `n` `f32` (both 16-byte aligned); `sums`: `nbins` `f64`, added
//! into; `nbins, lo, hi, scale` as [`super::Binning`]; `copies`: a power of two up to 32 (shared
//! mode); `global`: add every weight into `sums` directly (no shared memory); `aggregate` as above.
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`shared_bytes`]`(nbins, copies)` in shared mode, none in global mode.
//!
//! # Safety
//! As above, nothing else writes the buffers during the launch, and `n <= u32::MAX`.

/// The PTX symbols, in [`super::InputType::ALL`] order.
pub const KERNELS: [&str; 4] =
    ["histogram_weighted_u8", "histogram_weighted_u16", "histogram_weighted_i32", "histogram_weighted_f32"];

/// Values per group of the loop: one 16-byte vector of weights.
pub const GROUP: u64 = 4;

/// Dynamic shared memory of a block in shared mode: `copies` copies of `nbins` `f64` sums.
pub const fn shared_bytes(nbins: u32, copies: u32) -> u64 {
    8 * nbins as u64 * copies as u64
}

/// The most an `f64` sum of `values` weights whose absolute values add up to `abs_sum` can differ
/// from their exact sum, when it is made of `partials` partial sums added together in any order:
/// `(values + partials) * 2^-53 * abs_sum`, the first-order bound of recursive summation, with
/// a 1% margin for the second-order terms (negligible below 2^45 terms).
pub fn error_bound(values: u64, partials: u64, abs_sum: f64) -> f64 {
    1.01 * (values + partials) as f64 * f64::EPSILON / 2.0 * abs_sum
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::GROUP;
    use crate::device::shared::DynamicSharedArray;
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::device_code::load_one;
    use crate::histogram::pipelined::device_code::for_each_group;
    use crate::histogram::{Binning, Element, NO_BIN};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// The `f64` sums a weight goes to: `copies` interleaved copies of `nbins` sums in this
    /// block's shared memory, or the global sums.
    #[derive(Clone, Copy)]
    pub(crate) struct Sums<const GLOBAL: bool> {
        shared: DynamicSharedArray<f64>,
        global: *mut f64,
        copies: u32,
    }

    impl<const GLOBAL: bool> Sums<GLOBAL> {
        /// The sums over `shared` (in shared mode, `nbins * copies` of them) or `global`.
        #[inline(always)]
        pub(crate) fn new(shared: DynamicSharedArray<f64>, global: *mut f64, copies: u32) -> Self {
            Self { shared, global, copies }
        }

        /// Zeroes the shared sums (shared mode); the block's threads share the work, and a barrier
        /// must follow before any add.
        #[inline(always)]
        pub(crate) fn zero(&self) {
            let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
            let mut i = tid;
            while i < self.shared.len() {
                // SAFETY: i < len; each thread zeroes its own sums.
                unsafe { self.shared.store(i, 0.0) };
                i += threads;
            }
        }

        /// Adds the shared sums of each of `nbins` bins (over the copies) into `out`; thread `tid`
        /// of `threads` takes bins `tid, tid + threads, ...`. A barrier must precede it. Sums of
        /// zero are not added (the global sums then stay `+0.0`, where an exact `-0.0` would be
        /// numpy's).
        #[inline(always)]
        pub(crate) fn flush(&self, out: *mut f64, nbins: u32, tid: u32, threads: u32) {
            let copies = self.copies;
            let mut bin = tid;
            while bin < nbins {
                let mut total = 0.0f64;
                for c in 0..copies {
                    // Rotating the first copy by the bin spreads a warp's loads over the banks.
                    let c = (c + bin) & (copies - 1);
                    // SAFETY: bin * copies + c < nbins * copies, ordered by the caller's barrier.
                    total += unsafe { self.shared.load((bin * copies + c) as usize) };
                }
                if total != 0.0 || total.is_nan() {
                    // SAFETY: bin < nbins, inside `out`.
                    unsafe { atomic::global_add_f64(out.add(bin as usize), total) };
                }
                bin += threads;
            }
        }

        /// Adds `w` to bin `bin` (in copy `copy`).
        ///
        /// # Safety
        /// `bin < nbins`, `copy < copies`.
        #[inline(always)]
        pub(crate) unsafe fn add(&self, bin: u32, copy: u32, w: f64) {
            // SAFETY (both): inside the sums by the caller's contract; both adds are atomic.
            if GLOBAL {
                unsafe { atomic::global_add_f64(self.global.add(bin as usize), w) };
            } else {
                unsafe { atomic::shared_add_f64(self.shared.address_of((bin * self.copies + copy) as usize), w) };
            }
        }
    }

    /// Adds `w` to `bin` for every lane with a bin (`bin != NO_BIN`); with `AGGREGATE`, a warp
    /// whose lanes all hold one bin adds its butterfly sum once, from lane 0.
    ///
    /// # Safety
    /// The whole warp calls it together; `bin` is `NO_BIN` or below `nbins`; `copy < copies`.
    #[inline(always)]
    pub(crate) unsafe fn add_weight<const GLOBAL: bool, const AGGREGATE: bool>(
        sums: &Sums<GLOBAL>,
        bin: u32,
        copy: u32,
        w: f32,
    ) {
        if AGGREGATE {
            // SAFETY (all three): forwarded: the whole warp is here.
            let first = unsafe { warp::shuffle_idx_u32(bin, 0) };
            let same = unsafe { warp::ballot(bin == first) };
            if same == u32::MAX {
                if first != NO_BIN {
                    let total = unsafe { warp::sum_f64(w as f64) };
                    if warp::lane_id() == 0 {
                        // SAFETY: first < nbins.
                        unsafe { sums.add(first, copy, total) };
                    }
                }
                return;
            }
        }
        if bin != NO_BIN {
            // SAFETY: forwarded contract.
            unsafe { sums.add(bin, copy, w as f64) };
        }
    }

    /// Value `j` (0 to 3) of a group whose values' bytes are in `words` (the first `SIZE` words).
    #[inline(always)]
    fn value_at<T: Element>(words: [u32; 4], j: usize) -> T {
        match T::SIZE {
            1 => T::from_word(words[0] >> (8 * j)),
            2 => T::from_word(words[j / 2] >> (16 * (j % 2))),
            _ => T::from_word(words[j]),
        }
    }

    /// Loads group `i`: four values (`4 * SIZE` bytes) and their four weights.
    ///
    /// # Safety
    /// Group `i` lies inside both inputs (16-byte aligned).
    #[inline(always)]
    unsafe fn load_group<T: Element>(input: *const u8, weights: *const f32, i: u64) -> ([u32; 4], [u32; 4]) {
        // SAFETY (all): forwarded: 4 * SIZE bytes at 4 * SIZE * i, aligned to their size.
        let values = unsafe {
            let p = input.add((GROUP * T::SIZE as u64 * i) as usize);
            match T::SIZE {
                1 => [mem::load_global_nc_u32(p), 0, 0, 0],
                2 => {
                    let [a, b] = mem::load_global_nc_v2_u32(p);
                    [a, b, 0, 0]
                }
                _ => mem::load_global_nc_v4_u32(p),
            }
        };
        let w = unsafe { mem::load_global_nc_v4_u32(weights.cast::<u8>().add(16 * i as usize)) };
        (values, w)
    }

    /// The kernel's body; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn weighted<T: Element, const GLOBAL: bool, const AGGREGATE: bool>(
        input: *const u8,
        weights: *const f32,
        n: u64,
        out: *mut f64,
        binning: Binning,
        copies: u32,
    ) {
        let nbins = binning.nbins;
        let len = if GLOBAL { 0 } else { (nbins * copies) as usize };
        // SAFETY: in shared mode the launch provides nbins * copies * 8 bytes.
        let shared = unsafe { dynamic_shared_array!(HISTOGRAM_WEIGHTED_SUMS: f64, len) };
        let sums = Sums::<GLOBAL>::new(shared, out, copies);
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        if !GLOBAL {
            sums.zero();
            // Every sum is zero before any thread adds to it.
            thread::sync_threads();
        }
        let copy = warp::lane_id() & (copies - 1);
        let groups = n / GROUP;
        // SAFETY: the grid's lanes hold consecutive indices and its size is a multiple of 32;
        // every group below n / 4 lies inside both inputs. Each call of the closure is made by
        // the whole warp (for_each_group), as add_weight needs.
        unsafe {
            for_each_group(
                0,
                groups,
                thread::index_1d(),
                thread::grid_size_1d(),
                ([0u32; 4], [0u32; 4]),
                #[inline(always)]
                |i| load_group::<T>(input, weights, i),
                #[inline(always)]
                |(values, w), _, present| {
                    let each = #[inline(always)]
                    |j: usize| {
                        let bin = if present { value_at::<T>(values, j).bin_or_none(&binning) } else { NO_BIN };
                        add_weight::<GLOBAL, AGGREGATE>(&sums, bin, copy, f32::from_bits(w[j]));
                    };
                    each(0);
                    each(1);
                    each(2);
                    each(3);
                },
            )
        };
        // The last n % 4 values, one per lane of the grid's first warp that reaches them.
        let tail = GROUP * groups + thread::index_1d();
        if tail - (warp::lane_id() as u64) < n {
            let (bin, w) = if tail < n {
                // SAFETY: tail < n, inside both inputs.
                unsafe {
                    (
                        load_one::<T>(input, tail).bin_or_none(&binning),
                        mem::load_global_nc_f32(weights.add(tail as usize)),
                    )
                }
            } else {
                (NO_BIN, 0.0)
            };
            // SAFETY: the whole warp is here (the condition above is warp-uniform).
            unsafe { add_weight::<GLOBAL, AGGREGATE>(&sums, bin, copy, w) };
        }
        if !GLOBAL {
            // Every add of this block has landed before the sums are read.
            thread::sync_threads();
            sums.flush(out, nbins, tid, threads);
        }
    }

    macro_rules! weighted_kernels {
        ($($t:ty => $name:ident),*) => {$(
            gpu_kernel! {
                #[doc = concat!("Weighted histogram of `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $name(input: *const u8, weights: *const f32, n: u64, sums: *mut f64, nbins: u32, lo: f32,
                                    hi: f32, scale: f32, copies: u32, global: u32, aggregate: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY (all): forwarded contract.
                    match (global != 0, aggregate != 0) {
                        (false, false) => unsafe { weighted::<$t, false, false>(input, weights, n, sums, binning, copies) },
                        (false, true) => unsafe { weighted::<$t, false, true>(input, weights, n, sums, binning, copies) },
                        (true, false) => unsafe { weighted::<$t, true, false>(input, weights, n, sums, binning, 1) },
                        (true, true) => unsafe { weighted::<$t, true, true>(input, weights, n, sums, binning, 1) },
                    }
                }
            }
        )*};
    }

    weighted_kernels!(
        u8 => histogram_weighted_u8,
        u16 => histogram_weighted_u16,
        i32 => histogram_weighted_i32,
        f32 => histogram_weighted_f32
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_grows_with_the_terms_and_the_absolute_sum() {
        assert_eq!(error_bound(0, 0, 5.0), 0.0);
        let b = error_bound(1 << 20, 1000, 1.0);
        assert!(b > (1u64 << 20) as f64 * 1.1e-16 && b < (1u64 << 20) as f64 * 1.2e-16, "{b}");
        assert_eq!(error_bound(10, 0, 2.0), 2.0 * error_bound(10, 0, 1.0));
        assert_eq!(shared_bytes(256, 16), 32 << 10);
    }
}
