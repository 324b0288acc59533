//! `matmul_few_rows` and `matmul_few_cols`: memory-bound products where one side of `C` is
//! narrow (GEMV and its neighbours). With `m` or `n` at most 16 a product does at most 32 FLOPs
//! per float of the large operand, far under the ~22 FLOP/byte that keeps the H100's FP32 units
//! busy, so these kernels aim at reading the large operand once at close to the copy bandwidth
//! rather than at reusing it through shared-memory tiles.
//!
//! # Parameters (both kernels)
//! Row-major `A[m x k]`, `B[k x n]`, output `c`, any `m, k, n >= 1` within the kernel's limit
//! ([`FEW_ROWS_MAX_M`], [`FEW_COLS_MAX_N`]). The grid's z dimension splits the inner dimension
//! as in `sgemm`: block `(.., .., z)` multiplies columns
//! [`split_k_range`](super::split_k::split_k_range)`(z, k_chunk, k)` and writes slice `z` of `c`
//! (`gridDim.z` slices of `m x n`; with one split, `C` itself). `k_chunk` is a positive multiple
//! of 4.
//!
//! # `matmul_few_rows` (`m <= 16`): streams `B`
//! Block [`FEW_ROWS_THREADS`] threads, grid `(ceil(n / FEW_ROWS_BLOCK_COLS), 1, splits)`. Thread
//! `t` of block `bx` owns columns `4 (bx * FEW_ROWS_THREADS + t) ..` of every row of `C`, so a
//! warp reads 512 contiguous bytes of a row of `B`. Per step it loads four rows of `B` (four
//! 16-byte loads in flight), then for each of the `m` rows of `A` the four matching elements
//! (one 16-byte load at an address uniform across the warp, served from L1), and does
//! `m x 4 x 4` FMAs into `m x 4` accumulators. No shared memory, no barrier, no reduction across
//! threads: each thread's columns are its own.
//!
//! # `matmul_few_cols` (`n <= 16`): streams `A`
//! Block [`FEW_COLS_THREADS`] threads (8 warps), grid `(ceil(m / FEW_COLS_ROWS_PER_BLOCK), 1,
//! splits)`. Warp `w` of block `bx` owns row `bx * 8 + w` of `C`. The block walks its `k` range
//! in pieces of [`FEW_COLS_PIECE`]: each lane first issues its two 16-byte loads of the row of
//! `A` (elements `4 lane ..` and `128 + 4 lane ..` of the piece), the block stages the piece's
//! rows of `B` (contiguous, `piece x n` floats) in shared memory, and after a barrier each lane
//! multiplies its 8 elements of `A` with the matching rows of `B` into `n` accumulators. At the
//! end a butterfly of warp shuffles adds the 32 lanes' accumulators in a fixed order and lane
//! `j` writes column `j`.
//!
//! # Shared memory
//! `matmul_few_cols`: static [`FEW_COLS_SHARED_BYTES`] (one piece of `B`); `matmul_few_rows`:
//! none.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n`, `gridDim.z*m*n` `f32`; `c`
//! overlaps neither input; the block has the kernel's thread count; `m` (or `n`) is within the
//! kernel's limit; `k_chunk` is a positive multiple of 4.

/// PTX symbol of the kernel for `m <= FEW_ROWS_MAX_M`.
pub const KERNEL_FEW_ROWS: &str = "matmul_few_rows";
/// PTX symbol of the kernel for `n <= FEW_COLS_MAX_N`.
pub const KERNEL_FEW_COLS: &str = "matmul_few_cols";

/// Largest `m` `matmul_few_rows` takes (its accumulators are `FEW_ROWS_MAX_M x 4` registers).
pub const FEW_ROWS_MAX_M: u32 = 16;
/// Threads per block of `matmul_few_rows`.
pub const FEW_ROWS_THREADS: u32 = 128;
/// Columns of `C` per thread of `matmul_few_rows` (one 16-byte vector).
pub const FEW_ROWS_COLS_PER_THREAD: u32 = 4;
/// Columns of `C` per block of `matmul_few_rows`.
pub const FEW_ROWS_BLOCK_COLS: u32 = FEW_ROWS_THREADS * FEW_ROWS_COLS_PER_THREAD;

/// Largest `n` `matmul_few_cols` takes (its accumulators are `FEW_COLS_MAX_N` registers).
pub const FEW_COLS_MAX_N: u32 = 16;
/// Threads per block of `matmul_few_cols`.
pub const FEW_COLS_THREADS: u32 = 256;
/// Rows of `C` per block of `matmul_few_cols`: one per warp.
pub const FEW_COLS_ROWS_PER_BLOCK: u32 = FEW_COLS_THREADS / 32;
/// Rows of `B` (elements of each row of `A`) per piece of `matmul_few_cols`: two 16-byte loads
/// per lane.
pub const FEW_COLS_PIECE: u32 = 2 * 32 * 4;
/// Static shared memory of `matmul_few_cols`: one piece of `B` at the widest `n`.
pub const FEW_COLS_SHARED_BYTES: u32 = FEW_COLS_PIECE * FEW_COLS_MAX_N * size_of::<f32>() as u32;

const _: () = assert!(FEW_ROWS_MAX_M == 16 && FEW_COLS_MAX_N == 16 && FEW_ROWS_COLS_PER_THREAD == 4);
const _: () = assert!(FEW_COLS_SHARED_BYTES <= 48 * 1024);

/// Whether `matmul_few_rows` moves `A`, `B` and `C` in 16-byte accesses: every row of `A` and
/// `B` starts 16-byte aligned (given aligned bases) and a thread's 4 columns are all inside `C`
/// or all outside.
pub const fn few_rows_vector_path(k: u32, n: u32) -> bool {
    k.is_multiple_of(4) && n.is_multiple_of(4)
}

/// Whether `matmul_few_cols` moves `A` and `B` in 16-byte accesses: rows of `A` start 16-byte
/// aligned, and with pieces starting at multiples of 4 so does each piece of `B` (`4 j * n`
/// floats in).
pub const fn few_cols_vector_path(k: u32) -> bool {
    k.is_multiple_of(4)
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{
        FEW_COLS_MAX_N, FEW_COLS_PIECE, FEW_COLS_ROWS_PER_BLOCK, FEW_COLS_THREADS, FEW_ROWS_COLS_PER_THREAD,
        FEW_ROWS_THREADS, few_cols_vector_path, few_rows_vector_path,
    };
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, mem, thread, warp};
    use crate::matmul::split_k::split_k_range;
    use crate::{gpu_kernel, shared_array};

    const PIECE_FLOATS: usize = (FEW_COLS_PIECE * FEW_COLS_MAX_N) as usize;
    type PieceB = SharedArray<f32, PIECE_FLOATS>;

    gpu_kernel! {
        /// `C = A * B` for `m <= 16`, streaming `B`; see the [module documentation](super).
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `m*k`, `k*n`, `gridDim.z*m*n` `f32` on the device, `c` overlaps
        /// neither input, the block is `FEW_ROWS_THREADS` x 1 x 1, `m <= 16`, and `k_chunk` is
        /// a positive multiple of 4.
        pub unsafe fn matmul_few_rows(a: *const f32, b: *const f32, c: *mut f32, m: u32, k: u32, n: u32, k_chunk: u32) {
            let z = thread::block_idx_z();
            let (k_begin, k_len) = split_k_range(z, k_chunk, k);
            let out = c.wrapping_add(z as usize * m as usize * n as usize);
            let col = (thread::block_idx_x() * FEW_ROWS_THREADS + thread::thread_idx_x()) * FEW_ROWS_COLS_PER_THREAD;
            // No barrier and no exchange between threads follows, so threads past the last
            // column can leave now.
            if col >= n {
                return;
            }
            let aligned = (a as usize | b as usize | out as usize).is_multiple_of(16);
            if few_rows_vector_path(k, n) && aligned {
                // SAFETY: forwarded contract; k % 4 == n % 4 == 0 and aligned bases.
                unsafe { rows_product::<true>(a, b, out, m, k, n, col, k_begin, k_begin + k_len) }
            } else {
                // SAFETY: forwarded contract.
                unsafe { rows_product::<false>(a, b, out, m, k, n, col, k_begin, k_begin + k_len) }
            }
        }

        /// `C = A * B` for `n <= 16`, streaming `A`; see the [module documentation](super).
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `m*k`, `k*n`, `gridDim.z*m*n` `f32` on the device, `c` overlaps
        /// neither input, the block is `FEW_COLS_THREADS` x 1 x 1, `n <= 16`, and `k_chunk` is
        /// a positive multiple of 4.
        pub unsafe fn matmul_few_cols(a: *const f32, b: *const f32, c: *mut f32, m: u32, k: u32, n: u32, k_chunk: u32) {
            let piece_b = shared_array!(MATMUL_FEW_COLS_B: [f32; PIECE_FLOATS]);
            let z = thread::block_idx_z();
            let (k_begin, k_len) = split_k_range(z, k_chunk, k);
            let out = c.wrapping_add(z as usize * m as usize * n as usize);
            if few_cols_vector_path(k) && (a as usize | b as usize).is_multiple_of(16) {
                // SAFETY: forwarded contract; k % 4 == 0 and aligned bases.
                unsafe { cols_product::<true>(piece_b, a, b, out, m, k, n, k_begin, k_begin + k_len) }
            } else {
                // SAFETY: forwarded contract.
                unsafe { cols_product::<false>(piece_b, a, b, out, m, k, n, k_begin, k_begin + k_len) }
            }
        }
    }

    /// Row `row` of `B`, this thread's 4 columns from `col`, zero past the last column.
    ///
    /// # Safety
    /// `row < k`, `col < n`; with `VEC`, `n % 4 == 0` and `b` is 16-byte aligned.
    #[inline(always)]
    unsafe fn load_b_row<const VEC: bool>(b: *const f32, row: u32, n: u32, col: u32) -> [f32; 4] {
        let at = b.wrapping_add(row as usize * n as usize + col as usize);
        if VEC {
            // SAFETY: col % 4 == 0 and n % 4 == 0, so the 4 columns are inside the row, aligned.
            unsafe { mem::load_global_nc_v4_f32(at) }
        } else {
            let mut v = [0.0; 4];
            unroll!(j in [0, 1, 2, 3] {
                if col + (j as u32) < n {
                    // SAFETY: row < k and column col + j < n.
                    v[j] = unsafe { mem::load_global_nc_f32(at.add(j)) };
                }
            });
            v
        }
    }

    /// The `m x 4` block of `C` at columns `col ..` over `k_begin .. k_end`, written to `out`.
    ///
    /// # Safety
    /// As `matmul_few_rows`, with `col < n` and `k_begin <= k_end <= k`; with `VEC`, the
    /// vector-path conditions and `k_begin % 4 == 0`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows_product<const VEC: bool>(
        a: *const f32,
        b: *const f32,
        out: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        col: u32,
        k_begin: u32,
        k_end: u32,
    ) {
        let mut acc = [[0.0f32; 4]; 16];
        let mut kk = k_begin;
        while kk + 4 <= k_end {
            // Four rows of B in flight before the first use.
            let mut rows = [[0.0f32; 4]; 4];
            unroll!(u in [0, 1, 2, 3] {
                // SAFETY: kk + u < k_end <= k and col < n.
                rows[u] = unsafe { load_b_row::<VEC>(b, kk + u as u32, n, col) };
            });
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if (i as u32) < m {
                    let a_at = a.wrapping_add(i * k as usize + kk as usize);
                    let a4 = if VEC {
                        // SAFETY: row i < m, columns kk..kk+4 < k_end <= k; k % 4 == 0 and
                        // kk % 4 == 0 keep it 16-byte aligned.
                        unsafe { mem::load_global_nc_v4_f32(a_at) }
                    } else {
                        // SAFETY: row i < m, columns kk..kk+4 < k.
                        unsafe {
                            [
                                mem::load_global_nc_f32(a_at),
                                mem::load_global_nc_f32(a_at.add(1)),
                                mem::load_global_nc_f32(a_at.add(2)),
                                mem::load_global_nc_f32(a_at.add(3)),
                            ]
                        }
                    };
                    unroll!(u in [0, 1, 2, 3] {
                        unroll!(j in [0, 1, 2, 3] {
                            acc[i][j] = fma(a4[u], rows[u][j], acc[i][j]);
                        });
                    });
                }
            });
            kk += 4;
        }
        // The last k_len % 4 rows (only off the vector path, where k_len can be ragged).
        while kk < k_end {
            // SAFETY: kk < k_end <= k and col < n.
            let row = unsafe { load_b_row::<VEC>(b, kk, n, col) };
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if (i as u32) < m {
                    // SAFETY: row i < m and column kk < k.
                    let x = unsafe { mem::load_global_nc_f32(a.wrapping_add(i * k as usize + kk as usize)) };
                    unroll!(j in [0, 1, 2, 3] {
                        acc[i][j] = fma(x, row[j], acc[i][j]);
                    });
                }
            });
            kk += 1;
        }
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if (i as u32) < m {
                let at = out.wrapping_add(i * n as usize + col as usize);
                if VEC {
                    // SAFETY: row i < m, the 4 columns < n, 16-byte aligned; this thread alone
                    // writes them.
                    unsafe { mem::store_global_v4_f32(at, acc[i]) };
                } else {
                    unroll!(j in [0, 1, 2, 3] {
                        if col + (j as u32) < n {
                            // SAFETY: row i < m, column col + j < n; this thread alone writes it.
                            unsafe { mem::store_global_f32(at.add(j), acc[i][j]) };
                        }
                    });
                }
            }
        });
    }

    /// This warp's row of `C` (`n` values) over `k_begin .. k_end`, written to `out`.
    ///
    /// # Safety
    /// As `matmul_few_cols`, with `k_begin <= k_end <= k`; with `VEC`, `k % 4 == 0`,
    /// `k_begin % 4 == 0` and 16-byte aligned `a` and `b`. Every thread of the block calls it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn cols_product<const VEC: bool>(
        piece_b: PieceB,
        a: *const f32,
        b: *const f32,
        out: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_begin: u32,
        k_end: u32,
    ) {
        let tid = thread::thread_idx_x();
        let lane = warp::lane_id();
        let row = thread::block_idx_x() * FEW_COLS_ROWS_PER_BLOCK + tid / 32;
        // Uniform across the warp: a warp past the last row still joins every barrier but loads
        // and stores nothing.
        let row_inside = row < m;
        let a_row = a.wrapping_add(row as usize * k as usize);
        let mut acc = [0.0f32; 16];
        let mut k0 = k_begin;
        while k0 < k_end {
            let piece = if k_end - k0 < FEW_COLS_PIECE { k_end - k0 } else { FEW_COLS_PIECE };
            // This lane's 8 elements of A first, so they are in flight while B is staged.
            let mut a_vals = [[0.0f32; 4]; 2];
            unroll!(h in [0, 1] {
                let local = 4 * lane + 128 * h as u32;
                let at = a_row.wrapping_add((k0 + local) as usize);
                if row_inside {
                    if VEC {
                        // piece % 4 == 0 on this path: the 4 elements are all inside or all out.
                        if local < piece {
                            // SAFETY: row < m, columns k0 + local .. + 4 < k_end <= k, aligned
                            // (k, k0 and local are multiples of 4).
                            a_vals[h] = unsafe { mem::load_global_nc_v4_f32(at) };
                        }
                    } else {
                        unroll!(u in [0, 1, 2, 3] {
                            if local + (u as u32) < piece {
                                // SAFETY: row < m and column k0 + local + u < k_end <= k.
                                a_vals[h][u] = unsafe { mem::load_global_nc_f32(at.add(u)) };
                            }
                        });
                    }
                }
            });
            // Rows k0 .. k0 + piece of B are `piece * n` consecutive floats.
            let floats = piece * n;
            let src = b.wrapping_add(k0 as usize * n as usize);
            if VEC {
                let mut i = 4 * tid;
                while i < floats {
                    // SAFETY: floats % 4 == 0 (piece % 4 == 0) and k0 * n % 4 == 0, so the 4
                    // floats are inside B and 16-byte aligned; slots i..i+4 < PIECE_FLOATS are
                    // this thread's alone until the barrier.
                    unsafe { piece_b.store4(i as usize, mem::load_global_nc_v4_f32(src.add(i as usize))) };
                    i += 4 * FEW_COLS_THREADS;
                }
            } else {
                let mut i = tid;
                while i < floats {
                    // SAFETY: i < piece * n: inside B and inside the shared piece; this
                    // thread's slot alone until the barrier.
                    unsafe { piece_b.store(i as usize, mem::load_global_nc_f32(src.add(i as usize))) };
                    i += FEW_COLS_THREADS;
                }
            }
            // The piece of B is complete before any lane reads another thread's slots.
            thread::sync_threads();
            if row_inside {
                unroll!(h in [0, 1] {
                    unroll!(u in [0, 1, 2, 3] {
                        let local = 4 * lane + 128 * h as u32 + u as u32;
                        // Slots past the piece hold stale values: skip them rather than
                        // multiply by a zero (a stale NaN would poison the sum).
                        if local < piece {
                            let base = (local * n) as usize;
                            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                                if (j as u32) < n {
                                    // SAFETY: local < piece and j < n: slot local * n + j of
                                    // the piece, written before the barrier.
                                    let y = unsafe { piece_b.load(base + j) };
                                    acc[j] = fma(a_vals[h][u], y, acc[j]);
                                }
                            });
                        }
                    });
                });
            }
            // Every lane is done with this piece before the next one overwrites it.
            thread::sync_threads();
            k0 += piece;
        }
        if row_inside {
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if (j as u32) < n {
                    // SAFETY: the whole warp is here (row and n are uniform across it).
                    let total = unsafe { warp::sum_f32(acc[j]) };
                    if lane == j as u32 {
                        // SAFETY: row < m, column j < n; only lane j of this warp writes it.
                        unsafe { mem::store_global_f32(out.add(row as usize * n as usize + j), total) };
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_contracts_fit_static_shared_memory_and_whole_warps() {
        assert_eq!(FEW_ROWS_BLOCK_COLS, 512);
        assert_eq!(FEW_COLS_ROWS_PER_BLOCK, 8);
        assert_eq!(FEW_COLS_SHARED_BYTES, 256 * 16 * 4);
        assert!(FEW_COLS_THREADS.is_multiple_of(32) && FEW_ROWS_THREADS.is_multiple_of(32));
    }

    #[test]
    fn vector_paths_need_rows_that_start_on_16_bytes() {
        assert!(few_rows_vector_path(4096, 65_536) && !few_rows_vector_path(4096, 5) && !few_rows_vector_path(6, 8));
        assert!(few_cols_vector_path(100_000) && !few_cols_vector_path(4097));
    }
}
