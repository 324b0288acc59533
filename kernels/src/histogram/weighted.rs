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
//! # `f32` partial sums ([`PARTIALS_KERNELS`])
//! With many bins the `f64` compare-and-store loops dominate: two copies of 8,192 `f64` sums
//! leave lanes on random addresses, each add a 64-bit load and a 64-bit compare-and-store that
//! conflict in twice the banks of a 32-bit one. In this mode each block keeps its `copies`
//! private copies as `f32` partial sums instead (`red.shared.add.f32`, a 32-bit loop; half the
//! shared memory per copy, so twice the copies in the same bytes), converted exactly to `f64` and
//! added into the global `f64` sums at the end. A weight whose magnitude is not below
//! [`F32_PARTIAL_LIMIT`] (2^95), and every infinite or NaN weight, is added into the global sum
//! directly (`red.global.add.f64`): no partial of at most 2^32 adds of smaller terms can overflow,
//! so infinities and NaN arise exactly as in `f64`. For two- and four-byte values the four adds
//! of a group go through one optimistic round of loads and compare-and-swaps in flight together
//! (`nvptx_std::atomic::shared_add4_f32_if`), and with `aggregate` one warp vote covers the
//! group's four values. The bound becomes [`error_bound_f32_partials`]: every weight passes
//! through at most `q + 1` `f32` roundings (`q` the adds one partial takes, at most the values
//! the plan gives one block's copy; the one more rounds a warp's aggregated `f64` sum to `f32`)
//! and the `f64` stages of the bound above.
//!
//! # Parameters
//! `input`: `n` values, `weights`: `n` `f32` (both 16-byte aligned); `sums`: `nbins` `f64`, added
//! into; `nbins, lo, hi, scale` as [`super::Binning`]; `copies`: a power of two up to 32 (shared
//! mode); `global`: add every weight into `sums` directly (no shared memory; 0 for the
//! [`PARTIALS_KERNELS`]); `aggregate` as above.
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`shared_bytes`]`(nbins, copies)` in shared mode ([`f32_partial_bytes`] for the
//! [`PARTIALS_KERNELS`]), none in global mode.
//!
//! # Safety
//! As above, nothing else writes the buffers during the launch, and `n <= u32::MAX`.

/// The PTX symbols, in [`super::InputType::ALL`] order.
pub const KERNELS: [&str; 4] =
    ["histogram_weighted_u8", "histogram_weighted_u16", "histogram_weighted_i32", "histogram_weighted_f32"];

/// The PTX symbols of the `f32`-partials kernels (shared mode only), in
/// [`super::InputType::ALL`] order; same parameters as [`KERNELS`].
pub const PARTIALS_KERNELS: [&str; 4] = [
    "histogram_weighted_partials_u8",
    "histogram_weighted_partials_u16",
    "histogram_weighted_partials_i32",
    "histogram_weighted_partials_f32",
];

/// Values per group of the loop: one 16-byte vector of weights.
pub const GROUP: u64 = 4;

/// Dynamic shared memory of a block in shared mode: `copies` copies of `nbins` `f64` sums.
pub const fn shared_bytes(nbins: u32, copies: u32) -> u64 {
    8 * nbins as u64 * copies as u64
}

/// Dynamic shared memory of a block with `f32` partial sums: `copies` copies of `nbins` `f32`.
///
/// ```
/// use kernels::histogram::weighted::{f32_partial_bytes, shared_bytes};
/// assert_eq!(f32_partial_bytes(8192, 4), 128 << 10);
/// assert_eq!(2 * f32_partial_bytes(8192, 4), shared_bytes(8192, 4));
/// ```
pub const fn f32_partial_bytes(nbins: u32, copies: u32) -> u64 {
    4 * nbins as u64 * copies as u64
}

/// Weights whose magnitude is not below this (2^95), and infinite or NaN ones, skip the `f32`
/// partial sums and go into the global `f64` sums directly: at most 2^32 terms below 2^95 sum to
/// at most 2^127 in magnitude, so no `f32` partial overflows.
///
/// ```
/// use kernels::histogram::weighted::F32_PARTIAL_LIMIT;
/// assert_eq!(F32_PARTIAL_LIMIT, 2f32.powi(95));
/// assert!((u32::MAX as f64) * (F32_PARTIAL_LIMIT as f64) < f32::MAX as f64);
/// ```
pub const F32_PARTIAL_LIMIT: f32 = f32::from_bits((127 + 95) << 23);

/// The most a sum can differ from the exact sum of its weights (absolute values adding up to
/// `abs_sum`) when the `f32`-partial kernels made it: `values` weights in the bin, `partials`
/// partial sums added into the global sum, and at most `adds` adds into any one `f32` partial.
/// Every weight passes through at most `adds + 1` `f32` roundings (unit roundoff `u = 2^-24`) and
/// `values + partials` `f64` ones (`v = 2^-53`), so the error is at most
/// `((1 + u)^(adds + 1) (1 + v)^(values + partials) - 1) * abs_sum`, which
/// `(g32 + g64 + g32 * g64) * abs_sum` bounds with `g(k, u) = k u / (1 - k u)` (Higham's
/// `gamma_k`); infinite (no claim) once `k u` reaches 1/2.
///
/// ```
/// use kernels::histogram::weighted::{error_bound, error_bound_f32_partials};
/// // 1000 adds into one f32 partial: about 1001 * 2^-24 of the absolute sum.
/// let b = error_bound_f32_partials(5000, 132, 1000, 1.0);
/// assert!(b > 1001.0 * 2f64.powi(-24) && b < 1.001 * 1001.0 * 2f64.powi(-24), "{b}");
/// // Always above the f64 kernels' bound for the same bin.
/// assert!(b > error_bound(5000, 132, 1.0));
/// assert_eq!(error_bound_f32_partials(5000, 132, 1000, 0.0), 0.0);
/// assert_eq!(error_bound_f32_partials(1 << 30, 132, 1 << 23, 1.0), f64::INFINITY);
/// ```
pub fn error_bound_f32_partials(values: u64, partials: u64, adds: u64, abs_sum: f64) -> f64 {
    if abs_sum == 0.0 {
        return 0.0;
    }
    let gamma = |k: u64, u: f64| {
        let ku = k as f64 * u;
        if ku >= 0.5 { f64::INFINITY } else { ku / (1.0 - ku) }
    };
    let (g32, g64) =
        (gamma(adds.saturating_add(1), f32::EPSILON as f64 / 2.0), gamma(values + partials, f64::EPSILON / 2.0));
    (g32 + g64 + g32 * g64) * abs_sum
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
    use crate::device::shared::{DynamicSharedArray, SharedScalar};
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::device_code::load_one;
    use crate::histogram::pipelined::device_code::{for_each_group, for_each_group_single};
    use crate::histogram::{Binning, Element, NO_BIN};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// Sets every element of `shared` to `zero`; the block's threads share the work, and a barrier
    /// must follow before any add.
    #[inline(always)]
    fn zero_shared<T: SharedScalar>(shared: &DynamicSharedArray<T>, zero: T) {
        let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
        let mut i = tid;
        while i < shared.len() {
            // SAFETY: i < len; each thread zeroes its own elements.
            unsafe { shared.store(i, zero) };
            i += threads;
        }
    }

    /// Adds each of `nbins` bins' sums over its `copies` interleaved copies in `shared` (each
    /// widened to `f64` by `widen`, summed in `f64`) into `out`; thread `tid` of `threads` takes
    /// bins `tid, tid + threads, ...`. A barrier must precede it. Sums of zero are not added (the
    /// global sums then stay `+0.0`, where an exact `-0.0` would be numpy's).
    #[inline(always)]
    fn flush_copies<T: SharedScalar>(
        shared: &DynamicSharedArray<T>,
        copies: u32,
        out: *mut f64,
        nbins: u32,
        tid: u32,
        threads: u32,
        widen: impl Fn(T) -> f64,
    ) {
        let mut bin = tid;
        while bin < nbins {
            let mut total = 0.0f64;
            for c in 0..copies {
                // Rotating the first copy by the bin spreads a warp's loads over the banks.
                let c = (c + bin) & (copies - 1);
                // SAFETY: bin * copies + c < nbins * copies, ordered by the caller's barrier.
                total += widen(unsafe { shared.load((bin * copies + c) as usize) });
            }
            if total != 0.0 || total.is_nan() {
                // SAFETY: bin < nbins, inside `out`.
                unsafe { atomic::global_add_f64(out.add(bin as usize), total) };
            }
            bin += threads;
        }
    }

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
            zero_shared(&self.shared, 0.0);
        }

        /// Adds the shared sums of each of `nbins` bins (over the copies) into `out`; thread `tid`
        /// of `threads` takes bins `tid, tid + threads, ...`. A barrier must precede it. Sums of
        /// zero are not added (the global sums then stay `+0.0`, where an exact `-0.0` would be
        /// numpy's).
        #[inline(always)]
        pub(crate) fn flush(&self, out: *mut f64, nbins: u32, tid: u32, threads: u32) {
            flush_copies(&self.shared, self.copies, out, nbins, tid, threads, |x| x);
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

    /// Whether every lane of the warp holds lane 0's bin (a shuffle and a ballot): where it does,
    /// the aggregated adds add the warp's sum once, from lane 0.
    ///
    /// # Safety
    /// The whole warp calls it together.
    #[inline(always)]
    pub(crate) unsafe fn warp_shares_bin(bin: u32) -> bool {
        // SAFETY (both): forwarded: the whole warp is here.
        let first = unsafe { warp::shuffle_idx_u32(bin, 0) };
        unsafe { warp::ballot(bin == first) == u32::MAX }
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
        // SAFETY (both): forwarded contract.
        let shared = AGGREGATE && unsafe { warp_shares_bin(bin) };
        unsafe { add_weight_voted(shared, sums, bin, copy, w) }
    }

    /// [`add_weight`] with the warp's vote taken before ([`warp_shares_bin`], or false without
    /// aggregated adds): a kernel takes the votes of several values before their adds, so that
    /// their shuffles and ballots overlap instead of each lying on the path of one value's add.
    ///
    /// # Safety
    /// As [`add_weight`]'s; `shared` is the same in every lane of the warp and true only where
    /// every lane holds `bin`.
    #[inline(always)]
    pub(crate) unsafe fn add_weight_voted<const GLOBAL: bool>(
        shared: bool,
        sums: &Sums<GLOBAL>,
        bin: u32,
        copy: u32,
        w: f32,
    ) {
        if shared {
            // Every lane holds `bin`: the branches are the warp's.
            if bin != NO_BIN {
                // SAFETY: the whole warp is here.
                let total = unsafe { warp::sum_f64(w as f64) };
                if warp::lane_id() == 0 {
                    // SAFETY: bin < nbins.
                    unsafe { sums.add(bin, copy, total) };
                }
            }
            return;
        }
        if bin != NO_BIN {
            // SAFETY: forwarded contract.
            unsafe { sums.add(bin, copy, w as f64) };
        }
    }

    /// The `f32` partial sums of shared mode with `f32_partials`: `copies` interleaved copies of
    /// `nbins` `f32` sums in this block's shared memory, flushed into the global `f64` sums.
    #[derive(Clone, Copy)]
    pub(crate) struct F32Partials {
        shared: DynamicSharedArray<f32>,
        global: *mut f64,
        copies: u32,
    }

    impl F32Partials {
        /// Zeroes the partials; the block's threads share the work, and a barrier must follow
        /// before any add.
        #[inline(always)]
        pub(crate) fn zero(&self) {
            zero_shared(&self.shared, 0.0);
        }

        /// As [`Sums::flush`]: each bin's copies summed in `f64` (each `f32` converts exactly)
        /// and added into `out`, zero totals skipped. A barrier must precede it.
        #[inline(always)]
        pub(crate) fn flush(&self, out: *mut f64, nbins: u32, tid: u32, threads: u32) {
            flush_copies(&self.shared, self.copies, out, nbins, tid, threads, |x| x as f64);
        }

        /// Adds `w` to bin `bin` (in copy `copy`): into the `f32` partial when its magnitude is
        /// below [`F32_PARTIAL_LIMIT`](super::F32_PARTIAL_LIMIT), else (and for infinities and
        /// NaN, which fail the comparison) into the global `f64` sum.
        ///
        /// # Safety
        /// `bin < nbins`, `copy < copies`.
        #[inline(always)]
        pub(crate) unsafe fn add(&self, bin: u32, copy: u32, w: f64) {
            let limit = super::F32_PARTIAL_LIMIT as f64;
            // SAFETY (both): inside the partials or the sums by the caller's contract.
            if w < limit && w > -limit {
                unsafe {
                    atomic::shared_add_f32(self.shared.address_of((bin * self.copies + copy) as usize), w as f32)
                };
            } else {
                unsafe { add_global(self.global, bin, w) };
            }
        }

        /// [`add`](Self::add) of an `f32` weight, compared in `f32` (the same test: the limit is
        /// an `f32`, and converting a weight to `f64` is exact).
        ///
        /// # Safety
        /// As [`add`](Self::add)'s.
        #[inline(always)]
        pub(crate) unsafe fn add_f32(&self, bin: u32, copy: u32, w: f32) {
            // SAFETY (both): inside the partials or the sums by the caller's contract.
            if below_partial_limit(w) {
                unsafe { atomic::shared_add_f32(self.shared.address_of((bin * self.copies + copy) as usize), w) };
            } else {
                unsafe { add_global(self.global, bin, w as f64) };
            }
        }

        /// [`add_f32`](Self::add_f32) of four weights at once, where `bins[k] != NO_BIN`: the
        /// ones below the limit through [`atomic::shared_add4_f32_if`], whose loads and swaps
        /// of the four are in flight together; the others into the global sums.
        ///
        /// # Safety
        /// Each of `bins` is `NO_BIN` or below `nbins`; `copy < copies`.
        #[inline(always)]
        pub(crate) unsafe fn add4_f32(&self, bins: [u32; 4], copy: u32, w: [f32; 4]) {
            let small = [0, 1, 2, 3].map(|k| bins[k] != NO_BIN && below_partial_limit(w[k]));
            // Wrapping: NO_BIN times the copies overflows; its address is never used.
            let addr = [0, 1, 2, 3]
                .map(|k| self.shared.address_of(bins[k].wrapping_mul(self.copies).wrapping_add(copy) as usize));
            // SAFETY: where small[k] holds, bins[k] < nbins and copy < copies: inside the partials.
            unsafe { atomic::shared_add4_f32_if(small, addr, w) };
            for k in 0..4 {
                if bins[k] != NO_BIN && !small[k] {
                    // SAFETY: bins[k] < nbins, inside the sums.
                    unsafe { add_global(self.global, bins[k], w[k] as f64) };
                }
            }
        }
    }

    /// Whether an `f32` weight goes into the `f32` partials: its magnitude is below
    /// [`F32_PARTIAL_LIMIT`](super::F32_PARTIAL_LIMIT) (infinities and NaN fail the comparison).
    #[inline(always)]
    fn below_partial_limit(w: f32) -> bool {
        let limit = super::F32_PARTIAL_LIMIT;
        w < limit && w > -limit
    }

    /// Whether every lane of the warp holds lane 0's first bin in all four of `bins` (one shuffle
    /// and one ballot for four values).
    ///
    /// # Safety
    /// The whole warp calls it together.
    #[inline(always)]
    pub(crate) unsafe fn warp_shares_bin4(bins: [u32; 4]) -> bool {
        // SAFETY (both): forwarded: the whole warp is here.
        let first = unsafe { warp::shuffle_idx_u32(bins[0], 0) };
        let same = bins[0] == first && bins[1] == first && bins[2] == first && bins[3] == first;
        unsafe { warp::ballot(same) == u32::MAX }
    }

    /// The rare path of [`F32Partials::add`]: `w` into global sum `bin`, out of line so that the
    /// counting loop keeps no registers for it.
    ///
    /// # Safety
    /// `bin` is inside the sums at `global`.
    #[cold]
    #[inline(never)]
    unsafe fn add_global(global: *mut f64, bin: u32, w: f64) {
        // SAFETY: forwarded; red.global is atomic.
        unsafe { atomic::global_add_f64(global.add(bin as usize), w) };
    }

    /// [`add_weight`] into `f32` partials.
    ///
    /// # Safety
    /// As [`add_weight`]'s.
    #[inline(always)]
    pub(crate) unsafe fn add_weight_partial<const AGGREGATE: bool>(sums: &F32Partials, bin: u32, copy: u32, w: f32) {
        // SAFETY (both): forwarded contract.
        let shared = AGGREGATE && unsafe { warp_shares_bin(bin) };
        unsafe { add_weight_partial_voted(shared, sums, bin, copy, w) }
    }

    /// [`add_weight_partial`] with the warp's vote taken before, as [`add_weight_voted`].
    ///
    /// # Safety
    /// As [`add_weight_voted`]'s.
    #[inline(always)]
    pub(crate) unsafe fn add_weight_partial_voted(shared: bool, sums: &F32Partials, bin: u32, copy: u32, w: f32) {
        if shared {
            // Every lane holds `bin`: the branches are the warp's.
            if bin != NO_BIN {
                // Summed in f64 (as the f64 kernels), rounded once to f32 in `add`.
                // SAFETY: the whole warp is here.
                let total = unsafe { warp::sum_f64(w as f64) };
                if warp::lane_id() == 0 {
                    // SAFETY: bin < nbins.
                    unsafe { sums.add(bin, copy, total) };
                }
            }
            return;
        }
        if bin != NO_BIN {
            // SAFETY: forwarded contract.
            unsafe { sums.add_f32(bin, copy, w) };
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
    unsafe fn weighted<T: Element, const GLOBAL: bool, const AGGREGATE: bool, const F32: bool>(
        input: *const u8,
        weights: *const f32,
        n: u64,
        out: *mut f64,
        binning: Binning,
        copies: u32,
    ) {
        let nbins = binning.nbins;
        let len = if GLOBAL { 0 } else { (nbins * copies) as usize };
        // SAFETY: in shared mode the launch provides nbins * copies * 8 bytes (f64 sums) or
        // nbins * copies * 4 (f32 partials); only the view of the mode is touched.
        let shared = unsafe { dynamic_shared_array!(HISTOGRAM_WEIGHTED_SUMS: f64, len) };
        let shared32 = unsafe { dynamic_shared_array!(HISTOGRAM_WEIGHTED_PARTIALS: f32, len) };
        let sums = Sums::<GLOBAL>::new(shared, out, copies);
        let partials = F32Partials { shared: shared32, global: out, copies };
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        if !GLOBAL {
            if F32 {
                partials.zero();
            } else {
                sums.zero();
            }
            // Every sum is zero before any thread adds to it.
            thread::sync_threads();
        }
        let copy = warp::lane_id() & (copies - 1);
        let groups = n / GROUP;
        // Each call of `count` is made by the whole warp (for_each_group), as add_weight needs.
        // SAFETY: the loops below load only groups below n / 4, inside both inputs.
        let load = #[inline(always)]
        |i: u64| unsafe { load_group::<T>(input, weights, i) };
        let count = #[inline(always)]
        |(values, w): ([u32; 4], [u32; 4]), _: u64, present: bool| {
            // SAFETY: the whole warp makes each call (for_each_group gives every lane the same
            // calls), as the votes need; each bin is NO_BIN or below nbins, copy below copies.
            unsafe {
                let bin = #[inline(always)]
                |j: usize| if present { value_at::<T>(values, j).bin_or_none(&binning) } else { NO_BIN };
                if F32 && T::SIZE >= 2 {
                    // Two- and four-byte values into f32 partials: with merged adds, one vote for
                    // the group (a warp whose 128 values share one bin adds their sum once), and
                    // the four adds of any other group in flight together. H200, 2^26 i32 values
                    // and f32 weights in 8,192 bins: 0.136 ms (92.6% of the copy), against 0.175
                    // with a vote and a one-value swap loop per value (0.162 unmerged); zipf
                    // values 0.583 against 0.581. The u8 kernel keeps those: a byte reaches at
                    // most 256 bins, and its colliding adds took 1.47 ms through the four-add
                    // round against 1.27 (4,096 bins, 8 copies, 94% of the bytes 255).
                    let bins = [bin(0), bin(1), bin(2), bin(3)];
                    let w = [0, 1, 2, 3].map(|j| f32::from_bits(w[j]));
                    if AGGREGATE && warp_shares_bin4(bins) {
                        // Every lane holds the bin: the branches are the warp's.
                        if bins[0] != NO_BIN {
                            // Summed in f64 (as the f64 kernels), rounded once to f32 in `add`.
                            let lane_sum = (w[0] as f64 + w[1] as f64) + (w[2] as f64 + w[3] as f64);
                            let total = warp::sum_f64(lane_sum);
                            if warp::lane_id() == 0 {
                                partials.add(bins[0], copy, total);
                            }
                        }
                    } else {
                        partials.add4_f32(bins, copy, w);
                    }
                    return;
                }
                if !AGGREGATE {
                    // No votes: each value binned and added in turn, as before the votes were
                    // batched (the loop the unmerged kernels were measured with).
                    let each = #[inline(always)]
                    |j: usize| {
                        if F32 {
                            add_weight_partial_voted(false, &partials, bin(j), copy, f32::from_bits(w[j]));
                        } else {
                            add_weight_voted::<GLOBAL>(false, &sums, bin(j), copy, f32::from_bits(w[j]));
                        }
                    };
                    each(0);
                    each(1);
                    each(2);
                    each(3);
                    return;
                }
                let bins = [bin(0), bin(1), bin(2), bin(3)];
                // The group's four warp votes first: each is a shuffle and a ballot whose
                // round trips, taken value by value, lay on the path of every add (H200,
                // 2^26 i32 values and f32 weights in 8,192 bins: 0.180 ms against 0.185 in
                // one device call; without merged adds both took 0.162-0.163).
                let shared = [
                    warp_shares_bin(bins[0]),
                    warp_shares_bin(bins[1]),
                    warp_shares_bin(bins[2]),
                    warp_shares_bin(bins[3]),
                ];
                let each = #[inline(always)]
                |j: usize| {
                    if F32 {
                        add_weight_partial_voted(shared[j], &partials, bins[j], copy, f32::from_bits(w[j]));
                    } else {
                        add_weight_voted::<GLOBAL>(shared[j], &sums, bins[j], copy, f32::from_bits(w[j]));
                    }
                };
                each(0);
                each(1);
                each(2);
                each(3);
            }
        };
        let (start, stride) = (thread::index_1d(), thread::grid_size_1d());
        // SAFETY (both): the grid's lanes hold consecutive indices and its size is a multiple of
        // 32; every group below n / 4 lies inside both inputs.
        if F32 && T::SIZE >= 2 {
            // Two- and four-byte values beside their weights, counted with votes into f32
            // partials at the 1,024 threads' 64 registers: four groups in flight spilled (ptxas
            // 12.9: 4 bytes for u16, 12-16 for i32 and f32); two leave 48-64 bytes a thread in
            // flight, above the module's Little's-law figure. The u8 kernel, whose groups carry
            // a quarter of the value bytes, fits four.
            unsafe { for_each_group_single(0, groups, start, stride, ([0u32; 4], [0u32; 4]), load, count) };
        } else {
            unsafe { for_each_group(0, groups, start, stride, ([0u32; 4], [0u32; 4]), load, count) };
        }
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
            // SAFETY (both): the whole warp is here (the condition above is warp-uniform).
            if F32 {
                unsafe { add_weight_partial::<AGGREGATE>(&partials, bin, copy, w) };
            } else {
                unsafe { add_weight::<GLOBAL, AGGREGATE>(&sums, bin, copy, w) };
            }
        }
        if !GLOBAL {
            // Every add of this block has landed before the sums are read.
            thread::sync_threads();
            if F32 {
                partials.flush(out, nbins, tid, threads);
            } else {
                sums.flush(out, nbins, tid, threads);
            }
        }
    }

    macro_rules! weighted_kernels {
        ($($t:ty => $name:ident, $partials:ident);*) => {$(
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
                        (false, false) => unsafe { weighted::<$t, false, false, false>(input, weights, n, sums, binning, copies) },
                        (false, true) => unsafe { weighted::<$t, false, true, false>(input, weights, n, sums, binning, copies) },
                        (true, false) => unsafe { weighted::<$t, true, false, false>(input, weights, n, sums, binning, 1) },
                        (true, true) => unsafe { weighted::<$t, true, true, false>(input, weights, n, sums, binning, 1) },
                    }
                }
            }
            gpu_kernel! {
                #[doc = concat!("Weighted histogram of `", stringify!($t), "` values in `f32` partial sums; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's (shared mode only: `global` must be 0).
                pub unsafe fn $partials(input: *const u8, weights: *const f32, n: u64, sums: *mut f64, nbins: u32, lo: f32,
                                        hi: f32, scale: f32, copies: u32, _global: u32, aggregate: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY (both): forwarded contract.
                    if aggregate != 0 {
                        unsafe { weighted::<$t, false, true, true>(input, weights, n, sums, binning, copies) }
                    } else {
                        unsafe { weighted::<$t, false, false, true>(input, weights, n, sums, binning, copies) }
                    }
                }
            }
        )*};
    }

    weighted_kernels!(
        u8 => histogram_weighted_u8, histogram_weighted_partials_u8;
        u16 => histogram_weighted_u16, histogram_weighted_partials_u16;
        i32 => histogram_weighted_i32, histogram_weighted_partials_i32;
        f32 => histogram_weighted_f32, histogram_weighted_partials_f32
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
