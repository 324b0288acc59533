//! `matmul_tiled16` and `matmul_tiled32`: the shared-memory matrix product of the CUDA C++
//! Programming Guide. Each block stages a `TILE x TILE` tile of `A` and of `B` in shared memory,
//! waits at a barrier, multiplies the tiles, and waits again before loading the next pair, so
//! each element of `A` and `B` is read from global memory `n / TILE` and `m / TILE` times
//! instead of `n` and `m` times.
//!
//! # Parameters
//! Row-major `A[m x k]`, `B[k x n]`, `C[m x n]` (`C = A * B`), any `m, k, n >= 1`: tiles that
//! cross an edge are padded with zeros in shared memory, and threads outside `C` write nothing.
//!
//! # Thread mapping
//! Block `TILE x TILE` threads; thread `(x, y)` of block `(bx, by)` loads `A[row][t*TILE + x]`
//! and `B[t*TILE + y][col]` for each tile step `t`, and computes
//! `C[row = by*TILE + y][col = bx*TILE + x]`. Grid `(ceil(n / TILE), ceil(m / TILE))`.
//!
//! # Shared memory
//! Static: `2 * TILE * TILE * 4` bytes (2 KiB for 16, 8 KiB for 32); no dynamic shared memory.
//!
//! # Safety
//! As [`super::naive`], with a block of exactly `TILE x TILE` threads.

/// PTX symbol of the 16x16 kernel.
pub const KERNEL_TILE16: &str = "matmul_tiled16";
/// PTX symbol of the 32x32 kernel.
pub const KERNEL_TILE32: &str = "matmul_tiled32";

/// Static shared memory a `tile x tile` kernel uses: one tile of `A` and one of `B`.
pub const fn shared_bytes(tile: u32) -> u32 {
    2 * tile * tile * size_of::<f32>() as u32
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, thread};
    use crate::{gpu_kernel, shared_array};

    gpu_kernel! {
        /// `C = A * B` through 16x16 shared-memory tiles; see the [module documentation](super).
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `m*k`, `k*n`, `m*n` `f32` on the device, `c` overlaps neither
        /// input, and the block is 16 x 16 threads.
        pub unsafe fn matmul_tiled16(a: *const f32, b: *const f32, c: *mut f32, m: u32, k: u32, n: u32) {
            let tile_a = shared_array!(MATMUL_TILED16_A: [f32; 16 * 16]);
            let tile_b = shared_array!(MATMUL_TILED16_B: [f32; 16 * 16]);
            // SAFETY: forwarded kernel contract; the arrays are this kernel's own tiles.
            unsafe { tiled::<16, { 16 * 16 }>(tile_a, tile_b, a, b, c, m, k, n) }
        }

        /// `C = A * B` through 32x32 shared-memory tiles; see the [module documentation](super).
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `m*k`, `k*n`, `m*n` `f32` on the device, `c` overlaps neither
        /// input, and the block is 32 x 32 threads.
        pub unsafe fn matmul_tiled32(a: *const f32, b: *const f32, c: *mut f32, m: u32, k: u32, n: u32) {
            let tile_a = shared_array!(MATMUL_TILED32_A: [f32; 32 * 32]);
            let tile_b = shared_array!(MATMUL_TILED32_B: [f32; 32 * 32]);
            // SAFETY: forwarded kernel contract; the arrays are this kernel's own tiles.
            unsafe { tiled::<32, { 32 * 32 }>(tile_a, tile_b, a, b, c, m, k, n) }
        }
    }

    /// The Guide's tiled product for one `TILE` (`AREA = TILE * TILE`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tiled<const TILE: usize, const AREA: usize>(
        tile_a: SharedArray<f32, AREA>,
        tile_b: SharedArray<f32, AREA>,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
    ) {
        // Bounds and tile offsets in 32 bits, pointers walked by constant strides: 64-bit index
        // products recomputed every step cost ~25 instructions per step in SASS (IMAD.WIDE,
        // 64-bit compares), which nvcc's `int` code does not pay.
        let (x, y) = (thread::thread_idx_x(), thread::thread_idx_y());
        let tile = TILE as u32;
        let row = thread::block_idx_y() * tile + y;
        let col = thread::block_idx_x() * tile + x;
        let (row_inside, col_inside) = (row < m, col < n);
        // Only dereferenced where the guards below hold; wrapping arithmetic keeps the
        // out-of-range pointers of edge threads free of undefined behaviour.
        let mut a_next = a.wrapping_add(row as usize * k as usize + x as usize);
        let mut b_next = b.wrapping_add(y as usize * n as usize + col as usize);
        let b_stride = TILE * n as usize;
        let slot = (y * tile + x) as usize;
        let (a_row, b_col) = ((y * tile) as usize, x as usize);
        let mut acc = 0.0f32;
        let mut t = 0u32;
        while t < k {
            // `x < k - t` is `t + x < k` without overflow (t < k).
            // SAFETY: row < m and t + x < k: the element A[row][t + x].
            let a_value = if row_inside && x < k - t { unsafe { *a_next } } else { 0.0 };
            // SAFETY: t + y < k and col < n: the element B[t + y][col].
            let b_value = if col_inside && y < k - t { unsafe { *b_next } } else { 0.0 };
            // SAFETY: slot = y * TILE + x < AREA; each thread writes only its own slot.
            unsafe {
                tile_a.store(slot, a_value);
                tile_b.store(slot, b_value);
            }
            // Both tiles must be complete before any thread reads another thread's slot.
            thread::sync_threads();
            for e in 0..TILE {
                // SAFETY: y, e, x < TILE; the barrier above ordered every write of these slots.
                acc = fma(unsafe { tile_a.load(a_row + e) }, unsafe { tile_b.load(e * TILE + b_col) }, acc);
            }
            // Every thread must finish reading these tiles before the next step overwrites them.
            thread::sync_threads();
            a_next = a_next.wrapping_add(TILE);
            b_next = b_next.wrapping_add(b_stride);
            t += tile;
        }
        if row_inside && col_inside {
            // SAFETY: row < m, col < n, and this thread is the only writer of this element.
            unsafe { *c.add(row as usize * n as usize + col as usize) = acc };
        }
    }
}
