// Over 600 lines with its documentation: about 460 lines of code; the rest are doc comments (launch
// contracts, the algorithm) and 120 lines of unit tests.
//! Histograms of `u8`, `u16`, `i32` and `f32` inputs, in five tiers chosen by the bin count:
//! `histogram_shared_*`, `histogram_cluster_*` and `histogram_global_*` here (after the CUDA C++
//! Programming Guide's "Distributed Shared Memory" histogram), and for bin counts beyond one
//! block the sorted tier in [`sorted`] (the planner's) and the bucketed tier in [`bucketed`].
//!
//! # Parameters
//! `input`: `n` values of the kernel's element type (16-byte aligned, as every `cuMemAlloc` is);
//! `bins`: the counters in global memory, zeroed by the host before the launch; the [`Binning`]
//! as the scalars `nbins, lo, hi, scale`. Integer values count in bin `v`, clamped into the edge
//! bins ([`bin_of`]); `f32` values count in even bins over `[lo, hi]` ([`bin_of_f32`]) and values
//! outside it or NaN are not counted. `shift` divides every bin by `2^shift` before counting (the
//! shared tier only; 0 for a histogram, the bucket bits for the bucketed tier's bucket counts), so
//! `bins` holds `((nbins - 1) >> shift) + 1` counters.
//!
//! # Tiers
//! - `histogram_shared_*`: the whole histogram fits in one block's shared memory: each block
//!   counts its share of the input into `copies` interleaved private copies (`red.shared`; lane
//!   `l` adds into copy `l % copies`, so equal values in one warp land on different addresses and
//!   banks), then adds their sum into `bins`.
//! - `histogram_cluster_*`: the histogram fits in a thread-block cluster's distributed shared
//!   memory: block `r` of a cluster owns bins `r * bins_per_block ..`; every thread adds into the
//!   owner's shared memory (`mapa` + `red.shared::cluster`), and each block adds its slice into
//!   `bins`. Cluster barriers before (every slice zeroed) and after (no block exits, or reads its
//!   slice, while others still add into it) the counting.
//! - `histogram_global_*`: every value is one `red.global.add`.
//!
//! With `aggregate != 0` a warp whose 32 lanes hold the same bin adds 32 once instead of 32 times
//! (a shuffle and a ballot per value): a constant input then costs one atomic per warp step
//! instead of 32 serialized on one address.
//!
//! # Thread mapping
//! One-dimensional grid of any size whose block size is a multiple of 32 (the host uses a
//! persistent grid: as many blocks as fit on the GPU at once). A grid-stride loop reads the input
//! 16 bytes per thread per step, two steps in flight; the last `n % (16 / size)` values are read
//! one by one. Every loop runs the same number of steps in all lanes of a warp (lanes without a
//! value pass [`NO_BIN`]), so warp-wide instructions see a converged warp.
//!
//! # Shared memory
//! Dynamic: `(((nbins - 1) >> shift) + 1) * copies * 4` bytes (shared tier) or
//! `bins_per_block * 4` bytes (cluster tier), set at launch; none for the global tier.
//!
//! # Safety
//! `input` holds `n` values, `bins` holds the counters above and nothing else accesses them
//! during the launch; `copies` is a power of two from 1 to 32; the launch provides the dynamic
//! shared memory above, and for the cluster tier a cluster dimension `c` with
//! `c * bins_per_block >= nbins`.

#[cfg(target_arch = "nvptx64")]
/// Runs `body` for `k` = 0 to 15 as straight-line code: per-thread arrays indexed by a
/// constant stay in registers, where a loop (which LLVM did not unroll around the warp
/// instructions) put them in local memory.
macro_rules! unroll16 {
    (|$k:ident| $body:block) => {
        unroll16!(@ $k $body 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $k:ident $body:block $($i:literal)*) => {
        $({
            let $k: usize = $i;
            $body
        })*
    };
}

pub mod bucketed;
pub mod channels;
pub mod edges;
pub mod hist2d;
pub mod packed;
pub mod pipelined;
pub mod segmented;
pub mod sorted;
pub mod weighted;

/// A value's input element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputType {
    /// Unsigned bytes: value `v` counts in bin `v`.
    U8,
    /// Unsigned 16-bit integers.
    U16,
    /// Signed 32-bit integers: negative values count in bin 0.
    I32,
    /// 32-bit floats, counted in even bins over a range.
    F32,
}

impl InputType {
    /// Every input type, in the order of [`TYPED_KERNELS`].
    pub const ALL: [Self; 4] = [Self::U8, Self::U16, Self::I32, Self::F32];

    /// Bytes per value.
    pub const fn size(self) -> u32 {
        match self {
            Self::U8 => 1,
            Self::U16 => 2,
            Self::I32 | Self::F32 => 4,
        }
    }

    /// The name `--type` takes and the kernels' suffix.
    pub const fn name(self) -> &'static str {
        match self {
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::I32 => "i32",
            Self::F32 => "f32",
        }
    }

    /// The PTX symbols of this type's kernels.
    pub const fn kernels(self) -> &'static TypedKernels {
        match self {
            Self::U8 => &TYPED_KERNELS[0],
            Self::U16 => &TYPED_KERNELS[1],
            Self::I32 => &TYPED_KERNELS[2],
            Self::F32 => &TYPED_KERNELS[3],
        }
    }
}

/// The PTX symbols of one input type's kernels.
#[derive(Debug)]
pub struct TypedKernels {
    /// Block-shared-memory tier (also the bucketed tier's bucket count, with `shift`).
    pub shared: &'static str,
    /// Cluster (distributed shared memory) tier.
    pub cluster: &'static str,
    /// Global-memory tier.
    pub global: &'static str,
    /// The bucketed tier's scatter of values into buckets ([`bucketed`]).
    pub scatter: &'static str,
    /// The sorted tier's tile sort ([`sorted`]).
    pub tile_sort: &'static str,
}

macro_rules! typed_kernels {
    ($($t:literal),*) => {
        /// The PTX symbols of every typed kernel, in [`InputType::ALL`] order.
        pub const TYPED_KERNELS: [TypedKernels; 4] = [$(TypedKernels {
            shared: concat!("histogram_shared_", $t),
            cluster: concat!("histogram_cluster_", $t),
            global: concat!("histogram_global_", $t),
            scatter: concat!("histogram_scatter_", $t),
            tile_sort: concat!("histogram_tile_sort_", $t),
        }),*];
    };
}
typed_kernels!("u8", "u16", "i32", "f32");

/// How values map to bins: `nbins` bins, and for `f32` the range `[lo, hi]` with
/// `scale = nbins / (hi - lo)` computed once in `f32` (integer types ignore the range).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binning {
    /// Number of bins, at least 1.
    pub nbins: u32,
    /// Lowest counted value (`f32` only).
    pub lo: f32,
    /// Highest counted value, which counts in the last bin (`f32` only).
    pub hi: f32,
    /// `nbins as f32 / (hi - lo)` (`f32` only).
    pub scale: f32,
}

impl Binning {
    /// Integer binning: value `v` in bin `v`, clamped.
    pub const fn integers(nbins: u32) -> Self {
        Self { nbins, lo: 0.0, hi: 0.0, scale: 0.0 }
    }

    /// Even bins over `[lo, hi]`. The caller checks that both are finite, `lo < hi` and `scale`
    /// is finite (the host's argument checks say why not, in words).
    pub fn range(nbins: u32, lo: f32, hi: f32) -> Self {
        Self { nbins, lo, hi, scale: nbins as f32 / (hi - lo) }
    }

    /// The bound of [`Element::offset_bits`] under which a value is inside `[lo, hi]`: the bits
    /// of `hi - lo` (computed in `f32`) where every value above `hi` gives a larger difference
    /// (`next_up(hi) - lo > hi - lo`: rounding is monotone, so a value at or below `hi` gives at
    /// most `hi - lo`, and above it at least `next_up(hi) - lo`), else those of the float just
    /// below `hi - lo`, which every value above `hi` exceeds (its difference is at least
    /// `hi - lo`), and which leaves out the few values at the top of the range whose difference
    /// rounds to `hi - lo` itself. A value below `lo` gives a negative difference (an exact
    /// nonzero difference never rounds to zero), whose sign bit puts it above any bound, and
    /// NaN's bits lie above every finite float's: one unsigned compare a value, or a maximum of
    /// several and one compare, where the range test takes two float compares a value. The bound
    /// is conservative (`-0.0` against `lo = 0.0` gives `-0.0` and fails it), so a value that
    /// passes is inside the range, and a value that fails is tested again by
    /// [`Element::bin_parts`]. A range whose width is not a positive float (not a range the host
    /// launches) has the bound 0, under which only `lo` itself passes.
    ///
    /// ```
    /// use kernels::histogram::{Binning, Element};
    /// let b = Binning::range(10, 0.5, 4.0);
    /// for v in [0.5f32, 1.0, 3.9999998, 4.0] {
    ///     assert!(v.offset_bits(&b) <= b.offset_limit());
    /// }
    /// for v in [0.49999997f32, 4.0000005, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
    ///     assert!(v.offset_bits(&b) > b.offset_limit());
    /// }
    /// // Over [-1, 1] the difference loses hi's last bit (next_up(1) + 1 rounds to 2): the bound
    /// // is the float below 2, which 1 and the float below it fail (their sums round to 2 too)
    /// // and every smaller value of the range passes.
    /// let symmetric = Binning::range(10, -1.0, 1.0);
    /// assert_eq!(symmetric.offset_limit(), 2.0f32.next_down().to_bits());
    /// assert!(1.0000001f32.offset_bits(&symmetric) > symmetric.offset_limit());
    /// assert!(1.0f32.offset_bits(&symmetric) > symmetric.offset_limit());
    /// for v in [-1.0f32, 0.0, 0.99999988] {
    ///     assert!(v.offset_bits(&symmetric) <= symmetric.offset_limit());
    /// }
    /// ```
    #[inline(always)]
    pub fn offset_limit(&self) -> u32 {
        let within = self.hi - self.lo;
        let above = self.hi.next_up() - self.lo;
        // `>` is false where either is NaN; a positive width keeps the bits' order.
        if within > 0.0 && within.is_finite() && above > within {
            within.to_bits()
        } else if within > 0.0 {
            // Also where the width overflows to infinity: a value above `hi` gives infinity too.
            within.next_down().to_bits()
        } else {
            0
        }
    }
}

/// A lane without a value to count (past the input, or a float outside the range).
pub const NO_BIN: u32 = u32::MAX;

/// The bin an `i32` value counts in: clamped into `0..nbins` (`nbins >= 1`).
#[inline(always)]
pub fn bin_of(value: i32, nbins: u32) -> u32 {
    // A signed max and an unsigned min (two `min`/`max` instructions), where the same clamp
    // written as two tests took two compares and two selects: the packed kernels are bound by
    // their integer instructions.
    (value.max(0) as u32).min(nbins - 1)
}

/// The bin of an unsigned value: `value`, or the last bin when it is `nbins` or more.
#[inline(always)]
pub fn bin_of_unsigned(value: u32, nbins: u32) -> u32 {
    value.min(nbins - 1)
}

/// The bin an `f32` value counts in, with `numpy.histogram`'s rules for the range: `None` outside
/// `[lo, hi]` and for NaN, `hi` in the last bin. Inside it the bin is `floor((v - lo) * scale)`
/// in `f32` (one subtraction, one multiplication, no fused multiply-add: the GPU and the CPU
/// round identically), clamped into the last bin so that `hi` itself (and a product rounded up
/// to `nbins`) counts there. A value within a rounding error of an interior bin edge can land
/// one bin off numpy's, which corrects its index against its `linspace` edges: with 10 bins over
/// `[-1, 1]`, numpy counts `-0.8f32` in bin 1 and this formula in bin 0.
#[inline(always)]
pub fn bin_of_f32(value: f32, lo: f32, hi: f32, scale: f32, nbins: u32) -> Option<u32> {
    let (inside, bin) = f32_bin_parts(value, lo, hi, scale, nbins);
    if inside { Some(bin) } else { None }
}

/// [`bin_of_f32`] as whether the value is counted and the bin it counts in where it is (a
/// meaningless bin elsewhere): for kernels that test the first together with other conditions
/// (one chain of predicates, no select of a marker bin first).
#[inline(always)]
pub fn f32_bin_parts(value: f32, lo: f32, hi: f32, scale: f32, nbins: u32) -> (bool, u32) {
    // Computed for every value and selected after, branch-free: the conversion saturates (a
    // negative product or NaN gives 0, one past 2^32 u32::MAX), so any value converts, and only
    // those inside the range keep their bin. On the GPU that is one `cvt.rzi.u32.f32`, where a
    // clamp into [0, 2^32) before the conversion cost two more instructions, and the bin of a
    // value known to be inside a predicated path, per value. The packed kernels were bound by
    // their instructions (42 a value for f32 against 33 for i32 at 65,536 bins); the range test
    // now joins their window test in one chain of predicates (Element::window_bin), and on the
    // H200 f32 there takes 0.090 ms against 0.088 for i32 (0.106 before).
    let bin = f32_to_u32_rz_sat((value - lo) * scale).min(nbins.saturating_sub(1));
    // `&`, not `&&`: both comparisons are made, and NaN fails both.
    ((value >= lo) & (value <= hi), bin)
}

/// `x as u32` (truncation toward zero, saturating, NaN to 0): on the GPU the one PTX
/// instruction that does exactly that.
#[inline(always)]
fn f32_to_u32_rz_sat(x: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::device::math::f32_to_u32_rz_sat(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x as u32
    }
}

/// An input element type the kernels count: how a value is unpacked from the 32-bit words a
/// vector load returns, and which bin it counts in.
pub trait Element: Copy {
    /// The element type's tag.
    const TYPE: InputType;
    /// Bytes per value.
    const SIZE: u32 = Self::TYPE.size();
    /// Values in one 16-byte vector.
    const PER_VECTOR: u64 = 16 / Self::SIZE as u64;
    /// Whether [`Element::bin`] can return `None` (floats outside the range).
    const MAY_LEAVE_OUT: bool = false;
    /// How many values the type holds when it is an unsigned integer (`256` for `u8`), else 0:
    /// with at least that many bins every value is its own bin, unclamped ([`Element::index`]).
    const VALUES: u32 = 0;

    /// The value as an unsigned index (unsigned integers; 0 for the other types, whose
    /// [`Element::VALUES`] is 0).
    #[inline(always)]
    fn index(self) -> u32 {
        0
    }

    /// The value held in the low `SIZE` bytes of `word`.
    fn from_word(word: u32) -> Self;

    /// Calls `f` on each value packed little-endian in `word`, lowest address first.
    fn for_each_in_word(word: u32, f: &mut impl FnMut(Self));

    /// Calls `f` on each value of one 16-byte vector loaded as four words, lowest address
    /// first. Constant word indices keep the vector in registers: an array iterator indexes it
    /// at run time and moved the vectors to local memory.
    #[inline(always)]
    fn for_each_in_vector(words: [u32; 4], f: &mut impl FnMut(Self)) {
        Self::for_each_in_word(words[0], f);
        Self::for_each_in_word(words[1], f);
        Self::for_each_in_word(words[2], f);
        Self::for_each_in_word(words[3], f);
    }

    /// Calls `f` on the values of one 16-byte vector four at a time, lowest address first (one
    /// call for `i32` and `f32`, two for `u16`, four for `u8`): what a kernel needs to issue four
    /// values' shared atomics before it waits on any of their results. The word and shift of each
    /// value are constants after inlining, so the vector stays in registers.
    #[inline(always)]
    fn for_each_quad_in_vector(words: [u32; 4], f: &mut impl FnMut([Self; 4])) {
        let at = |k: u32| {
            let byte = k * Self::SIZE;
            Self::from_word(words[(byte / 4) as usize] >> (8 * (byte % 4)))
        };
        f([at(0), at(1), at(2), at(3)]);
        if Self::PER_VECTOR > 4 {
            f([at(4), at(5), at(6), at(7)]);
        }
        if Self::PER_VECTOR > 8 {
            f([at(8), at(9), at(10), at(11)]);
            f([at(12), at(13), at(14), at(15)]);
        }
    }

    /// The bin this value counts in, or `None` where it is not counted.
    fn bin(self, binning: &Binning) -> Option<u32>;

    /// [`Element::bin`] with [`NO_BIN`] for `None`.
    #[inline(always)]
    fn bin_or_none(self, binning: &Binning) -> u32 {
        match self.bin(binning) {
            Some(bin) => bin,
            None => NO_BIN,
        }
    }

    /// Whether the value counts at all, and its bin where it does (a meaningless bin elsewhere):
    /// [`Element::window_bin`] for a window of every bin, without its subtraction and test (a
    /// clamped integer always counts, in a bin below `nbins`).
    #[inline(always)]
    fn bin_parts(self, binning: &Binning) -> (bool, u32) {
        if Self::MAY_LEAVE_OUT {
            let bin = self.bin_or_none(binning);
            (bin != NO_BIN, bin)
        } else {
            (true, self.bin_or_none(binning))
        }
    }

    /// The bits of the value's difference from the range's start (`value - lo` in `f32`) for
    /// the range test of [`Binning::offset_limit`]; 0 for the integer types, which every bin
    /// takes.
    #[inline(always)]
    fn offset_bits(self, _binning: &Binning) -> u32 {
        0
    }

    /// Whether the value counts in the window `first..first + window` of the bins, and its
    /// counter there (`bin - first`) where it does (a meaningless counter elsewhere): the
    /// packed kernels' binning, where a kernel bound by its instructions tests the range and the
    /// window in one chain of predicates.
    #[inline(always)]
    fn window_bin(self, binning: &Binning, first: u32, window: u32) -> (bool, u32) {
        let counter = self.bin_or_none(binning).wrapping_sub(first);
        (counter < window, counter)
    }
}

impl Element for u8 {
    const TYPE: InputType = InputType::U8;
    const VALUES: u32 = 256;
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_word(word: u32) -> Self {
        word as u8
    }
    #[inline(always)]
    fn for_each_in_word(word: u32, f: &mut impl FnMut(Self)) {
        f(word as u8);
        f((word >> 8) as u8);
        f((word >> 16) as u8);
        f((word >> 24) as u8);
    }
    #[inline(always)]
    fn bin(self, binning: &Binning) -> Option<u32> {
        Some(bin_of_unsigned(self as u32, binning.nbins))
    }
}

impl Element for u16 {
    const TYPE: InputType = InputType::U16;
    const VALUES: u32 = 65_536;
    #[inline(always)]
    fn index(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_word(word: u32) -> Self {
        word as u16
    }
    #[inline(always)]
    fn for_each_in_word(word: u32, f: &mut impl FnMut(Self)) {
        f(word as u16);
        f((word >> 16) as u16);
    }
    #[inline(always)]
    fn bin(self, binning: &Binning) -> Option<u32> {
        Some(bin_of_unsigned(self as u32, binning.nbins))
    }
}

impl Element for i32 {
    const TYPE: InputType = InputType::I32;
    #[inline(always)]
    fn from_word(word: u32) -> Self {
        word as i32
    }
    #[inline(always)]
    fn for_each_in_word(word: u32, f: &mut impl FnMut(Self)) {
        f(word as i32);
    }
    #[inline(always)]
    fn bin(self, binning: &Binning) -> Option<u32> {
        Some(bin_of(self, binning.nbins))
    }
}

impl Element for f32 {
    const TYPE: InputType = InputType::F32;
    const MAY_LEAVE_OUT: bool = true;
    #[inline(always)]
    fn from_word(word: u32) -> Self {
        f32::from_bits(word)
    }
    #[inline(always)]
    fn for_each_in_word(word: u32, f: &mut impl FnMut(Self)) {
        f(f32::from_bits(word));
    }
    #[inline(always)]
    fn bin(self, binning: &Binning) -> Option<u32> {
        bin_of_f32(self, binning.lo, binning.hi, binning.scale, binning.nbins)
    }
    #[inline(always)]
    fn bin_parts(self, binning: &Binning) -> (bool, u32) {
        f32_bin_parts(self, binning.lo, binning.hi, binning.scale, binning.nbins)
    }
    #[inline(always)]
    fn offset_bits(self, binning: &Binning) -> u32 {
        // The subtraction of f32_bin_parts, which the compiler computes once for both.
        (self - binning.lo).to_bits()
    }
    #[inline(always)]
    fn window_bin(self, binning: &Binning, first: u32, window: u32) -> (bool, u32) {
        let (inside, bin) = f32_bin_parts(self, binning.lo, binning.hi, binning.scale, binning.nbins);
        let counter = bin.wrapping_sub(first);
        (inside & (counter < window), counter)
    }
}

/// The block of a cluster that owns `bin`, and the bin's offset in that block's shared memory.
#[inline(always)]
pub fn owner_of(bin: u32, bins_per_block: u32) -> (u32, u32) {
    (bin / bins_per_block, bin % bins_per_block)
}

/// Shared memory a block needs for `bins` counters.
pub const fn shared_bytes(bins: u32) -> u32 {
    bins * size_of::<u32>() as u32
}

/// Where copy `copy` of `bin` lives among `copies` interleaved copies.
#[inline(always)]
pub fn copy_index(bin: u32, copies: u32, copy: u32) -> u32 {
    bin * copies + copy
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{Binning, Element, NO_BIN, copy_index, owner_of};
    use crate::device::{atomic, cluster, mem, thread, warp};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// Calls `count(bin, check)` for every input value this thread owns in a grid-stride loop, two
    /// 16-byte loads in flight per step, then the `n % PER_VECTOR` tail one value at a time.
    /// Lanes past the end pass [`NO_BIN`] while the rest of their warp counts, so `count` runs
    /// in converged warps (the grid's thread count is a multiple of 32). `check` is false where
    /// `bin` cannot be [`NO_BIN`] (an integer value in a full vector): a constant after inlining,
    /// so the hot loop carries no test for it.
    ///
    /// # Safety
    /// `input` holds `n` values of `T` and is 16-byte aligned.
    #[inline(always)]
    pub(crate) unsafe fn for_each_bin<T: Element>(
        input: *const u8,
        n: u64,
        binning: &Binning,
        mut count: impl FnMut(u32, bool),
    ) {
        let vectors = n / T::PER_VECTOR;
        let stride = thread::grid_size_1d();
        let mut i = thread::index_1d();
        let lanes_above = (warp::WARP_SIZE - 1 - warp::lane_id()) as u64;
        // While the warp's last lane has both vectors, every lane has them.
        while i + lanes_above + stride < vectors {
            // SAFETY: i + stride < n / PER_VECTOR, so both 16-byte loads lie inside the input.
            let (a, b) = unsafe {
                (
                    mem::load_global_nc_v4_u32(input.add(16 * i as usize)),
                    mem::load_global_nc_v4_u32(input.add(16 * (i + stride) as usize)),
                )
            };
            count_vector::<T>(a, binning, &mut count);
            count_vector::<T>(b, binning, &mut count);
            i += 2 * stride;
        }
        // At most two more steps, in which some lanes of the warp may have no vector.
        while i - (warp::lane_id() as u64) < vectors {
            if i < vectors {
                // SAFETY: i < n / PER_VECTOR.
                count_vector::<T>(
                    unsafe { mem::load_global_nc_v4_u32(input.add(16 * i as usize)) },
                    binning,
                    &mut count,
                );
            } else {
                for _ in 0..T::PER_VECTOR {
                    count(NO_BIN, true);
                }
            }
            i += stride;
        }
        let tail = T::PER_VECTOR * vectors + thread::index_1d();
        if tail - (warp::lane_id() as u64) < n {
            let bin = if tail < n {
                // SAFETY: tail < n.
                unsafe { load_one::<T>(input, tail) }.bin_or_none(binning)
            } else {
                NO_BIN
            };
            count(bin, true);
        }
    }

    /// Reads value `i` alone.
    ///
    /// # Safety
    /// `i < n` of the input `input` of `T` values.
    #[inline(always)]
    pub(crate) unsafe fn load_one<T: Element>(input: *const u8, i: u64) -> T {
        let p = input.wrapping_add((i * T::SIZE as u64) as usize);
        // SAFETY: forwarded; p is element i, aligned to its size.
        T::from_word(unsafe {
            match T::SIZE {
                1 => mem::load_global_nc_u8(p),
                2 => mem::load_global_nc_u16(p),
                _ => mem::load_global_nc_u32(p),
            }
        })
    }

    /// Counts the values of one 16-byte vector.
    #[inline(always)]
    pub(crate) fn count_vector<T: Element>(words: [u32; 4], binning: &Binning, count: &mut impl FnMut(u32, bool)) {
        let mut each = |v: T| count(v.bin_or_none(binning), T::MAY_LEAVE_OUT);
        T::for_each_in_vector(words, &mut each);
    }

    /// Adds one per lane to counter `bin` of every lane with a bin (`add(bin, 1)`); `check` says
    /// whether `bin` may be [`NO_BIN`]. With `AGGREGATE`, a warp whose lanes all hold the same
    /// bin adds 32 once from lane 0 instead: constant runs, the worst case of atomic contention,
    /// cost one atomic per warp step, for a shuffle and a ballot per value.
    ///
    /// # Safety
    /// The whole warp calls it together; `add(bin, k)` is sound for every bin passed.
    #[inline(always)]
    pub(crate) unsafe fn add_bin<const AGGREGATE: bool>(bin: u32, check: bool, mut add: impl FnMut(u32, u32)) {
        if AGGREGATE {
            // SAFETY (both): forwarded: the whole warp is here.
            let first = unsafe { warp::shuffle_idx_u32(bin, 0) };
            let same = unsafe { warp::ballot(bin == first) };
            if same == u32::MAX {
                if warp::lane_id() == 0 && (!check || bin != NO_BIN) {
                    add(bin, warp::WARP_SIZE);
                }
                return;
            }
        }
        if !check || bin != NO_BIN {
            add(bin, 1);
        }
    }

    /// The shared tier's body, generic over the element type; see the module documentation.
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn shared_tier<T: Element, const SHIFTED: bool, const AGGREGATE: bool>(
        input: *const u8,
        n: u64,
        bins: *mut u32,
        binning: Binning,
        shift: u32,
        copies: u32,
    ) {
        let shift = if SHIFTED { shift } else { 0 };
        let counters = ((binning.nbins - 1) >> shift) + 1;
        // SAFETY: the launch provides counters * copies * 4 bytes of dynamic shared memory.
        let local = unsafe { dynamic_shared_array!(HISTOGRAM_SHARED_BINS: u32, (counters * copies) as usize) };
        let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
        for i in (tid..local.len()).step_by(threads) {
            // SAFETY: i < len; each thread zeroes its own elements.
            unsafe { local.store(i, 0) };
        }
        // Every counter is zero before any thread adds to it.
        thread::sync_threads();
        let copy = warp::lane_id() & (copies - 1);
        // SAFETY: forwarded contract; the index is below counters * copies = len (bin < nbins),
        // and red.shared is atomic. The warp is converged at every call (for_each_bin).
        unsafe {
            for_each_bin::<T>(input, n, &binning, |bin, check| {
                let bin = if SHIFTED && bin != NO_BIN { bin >> shift } else { bin };
                add_bin::<AGGREGATE>(bin, check, |bin, k| {
                    atomic::shared_add_u32(local.address_of(copy_index(bin, copies, copy) as usize), k)
                })
            })
        };
        // Every add of this block has landed before the counters are read.
        thread::sync_threads();
        for bin in (tid..counters as usize).step_by(threads) {
            let mut sum = 0;
            for c in 0..copies {
                // Rotating the first copy by the bin puts a warp's loads in 32 different banks.
                let c = (c + bin as u32) & (copies - 1);
                // SAFETY: the index is below counters * copies = len; the barrier above ordered it.
                sum += unsafe { local.load(copy_index(bin as u32, copies, c) as usize) };
            }
            if sum != 0 {
                // SAFETY: bin < counters, the length of `bins`.
                unsafe { atomic::global_add_u32(bins.add(bin), sum) };
            }
        }
    }

    /// The cluster tier's body; see the module documentation.
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    pub(crate) unsafe fn cluster_tier<T: Element, const AGGREGATE: bool>(
        input: *const u8,
        n: u64,
        bins: *mut u32,
        binning: Binning,
        bins_per_block: u32,
    ) {
        // SAFETY: the launch provides bins_per_block * 4 bytes of dynamic shared memory.
        let local = unsafe { dynamic_shared_array!(HISTOGRAM_CLUSTER_BINS: u32, bins_per_block as usize) };
        let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
        for i in (tid..local.len()).step_by(threads) {
            // SAFETY: i < len; each thread zeroes its own elements.
            unsafe { local.store(i, 0) };
        }
        // Every block of the cluster has zeroed its slice before any block adds into it.
        cluster::sync();
        let base = local.address_of(0);
        // SAFETY: forwarded contract: owner rank < c because c * bins_per_block >= nbins,
        // offset < bins_per_block, and the owner stays resident until the barrier below.
        unsafe {
            for_each_bin::<T>(input, n, &binning, |bin, check| {
                add_bin::<AGGREGATE>(bin, check, |bin, k| {
                    let (rank, offset) = owner_of(bin, bins_per_block);
                    atomic::cluster_shared_add_u32(cluster::map_shared_rank(base + 4 * offset, rank), k);
                })
            })
        };
        // All blocks' adds into this slice are done before it is read, and no block exits
        // while another may still add into its shared memory.
        cluster::sync();
        let first = cluster::block_rank() as usize * local.len();
        for i in (tid..local.len()).step_by(threads) {
            if first + i < binning.nbins as usize {
                // SAFETY: i < len, and first + i < nbins is inside `bins`.
                unsafe {
                    let count = local.load(i);
                    if count != 0 {
                        atomic::global_add_u32(bins.add(first + i), count);
                    }
                }
            }
        }
    }

    macro_rules! tier_kernels {
        ($t:ty, $shared:ident, $cluster:ident, $global:ident, $scatter:ident, $tile_sort:ident) => {
            gpu_kernel! {
                #[doc = concat!("Shared tier for `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $shared(input: *const u8, n: u64, bins: *mut u32, nbins: u32, lo: f32, hi: f32,
                                      scale: f32, shift: u32, copies: u32, aggregate: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // One loop per (shift, aggregate) choice, picked once: the hot loop tests neither.
                    // SAFETY (all four): forwarded contract.
                    match (shift != 0, aggregate != 0) {
                        (false, false) => unsafe { shared_tier::<$t, false, false>(input, n, bins, binning, shift, copies) },
                        (false, true) => unsafe { shared_tier::<$t, false, true>(input, n, bins, binning, shift, copies) },
                        (true, false) => unsafe { shared_tier::<$t, true, false>(input, n, bins, binning, shift, copies) },
                        (true, true) => unsafe { shared_tier::<$t, true, true>(input, n, bins, binning, shift, copies) },
                    }
                }

                #[doc = concat!("Cluster tier for `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $cluster(input: *const u8, n: u64, bins: *mut u32, nbins: u32, lo: f32, hi: f32,
                                       scale: f32, bins_per_block: u32, aggregate: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY (both): forwarded contract.
                    if aggregate != 0 {
                        unsafe { cluster_tier::<$t, true>(input, n, bins, binning, bins_per_block) }
                    } else {
                        unsafe { cluster_tier::<$t, false>(input, n, bins, binning, bins_per_block) }
                    }
                }

                #[doc = concat!("Global tier for `", stringify!($t), "` values: one `red.global.add` per value (per distinct bin of a warp with `aggregate`).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $global(input: *const u8, n: u64, bins: *mut u32, nbins: u32, lo: f32, hi: f32,
                                      scale: f32, aggregate: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    let add = |bin: u32, k: u32| {
                        // SAFETY: every bin passed is below nbins, inside `bins`.
                        unsafe { atomic::global_add_u32(bins.add(bin as usize), k) }
                    };
                    // SAFETY (both): forwarded contract; the warp is converged at every add_bin.
                    if aggregate != 0 {
                        unsafe { for_each_bin::<$t>(input, n, &binning, |bin, check| add_bin::<true>(bin, check, add)) };
                    } else {
                        unsafe { for_each_bin::<$t>(input, n, &binning, |bin, check| add_bin::<false>(bin, check, add)) };
                    }
                }

                #[doc = concat!("The bucketed tier's scatter for `", stringify!($t), "` values; see [`super::bucketed`].")]
                ///
                /// # Safety
                /// As [`super::bucketed`]'s.
                pub unsafe fn $scatter(input: *const u8, n: u64, nbins: u32, lo: f32, hi: f32, scale: f32,
                                       shift: u32, bucket_counts: *const u32, cursors: *mut u32, keys: *mut u16) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { super::bucketed::device_code::scatter::<$t>(input, n, binning, shift, bucket_counts, cursors, keys) }
                }

                #[doc = concat!("The sorted tier's tile sort for `", stringify!($t), "` values; see [`super::sorted`].")]
                ///
                /// # Safety
                /// As [`super::sorted`]'s.
                pub unsafe fn $tile_sort(input: *const u8, n: u64, nbins: u32, lo: f32, hi: f32, scale: f32,
                                         shift: u32, keys: *mut u16, table: *mut u32, totals: *mut u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { super::sorted::device_code::tile_sort::<$t>(input, n, binning, shift, keys, table, totals) }
                }
            }
        };
    }

    tier_kernels!(
        u8,
        histogram_shared_u8,
        histogram_cluster_u8,
        histogram_global_u8,
        histogram_scatter_u8,
        histogram_tile_sort_u8
    );
    tier_kernels!(
        u16,
        histogram_shared_u16,
        histogram_cluster_u16,
        histogram_global_u16,
        histogram_scatter_u16,
        histogram_tile_sort_u16
    );
    tier_kernels!(
        i32,
        histogram_shared_i32,
        histogram_cluster_i32,
        histogram_global_i32,
        histogram_scatter_i32,
        histogram_tile_sort_i32
    );
    tier_kernels!(
        f32,
        histogram_shared_f32,
        histogram_cluster_f32,
        histogram_global_f32,
        histogram_scatter_f32,
        histogram_tile_sort_f32
    );
}

/// PTX symbol of the widening add of `u32` counters into `u64` ones.
pub const KERNEL_WIDEN_ADD: &str = "histogram_widen_add";

#[cfg(target_arch = "nvptx64")]
crate::gpu_kernel! {
    /// `dst[i] += src[i]` for `i < n`, `u32` into `u64`: the counters of one launch (at most
    /// `u32::MAX` values) added into totals that no input size overflows. A grid-stride loop, one
    /// thread per counter.
    ///
    /// # Safety
    /// `src` holds `n` `u32` and `dst` `n` `u64`, not overlapping, and nothing else writes `dst`
    /// during the launch.
    pub unsafe fn histogram_widen_add(src: *const u32, dst: *mut u64, n: u32) {
        use crate::device::thread;
        let mut i = thread::index_1d();
        while i < n as u64 {
            // SAFETY: i < n: inside both buffers; one thread per counter.
            unsafe { *dst.add(i as usize) += *src.add(i as usize) as u64 };
            i += thread::grid_size_1d();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_of_clamps_negatives_to_the_first_bin_and_large_values_to_the_last() {
        assert_eq!(bin_of(-1, 10), 0);
        assert_eq!(bin_of(i32::MIN, 10), 0);
        assert_eq!(bin_of(0, 10), 0);
        assert_eq!(bin_of(9, 10), 9);
        assert_eq!(bin_of(10, 10), 9);
        assert_eq!(bin_of(i32::MAX, 10), 9);
        assert_eq!(bin_of(5, 1), 0);
    }

    #[test]
    fn unsigned_values_past_the_last_bin_count_in_it() {
        assert_eq!(255u8.bin(&Binning::integers(256)), Some(255));
        assert_eq!(255u8.bin(&Binning::integers(10)), Some(9));
        assert_eq!(0u8.bin(&Binning::integers(1)), Some(0));
        assert_eq!(u16::MAX.bin(&Binning::integers(65_536)), Some(65_535));
        assert_eq!(300u16.bin(&Binning::integers(256)), Some(255));
    }

    #[test]
    fn f32_bins_are_even_over_the_range_with_hi_in_the_last_bin() {
        let b = Binning::range(4, 0.0, 1.0);
        assert_eq!(b.scale, 4.0);
        assert_eq!(0.0f32.bin(&b), Some(0));
        assert_eq!(0.2499f32.bin(&b), Some(0));
        assert_eq!(0.25f32.bin(&b), Some(1));
        assert_eq!(0.5f32.bin(&b), Some(2));
        assert_eq!(0.75f32.bin(&b), Some(3));
        assert_eq!(1.0f32.bin(&b), Some(3));
        assert_eq!(f32::from_bits(1.0f32.to_bits() - 1).bin(&b), Some(3));
    }

    #[test]
    fn f32_values_outside_the_range_nan_and_infinities_are_not_counted() {
        let b = Binning::range(10, -1.0, 1.0);
        assert_eq!(f32::from_bits(1.0f32.to_bits() + 1).bin(&b), None);
        assert_eq!((-1.0f32 - f32::EPSILON).bin(&b), None);
        assert_eq!((-1.0f32).bin(&b), Some(0));
        assert_eq!(f32::NAN.bin(&b), None);
        assert_eq!(f32::INFINITY.bin(&b), None);
        assert_eq!(f32::NEG_INFINITY.bin(&b), None);
        let whole = Binning::range(3, f32::MIN_POSITIVE, 1e30);
        assert_eq!(1e30f32.bin(&whole), Some(2));
    }

    #[test]
    fn f32_product_rounded_up_to_nbins_is_clamped_into_the_last_bin() {
        // An uneven scale: (v - lo) * scale can round to exactly nbins just below hi.
        let b = Binning::range(3, 0.0, 0.3);
        for bits in 0..2000u32 {
            let v = f32::from_bits(0.3f32.to_bits() - bits);
            let bin = v.bin(&b).unwrap();
            assert!(bin < 3, "{v} -> {bin}");
        }
        // Bins never go down as values go up.
        let mut last = 0;
        for i in 0..=30_000 {
            let v = i as f32 * 1e-5;
            let bin = v.bin(&b).unwrap();
            assert!(bin >= last, "{v}");
            last = bin;
        }
        assert_eq!(last, 2);
    }

    #[test]
    fn f32_values_next_to_an_interior_edge_take_the_formulas_bin_not_numpys() {
        // numpy.histogram (2.x, float32 input) puts both in the bin above: it compares with its
        // linspace edges, -0.8f32 and 0.0. The documented difference, pinned.
        let b = Binning::range(10, -1.0, 1.0);
        assert_eq!((-0.8f32).bin(&b), Some(0));
        // (v - lo) rounds to 1.0: the smallest negative subnormal counts in the bin of [0, 0.2).
        assert_eq!(f32::from_bits(0x8000_0001).bin(&b), Some(5));
    }

    /// The bin the clamps-then-unchecked conversion of [`bin_of_f32`] replaced: `as u32`'s
    /// saturation, then the clamp into the last bin.
    fn saturating_bin(value: f32, lo: f32, hi: f32, scale: f32, nbins: u32) -> Option<u32> {
        if !(value >= lo && value <= hi) {
            return None;
        }
        let bin = ((value - lo) * scale) as u32;
        Some(if bin >= nbins { nbins - 1 } else { bin })
    }

    #[test]
    fn f32_bins_equal_the_saturating_conversions_on_any_bits() {
        // Random bit patterns for values and ranges (NaN, infinities, subnormals, negative and
        // huge scales included), and the values next to both ends of sane ranges.
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2_000_000 {
            let (v, lo, hi, scale) =
                (f32::from_bits(next()), f32::from_bits(next()), f32::from_bits(next()), f32::from_bits(next()));
            let nbins =
                [1, 2, 3, 255, 256, 65_536, 1 << 24, next() % (1 << 24) + 1, 4_294_967_041][next() as usize % 9];
            assert_eq!(
                bin_of_f32(v, lo, hi, scale, nbins),
                saturating_bin(v, lo, hi, scale, nbins),
                "{v} {lo} {hi} {scale} {nbins}"
            );
        }
        for (nbins, lo, hi) in
            [(10u32, -1.0f32, 1.0f32), (3, 0.0, 0.3), (1 << 24, -1e30, 1e30), (65_536, 0.0, 65_536.0)]
        {
            let b = Binning::range(nbins, lo, hi);
            for end in [lo, hi] {
                for d in -3000i32..=3000 {
                    let v = f32::from_bits((end.to_bits() as i32 + d) as u32);
                    assert_eq!(
                        v.bin(&b),
                        saturating_bin(v, lo, hi, b.scale, nbins),
                        "{v} in {nbins} bins over [{lo}, {hi}]"
                    );
                }
            }
        }
    }

    #[test]
    fn a_value_within_the_offset_bound_is_inside_the_range_on_any_bits() {
        // The packed kernels count a batch whose values all pass the bound as if every value
        // were inside the range: a value that passes must be inside, for any range and value.
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let check = |v: f32, b: &Binning| {
            if v.offset_bits(b) <= b.offset_limit() {
                assert!(v.bin(b).is_some(), "{v:e} passes the bound of [{:e}, {:e}] outside it", b.lo, b.hi);
            }
        };
        for _ in 0..2_000_000 {
            let (mut lo, mut hi) = (f32::from_bits(next()), f32::from_bits(next()));
            if lo > hi {
                (lo, hi) = (hi, lo);
            }
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                continue;
            }
            let b = Binning::range(1 + next() % 100_000, lo, hi);
            check(f32::from_bits(next()), &b);
            for end in [lo, hi] {
                check(f32::from_bits(end.to_bits().wrapping_add(next() % 5).wrapping_sub(2)), &b);
            }
        }
        for (lo, hi) in [(-1.0f32, 1.0f32), (0.0, 262_144.0), (1e-3, 2e-3), (-2.5, 7.25), (-1e10, 1.0), (0.0, f32::MAX)]
        {
            let b = Binning::range(4096, lo, hi);
            for end in [lo, hi, 0.0, -0.0, f32::MAX, f32::MIN_POSITIVE] {
                for d in -3000i32..=3000 {
                    check(f32::from_bits((end.to_bits() as i32).wrapping_add(d) as u32), &b);
                }
            }
            for v in [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                check(v, &b);
            }
        }
        // From a start of 0 the bound is exact: every value of the range but -0.0 passes it.
        let b = Binning::range(262_144, 0.0, 262_144.0);
        assert_eq!(b.offset_limit(), 262_144.0f32.to_bits());
        for v in [0.0f32, 1.5, 131_072.0, 262_143.98, 262_144.0] {
            assert!(v.offset_bits(&b) <= b.offset_limit(), "{v}");
        }
    }

    /// The low 32 bits of a xorshift64 generator's successive states from `seed`: random bit
    /// patterns for the property tests.
    fn xorshift(mut state: u64) -> impl FnMut() -> u32 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u32
        }
    }

    #[test]
    fn window_bins_are_the_bins_less_the_window_start_inside_the_window_only() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        for _ in 0..1_000_000 {
            let nbins = [1u32, 2, 255, 256, 65_536, 131_072, 262_144][next() as usize % 7];
            let first = next() % nbins;
            let window = next() % (nbins - first) + 1;
            let f = Binning::range(nbins, -1.0, 1.0);
            let i = Binning::integers(nbins);
            let (v, x) = (f32::from_bits(next()), next() as i32);
            let expect = |bin: Option<u32>| match bin {
                Some(b) if b >= first && b - first < window => Some(b - first),
                _ => None,
            };
            let got = |(counts, counter): (bool, u32)| counts.then_some(counter);
            assert_eq!(got(v.window_bin(&f, first, window)), expect(v.bin(&f)), "{v} {nbins} {first} {window}");
            let w = f32::from_bits(next() % 2_000_001 + 1.0f32.to_bits() - 1_000_000);
            assert_eq!(got(w.window_bin(&f, first, window)), expect(w.bin(&f)), "{w} {nbins} {first} {window}");
            assert_eq!(got(x.window_bin(&i, first, window)), expect(x.bin(&i)), "{x} {nbins} {first} {window}");
        }
    }

    #[test]
    fn quads_of_a_vector_are_its_values_in_order() {
        extern crate std;
        let words = [0x0403_0201u32, 0x0807_0605, 0x0C0B_0A09, 0x100F_0E0D];
        let mut bytes = std::vec::Vec::new();
        u8::for_each_quad_in_vector(words, &mut |q| bytes.extend(q));
        assert_eq!(bytes, (1..=16).collect::<std::vec::Vec<u8>>());
        let mut halves = std::vec::Vec::new();
        u16::for_each_quad_in_vector(words, &mut |q| halves.extend(q));
        assert_eq!(halves, [0x0201, 0x0403, 0x0605, 0x0807, 0x0A09, 0x0C0B, 0x0E0D, 0x100F]);
        let mut ints = std::vec::Vec::new();
        i32::for_each_quad_in_vector(words, &mut |q| ints.extend(q));
        assert_eq!(ints, words.map(|w| w as i32));
    }

    #[test]
    fn words_unpack_little_endian_lowest_address_first() {
        let mut seen = [0u32; 4];
        let mut k = 0;
        u8::for_each_in_word(0x0403_0201, &mut |v| {
            seen[k] = v as u32;
            k += 1;
        });
        assert_eq!(seen, [1, 2, 3, 4]);
        let mut halves = [0u16; 2];
        let mut k = 0;
        u16::for_each_in_word(0xBEEF_0102, &mut |v| {
            halves[k] = v;
            k += 1;
        });
        assert_eq!(halves, [0x0102, 0xBEEF]);
        assert_eq!(i32::from_word(u32::MAX), -1);
        assert_eq!(f32::from_word(1.5f32.to_bits()), 1.5);
        assert_eq!(<u8 as Element>::PER_VECTOR, 16);
        assert_eq!(<f32 as Element>::PER_VECTOR, 4);
    }

    #[test]
    fn owner_of_splits_bins_into_consecutive_slices_per_block() {
        assert_eq!(owner_of(0, 100), (0, 0));
        assert_eq!(owner_of(99, 100), (0, 99));
        assert_eq!(owner_of(100, 100), (1, 0));
        assert_eq!(owner_of(799, 100), (7, 99));
        assert_eq!(shared_bytes(58_112), 232_448);
    }

    #[test]
    fn every_type_has_five_kernel_symbols_named_after_it() {
        for t in InputType::ALL {
            let k = t.kernels();
            for name in [k.shared, k.cluster, k.global, k.scatter, k.tile_sort] {
                assert!(name.ends_with(t.name()), "{name}");
            }
        }
        assert_eq!(InputType::F32.kernels().shared, "histogram_shared_f32");
    }
}
