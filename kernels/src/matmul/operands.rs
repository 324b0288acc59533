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
//!
//! # Thread mapping
//! `to_bf16` and `pad_rows`: a grid-stride loop, one thread per destination element.
//! `transpose`: [`TILE`] x [`TILE`] tiles through shared memory (one padding column against bank
//! conflicts), blocks of [`TILE`] x [`TRANSPOSE_ROWS`] threads, grid
//! `(ceil(cols / TILE), ceil(rows / TILE))`; reads and writes are coalesced.
//!
//! # Safety
//! `src` holds `rows * cols` elements, `dst` holds `rows * ld` (`to_bf16`, `pad_rows`,
//! `ld >= cols`), `cols * ld` (`transpose`, `ld >= rows`), and `dst` overlaps nothing else.
//!
//! The split-TF32 operands have their own family, [`super::tf32x3`].

/// PTX symbol of the BF16 rounding copy.
pub const KERNEL_TO_BF16: &str = "matmul_to_bf16";
/// PTX symbol of the transposing copy.
pub const KERNEL_TRANSPOSE: &str = "matmul_transpose";
/// PTX symbol of the padding copy.
pub const KERNEL_PAD: &str = "matmul_pad_rows";
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
