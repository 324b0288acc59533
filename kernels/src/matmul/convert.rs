//! The layouts and element types around the product kernels, on the GPU: an operand copied into
//! the row-major form a product kernel takes (transposed, compacted from a leading dimension,
//! converted between `f32`, BF16 and F16), and the epilogue that forms `D = alpha * acc + beta *
//! C` in `D`'s element type and leading dimension.
//!
//! - `matmul_convert_<from>_<to>`: `dst[r * dst_ld + c] = convert(x(r, c))` for `r < rows`,
//!   `c < cols`, where `x(r, c) = src[r * src_ld + c]`, or `src[c * src_ld + r]` when
//!   `transposed != 0`. Conversions: to `f32` exactly (BF16 and F16 widen without rounding), to
//!   BF16 or F16 rounded to nearest, ties to even (`half::bf16::from_f32`, `half::f16::from_f32`;
//!   `f32` values beyond F16's range, `|x| >= 65520`, become infinities), between equal types a
//!   copy.
//!   Padding columns of `dst` are not written.
//! - `matmul_epilogue_<to>`: `d[r * ldd + c] = convert(alpha * acc[r * n + c] + beta * x)` with
//!   `x = c_in[r * ldc + c]` (as `f32`), one rounding of `alpha * acc + beta * x` (a fused
//!   multiply-add), then the conversion to F16 or BF16 rounds once more; with `beta == 0` `c_in`
//!   is not read (it may hold NaN, as cuBLAS allows).
//!
//! # Thread mapping
//! `convert`, transposed: [`TILE`] x [`TILE`] tiles through shared memory (one padding column
//! against bank conflicts), blocks of [`TILE`] x [`TILE_ROWS`] threads, grid `(ceil(cols / TILE),
//! ceil(rows / TILE))` (grid-striding past CUDA's y limit): reads run along the source's rows and
//! writes along the destination's, both coalesced. Not transposed: no tile, each thread moves
//! [`ROW_GROUP`] consecutive elements of one row (a warp 128 of one row), one vector store
//! where the destination's rows are aligned for it; blocks of [`TILE`] x [`TILE_ROWS`] threads,
//! grid `(ceil(cols / (ROW_GROUP * TILE)), ceil(rows / TILE_ROWS))`, grid-striding over rows.
//! (The tiled path moved a BF16 matrix at about 0.9 TB/s on the H200: padding the rows of a
//! 4344 x 10925 `B` cost 0.21 ms of a 0.24 ms `decode_bf16` product.) `epilogue`: a grid-stride loop of
//! [`EPILOGUE_THREADS`]-thread blocks, one thread per element.
//!
//! # Safety
//! `convert`: `src` holds the `rows x cols` matrix as described (`(rows - 1) * src_ld + cols`
//! elements, or `(cols - 1) * src_ld + rows` transposed), `dst` holds `(rows - 1) * dst_ld +
//! cols` elements and overlaps nothing the kernel reads; the block is `TILE x TILE_ROWS`.
//! `epilogue`: `acc` holds `m * n` `f32`, `d` `(m - 1) * ldd + n` elements, `c_in` (read only when
//! `beta != 0`) `(m - 1) * ldc + n`; `d` overlaps `acc` nowhere and `c_in` only exactly (in
//! place: `c_in == d`, `ldc == ldd`).

/// Side of a tile of the conversion.
pub const TILE: u32 = 32;
/// Thread rows per conversion block (each thread moves `TILE / TILE_ROWS` elements).
pub const TILE_ROWS: u32 = 8;
/// Consecutive elements of one row a thread of the untransposed conversion moves.
pub const ROW_GROUP: u32 = 4;
/// Threads per epilogue block.
pub const EPILOGUE_THREADS: u32 = 256;

/// The conversions of operands, by (source, destination) type name: `f32`, `bf16`, `f16`.
pub const CONVERT_KERNELS: &[((&str, &str), &str)] = &[
    (("f32", "f32"), "matmul_convert_f32_f32"),
    (("f32", "bf16"), "matmul_convert_f32_bf16"),
    (("bf16", "bf16"), "matmul_convert_bf16_bf16"),
    (("bf16", "f32"), "matmul_convert_bf16_f32"),
    (("f16", "f16"), "matmul_convert_f16_f16"),
    (("f16", "f32"), "matmul_convert_f16_f32"),
    (("f32", "f16"), "matmul_convert_f32_f16"),
];

/// PTX symbols of the pair kernels: a product's two operands converted by one launch, each as
/// the [`CONVERT_KERNELS`] kernel of the same types would (its grid's blocks first for `A`, then
/// for `B`, along one dimension), by source and destination element type.
pub const CONVERT_PAIR_KERNELS: &[((&str, &str), &str)] = &[
    (("f32", "f32"), "matmul_convert_pair_f32_f32"),
    (("f32", "bf16"), "matmul_convert_pair_f32_bf16"),
    (("bf16", "bf16"), "matmul_convert_pair_bf16_bf16"),
    (("bf16", "f32"), "matmul_convert_pair_bf16_f32"),
    (("f16", "f16"), "matmul_convert_pair_f16_f16"),
    (("f16", "f32"), "matmul_convert_pair_f16_f32"),
    (("f32", "f16"), "matmul_convert_pair_f32_f16"),
];

/// The epilogues, by the type of `C` and `D`.
pub const EPILOGUE_KERNELS: &[(&str, &str)] =
    &[("f32", "matmul_epilogue_f32"), ("bf16", "matmul_epilogue_bf16"), ("f16", "matmul_epilogue_f16")];

/// The conversion kernel from `from` to `to` (type names), if there is one. (Host only: string
/// comparison would call `memcmp`, which the PTX cannot link.)
#[cfg(not(target_arch = "nvptx64"))]
pub fn convert_kernel(from: &str, to: &str) -> Option<&'static str> {
    CONVERT_KERNELS.iter().find(|((f, t), _)| *f == from && *t == to).map(|(_, name)| *name)
}

/// The pair kernel ([`CONVERT_PAIR_KERNELS`]) of the single kernel `single`
/// ([`CONVERT_KERNELS`]): the same types, both operands in one launch.
///
/// ```
/// use kernels::matmul::convert::{convert_kernel, convert_pair_kernel};
/// let single = convert_kernel("f32", "bf16").unwrap();
/// assert_eq!(convert_pair_kernel(single), Some("matmul_convert_pair_f32_bf16"));
/// assert_eq!(convert_pair_kernel("matmul_epilogue_f32"), None);
/// ```
#[cfg(not(target_arch = "nvptx64"))]
pub fn convert_pair_kernel(single: &str) -> Option<&'static str> {
    let (types, _) = CONVERT_KERNELS.iter().find(|(_, name)| *name == single)?;
    CONVERT_PAIR_KERNELS.iter().find(|(t, _)| t == types).map(|(_, name)| *name)
}

/// The epilogue kernel writing `to` (a type name). (Host only, as [`convert_kernel`].)
#[cfg(not(target_arch = "nvptx64"))]
pub fn epilogue_kernel(to: &str) -> Option<&'static str> {
    EPILOGUE_KERNELS.iter().find(|(t, _)| *t == to).map(|(_, name)| *name)
}

#[cfg(target_arch = "nvptx64")]
use super::element::{Bf16, Element, F16};

/// The tiled conversion; see the module documentation.
///
/// # Safety
/// The module documentation's contract.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn convert<S: Element, D: Element>(
    src: *const S,
    dst: *mut D,
    rows: u32,
    cols: u32,
    src_ld: u32,
    transposed: u32,
    dst_ld: u32,
    (bx, by, gy): (u32, u32, u32),
) {
    use crate::device::thread;
    if transposed == 0 {
        // SAFETY: forwarded contract.
        return unsafe { convert_rows(src, dst, rows, cols, src_ld, dst_ld, (bx, by, gy)) };
    }
    // One declaration for every instantiation: each kernel gets its own block-shared copy.
    let tile = crate::shared_array!(MATMUL_CONVERT_TILE: [f32; (TILE * (TILE + 1)) as usize]);
    let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
    let c0 = bx * TILE;
    let mut r0 = by * TILE;
    while r0 < rows {
        // The source's rows run along the destination's columns when transposed: read along
        // whichever is contiguous in the source.
        let mut y = ty;
        while y < TILE {
            // Source coordinates of tile element (y, tx): its row-major position, or transposed.
            let (r, c) = if transposed != 0 { (r0 + tx, c0 + y) } else { (r0 + y, c0 + tx) };
            if r < rows && c < cols {
                let at = if transposed != 0 {
                    c as usize * src_ld as usize + r as usize
                } else {
                    r as usize * src_ld as usize + c as usize
                };
                // SAFETY: r < rows, c < cols: inside the source (contract); the tile index is
                // below TILE * (TILE + 1).
                unsafe { tile.store((y * (TILE + 1) + tx) as usize, (*src.add(at)).widen()) };
            }
            y += TILE_ROWS;
        }
        // The tile is written by all threads and read, possibly transposed, by others.
        thread::sync_threads();
        let mut y = ty;
        while y < TILE {
            let (r, c) = (r0 + y, c0 + tx);
            if r < rows && c < cols {
                let at = if transposed != 0 { tx * (TILE + 1) + y } else { y * (TILE + 1) + tx };
                // SAFETY: the element was stored above; (r, c) is inside dst; one thread per
                // element.
                unsafe { *dst.add(r as usize * dst_ld as usize + c as usize) = D::narrow(tile.load(at as usize)) };
            }
            y += TILE_ROWS;
        }
        // The next tile row overwrites the tile only once every thread has read it.
        thread::sync_threads();
        r0 += gy * TILE;
    }
}

/// The untransposed conversion: [`ROW_GROUP`] consecutive elements of a row per thread, loaded
/// one by one (the source's rows may start at any element) and stored with one vector store
/// where `dst`'s rows allow it.
///
/// # Safety
/// The module documentation's contract, untransposed.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn convert_rows<S: Element, D: Element>(
    src: *const S,
    dst: *mut D,
    rows: u32,
    cols: u32,
    src_ld: u32,
    dst_ld: u32,
    (bx, by, gy): (u32, u32, u32),
) {
    use crate::device::{mem, thread};
    let size = core::mem::size_of::<D>() as u32;
    let c = bx * (ROW_GROUP * TILE) + ROW_GROUP * thread::thread_idx_x();
    // A group's first element sits at a multiple of ROW_GROUP in its row: with the rows and
    // `dst` aligned to a group's bytes (8 for 16-bit types, 16 for f32), so is every group.
    let vector = dst_ld.is_multiple_of(ROW_GROUP) && (dst as usize).is_multiple_of((ROW_GROUP * size) as usize);
    if c >= cols {
        return;
    }
    let count = (cols - c).min(ROW_GROUP);
    let mut r = by * TILE_ROWS + thread::thread_idx_y();
    while r < rows {
        let from = src.wrapping_add(r as usize * src_ld as usize + c as usize);
        let to = dst.wrapping_add(r as usize * dst_ld as usize + c as usize);
        let mut v = [D::narrow(0.0); ROW_GROUP as usize];
        for (e, x) in v.iter_mut().enumerate() {
            if (e as u32) < count {
                // SAFETY: r < rows, c + e < cols: inside the source (contract).
                *x = D::narrow(unsafe { *from.add(e) }.widen());
            }
        }
        if vector && count == ROW_GROUP {
            // SAFETY: r < rows, c + ROW_GROUP <= cols: inside dst's row; aligned to the group's
            // bytes (above); one thread per element.
            unsafe {
                if size == 2 {
                    let words = [v[0].bits() | v[1].bits() << 16, v[2].bits() | v[3].bits() << 16];
                    mem::store_global_v2_f32(to as *mut f32, words.map(f32::from_bits));
                } else {
                    mem::store_global_v4_f32(to as *mut f32, v.map(|x| f32::from_bits(x.bits())));
                }
            }
        } else {
            for (e, &x) in v.iter().enumerate().take(count as usize) {
                // SAFETY: r < rows, c + e < cols: inside dst; one thread per element.
                unsafe { *to.add(e) = x };
            }
        }
        r += gy * TILE_ROWS;
    }
}

/// The epilogue; see the module documentation.
///
/// # Safety
/// The module documentation's contract.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn epilogue<D: Element>(
    acc: *const f32,
    c_in: *const D,
    d: *mut D,
    m: u32,
    n: u32,
    ldc: u32,
    ldd: u32,
    alpha: f32,
    beta: f32,
) {
    use crate::device::{math, thread};
    let total = m as u64 * n as u64;
    let mut i = thread::index_1d();
    while i < total {
        let (r, c) = (i / n as u64, i % n as u64);
        // SAFETY: i < m * n: inside acc.
        let product = alpha * unsafe { *acc.add(i as usize) };
        let value = if beta != 0.0 {
            // SAFETY: (r, c) inside C (contract); read before the write below of the same
            // element, by the same thread, when C is D.
            let x = unsafe { (*c_in.add((r * ldc as u64 + c) as usize)).widen() };
            math::fma(beta, x, product)
        } else {
            product
        };
        // SAFETY: (r, c) inside D; one thread per element.
        unsafe { *d.add((r * ldd as u64 + c) as usize) = D::narrow(value) };
        i += thread::grid_size_1d();
    }
}

#[cfg(target_arch = "nvptx64")]
macro_rules! convert_kernels {
    ($($name:ident: $s:ty => $d:ty),* $(,)?) => {
        crate::gpu_kernel! {
            $(
                /// A tiled conversion; see the [module documentation](self).
                ///
                /// # Safety
                /// See the module documentation.
                pub unsafe fn $name(
                    src: *const $s,
                    dst: *mut $d,
                    rows: u32,
                    cols: u32,
                    src_ld: u32,
                    transposed: u32,
                    dst_ld: u32
                ) {
                    use crate::device::thread;
                    let block = (thread::block_idx_x(), thread::block_idx_y(), thread::grid_dim_y());
                    // SAFETY: forwarded kernel contract.
                    unsafe { convert::<$s, $d>(src, dst, rows, cols, src_ld, transposed, dst_ld, block) }
                }
            )*
        }
    };
}

/// The pair kernels: both operands of a product in one launch, each as its single kernel with
/// its own grid (`blocks_x x blocks_y`), `A`'s blocks first along a 1-D grid of their sum.
#[cfg(target_arch = "nvptx64")]
macro_rules! convert_pair_kernels {
    ($($name:ident: $s:ty => $d:ty),* $(,)?) => {
        crate::gpu_kernel! {
            $(
                /// Two tiled conversions in one launch (`A`'s, then `B`'s blocks); see the
                /// [module documentation](self).
                ///
                /// # Safety
                /// Each operand's arguments as the single kernel's (module documentation), with
                /// `blocks_x * blocks_y` its grid, and a 1-D grid of at least their sum.
                pub unsafe fn $name(
                    src_a: *const $s,
                    dst_a: *mut $d,
                    rows_a: u32,
                    cols_a: u32,
                    src_ld_a: u32,
                    transposed_a: u32,
                    dst_ld_a: u32,
                    blocks_x_a: u32,
                    blocks_y_a: u32,
                    src_b: *const $s,
                    dst_b: *mut $d,
                    rows_b: u32,
                    cols_b: u32,
                    src_ld_b: u32,
                    transposed_b: u32,
                    dst_ld_b: u32,
                    blocks_x_b: u32,
                    blocks_y_b: u32
                ) {
                    use crate::device::thread;
                    let id = thread::block_idx_x();
                    let a_blocks = blocks_x_a * blocks_y_a;
                    if id < a_blocks {
                        let block = (id % blocks_x_a, id / blocks_x_a, blocks_y_a);
                        // SAFETY: forwarded kernel contract, A's part.
                        unsafe { convert::<$s, $d>(src_a, dst_a, rows_a, cols_a, src_ld_a, transposed_a, dst_ld_a, block) }
                    } else if id - a_blocks < blocks_x_b * blocks_y_b {
                        let id = id - a_blocks;
                        let block = (id % blocks_x_b, id / blocks_x_b, blocks_y_b);
                        // SAFETY: forwarded kernel contract, B's part.
                        unsafe { convert::<$s, $d>(src_b, dst_b, rows_b, cols_b, src_ld_b, transposed_b, dst_ld_b, block) }
                    }
                }
            )*
        }
    };
}

#[cfg(target_arch = "nvptx64")]
convert_pair_kernels! {
    matmul_convert_pair_f32_f32: f32 => f32,
    matmul_convert_pair_f32_bf16: f32 => Bf16,
    matmul_convert_pair_bf16_bf16: Bf16 => Bf16,
    matmul_convert_pair_bf16_f32: Bf16 => f32,
    matmul_convert_pair_f16_f16: F16 => F16,
    matmul_convert_pair_f16_f32: F16 => f32,
    matmul_convert_pair_f32_f16: f32 => F16,
}

#[cfg(target_arch = "nvptx64")]
convert_kernels! {
    matmul_convert_f32_f32: f32 => f32,
    matmul_convert_f32_bf16: f32 => Bf16,
    matmul_convert_bf16_bf16: Bf16 => Bf16,
    matmul_convert_bf16_f32: Bf16 => f32,
    matmul_convert_f16_f16: F16 => F16,
    matmul_convert_f16_f32: F16 => f32,
    matmul_convert_f32_f16: f32 => F16,
}

#[cfg(target_arch = "nvptx64")]
macro_rules! epilogue_kernels {
    ($($name:ident: $d:ty),* $(,)?) => {
        crate::gpu_kernel! {
            $(
                /// `D = alpha * acc + beta * C`; see the [module documentation](self).
                ///
                /// # Safety
                /// See the module documentation.
                pub unsafe fn $name(
                    acc: *const f32,
                    c_in: *const $d,
                    d: *mut $d,
                    m: u32,
                    n: u32,
                    ldc: u32,
                    ldd: u32,
                    alpha: f32,
                    beta: f32
                ) {
                    // SAFETY: forwarded kernel contract.
                    unsafe { epilogue::<$d>(acc, c_in, d, m, n, ldc, ldd, alpha, beta) }
                }
            )*
        }
    };
}

#[cfg(target_arch = "nvptx64")]
epilogue_kernels! {
    matmul_epilogue_f32: f32,
    matmul_epilogue_bf16: Bf16,
    matmul_epilogue_f16: F16,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operand_conversion_and_epilogue_has_a_kernel_and_only_those() {
        for (from, to) in
            [("f32", "f32"), ("f32", "bf16"), ("bf16", "f32"), ("f16", "f32"), ("bf16", "bf16"), ("f32", "f16")]
        {
            assert!(convert_kernel(from, to).is_some(), "{from} -> {to}");
        }
        // Between the 16-bit types the planner refuses rather than converts.
        assert_eq!(convert_kernel("bf16", "f16"), None);
        assert_eq!(convert_kernel("f16", "bf16"), None);
        for to in ["f32", "bf16", "f16"] {
            assert!(epilogue_kernel(to).unwrap().ends_with(to));
        }
    }
}
