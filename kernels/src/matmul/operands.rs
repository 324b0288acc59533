//! Operand preparation for the tensor-core kernels ([`super::wgmma`]): copies of `A` and `B`
//! in the layouts and element types the TMA and `wgmma` take, on the GPU.
//!
//! - `matmul_to_bf16`: a row-major `f32` matrix rounded to BF16 (to nearest, ties to even: the
//!   rounding of `half::bf16::from_f32`) into rows of `ld` elements; the `ld - cols` padding
//!   elements are zero.
//! - `matmul_transpose`: `dst[c * ld + r] = src[r * cols + c]` (`f32`): `B^T` for the TF32
//!   kernel, which takes only K-major `B`.
//! - `matmul_pad_rows`: `dst[r * ld + c] = src[r * cols + c]` (`f32`), for `A` of the TF32
//!   kernel when its rows are not a multiple of 16 bytes. Padding is not written: the tensor maps
//!   never read it.
//! - `matmul_split_tf32x3`: the operands of the split-TF32 ("3xTF32") product, for
//!   `wgmma_tf32` on `(m, 3k, n)`. Each element `v` splits into `big + small` ([`split_tf32`]:
//!   `big` is `v` rounded to TF32, `small = v - big` exactly), and each of the three k-blocks
//!   of the destination holds one of the halves: `A' = [A_small | A_big | A_big]` (`m x 3k`) and
//!   `B' = [B_big ; B_small ; B_big]` (`3k x n`) multiply to `A_small B_big + A_big B_small +
//!   A_big B_big`, the product without the `small * small` term. Which block gets which half
//!   (`small_parts`, bit `p` set: block `p` holds `small`) and how finely the blocks interleave
//!   along `k` (`chunk`, [`tf32x3_position`]) are arguments, so that the host picks the order
//!   of the accumulation. Padding is not written.
//!
//! # Thread mapping
//! `to_bf16` and `pad_rows`: a grid-stride loop, one thread per destination element.
//! `transpose`: [`TILE`] x [`TILE`] tiles through shared memory (one padding column against bank
//! conflicts), blocks of [`TILE`] x [`TRANSPOSE_ROWS`] threads, grid
//! `(ceil(cols / TILE), ceil(rows / TILE))`; reads and writes are coalesced.
//! `split_tf32x3`: blocks of [`COPY_THREADS`] threads, grid-stride loops over columns (x) and
//! rows (y), one thread per source element, its three writes coalesced with its neighbours'.
//!
//! # Safety
//! `src` holds `rows * cols` elements, `dst` holds `rows * ld` (`to_bf16`, `pad_rows`,
//! `ld >= cols`), `cols * ld` (`transpose`, `ld >= rows`), `rows * ld` with `ld >= 3 * cols`
//! (`split_tf32x3` along columns, `A`) or `3 * rows * ld` with `ld >= cols` (along rows, `B`),
//! `3 * k < 2^32`, and `dst` overlaps nothing else.

/// PTX symbol of the BF16 rounding copy.
pub const KERNEL_TO_BF16: &str = "matmul_to_bf16";
/// PTX symbol of the transposing copy.
pub const KERNEL_TRANSPOSE: &str = "matmul_transpose";
/// PTX symbol of the padding copy.
pub const KERNEL_PAD: &str = "matmul_pad_rows";
/// PTX symbol of the split-TF32 copy.
pub const KERNEL_SPLIT_TF32X3: &str = "matmul_split_tf32x3";
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
/// Non-finite `v`: `big` is `v` (NaN as the canonical quiet NaN: a NaN whose payload lies only
/// in the dropped bits would read as infinity to the tensor cores' truncation), `small` is 0,
/// so that infinities and NaN reach the product as they would in FP32.
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
/// which half it takes (`small_parts` bit `part` set: `a_small`). `k` runs along the rows
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

/// Threads per block of the grid-stride copies.
pub const COPY_THREADS: u32 = 256;
/// Side of a transposed tile.
pub const TILE: u32 = 32;
/// Thread rows per transpose block (each thread moves `TILE / TRANSPOSE_ROWS` elements).
pub const TRANSPOSE_ROWS: u32 = 8;

#[cfg(target_arch = "nvptx64")]
crate::gpu_kernel! {
    /// BF16 copy of a row-major `f32` matrix with rows of `ld` elements; see the
    /// [module documentation](self).
    ///
    /// # Safety
    /// See the module documentation.
    pub unsafe fn matmul_to_bf16(src: *const f32, dst: *mut u16, rows: u32, cols: u32, ld: u32) {
        use crate::device::{math, thread};
        let total = rows as u64 * ld as u64;
        let mut i = thread::index_1d();
        while i < total {
            let (r, c) = (i / ld as u64, i % ld as u64);
            let v = if c < cols as u64 {
                // SAFETY: r < rows and c < cols: inside src.
                math::f32_to_bf16_rn(unsafe { *src.add((r * cols as u64 + c) as usize) })
            } else {
                0
            };
            // SAFETY: i < rows * ld: inside dst; one thread per element.
            unsafe { *dst.add(i as usize) = v };
            i += thread::grid_size_1d();
        }
    }

    /// `dst[r * ld + c] = src[r * cols + c]`; see the [module documentation](self).
    ///
    /// # Safety
    /// See the module documentation.
    pub unsafe fn matmul_pad_rows(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld: u32) {
        use crate::device::thread;
        let total = rows as u64 * cols as u64;
        let mut i = thread::index_1d();
        while i < total {
            let (r, c) = (i / cols as u64, i % cols as u64);
            // SAFETY: i < rows * cols inside src; r < rows, c < cols <= ld inside dst; one
            // thread per element.
            unsafe { *dst.add((r * ld as u64 + c) as usize) = *src.add(i as usize) };
            i += thread::grid_size_1d();
        }
    }

    /// The split-TF32 copy of `src` (`rows x cols`, row-major) into `dst`; `k_along_rows` says
    /// which dimension is `k` (`0`: columns, for `A`; otherwise rows, for `B`); see the
    /// [module documentation](self), [`split_tf32`] and [`tf32x3_position`].
    ///
    /// # Safety
    /// See the module documentation; `chunk >= 1`.
    pub unsafe fn matmul_split_tf32x3(
        src: *const f32,
        dst: *mut f32,
        rows: u32,
        cols: u32,
        ld: u32,
        k_along_rows: u32,
        small_parts: u32,
        chunk: u32,
    ) {
        use crate::device::thread;
        let k_along_rows = k_along_rows != 0;
        let col_step = thread::grid_dim_x() * thread::block_dim_x();
        let mut r = thread::block_idx_y();
        while r < rows {
            let mut c = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
            while c < cols {
                // SAFETY: r < rows, c < cols: inside src.
                let (big, small) = split_tf32(unsafe { *src.add(r as usize * cols as usize + c as usize) });
                for part in 0..3 {
                    let ((dr, dc), takes_small) =
                        tf32x3_destination((r, c), part, (rows, cols), k_along_rows, small_parts, chunk);
                    let v = if takes_small { small } else { big };
                    // SAFETY: tf32x3_position is below 3k, so (dr, dc) is inside the 3k x ld
                    // (B) or rows x ld with ld >= 3k (A) destination; each (element, part) has
                    // its own position, written by one thread.
                    unsafe { *dst.add(dr as usize * ld as usize + dc as usize) = v };
                }
                c += col_step;
            }
            r += thread::grid_dim_y();
        }
    }

    /// `dst[c * ld + r] = src[r * cols + c]`; see the [module documentation](self).
    ///
    /// # Safety
    /// See the module documentation; the block is `TILE x TRANSPOSE_ROWS`.
    pub unsafe fn matmul_transpose(src: *const f32, dst: *mut f32, rows: u32, cols: u32, ld: u32) {
        use crate::device::thread;
        use crate::shared_array;
        let tile = shared_array!(MATMUL_TRANSPOSE_TILE: [f32; (TILE * (TILE + 1)) as usize]);
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (c0, r0) = (thread::block_idx_x() * TILE, thread::block_idx_y() * TILE);
        let mut y = ty;
        while y < TILE {
            let (r, c) = (r0 + y, c0 + tx);
            if r < rows && c < cols {
                // SAFETY: r < rows, c < cols: inside src; the index is below TILE * (TILE + 1).
                unsafe { tile.store((y * (TILE + 1) + tx) as usize, *src.add(r as usize * cols as usize + c as usize)) };
            }
            y += TRANSPOSE_ROWS;
        }
        // The tile is written by all threads and read transposed by others.
        thread::sync_threads();
        let mut y = ty;
        while y < TILE {
            let (c, r) = (c0 + y, r0 + tx);
            if r < rows && c < cols {
                // SAFETY: the element was stored above (same r < rows, c < cols); c < cols and
                // r < rows <= ld: inside dst; one thread per element.
                unsafe { *dst.add(c as usize * ld as usize + r as usize) = tile.load((tx * (TILE + 1) + y) as usize) };
            }
            y += TRANSPOSE_ROWS;
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
}
