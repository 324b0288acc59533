//! `matmul_naive`: one thread per element of `C`, reading its row of `A` and column of `B`
//! straight from global memory (the CUDA C++ Programming Guide's first matrix product).
//!
//! # Parameters
//! Row-major `A[m x k]`, `B[k x n]`, `C[m x n]` (`C = A * B`), `m, k, n >= 1`.
//!
//! # Thread mapping
//! Block [`BLOCK_X`] x [`BLOCK_Y`]; thread `(x, y)` of block `(bx, by)` computes
//! `C[by * BLOCK_Y + y][bx * BLOCK_X + x]`, so a warp reads consecutive columns of `B` and writes
//! consecutive elements of `C` (coalesced). Grid `(ceil(n / BLOCK_X), ceil(m / BLOCK_Y))`;
//! threads past the edges compute nothing.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n`, `m*n` `f32`; `c` does not overlap
//! `a` or `b`; the launch uses the block shape above.

/// PTX symbol of the kernel.
pub const KERNEL: &str = "matmul_naive";
/// Threads per block along x (columns of `C`).
pub const BLOCK_X: u32 = 16;
/// Threads per block along y (rows of `C`).
pub const BLOCK_Y: u32 = 16;

#[cfg(target_arch = "nvptx64")]
crate::gpu_kernel! {
    /// `C = A * B`, one thread per element; see the [module documentation](self).
    ///
    /// # Safety
    /// `a`, `b`, `c` hold `m*k`, `k*n`, `m*n` `f32` on the device, `c` overlaps neither input,
    /// and the block is `BLOCK_X x BLOCK_Y`.
    pub unsafe fn matmul_naive(a: *const f32, b: *const f32, c: *mut f32, m: u32, k: u32, n: u32) {
        use crate::device::{math::fma, thread};
        let row = thread::block_idx_y() * BLOCK_Y + thread::thread_idx_y();
        let col = thread::block_idx_x() * BLOCK_X + thread::thread_idx_x();
        if row >= m || col >= n {
            return;
        }
        // Walk A along the row and B down the column by constant strides with a 32-bit count:
        // recomputing 64-bit products each step costs instructions nvcc's `int` code does not.
        let (row, col, n) = (row as usize, col as usize, n as usize);
        // SAFETY: row < m, col < n: the first elements of A's row and B's column.
        let (mut a_next, mut b_next) = unsafe { (a.add(row * k as usize), b.add(col)) };
        let mut acc = 0.0f32;
        for _ in 0..k {
            // SAFETY: k steps of 1 along A's row and of n down B's column stay inside A and B;
            // the pointers advance past the end only after their last use (wrapping_add).
            acc = fma(unsafe { *a_next }, unsafe { *b_next }, acc);
            a_next = a_next.wrapping_add(1);
            b_next = b_next.wrapping_add(n);
        }
        // SAFETY: row < m, col < n, and this thread is the only writer of this element.
        unsafe { *c.add(row * n + col) = acc };
    }
}
