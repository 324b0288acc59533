// Over 600 lines with its documentation: about 360 lines of code; the rest are doc comments (launch
// contracts, the algorithm) and 320 lines of unit tests.
//! The operands of the split-TF32 ("3xTF32") product, and the guard that keeps it to FP32's
//! contract on every input: `matmul_split_tf32x3`.
//!
//! The product `wgmma_tf32_promoted` ([`super::wgmma`]) multiplies `A'` (`m x 3k`) by `B'`
//! (`3k x n`) on TF32 tensor cores. Each element `v` of `A` and `B` is first scaled by a power of
//! two chosen for the whole operand (exact: see below) and split into `big + small`
//! ([`split_tf32`]: `big` is `v` rounded to TF32, `small = v - big` exactly), and each of the
//! three k-blocks of the destination holds one of the halves: `A' = [A_small | A_big | A_big]` and
//! `B' = [B_big ; B_small ; B_big]` multiply to `A_small B_big + A_big B_small + A_big B_big`, the
//! product without the `small * small` term. The product's epilogue undoes the two scales exactly
//! ([`scale_by_power_of_two`]).
//!
//! # The guard
//! The tensor cores flush subnormal values to zero and overflow where `f32` would not (a
//! rounded-up `big * big` past `f32::MAX`), and an infinity times a zero `small` half is NaN where
//! FP32 has only `inf * b`. So the split path runs only where it provably keeps FP32's contract,
//! and an FP32 CUDA-core kernel runs instead everywhere else, decided on the GPU, with no extra
//! pass over the inputs in the common case:
//!
//! 1. `matmul_split_tf32x3` pass 0 splits `A` and `B` unscaled (one launch, `blockIdx.z` the
//!    operand) and, as it reads them, reduces per operand the largest absolute value and the
//!    smallest non-zero one (as `f32` bit patterns: for non-negative floats the order of the bits
//!    is the order of the values, and a NaN or an infinity has bits at or above
//!    [`INFINITY_BITS`]) into the guard words; the last block to finish turns them into the
//!    decision ([`tf32x3_scales`], [`Decision`]) and stores it in [`GUARD_DECISION`].
//! 2. Pass 1 splits again, scaled, only where the decision's scales are not `(0, 0)` (inputs whose
//!    magnitudes lie outside the range the unscaled split holds: rare); otherwise it returns.
//! 3. `wgmma_tf32_promoted` returns at once unless the decision is the split path; the FP32 kernels
//!    launched after it with the same guard (`sgemm`, `sgemm_warp_tiled`, the narrow kernels,
//!    `matmul_split_k_reduce`) return at once unless it is not.
//!
//! [`tf32x3_scales`] accepts the split path when every input is finite, `C` cannot overflow in
//! any order of summation, and scales exist that put every scaled operand's split halves and
//! every partial product at or above `2^-126` (so no flush to zero can happen) and every partial
//! sum below `2^127` (so no overflow can happen); it prefers no scaling where that holds. Then the
//! products are exact, and the error of `C` is that of the split and of the accumulation alone
//! (`host::matmul::Precision::Tf32x3`), plus one rounding when `C` itself is subnormal.
//!
//! # Thread mapping
//! A 3-D grid: `blockIdx.z` 0 for `A`, 1 for `B`; blocks of [`SPLIT_THREADS`] threads,
//! grid-stride loops over rows (y) and groups of 4 columns (x). With rows of a multiple of 4
//! elements (and, for `A`, the chunk too), a thread reads its 4 elements with one 16-byte load and
//! writes each part with one 16-byte store; otherwise one element at a time. Pass 0 reduces the
//! range in registers, then per warp (`redux.sync.max`) and per block, with one atomic per block
//! and word and a block counter that elects the last block; the grid is sized to a few blocks per
//! SM ([`split_grid_blocks`]) so that these atomics stay few.
//!
//! # Safety
//! `a` and `b` hold `m * k` and `k * n` `f32`; `a_split` holds `m * ld_a` with `ld_a >= 3k` and
//! `ld_a % 4 == 0`, `b_split` `3k * ld_b` with `ld_b >= n` and `ld_b % 4 == 0`, both 16-byte
//! aligned, overlapping nothing else; `3k < 2^32`; `chunk >= 1`; `guard` holds [`GUARD_WORDS`]
//! `u32`, zeroed before pass 0, and pass 1 follows pass 0 of the same operands; the block is
//! [`SPLIT_THREADS`] threads and the grid's z is 2.

/// PTX symbol of the split copy (with the guard's range reduction).
pub const KERNEL_SPLIT: &str = "matmul_split_tf32x3";
/// Threads per block of the split.
pub const SPLIT_THREADS: u32 = 256;
/// Blocks per SM and operand of the split's grid: enough 16-byte loads in flight for the copy
/// bandwidth, few enough blocks that their atomics on the guard stay cheap.
pub const SPLIT_BLOCKS_PER_SM: u32 = 8;

/// The split's grid for `rows x cols` operands (the larger of `A` and `B` sets the shape):
/// `(x, y, 2)` with `x` blocks of 4 x [`SPLIT_THREADS`] columns along a row (at most what the
/// widest row needs) and `y` rows, about [`SPLIT_BLOCKS_PER_SM`] blocks per SM and operand.
pub const fn split_grid_blocks(widest_cols: u32, most_rows: u32, sm_count: u32) -> (u32, u32, u32) {
    let per_block = 4 * SPLIT_THREADS;
    let x_needed = widest_cols.div_ceil(per_block);
    let blocks = SPLIT_BLOCKS_PER_SM * if sm_count == 0 { 1 } else { sm_count };
    let x = if x_needed < blocks { x_needed } else { blocks };
    let x = if x == 0 { 1 } else { x };
    let y = blocks / x;
    let y = if y > most_rows { most_rows } else { y };
    (x, if y == 0 { 1 } else { y }, 2)
}
/// The guard's words: four reductions, the block counter and the decision.
pub const GUARD_WORDS: usize = 6;
/// Guard word: the largest absolute value of `A`, as `f32` bits.
pub const GUARD_A_MAX: usize = 0;
/// Guard word: the largest `!bits` over the non-zero absolute values of `A` (so `!word` is the
/// smallest; 0: `A` is all zeros).
pub const GUARD_A_MIN: usize = 1;
/// Guard word: [`GUARD_A_MAX`] of `B`.
pub const GUARD_B_MAX: usize = 2;
/// Guard word: [`GUARD_A_MIN`] of `B`.
pub const GUARD_B_MIN: usize = 3;
/// Guard word: blocks of pass 0 of the split that have finished.
pub const GUARD_BLOCKS_DONE: usize = 4;
/// Guard word: the [`Decision`] the last block of pass 0 stored (0 before it: the FP32 path).
pub const GUARD_DECISION: usize = 5;

/// Bits of `f32::INFINITY`: absolute values at or above these are infinities and NaNs.
pub const INFINITY_BITS: u32 = 0x7f80_0000;
/// Lowest exponent of a scaled operand element: its `small` half, a multiple of the element's
/// unit in the last place (`2^(e - 23)`), stays at or above `2^-126`.
pub const MIN_SCALED_EXPONENT: i32 = -103;
/// Highest exponent of a scaled operand element: it and its `big` half (which may round up into
/// the next binade) stay below `2^126`.
pub const MAX_SCALED_EXPONENT: i32 = 125;
/// Lowest sum of the two operands' lowest scaled exponents: every partial product is a multiple
/// of `2^(ea + eb - 33)` (a `small` half is a multiple of `2^(e - 23)`, a `big` one of
/// `2^(e - 10)`), so every sum of them is zero or at least `2^-126` and none is flushed.
pub const MIN_PRODUCT_EXPONENT: i32 = -93;
/// Highest exponent any partial sum of the scaled product may reach: `3k` terms under
/// `2^(ea + eb + 2)` each stay below `2^(ea + eb + 2 + ceil(log2 3k)) <= 2^126`.
pub const MAX_SUM_EXPONENT: i32 = 126;

/// `(largest absolute bits, largest !bits over non-zero values)` of `v`: what one element adds to
/// an operand's two guard words.
#[inline(always)]
pub const fn guard_words_of(v: f32) -> (u32, u32) {
    let abs = v.to_bits() & 0x7fff_ffff;
    (abs, if abs == 0 { 0 } else { !abs })
}

/// `floor(log2 x)` of a finite non-zero `x` given by its absolute bits (subnormals included).
#[inline(always)]
pub const fn exponent_of(abs_bits: u32) -> i32 {
    let field = (abs_bits >> 23) as i32;
    if field > 0 { field - 127 } else { (31 - abs_bits.leading_zeros() as i32) - 149 }
}

/// `ceil(log2 x)` for `x >= 1`.
#[inline(always)]
const fn ceil_log2(x: u64) -> i32 {
    if x <= 1 { 0 } else { 64 - (x - 1).leading_zeros() as i32 }
}

/// The powers of two the split path scales by: `A` by `2^a`, `B` by `2^b`, `C` by `2^-(a + b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tf32x3Scales {
    /// Exponent of `A`'s scale, in `-126..=127`.
    pub a: i32,
    /// Exponent of `B`'s scale, in `-126..=127`.
    pub b: i32,
}

/// The decision of the guard: the split path with its scales, or the FP32 path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The split-TF32 product runs, with these scales.
    Split(Tf32x3Scales),
    /// The FP32 kernel runs.
    Fp32,
}

impl Decision {
    const SPLIT_BIT: u32 = 1 << 31;

    /// The guard word: bit 31 set for the split path, with `a + 126` and `b + 126` in bits
    /// 0-7 and 8-15; 1 for the FP32 path. The zero word (a guard whose scan has not run) reads
    /// as the FP32 path.
    #[inline(always)]
    pub const fn to_word(self) -> u32 {
        match self {
            Self::Split(s) => Self::SPLIT_BIT | (s.a + 126) as u32 | ((s.b + 126) as u32) << 8,
            Self::Fp32 => 1,
        }
    }

    /// The decision a guard word holds ([`Self::to_word`]).
    #[inline(always)]
    pub const fn from_word(word: u32) -> Self {
        if word & Self::SPLIT_BIT == 0 {
            return Self::Fp32;
        }
        Self::Split(Tf32x3Scales { a: (word & 0xff) as i32 - 126, b: (word >> 8 & 0xff) as i32 - 126 })
    }
}

/// The decision for inner dimension `k` and an operand range of `guard` (the words
/// [`GUARD_A_MAX`] to [`GUARD_B_MIN`]), by the rules in the [module documentation](self):
/// `None` (the FP32 path) for non-finite inputs, for a `C` that might overflow, and for ranges
/// too wide for any scale; otherwise `(0, 0)` where the unscaled split holds the range, else
/// scales centred between the limits.
pub const fn tf32x3_scales(guard: [u32; 4], k: u32) -> Option<Tf32x3Scales> {
    let [a_max, a_min, b_max, b_min] = guard;
    if a_max >= INFINITY_BITS || b_max >= INFINITY_BITS {
        return None;
    }
    if a_min == 0 || b_min == 0 {
        // An operand of zeros: every product is zero, whatever the scales.
        return Some(Tf32x3Scales { a: 0, b: 0 });
    }
    let (a_hi, a_lo) = (exponent_of(a_max), exponent_of(!a_min));
    let (b_hi, b_lo) = (exponent_of(b_max), exponent_of(!b_min));
    // sum |a b| < k 2^(a_hi + b_hi + 2): below 2^127, so that C is finite in every order of
    // summation, as FP32's is.
    if a_hi + b_hi + 2 + ceil_log2(k as u64) > MAX_SUM_EXPONENT {
        return None;
    }
    // The sum s = a + b of the scales: partial products at or above 2^-126, partial sums of 3k
    // terms below 2^126.
    let s_lo = MIN_PRODUCT_EXPONENT - a_lo - b_lo;
    let s_hi = MAX_SUM_EXPONENT - 2 - ceil_log2(3 * k as u64) - a_hi - b_hi;
    if s_lo > s_hi {
        return None;
    }
    // No scaling where it keeps every limit: pass 0's unscaled split then stands.
    if s_lo <= 0
        && s_hi >= 0
        && a_lo >= MIN_SCALED_EXPONENT
        && b_lo >= MIN_SCALED_EXPONENT
        && a_hi <= MAX_SCALED_EXPONENT
        && b_hi <= MAX_SCALED_EXPONENT
    {
        return Some(Tf32x3Scales { a: 0, b: 0 });
    }
    let s = (s_lo + s_hi).div_euclid(2);
    // a within each operand's own limits (and b = s - a within B's), as a power that f32 holds.
    let a_lo_limit = max(max(MIN_SCALED_EXPONENT - a_lo, s - (MAX_SCALED_EXPONENT - b_hi)), -126);
    let a_hi_limit = min(min(MAX_SCALED_EXPONENT - a_hi, s - (MIN_SCALED_EXPONENT - b_lo)), 127);
    if a_lo_limit > a_hi_limit {
        return None;
    }
    // Balanced: both scaled operands reach about the same top exponent.
    let a = min(max((s + b_hi - a_hi).div_euclid(2), a_lo_limit), a_hi_limit);
    let b = s - a;
    if b < -126 || b > 127 {
        return None;
    }
    Some(Tf32x3Scales { a, b })
}

const fn max(x: i32, y: i32) -> i32 {
    if x > y { x } else { y }
}

const fn min(x: i32, y: i32) -> i32 {
    if x < y { x } else { y }
}

/// `2^e` for `e` in `-126..=127`, exactly.
#[inline(always)]
pub const fn power_of_two(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// `x * 2^e` rounded once to the nearest `f32` (ties to even), for any `e`: infinities, NaN and
/// zeros are returned as they are, results past `f32::MAX` are infinite, results below the
/// normal range are rounded once to a subnormal (never twice, as two multiplications by
/// representable powers could).
#[inline(always)]
pub fn scale_by_power_of_two(x: f32, e: i32) -> f32 {
    let bits = x.to_bits();
    let (sign, abs) = (bits & 0x8000_0000, bits & 0x7fff_ffff);
    if abs == 0 || abs >= INFINITY_BITS {
        return x;
    }
    // x = (1 + mantissa / 2^23) 2^(field - 127), a subnormal x normalised first (exactly).
    let (mantissa, field) = if abs >= 0x0080_0000 {
        (abs & 0x007f_ffff, (abs >> 23) as i32)
    } else {
        let shift = abs.leading_zeros() as i32 - 8;
        ((abs << shift) & 0x007f_ffff, 1 - shift)
    };
    let field = field.saturating_add(e);
    if field >= 255 {
        return f32::from_bits(sign | INFINITY_BITS);
    }
    if field >= 1 {
        return f32::from_bits(sign | (field as u32) << 23 | mantissa);
    }
    if field < -125 {
        // Below 2^-251: rounds to zero.
        return f32::from_bits(sign);
    }
    // x 2^(e + 126) is normal; the one multiplication by 2^-126 rounds it to the subnormal.
    f32::from_bits(sign | ((field + 126) as u32) << 23 | mantissa) * power_of_two(-126)
}

/// Mantissa bits of `f32` that TF32 drops (23 - 10).
pub const TF32_DROPPED_BITS: u32 = 13;
/// The bits of an `f32` that TF32 keeps: sign, exponent and the top 10 mantissa bits.
pub const TF32_MASK: u32 = !((1 << TF32_DROPPED_BITS) - 1);
/// `small_parts` of `A'` = `[A_small | A_big | A_big]`: block 0 holds the small halves.
pub const SPLIT_A_SMALL_FIRST: u32 = 0b001;
/// `small_parts` of `A'` = `[A_big | A_big | A_small]`.
pub const SPLIT_A_SMALL_LAST: u32 = 0b100;
/// `small_parts` of `B'` = `[B_big ; B_small ; B_big]`, which pairs with either `A'`.
pub const SPLIT_B: u32 = 0b010;

/// `v` split into `(big, small)` with `big + small == v` exactly: `big` is `v` rounded to the
/// nearest TF32 (10 mantissa bits; ties away from zero: add half of the dropped unit, then mask),
/// or truncated where rounding would carry a finite value to infinity, so `big` is exactly
/// representable in TF32 and `|small| <= 2^-11 max(|v|, 2^-126)` (subnormals keep the same 10
/// bits below `2^-126`, so their bound is absolute). The tensor cores then take `big` as it is
/// and truncate only `small`, whose own error is below `2^-21 |v|`.
///
/// Non-finite `v` (which the guard keeps from the split path): `big` is `v` (NaN as the
/// canonical quiet NaN), `small` is 0.
#[inline(always)]
pub fn split_tf32(v: f32) -> (f32, f32) {
    if v.is_nan() {
        return (f32::NAN, 0.0);
    }
    if v.is_infinite() {
        return (v, 0.0);
    }
    let bits = v.to_bits();
    let rounded = f32::from_bits(bits.wrapping_add(1 << (TF32_DROPPED_BITS - 1)) & TF32_MASK);
    let big = if rounded.is_infinite() { f32::from_bits(bits & TF32_MASK) } else { rounded };
    (big, v - big)
}

/// Where element `kk` of `k` goes in block `part` (0, 1 or 2) of a split operand's `3k`: `k` is
/// cut into chunks of `chunk` (the last may be shorter), and chunk `t` becomes three blocks of
/// its length, one per part, at `3 * t * chunk`. `chunk >= k` gives three blocks of `k`
/// (`[X_0 | X_1 | X_2]`); a short chunk interleaves the parts along `k`. A bijection from
/// `[0, k) x [0, 3)` onto `[0, 3k)`, the same for `A'` and `B'`, so their products pair up.
#[inline(always)]
pub fn tf32x3_position(kk: u32, part: u32, k: u32, chunk: u32) -> u32 {
    let start = kk / chunk * chunk;
    let len = if k - start < chunk { k - start } else { chunk };
    3 * start + part * len + (kk - start)
}

/// Where part `part` of element `(r, c)` of a `rows x cols` operand goes in its split copy, and
/// which half it takes (`small_parts` bit `part` set: `small`). `k` runs along the rows
/// (`B`, whose copy is `3k x cols`) or along the columns (`A`, `rows x 3k`).
#[inline(always)]
pub fn tf32x3_destination(
    (r, c): (u32, u32),
    part: u32,
    (rows, cols): (u32, u32),
    k_along_rows: bool,
    small_parts: u32,
    chunk: u32,
) -> ((u32, u32), bool) {
    let small = small_parts >> part & 1 != 0;
    if k_along_rows {
        ((tf32x3_position(r, part, rows, chunk), c), small)
    } else {
        ((r, tf32x3_position(c, part, cols, chunk)), small)
    }
}

/// The decision the guard at `guard` holds, read by the kernels that run after pass 0.
///
/// # Safety
/// `guard` points to the [`GUARD_WORDS`] words of a finished pass 0 (an earlier launch).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn decision_at(guard: *const u32) -> Decision {
    // SAFETY: the caller guarantees the guard; pass 0 finished in an earlier launch.
    Decision::from_word(unsafe { *guard.add(GUARD_DECISION) })
}

/// Whether an FP32 kernel given `guard` returns at once: `guard` is not null and its decision is
/// the split path (which then writes `C`). A null guard always runs the kernel.
///
/// # Safety
/// `guard` is null or as for [`decision_at`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn split_path_taken(guard: *const u32) -> bool {
    // SAFETY: forwarded.
    !guard.is_null() && matches!(unsafe { decision_at(guard) }, Decision::Split(_))
}

/// One operand of the split: its source, destination and layout.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
struct SplitOperand {
    src: *const f32,
    dst: *mut f32,
    rows: u32,
    cols: u32,
    ld: u32,
    k_along_rows: bool,
    small_parts: u32,
}

#[cfg(target_arch = "nvptx64")]
impl SplitOperand {
    /// Splits the 4 elements of row `r` from column `c4` (those below `cols`), each multiplied
    /// by `scale`, into the destination; returns their guard words. `VEC`: one 16-byte load and
    /// one 16-byte store per part.
    ///
    /// # Safety
    /// The kernel contract; `r < rows`, `c4 < cols`, `c4 % 4 == 0`; with `VEC`, `cols % 4 == 0`
    /// and (along columns) the 4 destinations of a part contiguous and 16-byte aligned.
    #[inline(always)]
    unsafe fn split4<const VEC: bool>(self, r: u32, c4: u32, scale: f32, chunk: u32) -> (u32, u32) {
        use crate::device::mem;
        let at = r as usize * self.cols as usize + c4 as usize;
        let values = if VEC {
            // SAFETY: cols % 4 == 0 and c4 % 4 == 0: four elements inside row r, 16-byte aligned.
            unsafe { mem::load_global_nc_v4_f32(self.src.add(at)) }
        } else {
            let mut v = [0.0f32; 4];
            for (e, v) in v.iter_mut().enumerate() {
                if c4 + (e as u32) < self.cols {
                    // SAFETY: inside row r.
                    *v = unsafe { mem::load_global_nc_f32(self.src.add(at + e)) };
                }
            }
            v
        };
        let (mut most, mut least) = (0u32, 0u32);
        let mut halves = [(0.0f32, 0.0f32); 4];
        for e in 0..4 {
            let (hi, lo) = guard_words_of(values[e]);
            most = if hi > most { hi } else { most };
            least = if lo > least { lo } else { least };
            halves[e] = split_tf32(values[e] * scale);
        }
        for part in 0..3 {
            let takes_small = self.small_parts >> part & 1 != 0;
            let pick = |e: usize| if takes_small { halves[e].1 } else { halves[e].0 };
            let ((dr, dc), _) =
                tf32x3_destination((r, c4), part, (self.rows, self.cols), self.k_along_rows, self.small_parts, chunk);
            if VEC {
                // SAFETY: the 4 destinations of this part are contiguous from (dr, dc), 16-byte
                // aligned (caller), inside the destination (tf32x3_position < 3k); each
                // (element, part) has its own position, written by one thread.
                unsafe {
                    mem::store_global_v4_f32(
                        self.dst.add(dr as usize * self.ld as usize + dc as usize),
                        [pick(0), pick(1), pick(2), pick(3)],
                    )
                };
            } else {
                for e in 0..4u32 {
                    if c4 + e < self.cols {
                        let ((dr, dc), _) = tf32x3_destination(
                            (r, c4 + e),
                            part,
                            (self.rows, self.cols),
                            self.k_along_rows,
                            self.small_parts,
                            chunk,
                        );
                        // SAFETY: as above, one element.
                        unsafe { *self.dst.add(dr as usize * self.ld as usize + dc as usize) = pick(e as usize) };
                    }
                }
            }
        }
        (most, least)
    }

    /// Splits the rows and column groups of this block's share of the grid-stride loops; returns
    /// the guard words of what it read.
    ///
    /// # Safety
    /// As [`Self::split4`], for the kernel's grid.
    #[inline(always)]
    unsafe fn split_share<const VEC: bool>(self, scale: f32, chunk: u32) -> (u32, u32) {
        use crate::device::thread;
        let (mut most, mut least) = (0u32, 0u32);
        let col_step = 4 * thread::grid_dim_x() * SPLIT_THREADS;
        let mut r = thread::block_idx_y();
        while r < self.rows {
            let mut c4 = 4 * (thread::block_idx_x() * SPLIT_THREADS + thread::thread_idx_x());
            while c4 < self.cols {
                // SAFETY: r < rows, c4 < cols, c4 % 4 == 0; VEC as the caller checked.
                let (hi, lo) = unsafe { self.split4::<VEC>(r, c4, scale, chunk) };
                most = if hi > most { hi } else { most };
                least = if lo > least { lo } else { least };
                c4 += col_step;
            }
            r += thread::grid_dim_y();
        }
        (most, least)
    }
}

#[cfg(target_arch = "nvptx64")]
crate::gpu_kernel! {
    /// The split copies of `A` (`m x k`, `blockIdx.z == 0`) and `B` (`k x n`, `blockIdx.z ==
    /// 1`) into `A'` and `B'`: pass 0 unscaled, reducing their ranges into `guard` and deciding;
    /// pass 1 scaled, only where the decision's scales are not `(0, 0)`; see the
    /// [module documentation](self), [`split_tf32`] and [`tf32x3_position`].
    ///
    /// # Safety
    /// See the module documentation.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn matmul_split_tf32x3(
        a: *const f32,
        b: *const f32,
        a_split: *mut f32,
        b_split: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        ld_a: u32,
        ld_b: u32,
        a_small_parts: u32,
        chunk: u32,
        pass: u32,
        guard: *mut u32,
    ) {
        use crate::device::{atomic, thread, warp};
        let operand_b = thread::block_idx_z() == 1;
        let op = if operand_b {
            SplitOperand { src: b, dst: b_split, rows: k, cols: n, ld: ld_b, k_along_rows: true, small_parts: SPLIT_B }
        } else {
            SplitOperand { src: a, dst: a_split, rows: m, cols: k, ld: ld_a, k_along_rows: false, small_parts: a_small_parts }
        };
        let scale = if pass == 0 {
            1.0
        } else {
            // SAFETY: pass 0 of these operands finished in an earlier launch (kernel contract).
            match unsafe { decision_at(guard) } {
                Decision::Split(s) if s.a != 0 || s.b != 0 => power_of_two(if operand_b { s.b } else { s.a }),
                _ => return,
            }
        };
        // Rows of 4-element multiples (and, along A's columns, chunks of them) move in 16 bytes.
        let vec = op.cols.is_multiple_of(4) && (op.k_along_rows || chunk.is_multiple_of(4));
        // SAFETY: the kernel contract; vec checked above (ld % 4 == 0 and aligned bases are the
        // contract's), uniform across the launch.
        let (most, least) =
            unsafe { if vec { op.split_share::<true>(scale, chunk) } else { op.split_share::<false>(scale, chunk) } };
        if pass != 0 {
            return;
        }
        let words = crate::shared_array!(MATMUL_SPLIT_TF32X3_WARPS: [u32; 2 * (SPLIT_THREADS / 32) as usize]);
        let (tid, lane) = (thread::thread_idx_x(), warp::lane_id());
        // SAFETY: every thread of the block reaches these reductions (none has returned in pass 0).
        let (most, least) = unsafe { (warp::reduce_max_u32(most), warp::reduce_max_u32(least)) };
        if lane == 0 {
            // SAFETY: 2 * warp + 1 < 2 * SPLIT_THREADS / 32.
            unsafe {
                words.store(2 * (tid / 32) as usize, most);
                words.store(2 * (tid / 32) as usize + 1, least);
            }
        }
        // The warps' maxima are read by thread 0 below.
        thread::sync_threads();
        if tid != 0 {
            return;
        }
        let (mut most, mut least) = (0u32, 0u32);
        for w in 0..(SPLIT_THREADS / 32) as usize {
            // SAFETY: inside the array, written before the barrier.
            let (hi, lo) = unsafe { (words.load(2 * w), words.load(2 * w + 1)) };
            most = if hi > most { hi } else { most };
            least = if lo > least { lo } else { least };
        }
        let (max_word, min_word) = if operand_b { (GUARD_B_MAX, GUARD_B_MIN) } else { (GUARD_A_MAX, GUARD_A_MIN) };
        // SAFETY (this block and those below): guard holds GUARD_WORDS words (kernel contract).
        unsafe {
            atomic::global_fetch_max_u32(guard.add(max_word), most);
            atomic::global_fetch_max_u32(guard.add(min_word), least);
        }
        // This block's maxima reach the GPU before its count does: the block that counts last
        // then reads every block's.
        thread::thread_fence();
        let blocks = thread::grid_dim_x() * thread::grid_dim_y() * 2;
        // SAFETY: as above.
        if unsafe { atomic::global_fetch_add_u32(guard.add(GUARD_BLOCKS_DONE), 1) } == blocks - 1 {
            thread::thread_fence();
            let mut range = [0u32; 4];
            for (w, r) in range.iter_mut().enumerate() {
                // SAFETY: as above; a fetch-max of 0 reads the word at L2, where the atomics went.
                *r = unsafe { atomic::global_fetch_max_u32(guard.add(w), 0) };
            }
            let decision = match tf32x3_scales(range, k) {
                Some(scales) => Decision::Split(scales),
                None => Decision::Fp32,
            };
            // SAFETY: as above; read only by later launches.
            unsafe { *guard.add(GUARD_DECISION) = decision.to_word() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec;
    use std::vec::Vec;

    /// Asserts the split's contract on `v`: the halves sum to `v` exactly, `big` has its 13 low
    /// bits clear (exact in TF32), and `|small| <= 2^-11 max(|v|, 2^-126)`.
    fn assert_split_exact(v: f32) {
        let (big, small) = split_tf32(v);
        assert_eq!(big + small, v, "{v:e} ({:#010x}): {big:e} + {small:e}", v.to_bits());
        assert_eq!(big.to_bits() & !TF32_MASK, 0, "{v:e}: big {:#010x}", big.to_bits());
        let scale = v.abs().max(f32::MIN_POSITIVE) as f64;
        assert!(small.abs() as f64 <= scale / 2048.0, "{v:e}: small {small:e}");
        assert!(big.is_finite() && small.is_finite(), "{v:e}");
    }

    #[test]
    fn split_is_exact_keeps_tf32_bits_in_big_and_small_within_2_pow_minus_11() {
        let mut x = 0x2545_f491u32;
        for _ in 0..200_000 {
            // xorshift over all bit patterns of finite floats, both signs, every exponent.
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = f32::from_bits(x);
            if v.is_finite() {
                assert_split_exact(v);
            }
        }
        for v in [1.0f32, -1.0, 0.1, -0.3, 3.0e38, 1.0e-38, 1.0 + 1.0 / 2048.0, 1.0 - 1.0 / 4096.0] {
            assert_split_exact(v);
        }
    }

    #[test]
    fn split_rounds_to_nearest_and_ties_away_from_zero() {
        let ulp = 1.0 / 1024.0;
        // Just below half a TF32 unit above 1 rounds down, half and above round up.
        assert_eq!(split_tf32(1.0 + ulp / 2.0 - f32::EPSILON).0, 1.0);
        assert_eq!(split_tf32(1.0 + ulp / 2.0).0, 1.0 + ulp);
        assert_eq!(split_tf32(-(1.0 + ulp / 2.0)).0, -(1.0 + ulp));
        assert_eq!(split_tf32(1.0 + ulp * 0.75), (1.0 + ulp, -ulp / 4.0));
        // A value already in TF32 has no small half.
        assert_eq!(split_tf32(1.5), (1.5, 0.0));
    }

    #[test]
    fn split_of_the_largest_floats_truncates_instead_of_overflowing() {
        // FLT_MAX rounds up past the largest exponent: truncated instead.
        let (big, small) = split_tf32(f32::MAX);
        assert_eq!(big.to_bits(), f32::MAX.to_bits() & TF32_MASK);
        assert!(small > 0.0);
        assert_split_exact(f32::MAX);
        assert_split_exact(-f32::MAX);
        // The smallest value that rounding would carry to infinity, and the one below it.
        let carry = f32::from_bits(0x7f7f_f000);
        assert!(f32::from_bits((carry.to_bits() + 0x1000) & TF32_MASK).is_infinite());
        assert_split_exact(carry);
        assert_split_exact(f32::from_bits(0x7f7f_efff));
        // Below the top exponent rounding may carry into the next exponent, staying finite.
        assert_eq!(split_tf32(f32::from_bits(0x7eff_ffff)).0, f32::from_bits(0x7f00_0000));
    }

    #[test]
    fn split_keeps_infinities_and_nan_in_big_with_a_zero_small() {
        assert_eq!(split_tf32(f32::INFINITY), (f32::INFINITY, 0.0));
        assert_eq!(split_tf32(f32::NEG_INFINITY), (f32::NEG_INFINITY, 0.0));
        // A NaN with payload only in the dropped bits becomes the canonical NaN, which TF32
        // truncation keeps a NaN.
        for nan in [f32::NAN, f32::from_bits(0x7f80_0001), f32::from_bits(0xff80_1fff), f32::from_bits(0x7fff_ffff)] {
            let (big, small) = split_tf32(nan);
            assert!(big.is_nan() && f32::from_bits(big.to_bits() & TF32_MASK).is_nan(), "{:#010x}", nan.to_bits());
            assert_eq!(small.to_bits(), 0);
        }
    }

    #[test]
    fn split_of_zeros_and_subnormals_is_exact() {
        assert_eq!(split_tf32(0.0).0.to_bits(), 0);
        assert_eq!(split_tf32(-0.0).0.to_bits(), (-0.0f32).to_bits());
        assert_eq!(split_tf32(-0.0).1, 0.0);
        for bits in [1u32, 0x1000, 0x1fff, 0x2000, 0x0040_0001, 0x007f_ffff, 0x8000_0001, 0x807f_f000] {
            assert_split_exact(f32::from_bits(bits));
        }
        // The largest subnormal rounds up to the smallest normal, exactly.
        assert_eq!(split_tf32(f32::from_bits(0x007f_f000)).0, f32::MIN_POSITIVE);
    }

    #[test]
    fn positions_of_the_three_parts_cover_3k_once_for_any_chunk() {
        for k in [1u32, 2, 7, 31, 32, 33, 64, 100] {
            for chunk in [1u32, 4, 32, k, k + 5] {
                let mut seen = vec![0u32; 3 * k as usize];
                for kk in 0..k {
                    for part in 0..3 {
                        seen[tf32x3_position(kk, part, k, chunk) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "k {k}, chunk {chunk}");
            }
        }
        // chunk >= k: plain concatenation.
        assert_eq!(tf32x3_position(5, 2, 10, 10), 25);
        assert_eq!(tf32x3_position(5, 2, 10, 1 << 20), 25);
        // Chunks of 32 of k = 40: [0..32) x 3, then the last 8 x 3 at 96.
        assert_eq!(tf32x3_position(31, 1, 40, 32), 63);
        assert_eq!(tf32x3_position(33, 2, 40, 32), 96 + 16 + 1);
    }

    /// The split copies on the CPU, as the kernel writes them.
    fn split_copy(
        src: &[f32],
        rows: u32,
        cols: u32,
        ld: u32,
        k_along_rows: bool,
        small_parts: u32,
        chunk: u32,
    ) -> Vec<f32> {
        let out_rows = if k_along_rows { 3 * rows } else { rows };
        let mut dst = vec![0.0f32; (out_rows * ld) as usize];
        for r in 0..rows {
            for c in 0..cols {
                let (big, small) = split_tf32(src[(r * cols + c) as usize]);
                for part in 0..3 {
                    let ((dr, dc), takes_small) =
                        tf32x3_destination((r, c), part, (rows, cols), k_along_rows, small_parts, chunk);
                    dst[(dr * ld + dc) as usize] = if takes_small { small } else { big };
                }
            }
        }
        dst
    }

    #[test]
    fn split_operands_multiply_to_the_product_without_the_small_small_term() {
        let value = |i: u32, salt: u32| f32::from_bits(0x3f80_0000 | (i.wrapping_mul(2_654_435_761) ^ salt) >> 9) - 1.5;
        let (m, k, n) = (3u32, 37u32, 5u32);
        let a: Vec<f32> = (0..m * k).map(|i| value(i, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| value(i, 2)).collect();
        for (a_parts, chunk) in [(SPLIT_A_SMALL_FIRST, k), (SPLIT_A_SMALL_LAST, k), (SPLIT_A_SMALL_FIRST, 8)] {
            let ld_a = 3 * k + 1;
            let ap = split_copy(&a, m, k, ld_a, false, a_parts, chunk);
            let bp = split_copy(&b, k, n, n, true, SPLIT_B, chunk);
            for r in 0..m {
                for c in 0..n {
                    let got: f64 =
                        (0..3 * k).map(|j| ap[(r * ld_a + j) as usize] as f64 * bp[(j * n + c) as usize] as f64).sum();
                    let want: f64 = (0..k)
                        .map(|j| {
                            let ((ab, as_), (bb, bs)) =
                                (split_tf32(a[(r * k + j) as usize]), split_tf32(b[(j * n + c) as usize]));
                            ab as f64 * bb as f64 + ab as f64 * bs as f64 + as_ as f64 * bb as f64
                        })
                        .sum();
                    assert!(
                        (got - want).abs() <= 1e-12,
                        "parts {a_parts:#b} chunk {chunk}: C[{r}][{c}] {got} vs {want}"
                    );
                }
            }
        }
    }

    /// A generator over every bit pattern of finite floats (xorshift).
    fn finite_floats(seed: u32) -> impl Iterator<Item = f32> {
        let mut x = seed;
        core::iter::from_fn(move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            Some(f32::from_bits(x))
        })
        .filter(|v| v.is_finite())
    }

    #[test]
    fn scaling_by_a_power_of_two_rounds_once_at_every_magnitude() {
        for (i, x) in finite_floats(0x1234_5678).take(400_000).enumerate() {
            let e = (i as i32 % 600) - 300;
            // f64 holds x 2^e exactly for these e; `as f32` rounds it once, ties to even, into
            // subnormals and to infinity as IEEE does.
            let want = (x as f64 * 2f64.powi(e)) as f32;
            let got = scale_by_power_of_two(x, e);
            assert_eq!(got.to_bits(), want.to_bits(), "{x:e} ({:#010x}) * 2^{e}: {got:e} vs {want:e}", x.to_bits());
        }
        // Halfway cases at the bottom of the subnormals: ties to even.
        assert_eq!(scale_by_power_of_two(1.5, -149).to_bits(), 2);
        assert_eq!(scale_by_power_of_two(1.0, -150).to_bits(), 0);
        assert_eq!(scale_by_power_of_two(1.0 + f32::EPSILON, -150).to_bits(), 1);
        assert_eq!(scale_by_power_of_two(-3.0, -150).to_bits(), (-f32::from_bits(2)).to_bits());
        for v in [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(scale_by_power_of_two(v, -200).to_bits(), v.to_bits());
        }
        assert!(scale_by_power_of_two(f32::NAN, 3).is_nan());
        assert_eq!(scale_by_power_of_two(f32::MAX, 1), f32::INFINITY);
        assert_eq!(scale_by_power_of_two(f32::from_bits(1), 149), 1.0);
        assert_eq!(power_of_two(-126), f32::MIN_POSITIVE);
        assert_eq!(power_of_two(127), 2f32.powi(127));
    }

    #[test]
    fn guard_words_order_magnitudes_and_mark_non_finite_values() {
        assert_eq!(guard_words_of(0.0), (0, 0));
        assert_eq!(guard_words_of(-0.0), (0, 0));
        let (one, one_min) = guard_words_of(-1.0);
        let (two, two_min) = guard_words_of(2.0);
        assert!(two > one && one_min > two_min, "larger values: larger max word, smaller min word");
        assert!(guard_words_of(f32::INFINITY).0 >= INFINITY_BITS);
        assert!(guard_words_of(f32::NEG_INFINITY).0 >= INFINITY_BITS);
        assert!(guard_words_of(-f32::NAN).0 >= INFINITY_BITS);
        assert!(guard_words_of(f32::MAX).0 < INFINITY_BITS);
        assert_eq!(exponent_of(1.0f32.to_bits()), 0);
        assert_eq!(exponent_of(f32::MAX.to_bits()), 127);
        assert_eq!(exponent_of(f32::MIN_POSITIVE.to_bits()), -126);
        assert_eq!(exponent_of(1), -149);
        assert_eq!(exponent_of(0x0040_0000), -127);
        for v in finite_floats(99).take(100_000).filter(|v| *v != 0.0) {
            let e = exponent_of(v.to_bits() & 0x7fff_ffff);
            assert!((v.abs() as f64) >= 2f64.powi(e) && (v.abs() as f64) < 2f64.powi(e + 1), "{v:e}: {e}");
        }
    }

    #[test]
    fn decision_words_round_trip_and_zero_reads_as_the_fp32_path() {
        assert_eq!(Decision::from_word(0), Decision::Fp32);
        assert_eq!(Decision::from_word(Decision::Fp32.to_word()), Decision::Fp32);
        for (a, b) in [(-126, 127), (0, 0), (127, -126), (45, -3)] {
            let d = Decision::Split(Tf32x3Scales { a, b });
            assert_eq!(Decision::from_word(d.to_word()), d);
        }
    }

    /// The guard words of one operand's values.
    fn range_of(values: &[f32]) -> [u32; 2] {
        values.iter().fold([0, 0], |[hi, lo], &v| {
            let (h, l) = guard_words_of(v);
            [hi.max(h), lo.max(l)]
        })
    }

    fn scales_for(a: &[f32], b: &[f32], k: u32) -> Option<Tf32x3Scales> {
        let ([a_max, a_min], [b_max, b_min]) = (range_of(a), range_of(b));
        tf32x3_scales([a_max, a_min, b_max, b_min], k)
    }

    /// Asserts every limit of the module documentation for operands spanning `[2^a_lo, 2^(a_hi +
    /// 1))` and `[2^b_lo, 2^(b_hi + 1))` under `scales`.
    fn assert_scales_keep_the_limits(s: Tf32x3Scales, (a_lo, a_hi): (i32, i32), (b_lo, b_hi): (i32, i32), k: u32) {
        assert!((-126..=127).contains(&s.a) && (-126..=127).contains(&s.b), "{s:?}");
        assert!(a_lo + s.a >= MIN_SCALED_EXPONENT && b_lo + s.b >= MIN_SCALED_EXPONENT, "{s:?}");
        assert!(a_hi + s.a <= MAX_SCALED_EXPONENT && b_hi + s.b <= MAX_SCALED_EXPONENT, "{s:?}");
        assert!(a_lo + b_lo + s.a + s.b >= MIN_PRODUCT_EXPONENT, "{s:?}");
        assert!(a_hi + b_hi + s.a + s.b + 2 + ceil_log2(3 * k as u64) <= MAX_SUM_EXPONENT, "{s:?}");
        assert!(a_hi + b_hi + 2 + ceil_log2(k as u64) <= MAX_SUM_EXPONENT, "C may overflow");
    }

    #[test]
    fn every_accepted_range_keeps_the_scaled_product_exact_and_finite() {
        let mut x = 0x9e37_79b9u32;
        let mut next = |range: u32| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x % range
        };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..200_000 {
            let (a_lo, b_lo) = (next(277) as i32 - 149, next(277) as i32 - 149);
            let (a_hi, b_hi) = ((a_lo + next(280) as i32).min(127), (b_lo + next(280) as i32).min(127));
            let k = 1 + next(1 << 20) * (1 + next(4096));
            let value = |e: i32| if e < -126 { f32::from_bits(1 << (e + 149)) } else { 2f32.powi(e) };
            let (a, b) = ([value(a_lo), value(a_hi)], [value(b_lo), value(b_hi)]);
            match scales_for(&a, &b, k) {
                Some(s) => {
                    accepted += 1;
                    assert_scales_keep_the_limits(s, (a_lo, a_hi), (b_lo, b_hi), k);
                    // The scaling itself is exact: the scaled extremes are normal and finite.
                    for v in a.iter().map(|v| v * power_of_two(s.a)).chain(b.iter().map(|v| v * power_of_two(s.b))) {
                        assert!(v.is_normal(), "{v:e} under {s:?}");
                    }
                }
                None => refused += 1,
            }
        }
        assert!(accepted > 10_000 && refused > 10_000, "{accepted} accepted, {refused} refused");
    }

    #[test]
    fn the_guard_refuses_non_finite_inputs_and_products_that_may_overflow() {
        let ones = [1.0f32; 4];
        assert!(scales_for(&ones, &ones, 4096).is_some());
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            assert_eq!(scales_for(&[1.0, bad], &ones, 8), None, "{bad}");
            assert_eq!(scales_for(&ones, &[bad, 0.0], 8), None, "{bad}");
        }
        // Products finite just below f32::MAX: C might overflow for k > 1 in some order.
        let (a, b) = (f32::from_bits(0x5f80_1000), f32::from_bits(0x5f7f_d000));
        assert!((a * b).is_finite());
        assert_eq!(scales_for(&[a], &[b], 2048), None);
        // Ranges too wide for any scale: 2^-149 .. 2^127 in both operands.
        assert_eq!(scales_for(&[f32::from_bits(1), 2f32.powi(100)], &[f32::from_bits(1), 2f32.powi(20)], 64), None);
    }

    #[test]
    fn the_guard_accepts_subnormal_tiny_and_zero_operands_with_scales() {
        // A subnormal (1e-45 .. 1e-39), B in 1e3 .. 1e4.
        let s = scales_for(&[1e-45, 1e-39], &[1e3, 1e4], 2048).unwrap();
        assert_scales_keep_the_limits(s, (-149, -130), (9, 13), 2048);
        // A just above the normal range's bottom.
        let s = scales_for(&[1.2e-38, 1e-37], &[0.5, 1.0], 2048).unwrap();
        assert!(s.a > 0, "{s:?}");
        // An operand of zeros: nothing to scale.
        assert_eq!(scales_for(&[0.0, -0.0], &[3.0e38, 1e-40], 5), Some(Tf32x3Scales { a: 0, b: 0 }));
    }
}
