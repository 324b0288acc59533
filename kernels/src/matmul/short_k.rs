//! `matmul_short_k`: `C = A * B` for `k <= 32`, where writing `C` bounds the time. Each output
//! costs at most 32 multiply-adds against the 4 bytes it writes, so the kernel is built around
//! the stores: every thread computes [`cols_per_thread`]`(k)` consecutive elements of a row of
//! `C` (4 up to `k = 16`, 2 above, where its columns of `B` would not fit in registers) and
//! writes them in one `st.global.v4.f32` or `st.global.v2.f32`, for any `n` and any 4-byte
//! alignment of `C`, and keeps its columns of `B` in registers for all the rows of its block.
//!
//! # Vector stores on rows of any length
//! Where `n` is not a multiple of a thread's columns `w`, the rows of `C` start at different
//! offsets from a `4 w`-byte boundary: row `r` at `(c / 4 + r * n) % w` floats past one
//! ([`misalignment`]), a value that repeats every [`row_period`]`(n, w)` rows (for `w = 4`: 4
//! for odd `n`, 2 for `n % 4 == 2`, else 1). So each block takes rows of one residue: block `y`
//! of `rows` rows computes rows `(y / p * rows + i) * p + y % p` ([`block_row`]), all of which
//! are aligned alike, and shifts its columns so that each thread's start on a boundary
//! ([`group_start`]): the first group of a row's first tile begins up to `w - 1` columns before
//! column 0. A group wholly inside the row is one vector store; one that crosses the row's start
//! or end (at most two per row) stores its elements inside the row one at a time. Stored by
//! 4-byte lanes (each warp store 128 bytes, across two lines where `n` is odd) the kernel wrote
//! `C` at about half the speed of `sgemm`'s vector stores (H200, 16384x8x16384: 0.517 ms against
//! 0.270).
//!
//! # Parameters
//! Row-major `A[m x k]`, `B[k x n]`, `C[m x n]` (`C = A * B`), `1 <= k <=` [`MAX_K`], `m, n >= 1`;
//! `c` 4-byte aligned.
//!
//! # Thread mapping
//! A block of [`THREADS`] threads computes [`block_rows`] rows of one residue by `w *
//! column_groups(n, w)` columns ([`column_groups`]: up to 512 or 256, fewer for a narrow `C`,
//! whose block then takes more rows at once): thread `t` owns columns `group_start(x, t %
//! groups, groups, lead, w) + {0, .., w - 1}` and loads their `k` elements of `B` into registers
//! once, and computes [`rows_per_thread`] rows of them, row lane `t / groups` of the block's.
//! The block stages its rows of `A` ([`a_stride`]`(k)` floats each, [`a_slot`]) in shared
//! memory, then for each row computes its outputs in `f32`, `k` ascending (`fma`, from `0.0`),
//! reading the row of `A` as broadcast 16-byte loads, and stores them. Grid [`grid`]; the kernel
//! derives the same counts from `m`, `k` and `n`. The products run over `k` rounded up to 1, 2,
//! 4, 8, 16, 20, 24, 28 or 32, past `k` on zeros in both operands (`0 * 0`: no `0 * inf` from
//! padding, and the bits of stopping at `k`), and stores outside `C` are skipped.
//!
//! # Safety
//! `a`, `b` point to device allocations of `m*k`, `k*n` elements, `c` to `m*n` `f32`, 4-byte
//! aligned; `c` does not overlap `a` or `b`; `k <= MAX_K`; the block is `THREADS x 1 x 1` and
//! the grid [`grid`]`(m, k, n)`.

/// PTX symbols of the kernels on `f32`, BF16 and F16 operands (`OperandType::index` order).
pub const KERNELS: [&str; 3] = ["matmul_short_k", "matmul_short_k_bf16", "matmul_short_k_f16"];
/// The longest `k` the kernels take: a thread's columns of `B` stay in registers
/// (`cols_per_thread(k) * k` floats, rounded up).
pub const MAX_K: u32 = 32;
/// The longest `k` with four columns a thread (16-byte stores); above it, two (8-byte stores).
pub const FOUR_COLUMNS_MAX_K: u32 = 16;
/// Threads per block.
pub const THREADS: u32 = 128;
/// Most rows of `C` per thread.
pub const MAX_ROWS_PER_THREAD: u32 = 16;
/// Most rows of `C` per block: the rows of `A` it stages (`MAX_BLOCK_ROWS x a_stride(k)` floats).
pub const MAX_BLOCK_ROWS: u32 = 256;
/// Floats of the shared tile of `A`: [`MAX_BLOCK_ROWS`] rows of [`MAX_K`].
pub const A_TILE_FLOATS: u32 = MAX_BLOCK_ROWS * MAX_K;
/// Blocks the grid reaches for before a thread takes fewer rows ([`rows_per_thread`]): two on
/// each of an H100's or H200's 132 SMs, under one wave of the four an SM holds (its registers
/// bound it). A block's time is mostly the latency of its loads of `A` and `B`, not its rows, so
/// fewer waves of longer blocks finish sooner: at 1024 (two waves' worth), 7220 x 8 x 74 took
/// 1806 blocks of one row a thread, 3.4 waves, 12.6 us on the H200 against cuBLASLt's 5.4.
pub const TARGET_BLOCKS: u32 = 256;

/// Consecutive columns of `C` per thread for inner dimension `k`: 4 (one 16-byte store a row)
/// up to [`FOUR_COLUMNS_MAX_K`], else 2 (8 bytes), so that `B`'s columns fit in registers.
///
/// ```
/// use kernels::matmul::short_k::cols_per_thread;
/// assert_eq!((cols_per_thread(1), cols_per_thread(16), cols_per_thread(17), cols_per_thread(32)), (4, 4, 2, 2));
/// ```
pub const fn cols_per_thread(k: u32) -> u32 {
    if k <= FOUR_COLUMNS_MAX_K { 4 } else { 2 }
}

/// Floats per staged row of `A`: 16 up to [`FOUR_COLUMNS_MAX_K`], else 32.
pub const fn a_stride(k: u32) -> u32 {
    if k <= FOUR_COLUMNS_MAX_K { FOUR_COLUMNS_MAX_K } else { MAX_K }
}

/// Rows after which the rows of `C` (`n` floats each) return to the same offset from a
/// `4 w`-byte boundary (`w` 4 or 2): `w / gcd(n, w)`.
///
/// ```
/// use kernels::matmul::short_k::row_period;
/// assert_eq!((row_period(8, 4), row_period(6, 4), row_period(7, 4)), (1, 2, 4));
/// assert_eq!((row_period(6, 2), row_period(7, 2)), (1, 2));
/// ```
pub const fn row_period(n: u32, w: u32) -> u32 {
    match n % w {
        0 => 1,
        2 => 2,
        _ => w,
    }
}

/// Floats from the last `4 w`-byte boundary to the start of row `r` of `C` (`n` floats a row),
/// whose element 0 lies `c_offset` floats past a 16-byte one.
///
/// ```
/// use kernels::matmul::short_k::misalignment;
/// assert_eq!((misalignment(0, 0, 7, 4), misalignment(0, 1, 7, 4), misalignment(0, 2, 7, 4)), (0, 3, 2));
/// assert_eq!((misalignment(1, 1, 8, 4), misalignment(0, 1, 7, 2)), (1, 1));
/// ```
pub const fn misalignment(c_offset: u32, r: u32, n: u32, w: u32) -> u32 {
    (c_offset % w + (r % w) * (n % w)) % w
}

/// Threads across a block's columns (`w` each): the power of two that covers `n` (plus the
/// shift of up to `w - 1` columns), at most [`THREADS`]; the block's other threads take further
/// rows ([`THREADS`] / `column_groups(n, w)` rows at once), so that a narrow `C` keeps its
/// threads busy.
///
/// ```
/// use kernels::matmul::short_k::column_groups;
/// assert_eq!((column_groups(1, 4), column_groups(28, 4), column_groups(29, 4), column_groups(5000, 4)), (1, 8, 8, 128));
/// assert_eq!((column_groups(28, 2), column_groups(433, 2)), (16, 128));
/// ```
pub const fn column_groups(n: u32, w: u32) -> u32 {
    let groups = n.saturating_add(w - 1).div_ceil(w).next_power_of_two();
    if groups < THREADS { groups } else { THREADS }
}

/// The row of `C` of block row `y`'s `i`-th row, for blocks of `rows` rows of one residue
/// modulo the period `p`.
///
/// ```
/// use kernels::matmul::short_k::block_row;
/// // Odd n, 16 rows a block: blocks 0..4 take rows 0, 1, 2, 3 and every fourth after them;
/// // block 4 goes on.
/// assert_eq!((block_row(0, 1, 4, 16), block_row(1, 1, 4, 16), block_row(4, 0, 4, 16)), (4, 5, 64));
/// assert_eq!(block_row(3, 2, 1, 16), 3 * 16 + 2);
/// ```
pub const fn block_row(y: u32, i: u32, p: u32, rows: u32) -> u32 {
    ((y / p) * rows + i) * p + y % p
}

/// The first column of column group `g`'s `w` in column tile `x` (of `groups` groups), on rows
/// `misalignment` floats past a `4 w`-byte boundary: the tiles are shifted left by the row's
/// lead (up to `w - 1` columns, so that the first group starts on a boundary before column 0).
///
/// ```
/// use kernels::matmul::short_k::group_start;
/// assert_eq!((group_start(0, 0, 128, 0, 4), group_start(0, 1, 128, 0, 4)), (0, 4));
/// // A row 1 float past a boundary: its column 3 is the first on one.
/// assert_eq!((group_start(0, 0, 128, 1, 4), group_start(0, 1, 128, 1, 4), group_start(1, 0, 128, 1, 4)), (-1, 3, 511));
/// assert_eq!(group_start(1, 1, 128, 1, 2), 257);
/// ```
pub const fn group_start(x: u32, g: u32, groups: u32, misalignment: u32, w: u32) -> i64 {
    (x as i64 * groups as i64 + g as i64) * w as i64 - misalignment as i64
}

/// The grid over `C[m x n]` for `rows` rows a thread of `w` columns: `(x, y)` blocks, `x`
/// column tiles of `column_groups(n, w)` groups (enough for the largest shift, `w - 1` columns,
/// whatever the alignment of `C`), `y` block rows of `row_period(n, w)` residues.
const fn grid_of(m: u32, n: u32, w: u32, rows: u32) -> (u32, u32) {
    let (p, groups) = (row_period(n, w), column_groups(n, w));
    let block_rows = THREADS / groups * rows;
    (n.saturating_add(w - 1).div_ceil(groups * w), p * m.div_ceil(p).div_ceil(block_rows))
}

/// Rows of `C` each thread computes: the most (up to [`MAX_ROWS_PER_THREAD`], and
/// [`MAX_BLOCK_ROWS`] a block) that still give [`TARGET_BLOCKS`] blocks, else one. Its columns
/// of `B` are loaded once for all of them.
///
/// ```
/// use kernels::matmul::short_k::rows_per_thread;
/// assert_eq!(rows_per_thread(5006, 6, 6049), 16);
/// assert_eq!(rows_per_thread(2840, 1, 2119), 16);
/// // 16 row lanes of 8 groups: 2 rows a thread give 307 blocks, 4 would give 154.
/// assert_eq!(rows_per_thread(9807, 3, 28), 2);
/// assert_eq!(rows_per_thread(7220, 8, 74), 4);
/// assert_eq!(rows_per_thread(3, 8, 74), 1);
/// ```
pub const fn rows_per_thread(m: u32, k: u32, n: u32) -> u32 {
    let w = cols_per_thread(k);
    let lanes = THREADS / column_groups(n, w);
    let mut rows = MAX_ROWS_PER_THREAD;
    while rows > 1 {
        if lanes * rows <= MAX_BLOCK_ROWS {
            let (gx, gy) = grid_of(m, n, w, rows);
            if gx as u64 * gy as u64 >= TARGET_BLOCKS as u64 {
                return rows;
            }
        }
        rows /= 2;
    }
    1
}

/// Rows of `C` per block: [`THREADS`] / `column_groups(n, w)` row lanes of
/// `rows_per_thread(m, k, n)` rows each.
pub const fn block_rows(m: u32, k: u32, n: u32) -> u32 {
    THREADS / column_groups(n, cols_per_thread(k)) * rows_per_thread(m, k, n)
}

/// The grid over `C[m x n]` for inner dimension `k`: `(x, y)` blocks, `x` column tiles (enough
/// for the largest shift whatever the alignment of `C`), `y` block rows of `row_period` residues.
///
/// ```
/// use kernels::matmul::short_k::grid;
/// assert_eq!(grid(5006, 6, 6049), (12, 4 * 79));
/// // 8 groups of 4 columns, 16 row lanes of two rows each.
/// assert_eq!(grid(9807, 3, 28), (1, 307));
/// assert_eq!(grid(7393, 1, 1103), (3, 4 * 116));
/// // k = 28: two columns a thread, 256 a block; odd n, two residues.
/// assert_eq!(grid(8841, 28, 6665), (27, 2 * 277));
/// ```
pub const fn grid(m: u32, k: u32, n: u32) -> (u32, u32) {
    grid_of(m, n, cols_per_thread(k), rows_per_thread(m, k, n))
}

/// The element of the block's rows of `A` in slot `slot` of the shared tile: `(row of the
/// block, column of k)`, row-major with `stride` floats a row. Thread `t` stages slots `t`,
/// `t + THREADS`, ...
///
/// ```
/// use kernels::matmul::short_k::a_slot;
/// assert_eq!(a_slot(0, 16), (0, 0));
/// assert_eq!(a_slot(16 + 3, 16), (1, 3));
/// assert_eq!(a_slot(32 + 3, 32), (1, 3));
/// ```
pub const fn a_slot(slot: u32, stride: u32) -> (u32, u32) {
    (slot / stride, slot % stride)
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{
        A_TILE_FLOATS, MAX_K, MAX_ROWS_PER_THREAD, THREADS, a_slot, block_row, column_groups, group_start,
        misalignment, row_period, rows_per_thread,
    };
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, mem, thread};
    use crate::matmul::element::{Bf16, Element, F16};
    use crate::{gpu_kernel, shared_array};

    /// The staged rows of `A`: one declaration (`SHORT_K_A`), which the kernels of all three
    /// operand types use.
    #[inline(always)]
    fn a_tile() -> SharedArray<f32, { A_TILE_FLOATS as usize }> {
        shared_array!(SHORT_K_A: [f32; A_TILE_FLOATS as usize])
    }

    /// Declares the kernel for each operand type: `$name(a, b, c, m, k, n)` on `*const $t`.
    macro_rules! short_k_kernels {
        ($($name:ident: $t:ty;)*) => {
            gpu_kernel! {
                $(
                    #[doc = concat!("`C = A * B` for `k <= 32` on `", stringify!($t), "` operands; see the")]
                    /// [module documentation](super).
                    ///
                    /// # Safety
                    /// `a`, `b` hold `m*k`, `k*n` elements and `c` `m*n` `f32` on the device, 4-byte
                    /// aligned, `c` overlaps neither input, `k <= MAX_K`, the block is `THREADS` x 1 x 1
                    /// and the grid `grid(m, k, n)`.
                    pub unsafe fn $name(a: *const $t, b: *const $t, c: *mut f32, m: u32, k: u32, n: u32) {
                        let t = a_tile();
                        // SAFETY (all arms): forwarded kernel contract; each body's padded depth
                        // is at least k and its columns and stride those of cols_per_thread(k)
                        // and a_stride(k).
                        match k {
                            1 => unsafe { short_k_body::<$t, 4, 1, 16>(t, a, b, c, m, k, n) },
                            2 => unsafe { short_k_body::<$t, 4, 2, 16>(t, a, b, c, m, k, n) },
                            3 | 4 => unsafe { short_k_body::<$t, 4, 4, 16>(t, a, b, c, m, k, n) },
                            5..=8 => unsafe { short_k_body::<$t, 4, 8, 16>(t, a, b, c, m, k, n) },
                            9..=16 => unsafe { short_k_body::<$t, 4, 16, 16>(t, a, b, c, m, k, n) },
                            17..=20 => unsafe { short_k_body::<$t, 2, 20, 32>(t, a, b, c, m, k, n) },
                            21..=24 => unsafe { short_k_body::<$t, 2, 24, 32>(t, a, b, c, m, k, n) },
                            25..=28 => unsafe { short_k_body::<$t, 2, 28, 32>(t, a, b, c, m, k, n) },
                            _ => unsafe { short_k_body::<$t, 2, 32, 32>(t, a, b, c, m, k, n) },
                        }
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

    /// The kernels' body on operands of type `T` for `k <= KP`, `W` columns a thread and rows of
    /// `A` staged `KS` floats apart: the products run over `KP` columns of `k`, those past `k`
    /// zero in both the staged `A` and the registers of `B`. Each adds `0 * 0` to a sum that
    /// started at `+0.0` and so is never `-0.0`: the same bits as stopping at `k`, without a
    /// guard on every multiply-add (LLVM made each one a select beside the `fma`, and at
    /// 16384x8x16384 the kernel issued 64 of both a row for 8 useful).
    ///
    /// # Safety
    /// As the kernels', and `k <= KP <= KS <= MAX_K`, `W == cols_per_thread(k)`, `KS ==
    /// a_stride(k)`.
    #[inline(always)]
    unsafe fn short_k_body<T: Element, const W: usize, const KP: usize, const KS: usize>(
        tile: SharedArray<f32, { A_TILE_FLOATS as usize }>,
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
    ) {
        let w = W as u32;
        let t = thread::thread_idx_x();
        let y = thread::block_idx_y();
        let (p, groups, rows) = (row_period(n, w), column_groups(n, w), rows_per_thread(m, k, n));
        let lanes = THREADS / groups;
        let block_rows = lanes * rows;
        // The last block rows of a residue with fewer rows than the others hold none: the whole
        // block leaves before its barrier.
        if block_row(y, 0, p, block_rows) >= m {
            return;
        }
        // Every row of the block lies as far past a boundary as its first.
        let lead = misalignment((c as usize / 4) as u32, block_row(y, 0, p, block_rows), n, w);
        let (group, lane) = (t % groups, t / groups);
        let first = group_start(thread::block_idx_x(), group, groups, lead, w);
        let mut slot = t;
        while slot < block_rows * KS as u32 {
            let (i, a_k) = a_slot(slot, KS as u32);
            let row = block_row(y, i, p, block_rows);
            let staged = if row < m && a_k < k {
                // SAFETY: row < m and a_k < k: an element of A, which nothing writes (contract).
                unsafe { T::load_nc(a.add(row as usize * k as usize + a_k as usize)) }
            } else {
                0.0
            };
            // SAFETY: slot < block_rows * KS <= MAX_BLOCK_ROWS * MAX_K = A_TILE_FLOATS, the
            // tile's length; read after the barrier.
            unsafe { tile.store(slot as usize, staged) };
            slot += THREADS;
        }
        // This thread's columns of B, for every row: held in registers, indexed by constants,
        // widened after the barrier so that all of its loads are in flight together.
        let mut b_raw = [[0u32; MAX_K as usize]; 4];
        unroll!(j in [0, 1, 2, 3] {
            let col = first + j as i64;
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                if j < W && kk < KP && col >= 0 && col < n as i64 && (kk as u32) < k {
                    // SAFETY: kk < k and 0 <= col < n: an element of B, which nothing writes.
                    b_raw[j][kk] = unsafe { T::load_raw_nc(b.add(kk * n as usize + col as usize)) };
                }
            });
        });
        thread::sync_threads();
        // Widened element by element with constant indices: `map` over these arrays left them
        // in local memory for BF16 and F16 (1 KiB and 1.5 KiB stack frames).
        let mut b_cols = [[0.0f32; MAX_K as usize]; 4];
        unroll!(j in [0, 1, 2, 3] {
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                if j < W && kk < KP {
                    b_cols[j][kk] = T::widen_raw(b_raw[j][kk]);
                }
            });
        });
        let whole = first >= 0 && first + W as i64 <= n as i64;
        unroll!(r in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            // The block's row lanes take its rows in turn: row `r * lanes + lane` of the block.
            let in_block = r as u32 * lanes + lane;
            let row = block_row(y, in_block, p, block_rows);
            if (r as u32) < rows && row < m {
                let mut a_row = [0.0f32; MAX_K as usize];
                unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if 4 * q < KP {
                        // SAFETY: in_block < block_rows, so in_block * KS + 4 q + 4 <=
                        // A_TILE_FLOATS, a multiple of 4 (KS is 16 or 32); written before the
                        // barrier, not again.
                        let [a0, a1, a2, a3] = unsafe { tile.load4(in_block as usize * KS + 4 * q) };
                        (a_row[4 * q], a_row[4 * q + 1], a_row[4 * q + 2], a_row[4 * q + 3]) = (a0, a1, a2, a3);
                    }
                });
                let mut out = [0.0f32; 4];
                unroll!(j in [0, 1, 2, 3] {
                    if j < W {
                        let mut acc = 0.0f32;
                        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                       16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                            if kk < KP {
                                acc = fma(a_row[kk], b_cols[j][kk], acc);
                            }
                        });
                        out[j] = acc;
                    }
                });
                let row_start = row as usize * n as usize;
                if whole {
                    // SAFETY (both arms): 0 <= first, first + W <= n: inside row `row` of C;
                    // `first` is `lead` short of a 4W-byte boundary and the row starts `lead`
                    // past one, so the address is aligned to the store; this thread is the
                    // elements' only writer.
                    if W == 4 {
                        unsafe { mem::store_global_v4_f32(c.add(row_start + first as usize), out) };
                    } else {
                        unsafe { mem::store_global_v2_f32(c.add(row_start + first as usize), [out[0], out[1]]) };
                    }
                } else {
                    unroll!(j in [0, 1, 2, 3] {
                        let col = first + j as i64;
                        if j < W && col >= 0 && col < n as i64 {
                            // SAFETY: row < m and 0 <= col < n; this thread is the element's only writer.
                            unsafe { mem::store_global_f32(c.add(row_start + col as usize), out[j]) };
                        }
                    });
                }
            }
        });
    }

    const _: () = assert!(MAX_K == 32 && MAX_ROWS_PER_THREAD == 16);
}

#[cfg(test)]
mod tests {
    use super::*;

    // The replay of the kernel's stores over its grid (every element once, vector stores
    // aligned) is a property test in the host crate (`hopper_kernels::matmul::short_k`).

    #[test]
    fn short_k_takes_fewer_rows_a_thread_only_below_its_target_grid() {
        for (m, n) in [(5006, 6049), (2840, 2119), (9807, 28), (16195, 846), (100, 100), (1 << 20, 17)] {
            for k in [4, 28] {
                let (gx, gy) = grid(m, k, n);
                let w = cols_per_thread(k);
                let rows = rows_per_thread(m, k, n);
                if rows < MAX_ROWS_PER_THREAD && THREADS / column_groups(n, w) * rows * 2 <= MAX_BLOCK_ROWS {
                    let (gx2, gy2) = grid_of(m, n, w, rows * 2);
                    assert!(gx2 * gy2 < TARGET_BLOCKS, "{m} x {n}: {rows} rows a thread");
                }
                assert!(rows == 1 || gx * gy >= TARGET_BLOCKS, "{m} x {n}: {gx} x {gy} blocks");
            }
        }
    }
}
