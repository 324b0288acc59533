//! `matmul_short_k`: `C = A * B` for `k <= 16`, where writing `C` bounds the time. Each output
//! costs at most 16 multiply-adds against the 4 bytes it writes, so the kernel is built around
//! the stores: consecutive threads write consecutive elements of a row of `C` (every warp store a
//! whole 128-byte line, for any `n` and any alignment), and each thread keeps its columns of `B`
//! in registers for all the rows of its block.
//!
//! # Parameters
//! Row-major `A[m x k]`, `B[k x n]`, `C[m x n]` (`C = A * B`), `1 <= k <=` [`MAX_K`], `m, n >= 1`.
//!
//! # Thread mapping
//! A block of [`THREADS`] threads computes a tile of [`BLOCK_M`] rows by [`BLOCK_N`] columns:
//! thread `t` owns columns `col0 + t + THREADS * j` for `j < COLS_PER_THREAD` ([`column()`]), and
//! loads their `k` elements of `B` into registers once. The block stages its rows of `A`
//! (`BLOCK_M x MAX_K` floats, one per thread, [`a_slot`]) in shared memory, then for each row
//! computes its outputs in `f32`, `k` ascending (`fma`, from `0.0`), reading the row of `A` as
//! broadcast 16-byte loads, and stores them. Grid `(ceil(n / BLOCK_N), ceil(m / BLOCK_M))`.
//! Elements past `k` are never multiplied (no `0 * inf` from padding), and stores outside `C` are
//! skipped.
//!
//! # Safety
//! `a`, `b` point to device allocations of `m*k`, `k*n` elements, `c` to `m*n` `f32`; `c` does
//! not overlap `a` or `b`; `k <= MAX_K`; the block is `THREADS x 1 x 1`.

/// PTX symbols of the kernels on `f32`, BF16 and F16 operands (`OperandType::index` order).
pub const KERNELS: [&str; 3] = ["matmul_short_k", "matmul_short_k_bf16", "matmul_short_k_f16"];
/// The longest `k` the kernels take: `B`'s columns of a thread stay in registers
/// (`COLS_PER_THREAD * MAX_K` floats).
pub const MAX_K: u32 = 16;
/// Threads per block.
pub const THREADS: u32 = 256;
/// Columns of `C` per thread.
pub const COLS_PER_THREAD: u32 = 2;
/// Columns of `C` per block.
pub const BLOCK_N: u32 = THREADS * COLS_PER_THREAD;
/// Rows of `C` per block: the staged rows of `A` are one float per thread.
pub const BLOCK_M: u32 = THREADS / MAX_K;

/// The column of `C`, within its block's tile, of thread `t`'s `j`-th output: consecutive threads
/// on consecutive columns, so that a warp's store is contiguous.
///
/// ```
/// use kernels::matmul::short_k::{BLOCK_N, COLS_PER_THREAD, THREADS, column};
/// assert_eq!((column(0, 0), column(1, 0), column(0, 1)), (0, 1, THREADS));
/// // Every column of the tile has exactly one owner.
/// let mut owners = vec![0; BLOCK_N as usize];
/// for t in 0..THREADS {
///     for j in 0..COLS_PER_THREAD {
///         owners[column(t, j) as usize] += 1;
///     }
/// }
/// assert!(owners.iter().all(|&o| o == 1));
/// ```
pub const fn column(t: u32, j: u32) -> u32 {
    t + THREADS * j
}

/// The element of the block's rows of `A` that thread `t` stages: `(row, column of k)`, row-major
/// in the `BLOCK_M x MAX_K` shared tile, whose index is `t`.
///
/// ```
/// use kernels::matmul::short_k::{BLOCK_M, MAX_K, THREADS, a_slot};
/// assert_eq!(a_slot(0), (0, 0));
/// assert_eq!(a_slot(MAX_K + 3), (1, 3));
/// assert_eq!(a_slot(THREADS - 1), (BLOCK_M - 1, MAX_K - 1));
/// ```
pub const fn a_slot(t: u32) -> (u32, u32) {
    (t / MAX_K, t % MAX_K)
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{BLOCK_M, BLOCK_N, COLS_PER_THREAD, MAX_K, THREADS, a_slot, column};
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, mem, thread};
    use crate::matmul::element::{Bf16, Element, F16};
    use crate::{gpu_kernel, shared_array};

    /// The staged rows of `A`: one declaration (`SHORT_K_A`), which the kernels of all three
    /// operand types use.
    #[inline(always)]
    fn a_tile() -> SharedArray<f32, { (BLOCK_M * MAX_K) as usize }> {
        shared_array!(SHORT_K_A: [f32; (BLOCK_M * MAX_K) as usize])
    }

    /// Declares the kernel for each operand type: `$name(a, b, c, m, k, n)` on `*const $t`.
    macro_rules! short_k_kernels {
        ($($name:ident: $t:ty;)*) => {
            gpu_kernel! {
                $(
                    #[doc = concat!("`C = A * B` for `k <= 16` on `", stringify!($t), "` operands; see the")]
                    /// [module documentation](super).
                    ///
                    /// # Safety
                    /// `a`, `b` hold `m*k`, `k*n` elements and `c` `m*n` `f32` on the device, `c`
                    /// overlaps neither input, `k <= MAX_K`, and the block is `THREADS` x 1 x 1.
                    pub unsafe fn $name(a: *const $t, b: *const $t, c: *mut f32, m: u32, k: u32, n: u32) {
                        // SAFETY: forwarded kernel contract.
                        unsafe { short_k_body::<$t>(a_tile(), a, b, c, m, k, n) }
                    }
                )*
            }
        };
    }
    short_k_kernels! {
        matmul_short_k: f32;
        matmul_short_k_bf16: Bf16;
        matmul_short_k_f16: F16;
    }

    /// The kernels' body on operands of type `T`.
    ///
    /// # Safety
    /// As the kernels'.
    #[inline(always)]
    unsafe fn short_k_body<T: Element>(
        tile: SharedArray<f32, { (BLOCK_M * MAX_K) as usize }>,
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
    ) {
        let t = thread::thread_idx_x();
        let row0 = thread::block_idx_y() * BLOCK_M;
        let col0 = thread::block_idx_x() * BLOCK_N;
        let (a_row, a_k) = a_slot(t);
        let row = row0 + a_row;
        let staged = if row < m && a_k < k {
            // SAFETY: row < m and a_k < k: an element of A, which nothing writes (contract).
            unsafe { T::load_nc(a.add(row as usize * k as usize + a_k as usize)) }
        } else {
            0.0
        };
        // SAFETY: t < THREADS = BLOCK_M * MAX_K, the tile's length; read after the barrier.
        unsafe { tile.store(t as usize, staged) };
        // This thread's columns of B, for every row: held in registers, indexed by constants,
        // widened after the barrier so that all 32 loads are in flight together.
        let mut b_raw = [[0u32; MAX_K as usize]; COLS_PER_THREAD as usize];
        unroll!(j in [0, 1] {
            let col = col0 + column(t, j as u32);
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if col < n && (kk as u32) < k {
                    // SAFETY: kk < k and col < n: an element of B, which nothing writes.
                    b_raw[j][kk] = unsafe { T::load_raw_nc(b.add(kk * n as usize + col as usize)) };
                }
            });
        });
        thread::sync_threads();
        let b_cols = b_raw.map(|col| col.map(T::widen_raw));
        unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            let row = row0 + r as u32;
            if row < m {
                let mut a_row = [0.0f32; MAX_K as usize];
                unroll!(q in [0, 1, 2, 3] {
                    // SAFETY: r * MAX_K + 4 q + 4 <= BLOCK_M * MAX_K and a multiple of 4; the
                    // tile was written before the barrier and is not written again.
                    let [x, y, z, w] = unsafe { tile.load4(r * MAX_K as usize + 4 * q) };
                    (a_row[4 * q], a_row[4 * q + 1], a_row[4 * q + 2], a_row[4 * q + 3]) = (x, y, z, w);
                });
                unroll!(j in [0, 1] {
                    let col = col0 + column(t, j as u32);
                    let mut acc = 0.0f32;
                    unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                        if (kk as u32) < k {
                            acc = fma(a_row[kk], b_cols[j][kk], acc);
                        }
                    });
                    if col < n {
                        // SAFETY: row < m and col < n; this thread is the element's only writer.
                        unsafe { mem::store_global_f32(c.add(row as usize * n as usize + col as usize), acc) };
                    }
                });
            }
        });
    }

    const _: () = assert!(COLS_PER_THREAD == 2 && MAX_K == 16 && BLOCK_M == 16 && THREADS == 256);
}
