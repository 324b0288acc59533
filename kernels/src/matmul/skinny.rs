// Over 600 lines with its documentation: about 510 lines of code; the rest are doc comments (launch
// contracts, the algorithm) and 40 lines of unit tests.
//! `matmul_few_rows` and `matmul_few_cols`: memory-bound products where one side of `C` is
//! narrow (GEMV and its neighbours). With `m` or `n` at most 16 a product does at most 32 FLOPs
//! per float of the large operand, far under the ~22 FLOP/byte that keeps the H100's FP32 units
//! busy, so these kernels aim at reading the large operand once at close to the copy bandwidth
//! rather than at reusing it through shared-memory tiles.
//!
//! # Parameters (both kernels)
//! Row-major `A[m x k]`, `B[k x n]`, output `c` (`f32`), any `m, k, n >= 1` within the kernel's
//! limit ([`FEW_ROWS_MAX_M`], [`FEW_COLS_MAX_N`]). `A` and `B` are `f32`, or BF16 or F16 in the
//! kernels named `matmul_few_{rows,cols}_{bf16,f16}_<width>` ([`few_rows_kernel_of`],
//! [`few_cols_kernel_of`]), widened exactly to `f32` as they are loaded; their vector loads take
//! four elements (8 bytes) where the `f32` kernels' take 16 bytes, and need 8-byte alignment. The grid's z dimension splits the inner dimension
//! as in `sgemm`: block `(.., .., z)` multiplies columns
//! [`split_k_range`](super::split_k::split_k_range)`(z, k_chunk, k)` and writes slice `z` of `c`
//! (`gridDim.z` slices of `m x n`; with one split, `C` itself). `k_chunk` is a positive multiple
//! of 4.
//!
//! # `matmul_few_rows_{1,2,4,8,16}` (`m <=` the suffix): streams `B`
//! Block [`FEW_ROWS_THREADS`] threads, grid `(ceil(n / FEW_ROWS_BLOCK_COLS), 1, splits)`. Thread
//! `t` of block `bx` owns columns `4 (bx * FEW_ROWS_THREADS + t) ..` of every row of `C`, so a
//! warp reads 512 contiguous bytes of a row of `B`, and keeps `m x 4` accumulators. No reduction
//! across threads: each thread's columns are its own. One kernel per accumulator height (the
//! suffix): registers grow with it, and fewer registers keep more blocks, and so more loads, in
//! flight on each SM. Two ways to feed `A`:
//! - `_1`, `_2`, `_4`: per step each thread loads four rows of `B` (four 16-byte loads in
//!   flight), then for each of the `m` rows of `A` the four matching elements (one 16-byte load
//!   at an address uniform across the warp, served from L1), and does `m x 4 x 4` FMAs. No shared
//!   memory, no barrier. On 16-bit rows that are not whole vectors (`n` or `k` not a multiple of
//!   4: four predicated 2-byte loads a row) the next step's four rows are in flight while a step
//!   multiplies: loaded and used in one step, ptxas placed each row's FMAs between the step's
//!   loads (at 32 registers), so a step waited on about three round trips, and the BF16 kernel
//!   took 1.7x the `f32` one's time on the same grid (ncu, 1x302x75: 7.5 against 4.5 us). With
//!   the next rows in flight, 56 registers (H200, BF16, `host bench --sweep-shapes`, us against
//!   the previous build in the same session: 1x302x75 6.8 to 5.2, 1x492x29 6.8 to 5.2, 1x673x88
//!   6.9 to 5.2, 1x2565x139 8.4 to 6.6, 3x151x11765 10.8 to 9.8, 1x3978x5845 24.6 to 22.6;
//!   1x4344x10925 36.9 and 1x28672x8192 113 unchanged; FP16 the same).
//! - `_8`, `_16` (from [`FEW_ROWS_PANEL_MIN_M`] rows): the block first copies a panel of `A`
//!   (rows `0..m`, up to `FEW_ROWS_PANEL / MR` columns of its split, `MR` the suffix) into static
//!   shared memory ([`FEW_ROWS_PANEL`] floats, 32 KiB), between barriers; then each thread
//!   multiplies four rows of `B` while the next four are in flight (eight 16-byte loads), reading
//!   `A` back as 16-byte broadcasts (`ld.shared.v4`, one address per warp). Loaded from global
//!   memory, the 16 rows' elements of `A` were hoisted by ptxas into 64 more live registers (168
//!   for `_16` with four rows of `B` in flight); from shared memory `_16` takes 141 registers with
//!   eight, 3 blocks per SM, and `_8` 112, 4 blocks per SM ([`few_rows_blocks_per_sm`]). A split
//!   longer than one panel takes several, each behind a barrier. Threads past the last column
//!   take part in the copies and barriers only.
//!
//! # `matmul_gemv` (`m = 1`, `f32`): streams `B`, `k` split inside the block
//! Block [`GEMV_THREADS`] threads, grid `(ceil(n / GEMV_BLOCK_COLS), 1, splits)`; the arguments
//! of `matmul_few_rows`. A block owns [`GEMV_BLOCK_COLS`] columns of `C`: groups of
//! [`GEMV_LANES_PER_ROW`] lanes read a row of them (128 bytes of `f32`, a whole line; a warp
//! four rows), and the block's [`GEMV_ROW_GROUPS`] groups take every `GEMV_ROW_GROUPS`-th row
//! of its split of `k`, [`GEMV_LOADS`] rows in flight per thread (each with its element of `A`,
//! a load the four row groups of a warp serve from L1). Where rows of `B` are not 16-byte
//! aligned (`n % 4 != 0`) a thread takes every eighth column instead of four adjacent ones, so
//! that each 4-byte load has its group's lanes on 32 contiguous bytes, and four rows in flight. At the end two rounds of shuffles add a
//! warp's four groups, and the first eight threads add the warps' sums from shared memory in
//! warp order and store them: the block needs no split of `k` across blocks to keep the memory
//! busy, so that `n` of 4,096 and up (128 blocks or more) runs in one launch, where
//! `matmul_few_rows_1` took 64 splits and a reduction kernel (H200, CUDA C model of the kernel
//! against cuBLAS SGEMM in one process, ms: 1 x 4096 x 4096 0.023 against 0.026, 1 x 4096 x
//! 14336 0.061 against 0.064, 1 x 8192 x 28672 0.221 against 0.232; of the shapes tried, 32
//! columns and 512 threads with 8 loads a thread were within 4% of the best everywhere).
//!
//! # `matmul_few_cols_{1,2,4,8,16}` (`n <=` the suffix): streams `A`
//! Block [`FEW_COLS_THREADS`] threads (8 warps), grid `(ceil(m / FEW_COLS_ROWS_PER_BLOCK), 1,
//! splits)`. Warp `w` of block `bx` owns row `bx * 8 + w` of `C`. Each step a lane issues eight
//! 16-byte loads of the row of `A` (elements `4 lane + 128 h ..`, `h < 8`: a warp step covers
//! [`FEW_COLS_STEP`] elements), then multiplies each element with its row of `B` (`n` values,
//! served from L1: `B` is at most 16 columns; 16-byte loads when `n % 4 == 0`, and for `n = 1`
//! four rows per 16-byte load) into `n` accumulators, one kernel per accumulator count (the
//! suffix) so that a GEMV spends no instructions on columns it does not have. At the end a butterfly of warp shuffles adds the 32 lanes' accumulators in a
//! fixed order and lane `j` writes column `j`. Warps never wait for each other.
//!
//! # `matmul_few_cols_shared_{8,16,32}` (`n <=` the suffix, above 16 rows): `B` shared by a block
//! With `n >=` [`FEW_COLS_SHARED_MIN_N`] and `m > 16` ([`few_cols_kernel_for`]) every row of the
//! kernels above re-reads its slice of `B` from L1, `n` values for each element of `A`. Here a
//! block of [`few_cols_shared_threads`] threads (512 for `_8`, 384 for `_16` and `_32`: as many
//! warps as the SM holds at the kernel's registers) takes [`few_cols_shared_rows_per_block`]
//! rows, four a warp (two for `_32`: 64 accumulators a lane either way), and walks its split of
//! `k` in steps of [`FEW_COLS_SHARED_STEP`]: the block copies the step's 128 rows of `B` into
//! shared memory (two buffers, rows padded to `NC + 4` floats, one barrier a step), and lane `l`
//! multiplies elements `l + 32 u` (`u < 4`) of each of its warp's rows of `A` (128-byte loads
//! across the warp) with those rows of `B` (16-byte shared loads, each feeding 16 FMAs, 8 in
//! `_32`), into `rows x NC` accumulators. On BF16 and F16 up to 16 columns with even `k` (rows
//! of `A` 4-byte aligned) a step is 256 elements ([`few_cols_shared_step`]): lane `l` loads the
//! pairs from `2 l + 64 u` in 4-byte words, as many bytes in flight as an `f32` step (where a
//! split of `k` is longer than 128: shorter ones are one step either way). The next step's loads
//! of `A` and `B` are in flight while a step multiplies. At the end the lanes' partial sums meet in a reduce-scatter of
//! five rounds of shuffles in a fixed order (62 shuffles for 64 accumulators, where a butterfly of
//! each takes 320), and lane `l` writes accumulators `2l` and `2l + 1`. H200, ms against cuBLAS
//! FP32 (same process): 16384 x 16384 x 16 0.487 against 0.516 (the warp-per-row kernel took
//! 4.34, `sgemm` 1.60), x 8 0.332 against 0.516, 100000 x 1024 x 9 0.185 against 0.289, 5640 x
//! 571 x 8 0.010 against 0.025; `_32`, whose reads of `B` are twice as many per FMA, 16384 x
//! 16384 x 32 1.149 against 0.513 (`sgemm_warp_tiled` 1.479).
//!
//! # `matmul_few_cols_short_k_{8,32}` (`n <=` the suffix, `k <=` 32): a thread a row
//! For rows of `A` of at most [`FEW_COLS_SHORT_K_MAX_K`] elements a warp per row leaves most
//! lanes idle. A block of [`FEW_COLS_SHORT_K_THREADS`] threads takes as many rows: it copies their
//! stretch of `A` (contiguous in memory) into shared memory with consecutive threads on
//! consecutive elements, every load of a thread issued before its first store, and `B`'s rows
//! (zero past column `n`, to the suffix's width); after a barrier thread `r` multiplies row `r`
//! in `k` order into the suffix's accumulators, with `B`'s row as broadcast 16-byte shared loads,
//! stages its `n` sums in the same tile (rows of [`FEW_COLS_SHORT_K_PITCH`] floats, odd: no bank
//! conflicts) and the block stores its rows of `C`, contiguous in memory, one float a thread,
//! consecutive threads on consecutive floats.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n` operand elements and
//! `gridDim.z*m*n` `f32`; `c` overlaps neither input; the block has the kernel's thread count (every thread of a
//! `matmul_few_rows_{8,16}` block reaches its barriers); `m` (or `n`) is within the
//! kernel's limit; `k_chunk` is a positive multiple of 4.

use super::element::OperandType;

/// PTX symbols of the `matmul_few_rows` kernels (`f32` operands), by the most rows of `C` each takes.
pub const FEW_ROWS_KERNELS: [(u32, &str); 5] = [
    (1, "matmul_few_rows_1"),
    (2, "matmul_few_rows_2"),
    (4, "matmul_few_rows_4"),
    (8, "matmul_few_rows_8"),
    (16, "matmul_few_rows_16"),
];

/// [`FEW_ROWS_KERNELS`] on BF16 operands.
pub const FEW_ROWS_KERNELS_BF16: [(u32, &str); 5] = [
    (1, "matmul_few_rows_bf16_1"),
    (2, "matmul_few_rows_bf16_2"),
    (4, "matmul_few_rows_bf16_4"),
    (8, "matmul_few_rows_bf16_8"),
    (16, "matmul_few_rows_bf16_16"),
];

/// [`FEW_ROWS_KERNELS`] on F16 operands.
pub const FEW_ROWS_KERNELS_F16: [(u32, &str); 5] = [
    (1, "matmul_few_rows_f16_1"),
    (2, "matmul_few_rows_f16_2"),
    (4, "matmul_few_rows_f16_4"),
    (8, "matmul_few_rows_f16_8"),
    (16, "matmul_few_rows_f16_16"),
];

/// The `matmul_few_rows` kernel for `m` rows: the one with the fewest accumulator rows that
/// holds `m`; `None` above [`FEW_ROWS_MAX_M`].
pub const fn few_rows_kernel(m: u32) -> Option<&'static str> {
    narrowest(&FEW_ROWS_KERNELS, m)
}

/// [`few_rows_kernel`] on operands of type `t`.
///
/// ```
/// use kernels::matmul::element::OperandType;
/// use kernels::matmul::skinny::few_rows_kernel_of;
/// assert_eq!(few_rows_kernel_of(OperandType::Bf16, 3), Some("matmul_few_rows_bf16_4"));
/// assert_eq!(few_rows_kernel_of(OperandType::F32, 3), Some("matmul_few_rows_4"));
/// assert_eq!(few_rows_kernel_of(OperandType::F16, 17), None);
/// ```
pub const fn few_rows_kernel_of(t: OperandType, m: u32) -> Option<&'static str> {
    match t {
        OperandType::F32 => narrowest(&FEW_ROWS_KERNELS, m),
        OperandType::Bf16 => narrowest(&FEW_ROWS_KERNELS_BF16, m),
        OperandType::F16 => narrowest(&FEW_ROWS_KERNELS_F16, m),
    }
}

/// Whether the `matmul_few_rows` kernel for `m` rows stages `A` through shared memory (its
/// suffix is at least [`FEW_ROWS_PANEL_MIN_M`]: `m > 4`); `false` above [`FEW_ROWS_MAX_M`].
pub const fn few_rows_uses_panel(m: u32) -> bool {
    let mut i = 0;
    while i < FEW_ROWS_KERNELS.len() {
        if m <= FEW_ROWS_KERNELS[i].0 {
            return FEW_ROWS_KERNELS[i].0 >= FEW_ROWS_PANEL_MIN_M;
        }
        i += 1;
    }
    false
}

/// Blocks of the `matmul_few_rows` kernel for `m` rows on operands of type `t` that one SM
/// holds, at [`FEW_ROWS_THREADS`] threads a block: their registers (ptxas, `cargo xtask
/// build-ptx`) bound it: `_1` 40 on `f32` (12 blocks), 56 on BF16 and F16 (9: the next rows of
/// a ragged row's loads in flight; 32 and 16 blocks before), `_2` 40 (12) and 63 (8), `_4` 64 (8)
/// and 78 (6), `_8` at most 112 (4), `_16` at most 168 (3, F16's; 138-142 on `f32` and BF16);
/// `None` above [`FEW_ROWS_MAX_M`]. The planner splits `k` to fill one wave of them where a
/// thread's loads in flight are few: the panel kernels', and the 16-bit ones', whose rows of a
/// thread's columns in flight are 32 bytes (64 on ragged rows, two steps of four) (H200, `matmul_few_rows_bf16_1`, kernel alone: 1 x 3978 x
/// 5845 took 38.9 us with 42 splits, 4 blocks an SM, and 17.3 with 125, 11.4 an SM; 1 x 4344 x
/// 10925 79.4 with 23 splits and 32.5 with 91, 15.2 an SM, but 37.7 with 136, a second wave).
/// The `f32` register-only kernels, whose 64 bytes in flight a thread fill fewer blocks, gained
/// nothing from it (1 x 4096 x 4096 0.025 ms with a wave of 171 splits against 0.023 with 64).
///
/// ```
/// use kernels::matmul::element::OperandType;
/// use kernels::matmul::skinny::few_rows_blocks_per_sm;
/// assert_eq!(few_rows_blocks_per_sm(OperandType::Bf16, 1), Some(9));
/// assert_eq!(few_rows_blocks_per_sm(OperandType::F32, 1), Some(12));
/// assert_eq!(few_rows_blocks_per_sm(OperandType::F16, 17), None);
/// ```
pub const fn few_rows_blocks_per_sm(t: OperandType, m: u32) -> Option<u32> {
    let sixteen_bit = !matches!(t, OperandType::F32);
    match m {
        0..=1 => Some(if sixteen_bit { 9 } else { 12 }),
        2 => Some(if sixteen_bit { 8 } else { 12 }),
        3..=4 => Some(if sixteen_bit { 6 } else { 8 }),
        5..=8 => Some(4),
        9..=FEW_ROWS_MAX_M => Some(3),
        _ => None,
    }
}

/// The first kernel of `table` (widths ascending) whose width holds `width`.
const fn narrowest(table: &[(u32, &'static str)], width: u32) -> Option<&'static str> {
    let mut i = 0;
    while i < table.len() {
        if width <= table[i].0 {
            return Some(table[i].1);
        }
        i += 1;
    }
    None
}
/// PTX symbols of the `matmul_few_cols` kernels (`f32` operands), by the most columns of `C` each takes.
pub const FEW_COLS_KERNELS: [(u32, &str); 5] = [
    (1, "matmul_few_cols_1"),
    (2, "matmul_few_cols_2"),
    (4, "matmul_few_cols_4"),
    (8, "matmul_few_cols_8"),
    (16, "matmul_few_cols_16"),
];

/// [`FEW_COLS_KERNELS`] on BF16 operands.
pub const FEW_COLS_KERNELS_BF16: [(u32, &str); 5] = [
    (1, "matmul_few_cols_bf16_1"),
    (2, "matmul_few_cols_bf16_2"),
    (4, "matmul_few_cols_bf16_4"),
    (8, "matmul_few_cols_bf16_8"),
    (16, "matmul_few_cols_bf16_16"),
];

/// [`FEW_COLS_KERNELS`] on F16 operands.
pub const FEW_COLS_KERNELS_F16: [(u32, &str); 5] = [
    (1, "matmul_few_cols_f16_1"),
    (2, "matmul_few_cols_f16_2"),
    (4, "matmul_few_cols_f16_4"),
    (8, "matmul_few_cols_f16_8"),
    (16, "matmul_few_cols_f16_16"),
];

/// The `matmul_few_cols` kernel for `n` columns: the one with the fewest accumulators that holds
/// `n`; `None` above [`FEW_COLS_MAX_N`].
pub const fn few_cols_kernel(n: u32) -> Option<&'static str> {
    narrowest(&FEW_COLS_KERNELS, n)
}

/// [`few_cols_kernel`] on operands of type `t`.
///
/// ```
/// use kernels::matmul::element::OperandType;
/// use kernels::matmul::skinny::few_cols_kernel_of;
/// assert_eq!(few_cols_kernel_of(OperandType::F16, 5), Some("matmul_few_cols_f16_8"));
/// assert_eq!(few_cols_kernel_of(OperandType::Bf16, 1), Some("matmul_few_cols_bf16_1"));
/// ```
pub const fn few_cols_kernel_of(t: OperandType, n: u32) -> Option<&'static str> {
    match t {
        OperandType::F32 => narrowest(&FEW_COLS_KERNELS, n),
        OperandType::Bf16 => narrowest(&FEW_COLS_KERNELS_BF16, n),
        OperandType::F16 => narrowest(&FEW_COLS_KERNELS_F16, n),
    }
}

/// PTX symbols of the `matmul_few_cols_shared` kernels (`f32` operands), by the most columns of
/// `C` each takes.
pub const FEW_COLS_SHARED_KERNELS: [(u32, &str); 3] =
    [(8, "matmul_few_cols_shared_8"), (16, "matmul_few_cols_shared_16"), (32, "matmul_few_cols_shared_32")];
/// [`FEW_COLS_SHARED_KERNELS`] on BF16 operands.
pub const FEW_COLS_SHARED_KERNELS_BF16: [(u32, &str); 3] = [
    (8, "matmul_few_cols_shared_bf16_8"),
    (16, "matmul_few_cols_shared_bf16_16"),
    (32, "matmul_few_cols_shared_bf16_32"),
];
/// [`FEW_COLS_SHARED_KERNELS`] on F16 operands.
pub const FEW_COLS_SHARED_KERNELS_F16: [(u32, &str); 3] =
    [(8, "matmul_few_cols_shared_f16_8"), (16, "matmul_few_cols_shared_f16_16"), (32, "matmul_few_cols_shared_f16_32")];
/// Largest `n` the `matmul_few_cols_shared` kernels take (the warp-per-row kernels:
/// [`FEW_COLS_MAX_N`]).
pub const FEW_COLS_SHARED_MAX_N: u32 = 32;
/// Largest `n` `few_cols` takes for `m` rows: [`FEW_COLS_SHARED_MAX_N`] where it shares `B`
/// (above [`FEW_ROWS_MAX_M`] rows), else [`FEW_COLS_MAX_N`].
///
/// ```
/// use kernels::matmul::skinny::few_cols_max_n;
/// assert_eq!((few_cols_max_n(16), few_cols_max_n(17)), (16, 32));
/// ```
pub const fn few_cols_max_n(m: u32) -> u32 {
    if m > FEW_ROWS_MAX_M { FEW_COLS_SHARED_MAX_N } else { FEW_COLS_MAX_N }
}

/// Fewest columns for which `few_cols` shares `B` through shared memory
/// ([`few_cols_kernel_for`]). A GEMV (`n = 1`) streams `A` faster a row a warp, its `B` four rows
/// to a 16-byte load from L1; from two columns on, every row re-reading its `B` from L1 slows
/// the warp-per-row kernels more than a block's barriers slow the shared ones. Measured on the
/// H200 (ms, warp per row against shared, `m x k`, `n` = 1, 2, 4): 16384 x 16384 0.241, 0.721,
/// 0.758 against 0.330, 0.331, 0.332; 100000 x 1024 0.094, 0.245, 0.294 against 0.134, 0.134,
/// 0.135; 4096 x 4096 0.022, 0.054, 0.053 against 0.033, 0.033, 0.033.
pub const FEW_COLS_SHARED_MIN_N: u32 = 2;
/// Accumulators a lane of `matmul_few_cols_shared` keeps: rows of its warp times the kernel's
/// columns (4 x 8 or 16, 2 x 32).
pub const FEW_COLS_SHARED_ACCUMULATORS: u32 = 64;
/// Rows of `C` each warp of the `matmul_few_cols_shared` kernel for `n` columns multiplies: 4
/// (`_8`, `_16`), or 2 (`_32`); each `B` value a lane reads from shared memory feeds this many
/// FMAs.
///
/// ```
/// use kernels::matmul::skinny::few_cols_shared_rows_per_warp;
/// assert_eq!((few_cols_shared_rows_per_warp(16), few_cols_shared_rows_per_warp(17)), (4, 2));
/// ```
pub const fn few_cols_shared_rows_per_warp(n: u32) -> u32 {
    if n <= 16 { 4 } else { 2 }
}
/// Threads per block of the `matmul_few_cols_shared` kernel for `n` columns (8 or 16 wide): as
/// many warps as an SM keeps at the kernel's registers, in one block, so that every warp of the
/// SM shares each step's `B`. `_8` takes at most 128 registers (its `.maxntid` of 512 caps it),
/// `_16` and `_32` at most 170 (`.maxntid` 384: 12 warps of 5,376 registers fill the SM's 65,536;
/// two blocks of 256 threads would need 128, and `_16` spills under it).
///
/// ```
/// use kernels::matmul::skinny::{few_cols_shared_rows_per_block, few_cols_shared_threads};
/// assert_eq!((few_cols_shared_threads(5), few_cols_shared_threads(16)), (512, 384));
/// assert_eq!((few_cols_shared_rows_per_block(8), few_cols_shared_rows_per_block(9)), (64, 48));
/// assert_eq!(few_cols_shared_rows_per_block(32), 24);
/// ```
pub const fn few_cols_shared_threads(n: u32) -> u32 {
    if n <= 8 { 512 } else { 384 }
}
/// Rows of `C` per block of the `matmul_few_cols_shared` kernel for `n` columns.
pub const fn few_cols_shared_rows_per_block(n: u32) -> u32 {
    few_cols_shared_threads(n) / 32 * few_cols_shared_rows_per_warp(n)
}
/// Elements of `k` per step of `matmul_few_cols_shared` on `f32` operands (and on 16-bit ones
/// whose rows of `A` are not 4-byte aligned, or with more than 16 columns): four per lane, 32
/// apart, so that a warp's load of a row of `A` is 128 contiguous bytes (`f32`).
pub const FEW_COLS_SHARED_STEP: u32 = 128;
/// Elements of `k` per step of `matmul_few_cols_shared` on operands of `bytes` bytes for `nc`
/// columns: twice [`FEW_COLS_SHARED_STEP`] for 16-bit operands up to 16 columns (when the rows
/// of `A` start 4-byte aligned: even `k`, aligned base), each lane loading pairs of elements in
/// 4-byte words, so that a step has the bytes of `A` in flight of an `f32` step. Element loads
/// of 2 bytes left the 16-bit kernels at half the `f32` kernels' bandwidth (H200, BF16 16384 x
/// 16384 x 4: 0.348 ms against `f32`'s 0.336 for twice the bytes). Splits of `k` of at most
/// [`FEW_COLS_SHARED_STEP`] keep single loads: one step either way, half the multiplies.
///
/// ```
/// use kernels::matmul::skinny::{few_cols_shared_step, FEW_COLS_SHARED_STEP};
/// assert_eq!(few_cols_shared_step(2, 16), 2 * FEW_COLS_SHARED_STEP);
/// assert_eq!((few_cols_shared_step(4, 8), few_cols_shared_step(2, 32)), (FEW_COLS_SHARED_STEP, FEW_COLS_SHARED_STEP));
/// ```
pub const fn few_cols_shared_step(bytes: u32, nc: u32) -> u32 {
    if bytes == 2 && nc <= 16 { 2 * FEW_COLS_SHARED_STEP } else { FEW_COLS_SHARED_STEP }
}
/// Floats of `matmul_few_cols_shared`'s two buffers of `B`: a step's rows of `NC + 4` floats
/// each (the pad puts a quarter-warp's 16-byte reads of eight consecutive rows in eight
/// different bank groups), for the largest step times width: 40 KiB (256 rows of 16 columns).
pub const FEW_COLS_SHARED_B_FLOATS: u32 = {
    let wide = FEW_COLS_SHARED_STEP * (FEW_COLS_SHARED_MAX_N + 4);
    let paired = few_cols_shared_step(2, 16) * (16 + 4);
    2 * if wide > paired { wide } else { paired }
};

/// Longest `k` `matmul_few_cols_short_k` takes: a thread multiplies a whole row of `A`, staged
/// in shared memory. Shorter rows than a warp's step leave the warp-per-row kernels' lanes
/// mostly idle behind a five-round shuffle per column (H200, BF16, µs: 8098 x 3 x 1 7.5-8.3 on
/// `matmul_few_cols_bf16_1`, 15181 x 2 x 13 8.8 on `matmul_few_cols_shared_bf16_16`).
pub const FEW_COLS_SHORT_K_MAX_K: u32 = 32;
/// Threads of a `matmul_few_cols_short_k` block, one per row of `C`.
pub const FEW_COLS_SHORT_K_THREADS: u32 = 128;
/// Floats per row of `matmul_few_cols_short_k`'s staging tile (rows of `A`, then of `C`): odd, so
/// that a warp's threads, one row each, read 32 different banks.
pub const FEW_COLS_SHORT_K_PITCH: u32 = FEW_COLS_SHORT_K_MAX_K + 1;
/// PTX symbols of the `matmul_few_cols_short_k` kernels (`f32` operands), by the most columns of
/// `C` each takes.
pub const FEW_COLS_SHORT_K_KERNELS: [(u32, &str); 2] =
    [(8, "matmul_few_cols_short_k_8"), (32, "matmul_few_cols_short_k_32")];
/// [`FEW_COLS_SHORT_K_KERNELS`] on BF16 operands.
pub const FEW_COLS_SHORT_K_KERNELS_BF16: [(u32, &str); 2] =
    [(8, "matmul_few_cols_short_k_bf16_8"), (32, "matmul_few_cols_short_k_bf16_32")];
/// [`FEW_COLS_SHORT_K_KERNELS`] on F16 operands.
pub const FEW_COLS_SHORT_K_KERNELS_F16: [(u32, &str); 2] =
    [(8, "matmul_few_cols_short_k_f16_8"), (32, "matmul_few_cols_short_k_f16_32")];

/// Whether `few_cols` on `k` columns of `A` runs a `matmul_few_cols_short_k` kernel (a thread a
/// row): `k` at most [`FEW_COLS_SHORT_K_MAX_K`].
pub const fn few_cols_takes_short_k(k: u32) -> bool {
    k <= FEW_COLS_SHORT_K_MAX_K
}

/// The `few_cols` kernel for `m x n` of `C` and `k` columns of `A` on operands of type `t`: for
/// `k` up to [`FEW_COLS_SHORT_K_MAX_K`], the one of `matmul_few_cols_short_k_{8,32}` that holds
/// `n`; above [`FEW_ROWS_MAX_M`] rows and from [`FEW_COLS_SHARED_MIN_N`] columns, the one of
/// `matmul_few_cols_shared_{8,16,32}` that holds `n` (`B` shared by a block's
/// [`few_cols_shared_rows_per_block`] rows); otherwise [`few_cols_kernel_of`]'s. `None` past
/// [`few_cols_max_n`].
///
/// ```
/// use kernels::matmul::element::OperandType;
/// use kernels::matmul::skinny::few_cols_kernel_for;
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16_384, 4096, 16), Some("matmul_few_cols_shared_16"));
/// assert_eq!(few_cols_kernel_for(OperandType::Bf16, 5640, 571, 8), Some("matmul_few_cols_shared_bf16_8"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16_384, 4096, 4), Some("matmul_few_cols_shared_8"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16_384, 4096, 1), Some("matmul_few_cols_1"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16, 4096, 16), Some("matmul_few_cols_16"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 100, 4096, 17), Some("matmul_few_cols_shared_32"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16, 4096, 17), None);
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 100, 4096, 33), None);
/// // Rows of at most 32 elements: a thread a row.
/// assert_eq!(few_cols_kernel_for(OperandType::Bf16, 8098, 3, 1), Some("matmul_few_cols_short_k_bf16_8"));
/// assert_eq!(few_cols_kernel_for(OperandType::F16, 15_181, 2, 13), Some("matmul_few_cols_short_k_f16_32"));
/// assert_eq!(few_cols_kernel_for(OperandType::F32, 16, 32, 17), None);
/// ```
pub const fn few_cols_kernel_for(t: OperandType, m: u32, k: u32, n: u32) -> Option<&'static str> {
    if n > few_cols_max_n(m) {
        return None;
    }
    if few_cols_takes_short_k(k) {
        return match t {
            OperandType::F32 => narrowest(&FEW_COLS_SHORT_K_KERNELS, n),
            OperandType::Bf16 => narrowest(&FEW_COLS_SHORT_K_KERNELS_BF16, n),
            OperandType::F16 => narrowest(&FEW_COLS_SHORT_K_KERNELS_F16, n),
        };
    }
    if !few_cols_shares_b(m, n) {
        return few_cols_kernel_of(t, n);
    }
    match t {
        OperandType::F32 => narrowest(&FEW_COLS_SHARED_KERNELS, n),
        OperandType::Bf16 => narrowest(&FEW_COLS_SHARED_KERNELS_BF16, n),
        OperandType::F16 => narrowest(&FEW_COLS_SHARED_KERNELS_F16, n),
    }
}

/// Whether `few_cols` on `m x n` of `C` runs a `matmul_few_cols_shared` kernel
/// ([`few_cols_kernel_for`]).
pub const fn few_cols_shares_b(m: u32, n: u32) -> bool {
    m > FEW_ROWS_MAX_M && n >= FEW_COLS_SHARED_MIN_N && n <= FEW_COLS_SHARED_MAX_N
}

/// Largest `m` `matmul_few_rows` takes (its accumulators are `FEW_ROWS_MAX_M x 4` registers).
pub const FEW_ROWS_MAX_M: u32 = 16;
/// Threads per block of `matmul_few_rows`.
pub const FEW_ROWS_THREADS: u32 = 128;
/// Columns of `C` per thread of `matmul_few_rows` (one 16-byte vector).
pub const FEW_ROWS_COLS_PER_THREAD: u32 = 4;
/// `matmul_few_rows` kernels of at least this many accumulator rows (`matmul_few_rows_{8,16}`)
/// stage `A` through shared memory; the shorter ones read it from L1.
pub const FEW_ROWS_PANEL_MIN_M: u32 = 8;
/// Floats of `A` a block of `matmul_few_rows_{8,16}` stages in shared memory at a time (32 KiB,
/// static): `MR` rows of `FEW_ROWS_PANEL / MR` columns, `MR` the kernel's suffix.
pub const FEW_ROWS_PANEL: u32 = 8192;
/// Columns of `C` per block of `matmul_few_rows`.
pub const FEW_ROWS_BLOCK_COLS: u32 = FEW_ROWS_THREADS * FEW_ROWS_COLS_PER_THREAD;

/// PTX symbol of `matmul_gemv`, the one-row kernel on `f32` operands that splits `k` inside the
/// block.
pub const GEMV_KERNEL: &str = "matmul_gemv";
/// Threads per block of `matmul_gemv`.
pub const GEMV_THREADS: u32 = 512;
/// Lanes of `matmul_gemv` that share a row of `B`, four columns each: 128 contiguous bytes of
/// `f32`, a whole line.
pub const GEMV_LANES_PER_ROW: u32 = 8;
/// Columns of `C` per block of `matmul_gemv`.
pub const GEMV_BLOCK_COLS: u32 = GEMV_LANES_PER_ROW * 4;
/// Rows of `B` a `matmul_gemv` block reads at once, one per group of [`GEMV_LANES_PER_ROW`]
/// lanes: the block's split of `k` is dealt to them row by row.
pub const GEMV_ROW_GROUPS: u32 = GEMV_THREADS / GEMV_LANES_PER_ROW;
/// Rows of `B` each thread of `matmul_gemv` has in flight per step on its vector path (one
/// 16-byte load each); the scalar path (`n % 4 != 0`) takes half as many, four 4-byte loads a row.
pub const GEMV_LOADS: u32 = 8;
/// Rows of `B` one step of a `matmul_gemv` block covers on its vector path.
pub const GEMV_STEP_ROWS: u32 = GEMV_ROW_GROUPS * GEMV_LOADS;

/// Largest `n` `matmul_few_cols` takes (its accumulators are `FEW_COLS_MAX_N` registers).
pub const FEW_COLS_MAX_N: u32 = 16;
/// Threads per block of `matmul_few_cols`.
pub const FEW_COLS_THREADS: u32 = 256;
/// Rows of `C` per block of `matmul_few_cols`: one per warp.
pub const FEW_COLS_ROWS_PER_BLOCK: u32 = FEW_COLS_THREADS / 32;
/// 16-byte loads of `A` each lane of `matmul_few_cols` has in flight per step.
pub const FEW_COLS_LOADS: u32 = 8;
/// Elements of a row of `A` a warp of `matmul_few_cols` covers per step.
pub const FEW_COLS_STEP: u32 = FEW_COLS_LOADS * 32 * 4;

const _: () = assert!(FEW_ROWS_MAX_M == 16 && FEW_COLS_MAX_N == 16 && FEW_ROWS_COLS_PER_THREAD == 4);
// A panel's row length (FEW_ROWS_PANEL / MR) is a multiple of 4 for every MR up to 16, so rows
// of the panel start 16-byte aligned and splits keep their 16-byte alignment across panels.
const _: () = assert!(FEW_ROWS_PANEL.is_multiple_of(4 * FEW_ROWS_MAX_M) && FEW_ROWS_PANEL_MIN_M == 8);
// The `unroll!` lists of `matmul_few_cols` spell out 0..FEW_COLS_LOADS, and those of
// `matmul_few_cols_shared` its 4 rows a warp, 4 elements a lane per step and 64 accumulators.
const _: () = assert!(FEW_COLS_LOADS == 8);
// `matmul_gemv`'s `unroll!` lists spell out its 8 loads; its warps hold 32 / 8 row groups, summed
// by two rounds of shuffles (lanes 8 and 16 apart).
const _: () = assert!(GEMV_LOADS == 8 && GEMV_LANES_PER_ROW == 8 && GEMV_THREADS.is_multiple_of(32));
// A thread copies a step's B in at most 12 rounds (the `unroll!` lists of `load_b`).
const _: () = assert!(
    few_cols_shared_step(2, 16) * 16 <= 12 * few_cols_shared_threads(16)
        && few_cols_shared_step(2, 8) * 8 <= 12 * few_cols_shared_threads(8)
        && FEW_COLS_SHARED_STEP * 32 <= 12 * few_cols_shared_threads(32)
);
const _: () = assert!(
    FEW_COLS_SHARED_STEP == 4 * 32
        && FEW_COLS_SHARED_ACCUMULATORS == 64
        && few_cols_shared_rows_per_warp(8) * 16 == 64
        && few_cols_shared_rows_per_warp(32) * 32 == 64
);

/// Whether `matmul_few_rows` moves `A`, `B` and `C` in 16-byte accesses: every row of `A` and
/// `B` starts 16-byte aligned (given aligned bases) and a thread's 4 columns are all inside `C`
/// or all outside.
pub const fn few_rows_vector_path(k: u32, n: u32) -> bool {
    k.is_multiple_of(4) && n.is_multiple_of(4)
}

/// Whether `matmul_few_cols` reads `A` in 16-byte accesses: rows of `A` start 16-byte aligned.
pub const fn few_cols_vector_path(k: u32) -> bool {
    k.is_multiple_of(4)
}

/// Whether `matmul_few_cols` reads `B` in 16-byte accesses: for one column, four consecutive
/// rows of it (contiguous, aligned when `A`'s rows are); for more, a row's columns four at a time
/// (each row 16-byte aligned).
pub const fn few_cols_vector_b(k: u32, n: u32) -> bool {
    if n == 1 { few_cols_vector_path(k) } else { n.is_multiple_of(4) }
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::FEW_ROWS_PANEL;
    use super::{
        FEW_COLS_LOADS, FEW_COLS_ROWS_PER_BLOCK, FEW_COLS_STEP, FEW_ROWS_COLS_PER_THREAD, FEW_ROWS_THREADS,
        few_cols_vector_b, few_cols_vector_path, few_rows_vector_path,
    };
    use super::{
        FEW_COLS_SHARED_B_FLOATS, FEW_COLS_SHARED_STEP, few_cols_shared_rows_per_warp, few_cols_shared_step,
        few_cols_shared_threads,
    };
    use super::{FEW_COLS_SHARED_MAX_N, FEW_COLS_SHORT_K_MAX_K, FEW_COLS_SHORT_K_PITCH, FEW_COLS_SHORT_K_THREADS};
    use super::{GEMV_BLOCK_COLS, GEMV_LANES_PER_ROW, GEMV_LOADS, GEMV_ROW_GROUPS, GEMV_THREADS};
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, mem, thread, warp};
    use crate::matmul::element::{Bf16, Element, F16};
    use crate::matmul::guarded::{self, Loaded4};
    use crate::matmul::split_k::split_k_range;
    use crate::{gpu_kernel, shared_array};

    /// Declares one kernel per listed width, each calling `$body::<$t, width>` on `$t` operands:
    /// the narrow side (`$side`) at most that width, blocks of `$threads` threads.
    macro_rules! narrow_kernels {
        ($body:ident, $t:ty, $side:literal, $threads:literal: $($name:ident = $width:literal),*) => {
            gpu_kernel! {
                $(
                    #[doc = concat!("`C = A * B` on `", stringify!($t), "` operands for `", $side, " <=` the suffix; see the [module documentation](super).")]
                    ///
                    /// # Safety
                    /// `a`, `b` hold `m*k`, `k*n` elements and `c` `gridDim.z*m*n` `f32` on the
                    /// device, `c` overlaps neither input, `k_chunk` is a positive multiple of 4,
                    #[doc = concat!("the block is `", $threads, "` x 1 x 1, `", $side, "` is at most the suffix, and")]
                    /// `guard` is null (the kernel runs) or the guard of a finished split-TF32 scan
                    /// of `a` and `b` (`crate::matmul::tf32x3`: the kernel runs only on its FP32 path).
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe fn $name(
                        a: *const $t,
                        b: *const $t,
                        c: *mut f32,
                        m: u32,
                        k: u32,
                        n: u32,
                        k_chunk: u32,
                        guard: *const u32,
                    ) {
                        // SAFETY: forwarded contract; the guard is null or a finished scan's.
                        unsafe {
                            if crate::matmul::tf32x3::split_path_taken(guard) {
                                return;
                            }
                            $body::<$t, $width>(a, b, c, m, k, n, k_chunk)
                        }
                    }
                )*
            }
        };
    }
    narrow_kernels!(few_rows, f32, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_1 = 1,
        matmul_few_rows_2 = 2,
        matmul_few_rows_4 = 4
    );
    narrow_kernels!(few_rows, Bf16, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_bf16_1 = 1,
        matmul_few_rows_bf16_2 = 2,
        matmul_few_rows_bf16_4 = 4
    );
    narrow_kernels!(few_rows, F16, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_f16_1 = 1,
        matmul_few_rows_f16_2 = 2,
        matmul_few_rows_f16_4 = 4
    );
    // From FEW_ROWS_PANEL_MIN_M rows up, A goes through shared memory.
    narrow_kernels!(few_rows_panel, f32, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_8 = 8,
        matmul_few_rows_16 = 16
    );
    narrow_kernels!(few_rows_panel, Bf16, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_bf16_8 = 8,
        matmul_few_rows_bf16_16 = 16
    );
    narrow_kernels!(few_rows_panel, F16, "m", "FEW_ROWS_THREADS":
        matmul_few_rows_f16_8 = 8,
        matmul_few_rows_f16_16 = 16
    );
    narrow_kernels!(few_cols, f32, "n", "FEW_COLS_THREADS":
        matmul_few_cols_1 = 1,
        matmul_few_cols_2 = 2,
        matmul_few_cols_4 = 4,
        matmul_few_cols_8 = 8,
        matmul_few_cols_16 = 16
    );
    narrow_kernels!(few_cols, Bf16, "n", "FEW_COLS_THREADS":
        matmul_few_cols_bf16_1 = 1,
        matmul_few_cols_bf16_2 = 2,
        matmul_few_cols_bf16_4 = 4,
        matmul_few_cols_bf16_8 = 8,
        matmul_few_cols_bf16_16 = 16
    );
    narrow_kernels!(few_cols, F16, "n", "FEW_COLS_THREADS":
        matmul_few_cols_f16_1 = 1,
        matmul_few_cols_f16_2 = 2,
        matmul_few_cols_f16_4 = 4,
        matmul_few_cols_f16_8 = 8,
        matmul_few_cols_f16_16 = 16
    );

    narrow_kernels!(few_cols_short_k, f32, "n", "FEW_COLS_SHORT_K_THREADS":
        matmul_few_cols_short_k_8 = 8,
        matmul_few_cols_short_k_32 = 32
    );
    narrow_kernels!(few_cols_short_k, Bf16, "n", "FEW_COLS_SHORT_K_THREADS":
        matmul_few_cols_short_k_bf16_8 = 8,
        matmul_few_cols_short_k_bf16_32 = 32
    );
    narrow_kernels!(few_cols_short_k, F16, "n", "FEW_COLS_SHORT_K_THREADS":
        matmul_few_cols_short_k_f16_8 = 8,
        matmul_few_cols_short_k_f16_32 = 32
    );

    narrow_kernels!(few_cols_shared, f32, "n", "few_cols_shared_threads(n)":
        matmul_few_cols_shared_8 = 8,
        matmul_few_cols_shared_16 = 16,
        matmul_few_cols_shared_32 = 32
    );
    narrow_kernels!(few_cols_shared, Bf16, "n", "few_cols_shared_threads(n)":
        matmul_few_cols_shared_bf16_8 = 8,
        matmul_few_cols_shared_bf16_16 = 16,
        matmul_few_cols_shared_bf16_32 = 32
    );
    narrow_kernels!(few_cols_shared, F16, "n", "few_cols_shared_threads(n)":
        matmul_few_cols_shared_f16_8 = 8,
        matmul_few_cols_shared_f16_16 = 16,
        matmul_few_cols_shared_f16_32 = 32
    );

    gpu_kernel! {
        /// `C = A * B` on `f32` operands for `m = 1`, `k` split inside the block; see
        /// the [module documentation](super). The arguments of `matmul_few_rows`, so
        /// that a plan launches either alike.
        ///
        /// # Safety
        /// `a`, `b` hold `k`, `k*n` elements and `c` `gridDim.z*n` `f32` on the
        /// device, `c` overlaps neither input, `m` is 1, `k_chunk` is a positive
        /// multiple of 4, the block is `GEMV_THREADS` x 1 x 1, and `guard` is null or
        /// the guard of a finished split-TF32 scan of `a` and `b`.
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn matmul_gemv(
            a: *const f32,
            b: *const f32,
            c: *mut f32,
            m: u32,
            k: u32,
            n: u32,
            k_chunk: u32,
            guard: *const u32,
        ) {
            let _ = m;
            // SAFETY: forwarded contract; the guard is null or a finished scan's.
            unsafe {
                if crate::matmul::tf32x3::split_path_taken(guard) {
                    return;
                }
                gemv::<f32>(a, b, c, k, n, k_chunk)
            }
        }
    }

    /// Warps of a `matmul_gemv` block (a module item: `shared_array!` sizes from it).
    const GEMV_WARPS: u32 = GEMV_THREADS / 32;

    /// `matmul_gemv`'s body: each group of `GEMV_LANES_PER_ROW` lanes multiplies every
    /// `GEMV_ROW_GROUPS`-th row of the block's split of `k` into its four columns, eight rows in
    /// flight; the groups' sums meet through shuffles and shared memory in a fixed order.
    ///
    /// # Safety
    /// As `matmul_gemv`.
    #[inline(always)]
    unsafe fn gemv<T: Element>(a: *const T, b: *const T, c: *mut f32, k: u32, n: u32, k_chunk: u32) {
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let out = c.wrapping_add(z as usize * n as usize);
        let tid = thread::thread_idx_x();
        let group = tid / GEMV_LANES_PER_ROW;
        // Rows of B (and of the output) start 16-byte aligned where n % 4 == 0; A is read an
        // element at a time, so k may be anything.
        let vector =
            n.is_multiple_of(4) && (b as usize).is_multiple_of(T::VECTOR_BYTES) && (out as usize).is_multiple_of(16);
        // A thread's four columns: on the vector path four adjacent ones (one 16-byte load),
        // otherwise every eighth, so that each of its 4-byte loads has the row group's eight
        // lanes on 32 contiguous bytes.
        let (col, col_step) = {
            let (block, lane) = (thread::block_idx_x() * GEMV_BLOCK_COLS, tid % GEMV_LANES_PER_ROW);
            if vector { (block + 4 * lane, 1) } else { (block + lane, GEMV_LANES_PER_ROW) }
        };
        let rows = (k_begin.saturating_add(group), k_begin + k_len);
        let mut acc = if col >= n {
            [0.0; 4]
        } else if vector {
            // SAFETY: forwarded contract; n % 4 == 0 and aligned bases; col < n.
            unsafe { gemv_rows::<T, true>(a, b, n, col, rows) }
        } else {
            // SAFETY: forwarded contract; col < n.
            unsafe { gemv_rows::<T, false>(a, b, n, col, rows) }
        };
        // A warp holds four row groups of the same columns, lanes 8 apart; every lane reaches
        // the shuffles and the barrier (none has returned).
        unroll!(j in [0, 1, 2, 3] {
            // SAFETY: all 32 lanes of the warp take part.
            acc[j] += unsafe { warp::shuffle_xor_f32(acc[j], 8) };
            // SAFETY: as above.
            acc[j] += unsafe { warp::shuffle_xor_f32(acc[j], 16) };
        });
        let partial = shared_array!(MATMUL_GEMV_PARTIAL: [f32; (GEMV_WARPS * GEMV_BLOCK_COLS) as usize]);
        let lane = tid % 32;
        if lane < GEMV_LANES_PER_ROW {
            // SAFETY: (tid / 32) * 32 + lane * 4 + 3 < GEMV_WARPS * GEMV_BLOCK_COLS; 16-byte aligned.
            unsafe { partial.store4(((tid / 32) * GEMV_BLOCK_COLS + lane * 4) as usize, acc) };
        }
        thread::sync_threads();
        if tid < GEMV_LANES_PER_ROW && col < n {
            let mut sum = [0.0f32; 4];
            for w in 0..GEMV_WARPS {
                // SAFETY: w * GEMV_BLOCK_COLS + tid * 4 + 3 < GEMV_WARPS * GEMV_BLOCK_COLS, written
                // before the barrier.
                let p = unsafe { partial.load4((w * GEMV_BLOCK_COLS + tid * 4) as usize) };
                unroll!(j in [0, 1, 2, 3] {
                    sum[j] += p[j];
                });
            }
            if vector {
                // SAFETY: the 4 columns < n (n % 4 == 0), 16-byte aligned; this thread alone
                // writes them.
                unsafe { mem::store_global_v4_f32(out.wrapping_add(col as usize), sum) };
            } else {
                unroll!(j in [0, 1, 2, 3] {
                    let c = col + j as u32 * col_step;
                    if c < n {
                        // SAFETY: column c < n; this thread alone writes it.
                        unsafe { mem::store_global_f32(out.wrapping_add(c as usize), sum[j]) };
                    }
                });
            }
        }
    }

    /// One row group's sum over rows `first, first + GEMV_ROW_GROUPS, ..` below `end` of `B`'s
    /// four columns from `col` (with `VEC` adjacent, otherwise `GEMV_LANES_PER_ROW` apart; those
    /// at or past `n` left at 0), each times `A`'s element of that row.
    ///
    /// # Safety
    /// `a` holds `end` elements or more, `b` `end` rows of `n`; `col < n`; with `VEC`, `n % 4 ==
    /// 0` and `b` aligned for four elements.
    #[inline(always)]
    unsafe fn gemv_rows<T: Element, const VEC: bool>(
        a: *const T,
        b: *const T,
        n: u32,
        col: u32,
        (first, end): (u32, u32),
    ) -> [f32; 4] {
        // GEMV_LOADS rows a step on the vector path, half as many on the scalar one (16 loads of
        // 4 bytes, whose addresses would take ptxas past 64 registers with eight rows).
        let loads = if VEC { GEMV_LOADS } else { GEMV_LOADS / 2 } as usize;
        let mut acc = [0.0f32; 4];
        let mut row = first;
        while row < end {
            let mut rows = [[0.0f32; 4]; 8];
            let mut x = [0.0f32; 8];
            unroll!(u in [0, 1, 2, 3, 4, 5, 6, 7] {
                let r = row.saturating_add(u as u32 * GEMV_ROW_GROUPS);
                if u < loads && r < end {
                    if VEC {
                        // SAFETY: r < end rows of B; col < n, n % 4 == 0, aligned.
                        rows[u] = unsafe { load_b_row::<T, true>(b, r, n, col) };
                    } else {
                        let at = b.wrapping_add(r as usize * n as usize);
                        unroll!(j in [0, 1, 2, 3] {
                            let c = col + j as u32 * GEMV_LANES_PER_ROW;
                            if c < n {
                                // SAFETY: row r < end, column c < n.
                                rows[u][j] = unsafe { T::load_nc(at.add(c as usize)) };
                            }
                        });
                    }
                    // SAFETY: r < end elements of A.
                    x[u] = unsafe { T::load_nc(a.wrapping_add(r as usize)) };
                }
            });
            unroll!(u in [0, 1, 2, 3, 4, 5, 6, 7] {
                if u < loads {
                    unroll!(j in [0, 1, 2, 3] {
                        acc[j] = fma(x[u], rows[u][j], acc[j]);
                    });
                }
            });
            row = row.saturating_add(loads as u32 * GEMV_ROW_GROUPS);
        }
        acc
    }

    /// The body of `matmul_few_cols_shared_<NC>` (module documentation): on 16-bit operands with
    /// rows of `A` that start 4-byte aligned and `NC <= 16`, the paired form (steps of
    /// [`few_cols_shared_step`]`(2, NC)` = 256 elements, two a load); otherwise single elements.
    ///
    /// # Safety
    /// As the kernels, with `n <= NC` (8, 16 or 32), called by the whole block.
    #[inline(always)]
    unsafe fn few_cols_shared<T: Element, const NC: usize>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        // Uniform across the grid: every row of A and every split starts on an even element of
        // a 4-byte aligned base (k_chunk is a multiple of 4, or covers k), and a split is longer
        // than one single step. Splits of at most 128 are one step either way, and a paired step
        // multiplies 256 rows of B, zeros past the split included: 14811 x 34 x 3 went from
        // 6.3-6.5 us to 7.3-7.4 in BF16 and F16 when it took pairs.
        let pairs = few_cols_shared_step(core::mem::size_of::<T>() as u32, NC as u32) == 2 * FEW_COLS_SHARED_STEP
            && k.is_multiple_of(2)
            && (k_chunk.is_multiple_of(2) || k_chunk >= k)
            && k.min(k_chunk) > FEW_COLS_SHARED_STEP
            && (a as usize).is_multiple_of(4);
        if pairs {
            // SAFETY: forwarded contract; the paired loads' alignment was checked above.
            unsafe { few_cols_shared_steps::<T, NC, true>(a, b, c, m, k, n, k_chunk) }
        } else {
            // SAFETY: forwarded contract.
            unsafe { few_cols_shared_steps::<T, NC, false>(a, b, c, m, k, n, k_chunk) }
        }
    }

    /// [`few_cols_shared`]'s loop. Lane `l` takes, of each of its warp's rows of `A`, the
    /// elements `l + 32 u` of a step (`u < 4`), or with `PAIRS` the pairs from `2 l + 64 u` (one
    /// 4-byte load each, a step of 256), so that a 16-bit step has as many bytes of `A` in flight
    /// as an `f32` one. With `PAIRS` the step's row `j` of `B` lies at position `(j % 2) * 128 +
    /// j / 2` of the buffer, so that the lanes of a warp still read consecutive positions.
    ///
    /// # Safety
    /// As [`few_cols_shared`]; with `PAIRS`, `T` is 16 bits wide, `NC <= 16`, `k` and the split's
    /// start are even and `a` is 4-byte aligned.
    #[inline(always)]
    unsafe fn few_cols_shared_steps<T: Element, const NC: usize, const PAIRS: bool>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        // The warp's rows: at most 4 (the unrolled lists); rows x NC = 64 accumulators.
        let rows_per_warp = few_cols_shared_rows_per_warp(NC as u32);
        let rw = rows_per_warp as usize;
        let step: u32 = if PAIRS { 2 * FEW_COLS_SHARED_STEP } else { FEW_COLS_SHARED_STEP };
        // Elements of a lane's load: a pair's second one is the high half of the word.
        let per_load = if PAIRS { 2 } else { 1 };
        let threads = few_cols_shared_threads(NC as u32);
        // Elements of B a thread copies per step (the last round partly).
        let rounds = (step as usize * NC).div_ceil(threads as usize);
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let k_end = k_begin + k_len;
        let out = c.wrapping_add(z as usize * m as usize * n as usize);
        let t = thread::thread_idx_x();
        let lane = t % 32;
        let row0 = thread::block_idx_x() * (threads / 32 * rows_per_warp) + (t / 32) * rows_per_warp;
        let tile = shared_array!(MATMUL_FEW_COLS_SHARED_B: [f32; FEW_COLS_SHARED_B_FLOATS as usize]);
        // Floats per row of a buffer of B, and per buffer.
        let pitch = NC + 4;
        let buffer = step as usize * pitch;
        // Where the step's row j of B lies in a buffer.
        let position = |j: usize| if PAIRS { (j % 2) * FEW_COLS_SHARED_STEP as usize + j / 2 } else { j };
        // This lane's loads of each of the warp's rows of A in the step at k0: columns k0 +
        // per_load * (lane + 32 u) (and the next with PAIRS; zero past the split or below the
        // last row), widened where used.
        let load_a = |k0: u32| {
            let mut v = [0u32; 16];
            unroll!(r in [0, 1, 2, 3] {
                let row = row0 + r as u32;
                unroll!(u in [0, 1, 2, 3] {
                    let col = k0 + per_load * (lane + 32 * u as u32);
                    if r < rw && row < m && col < k_end {
                        let at = a.wrapping_add(row as usize * k as usize + col as usize);
                        v[4 * r + u] = if PAIRS {
                            // SAFETY: row < m; col is even and k_end even, so col + 1 < k_end <=
                            // k: both elements inside A; 4-byte aligned (even k and col, aligned
                            // a); nothing writes A (kernel contract).
                            unsafe { mem::load_global_nc_u32(at as *const u8) }
                        } else {
                            // SAFETY: row < m, column col < k_end <= k: inside A (kernel contract).
                            unsafe { T::load_raw_nc(at) }
                        };
                    }
                });
            });
            v
        };
        // This thread's share of the step's B (step rows of NC columns, zero past the split or
        // column n): element e = t + threads i < step * NC, at row e / NC and column e % NC;
        // widened when stored, after the multiply.
        let load_b = |k0: u32| {
            let mut v = [0u32; 12];
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] {
                let e = t + threads * i as u32;
                if i < rounds && e < step * NC as u32 {
                    let (row, col) = (k0 + e / NC as u32, e % NC as u32);
                    if row < k_end && col < n {
                        // SAFETY: row < k_end <= k, column col < n: inside B (kernel contract).
                        v[i] = unsafe { T::load_raw_nc(b.wrapping_add(row as usize * n as usize + col as usize)) };
                    }
                }
            });
            v
        };
        let store_b = |half: usize, v: [u32; 12]| {
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] {
                let e = t as usize + threads as usize * i;
                if i < rounds && e < step as usize * NC {
                    // SAFETY: row e / NC < step lies at a position < step, column e % NC < NC:
                    // inside buffer `half` of the tile, which no thread reads until the barrier
                    // that follows this store.
                    unsafe { tile.store(half * buffer + position(e / NC) * pitch + e % NC, T::widen_raw(v[i])) };
                }
            });
        };
        let mut acc = [0.0f32; super::FEW_COLS_SHARED_ACCUMULATORS as usize];
        let steps = k_len.div_ceil(step);
        store_b(0, load_b(k_begin));
        let mut a_now = load_a(k_begin);
        thread::sync_threads();
        let mut s = 0;
        while s < steps {
            let next = k_begin + (s + 1) * step;
            let more = s + 1 < steps;
            // The next step's loads fly while this one multiplies.
            let (a_next, b_next) = if more { (load_a(next), load_b(next)) } else { ([0; 16], [0; 12]) };
            let half = (s % 2) as usize;
            // Four columns of B at a time, each into the warp's rows, so that few values of B are
            // live at once.
            unroll!(u in [0, 1, 2, 3] {
                unroll!(h in [0, 1] {
                    if h < per_load as usize {
                        let x: [f32; 4] = core::array::from_fn(|r| {
                            let word = a_now[4 * r + u];
                            T::widen_raw(if !PAIRS { word } else if h == 0 { word & 0xFFFF } else { word >> 16 })
                        });
                        let j = per_load as usize * (lane as usize + 32 * u) + h;
                        let at = half * buffer + position(j) * pitch;
                        unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
                            if 4 * q < NC {
                                // SAFETY: row j < step of buffer `half`, columns 4q .. 4q + 4 <=
                                // NC < pitch, 16-byte aligned (pitch and buffer are multiples of
                                // 4); stored before the last barrier, overwritten only after the
                                // next.
                                let y = unsafe { tile.load4(at + 4 * q) };
                                unroll!(r in [0, 1, 2, 3] {
                                    if r < rw {
                                        unroll!(e in [0, 1, 2, 3] {
                                            acc[r * NC + 4 * q + e] = fma(x[r], y[e], acc[r * NC + 4 * q + e]);
                                        });
                                    }
                                });
                            }
                        });
                    }
                });
            });
            if more {
                // Buffer 1 - half was last read in the previous step, before the last barrier.
                store_b(1 - half, b_next);
            }
            thread::sync_threads();
            a_now = a_next;
            s += 1;
        }
        // SAFETY: the whole warp is here (no thread left the loop early).
        let sums = unsafe { reduce_scatter_64(&acc, lane) };
        unroll!(e in [0, 1] {
            let i = 2 * lane as usize + e;
            let (r, j) = (i / NC, i % NC);
            let row = row0 + r as u32;
            if r < rw && row < m && (j as u32) < n {
                // SAFETY: row < m, column j < n; only this lane of this warp writes it.
                unsafe { mem::store_global_f32(out.add(row as usize * n as usize + j), sums[e]) };
            }
        });
    }

    /// The warp's sums of its lanes' 64 accumulators, lane `l` getting those of accumulators `2l`
    /// and `2l + 1`: five rounds of shuffles, each lane keeping the half of its values that its
    /// lane bit selects and adding its partner's copy of that half (62 shuffles, where a
    /// butterfly of every accumulator takes 320). The order of additions is fixed.
    ///
    /// # Safety
    /// Called by every lane of the warp.
    #[inline(always)]
    unsafe fn reduce_scatter_64(acc: &[f32; 64], lane: u32) -> [f32; 2] {
        macro_rules! halve {
            ($src:expr, $mask:literal, [$($i:literal)*]) => {{
                let upper = lane & $mask != 0;
                let src = $src;
                let half = src.len() / 2;
                let mut dst = [0.0f32; { [$($i),*].len() }];
                $(
                    let (keep, send) = if upper { (src[$i + half], src[$i]) } else { (src[$i], src[$i + half]) };
                    // SAFETY: every lane of the warp runs this shuffle (contract).
                    dst[$i] = keep + unsafe { warp::shuffle_xor_f32(send, $mask) };
                )*
                dst
            }};
        }
        let v32 =
            halve!(*acc, 16, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31]);
        let v16 = halve!(v32, 8, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]);
        let v8 = halve!(v16, 4, [0 1 2 3 4 5 6 7]);
        let v4 = halve!(v8, 2, [0 1 2 3]);
        halve!(v4, 1, [0 1])
    }

    /// The body of `matmul_few_cols_short_k_<NC>` (module documentation).
    ///
    /// # Safety
    /// As the kernels, with `n <= NC` (8 or 32) and `k <=` [`FEW_COLS_SHORT_K_MAX_K`], called by
    /// the whole block of [`FEW_COLS_SHORT_K_THREADS`] threads.
    #[inline(always)]
    unsafe fn few_cols_short_k<T: Element, const NC: usize>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        const ROWS: u32 = FEW_COLS_SHORT_K_THREADS;
        const PITCH: usize = FEW_COLS_SHORT_K_PITCH as usize;
        // A thread's elements of the block's rows of A: at most MAX_K rows of ROWS elements.
        const LOADS: usize = FEW_COLS_SHORT_K_MAX_K as usize;
        if k > FEW_COLS_SHORT_K_MAX_K {
            // The tile holds rows of at most MAX_K elements (kernel contract).
            panic!();
        }
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let out = c.wrapping_add(z as usize * m as usize * n as usize);
        let t = thread::thread_idx_x();
        let row0 = thread::block_idx_x() * ROWS;
        // Uniform across the block, before any barrier.
        if row0 >= m {
            return;
        }
        let rows = (m - row0).min(ROWS);
        let tile = shared_array!(MATMUL_FEW_COLS_SHORT_K_TILE: [f32; (FEW_COLS_SHORT_K_THREADS * FEW_COLS_SHORT_K_PITCH) as usize]);
        let b_rows =
            shared_array!(MATMUL_FEW_COLS_SHORT_K_B: [f32; (FEW_COLS_SHORT_K_MAX_K * FEW_COLS_SHARED_MAX_N) as usize]);
        // Element e = t + ROWS i of the block's rows x k_len stretch of A: row e / k_len, column
        // e % k_len of the split, stepped without a division per element (a division is dozens
        // of dependent instructions, and at four warps a block they, not the loads, took the
        // time). Loads and stores take no branch: an element outside loads the block's first
        // (inside A) and stores it to the tile's last column of row 0, which nothing reads (rows
        // of A and of C use at most MAX_K < PITCH columns). In branches, LLVM merged each load's
        // branch with its store's, and every store waited for its load before the next issued.
        let count = rows * k_len;
        if count > 0 {
            let (step_rows, step_cols) = (ROWS / k_len, ROWS % k_len);
            let first = (t / k_len, t % k_len);
            let origin = row0 as usize * k as usize + k_begin as usize;
            const SINK: usize = PITCH - 1;
            let mut raw = [0u32; LOADS];
            let mut slot = [SINK as u32; LOADS];
            let (mut r, mut col) = first;
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                         16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                if i > 0 {
                    (r, col) = next_place((r, col), (step_rows, step_cols), k_len);
                }
                let inside = t + ROWS * (i as u32) < count;
                let at = if inside { origin + r as usize * k as usize + col as usize } else { origin };
                slot[i] = if inside { r * PITCH as u32 + col } else { SINK as u32 };
                // SAFETY: inside, (r, col) = (e / k_len, e % k_len) for e < rows * k_len, so row
                // row0 + r < m and column k_begin + col < k_begin + k_len <= k; outside, element
                // (row0, k_begin), inside A as rows and k_len are positive.
                raw[i] = unsafe { T::load_raw_nc(a.add(at)) };
            });
            // B's rows k_begin .. k_begin + k_len, NC columns each (zero past n): element e = t +
            // ROWS i of k_len * NC at row e / NC, column e % NC (NC a power of two: shifts);
            // outside, B's element (k_begin, 0), widened and stored as zero.
            let b_count = k_len * NC as u32;
            let mut b_raw = [0u32; 8];
            let mut b_inside = [false; 8];
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                let e = t + ROWS * i as u32;
                let (row, col) = (e / NC as u32, e % NC as u32);
                b_inside[i] = e < b_count && col < n;
                let at = if b_inside[i] { (k_begin + row) as usize * n as usize + col as usize } else { k_begin as usize * n as usize };
                // SAFETY: inside, row k_begin + row < k_begin + k_len <= k and column col < n;
                // outside, row k_begin < k (k_len > 0), column 0: inside B.
                b_raw[i] = unsafe { T::load_raw_nc(b.add(at)) };
            });
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                         16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                // SAFETY: slot < ROWS * PITCH; the tile is read only after the barrier below.
                unsafe { tile.store(slot[i] as usize, T::widen_raw(raw[i])) };
            });
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                let e = t + ROWS * i as u32;
                if e < b_count {
                    let v = if b_inside[i] { T::widen_raw(b_raw[i]) } else { 0.0 };
                    // SAFETY: e < k_len * NC <= MAX_K * FEW_COLS_SHARED_MAX_N; read after the
                    // barrier.
                    unsafe { b_rows.store(e as usize, v) };
                }
            });
        }
        thread::sync_threads();
        let mut acc = [0.0f32; NC];
        if t < rows {
            let mut kk = 0;
            while kk < k_len {
                // SAFETY: row t < ROWS, column kk < k_len < PITCH, stored before the barrier.
                let x = unsafe { tile.load(t as usize * PITCH + kk as usize) };
                unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if 4 * q < NC {
                        // SAFETY: kk * NC + 4q + 3 < k_len * NC, 16-byte aligned (NC and the
                        // array's base are); stored before the barrier.
                        let y = unsafe { b_rows.load4(kk as usize * NC + 4 * q) };
                        unroll!(e in [0, 1, 2, 3] {
                            acc[4 * q + e] = fma(x, y[e], acc[4 * q + e]);
                        });
                    }
                });
                kk += 1;
            }
        }
        // Every thread has read its row of A: the tile takes the rows of C.
        thread::sync_threads();
        if t < rows {
            unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                         16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] {
                if j < NC && (j as u32) < n {
                    // SAFETY: row t < ROWS, column j < n <= NC < PITCH; read after the barrier.
                    unsafe { tile.store(t as usize * PITCH + j, acc[j]) };
                }
            });
        }
        thread::sync_threads();
        // The block's rows of C are rows * n contiguous floats from row0 * n: element e = t +
        // ROWS i at row e / n, column e % n, stepped as A's were.
        let base = out.wrapping_add(row0 as usize * n as usize);
        let (step_rows, step_cols) = (ROWS / n, ROWS % n);
        let (mut r, mut j) = (t / n, t % n);
        let mut e = t;
        while e < rows * n {
            // SAFETY: r < rows, j < n: the tile's value stored before the barrier, and element
            // (row0 + r, j) of this split's C (inside: row0 + r < m), written by this thread only.
            unsafe { mem::store_global_f32(base.add(e as usize), tile.load(r as usize * PITCH + j as usize)) };
            e += ROWS;
            (r, j) = next_place((r, j), (step_rows, step_cols), n);
        }
    }

    /// The row and column `ROWS` elements after `(row, col)` in rows of `len` elements, from
    /// `step = (ROWS / len, ROWS % len)`: a compare and a select, no division (`col < len`).
    #[inline(always)]
    fn next_place((row, col): (u32, u32), (step_rows, step_cols): (u32, u32), len: u32) -> (u32, u32) {
        let (row, col) = (row + step_rows, col + step_cols);
        let wrap = col >= len;
        (row + wrap as u32, col - if wrap { len } else { 0 })
    }

    /// The body of `matmul_few_cols_<NC>`.
    ///
    /// # Safety
    /// As the kernels, with `n <= NC`.
    #[inline(always)]
    unsafe fn few_cols<T: Element, const NC: usize>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let out = c.wrapping_add(z as usize * m as usize * n as usize);
        let row = thread::block_idx_x() * FEW_COLS_ROWS_PER_BLOCK + thread::thread_idx_x() / 32;
        // Uniform across the warp, and no barrier follows: a warp past the last row leaves.
        if row >= m {
            return;
        }
        let range = (row, k_begin, k_begin + k_len);
        let vec_a = few_cols_vector_path(k) && (a as usize).is_multiple_of(T::VECTOR_BYTES);
        let vec_b = few_cols_vector_b(k, n) && (b as usize).is_multiple_of(T::VECTOR_BYTES);
        // SAFETY (all four): forwarded contract; each path's alignment conditions hold.
        match (vec_a, vec_b) {
            (true, true) => unsafe { cols_product::<T, NC, true, true>(a, b, out, k, n, range) },
            (true, false) => unsafe { cols_product::<T, NC, true, false>(a, b, out, k, n, range) },
            (false, true) => unsafe { cols_product::<T, NC, false, true>(a, b, out, k, n, range) },
            (false, false) => unsafe { cols_product::<T, NC, false, false>(a, b, out, k, n, range) },
        }
    }

    /// The body of `matmul_few_rows_<MR>`.
    ///
    /// # Safety
    /// As the kernels, with `m <= MR`.
    #[inline(always)]
    unsafe fn few_rows<T: Element, const MR: usize>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let out = c.wrapping_add(z as usize * m as usize * n as usize);
        let col = (thread::block_idx_x() * FEW_ROWS_THREADS + thread::thread_idx_x()) * FEW_ROWS_COLS_PER_THREAD;
        // No barrier and no exchange between threads follows, so threads past the last
        // column can leave now.
        if col >= n {
            return;
        }
        let aligned = guarded::bases_aligned(a, b, out);
        if few_rows_vector_path(k, n) && aligned {
            // SAFETY: forwarded contract; k % 4 == n % 4 == 0 and aligned bases.
            unsafe { rows_product::<T, MR, true>(a, b, out, m, k, n, col, k_begin, k_begin + k_len) }
        } else {
            // SAFETY: forwarded contract.
            unsafe { rows_product::<T, MR, false>(a, b, out, m, k, n, col, k_begin, k_begin + k_len) }
        }
    }

    /// The body of `matmul_few_rows_<MR>` for `MR >=` [`FEW_ROWS_PANEL_MIN_M`](super::FEW_ROWS_PANEL_MIN_M):
    /// `A` staged through shared memory in panels.
    ///
    /// # Safety
    /// As the kernels, with `m <= MR`.
    #[inline(always)]
    unsafe fn few_rows_panel<T: Element, const MR: usize>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let out = c.wrapping_add(z as usize * m as usize * n as usize);
        let col = (thread::block_idx_x() * FEW_ROWS_THREADS + thread::thread_idx_x()) * FEW_ROWS_COLS_PER_THREAD;
        let aligned = guarded::bases_aligned(a, b, out);
        let args = (m, k, n, col, k_begin, k_begin + k_len);
        if few_rows_vector_path(k, n) && aligned {
            // SAFETY: forwarded contract; k % 4 == n % 4 == 0 and aligned bases.
            unsafe { panel_rows_product::<T, MR, true>(a, b, out, args) }
        } else {
            // SAFETY: forwarded contract.
            unsafe { panel_rows_product::<T, MR, false>(a, b, out, args) }
        }
    }

    /// Copies columns `p0 .. p0 + plen` of rows `0..m` of `A` into `panel` (row `i` at
    /// `i * (FEW_ROWS_PANEL / MR)`), by the whole block.
    ///
    /// # Safety
    /// `m <= MR`, `p0 + plen <= k`, `plen <= FEW_ROWS_PANEL / MR`; with `VEC`, `k % 4 == 0`,
    /// `p0 % 4 == 0`, `plen % 4 == 0` and `a` aligned for four elements; barriers on both sides.
    #[inline(always)]
    unsafe fn fill_panel<T: Element, const MR: usize, const VEC: bool>(
        panel: SharedArray<f32, { FEW_ROWS_PANEL as usize }>,
        a: *const T,
        (m, k, p0, plen): (u32, u32, u32, u32),
    ) {
        let kp = FEW_ROWS_PANEL as usize / MR;
        let t = thread::thread_idx_x();
        // Four rows at a time (four loads in flight), the row's columns across the block.
        // Runtime bounds (m, plen): with constant ones LLVM unrolls the loops and keeps every
        // load's address live through the product that follows.
        let src = a.wrapping_add(p0 as usize);
        let mut i0 = 0;
        while i0 < m {
            if VEC {
                let mut c = t;
                while 4 * c < plen {
                    let mut v = [T::RAW4_ZERO; 4];
                    unroll!(r in [0, 1, 2, 3] {
                        if i0 + (r as u32) < m {
                            let at = src.wrapping_add((i0 as usize + r) * k as usize + 4 * c as usize);
                            // SAFETY: row i0 + r < m, columns p0 + 4c .. + 4 <= p0 + plen <= k,
                            // aligned for four elements (k, p0 and 4c are multiples of 4).
                            v[r] = unsafe { T::load4_raw_nc(at) };
                        }
                    });
                    unroll!(r in [0, 1, 2, 3] {
                        if i0 + (r as u32) < m {
                            // SAFETY: (i0 + r) * kp + 4c + 4 <= MR * kp = FEW_ROWS_PANEL (i0 + r <
                            // m <= MR, 4c < plen <= kp), a multiple of 4; this thread alone writes
                            // it between the barriers.
                            unsafe { panel.store4((i0 as usize + r) * kp + 4 * c as usize, T::widen4(v[r])) };
                        }
                    });
                    c += FEW_ROWS_THREADS;
                }
            } else {
                // Zeros past plen up to a multiple of 4: the product reads whole groups of 4.
                let mut c = t;
                while c < plen.next_multiple_of(4) {
                    let mut v = [0u32; 4];
                    unroll!(r in [0, 1, 2, 3] {
                        if i0 + (r as u32) < m && c < plen {
                            let at = src.wrapping_add((i0 as usize + r) * k as usize + c as usize);
                            // SAFETY: row i0 + r < m, column p0 + c < p0 + plen <= k.
                            v[r] = unsafe { T::load_raw_nc(at) };
                        }
                    });
                    unroll!(r in [0, 1, 2, 3] {
                        if i0 + (r as u32) < m {
                            // SAFETY: (i0 + r) * kp + c < FEW_ROWS_PANEL; this thread alone
                            // writes it between the barriers.
                            unsafe { panel.store((i0 as usize + r) * kp + c as usize, T::widen_raw(v[r])) };
                        }
                    });
                    c += FEW_ROWS_THREADS;
                }
            }
            i0 += 4;
        }
    }

    /// Rows `row .. row + 4` of `B`, this thread's 4 columns, as loaded (widened with `VEC` where
    /// used); zero for rows at or past
    /// `row + left` (only off the vector path, where `left` may be under 4). Off the vector path,
    /// columns past the last repeat the last one (unguarded loads keep registers down; the
    /// caller never stores those columns).
    ///
    /// # Safety
    /// `row + min(left, 4) <= k`, `col < n`; with `VEC`, `left >= 4`, `n % 4 == 0` and `b`
    /// aligned for four elements.
    #[inline(always)]
    unsafe fn load_b_rows4<T: Element, const VEC: bool>(
        b: *const T,
        row: u32,
        left: u32,
        n: u32,
        col: u32,
    ) -> [Loaded4<T>; 4] {
        let base = b.wrapping_add(row as usize * n as usize + col as usize);
        let last = (n - 1 - col) as usize;
        let mut rows = [Loaded4::ZERO; 4];
        unroll!(u in [0, 1, 2, 3] {
            if VEC || (u as u32) < left {
                let at = base.wrapping_add(u * n as usize);
                if VEC {
                    // SAFETY: row + u < k; col % 4 == 0 and n % 4 == 0, so the 4 columns are
                    // inside the row, aligned for four elements.
                    rows[u] = Loaded4::of_vector(unsafe { T::load4_raw_nc(at) });
                } else {
                    let mut bits = [0u32; 4];
                    unroll!(j in [0, 1, 2, 3] {
                        // SAFETY: row + u < k, column col + min(j, n - 1 - col) < n.
                        bits[j] = unsafe { T::load_raw_nc(at.add(if j < last { j } else { last })) };
                    });
                    rows[u] = Loaded4::of_scalars(bits);
                }
            }
        });
        rows
    }

    /// `acc[i] += A[i][kl .. kl + 4] * rows` for `i < m`, `A` from the panel.
    ///
    /// # Safety
    /// `kl % 4 == 0`, `kl + 4 <= FEW_ROWS_PANEL / MR`, rows `0..m` of the panel written before a
    /// barrier that precedes this call.
    #[inline(always)]
    unsafe fn fma_rows4<const MR: usize>(
        panel: SharedArray<f32, { FEW_ROWS_PANEL as usize }>,
        m: u32,
        kl: usize,
        rows: &[[f32; 4]; 4],
        acc: &mut [[f32; 4]; 16],
    ) {
        let kp = FEW_ROWS_PANEL as usize / MR;
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if i < MR && (i as u32) < m {
                // SAFETY: i < MR, so i * kp + kl + 4 <= FEW_ROWS_PANEL; 16-byte aligned (kp and
                // kl are multiples of 4); written before the caller's barrier.
                let a4 = unsafe { panel.load4(i * kp + kl) };
                unroll!(u in [0, 1, 2, 3] {
                    unroll!(j in [0, 1, 2, 3] {
                        acc[i][j] = fma(a4[u], rows[u][j], acc[i][j]);
                    });
                });
            }
        });
    }

    /// As `rows_product`, with `A` staged through shared memory: per panel of at most
    /// `FEW_ROWS_PANEL / MR` columns of `A`, a barrier (from the second panel on), the block's copy
    /// of the panel, a barrier, then 4 rows of `B` at a time against the panel, the next 4 loaded
    /// before the current 4 are used.
    ///
    /// # Safety
    /// As `matmul_few_rows_<MR>` (`m <= MR`), `k_begin <= k_end <= k`, called by the whole
    /// block; with `VEC`, the vector-path conditions and `k_begin % 4 == 0`.
    #[inline(always)]
    unsafe fn panel_rows_product<T: Element, const MR: usize, const VEC: bool>(
        a: *const T,
        b: *const T,
        out: *mut f32,
        (m, k, n, col, k_begin, k_end): (u32, u32, u32, u32, u32, u32),
    ) {
        let panel = shared_array!(MATMUL_FEW_ROWS_PANEL: [f32; FEW_ROWS_PANEL as usize]);
        let kp = FEW_ROWS_PANEL / MR as u32;
        let active = col < n;
        let mut acc = [[0.0f32; 4]; 16];
        let mut p0 = k_begin;
        while p0 < k_end {
            let plen = if k_end - p0 < kp { k_end - p0 } else { kp };
            if p0 != k_begin {
                // Every thread is done reading the previous panel.
                thread::sync_threads();
            }
            // SAFETY: m <= MR, p0 + plen <= k_end <= k, plen <= kp; with VEC, k, p0 (k_begin
            // plus multiples of kp) and plen (k_len % 4 == 0 on this path) are multiples of 4.
            unsafe { fill_panel::<T, MR, VEC>(panel, a, (m, k, p0, plen)) };
            thread::sync_threads();
            if active {
                // The next four rows of B are in flight while these four are multiplied.
                // SAFETY: rows p0 + u < p0 + plen <= k for those loaded (plen >= 1); col < n.
                let mut rows = unsafe { load_b_rows4::<T, VEC>(b, p0, plen, n, col) };
                let mut kl = 0;
                while kl < plen {
                    let next = if kl + 4 < plen {
                        // SAFETY: rows p0 + kl + 4 + u < p0 + plen <= k for those loaded; col < n.
                        unsafe { load_b_rows4::<T, VEC>(b, p0 + kl + 4, plen - kl - 4, n, col) }
                    } else {
                        [Loaded4::ZERO; 4]
                    };
                    let wide = rows.map(|r| r.widen::<VEC>());
                    // SAFETY: kl % 4 == 0, kl + 4 <= round_up(plen, 4) <= kp; the panel (zero past
                    // plen up to a multiple of 4) was filled before the barrier.
                    unsafe { fma_rows4::<MR>(panel, m, kl as usize, &wide, &mut acc) };
                    rows = next;
                    kl += 4;
                }
            }
            p0 += plen;
        }
        if !active {
            return;
        }
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if i < MR && (i as u32) < m {
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

    /// Row `row` of `B`, this thread's 4 columns from `col`, zero past the last column.
    ///
    /// # Safety
    /// `row < k`, `col < n`; with `VEC`, `n % 4 == 0` and `b` is aligned for four elements.
    #[inline(always)]
    unsafe fn load_b_row<T: Element, const VEC: bool>(b: *const T, row: u32, n: u32, col: u32) -> [f32; 4] {
        let at = b.wrapping_add(row as usize * n as usize + col as usize);
        if VEC {
            // SAFETY: col % 4 == 0 and n % 4 == 0, so the 4 columns are inside the row, aligned.
            unsafe { T::load4_nc(at) }
        } else if T::DEFERS_WIDENING {
            // Four predicated loads, all issued before the first widening: as four guarded
            // loads, each BF16 widening sat in its load's branch and held the next load back
            // (H200, BF16 one-row shapes 8-12% faster this way: 1x2565x139 9.1 to 8.4 us).
            // SAFETY: forwarded (row < k, col < n).
            unsafe { load_b_row_bits(b, row, n, col) }.map(T::widen_raw)
        } else {
            let mut v = [0.0; 4];
            unroll!(j in [0, 1, 2, 3] {
                if col + (j as u32) < n {
                    // SAFETY: row < k and column col + j < n.
                    v[j] = unsafe { T::load_nc(at.add(j)) };
                }
            });
            v
        }
    }

    /// Row `row` of `B`, this thread's 4 columns from `col` as loaded (not yet widened), zero
    /// past the last column: one predicated load each, no branch.
    ///
    /// # Safety
    /// `row < k`, `col < n`.
    #[inline(always)]
    unsafe fn load_b_row_bits<T: Element>(b: *const T, row: u32, n: u32, col: u32) -> [u32; 4] {
        let at = b.wrapping_add(row as usize * n as usize + col as usize);
        let mut bits = [0u32; 4];
        unroll!(j in [0, 1, 2, 3] {
            // SAFETY: loaded only where row < k and column col + j < n.
            bits[j] = unsafe { T::load_raw_nc_if(at.wrapping_add(j), col + (j as u32) < n) };
        });
        bits
    }

    /// `acc[i] += A[i][kk .. kk + 4] * rows` for `i < m`, `A` from global memory.
    ///
    /// # Safety
    /// `m <= MR`, `kk + 4 <= k`; with `VEC`, `k % 4 == 0`, `kk % 4 == 0` and `a` aligned for
    /// four elements.
    #[inline(always)]
    unsafe fn fma_a_rows4<T: Element, const MR: usize, const VEC: bool>(
        a: *const T,
        (m, k, kk): (u32, u32, u32),
        rows: &[[f32; 4]; 4],
        acc: &mut [[f32; 4]; 16],
    ) {
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if i < MR && (i as u32) < m {
                let a_at = a.wrapping_add(i * k as usize + kk as usize);
                let a4 = if VEC {
                    // SAFETY: row i < m, columns kk..kk+4 <= k; k % 4 == 0 and kk % 4 == 0 keep
                    // it aligned for four elements.
                    unsafe { T::load4_nc(a_at) }
                } else {
                    // SAFETY: row i < m, columns kk..kk+4 <= k.
                    unsafe {
                        [
                            T::load_nc(a_at),
                            T::load_nc(a_at.add(1)),
                            T::load_nc(a_at.add(2)),
                            T::load_nc(a_at.add(3)),
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
    }

    /// The `m x 4` block of `C` at columns `col ..` over `k_begin .. k_end`, written to `out`.
    ///
    /// Rows at or past `MR` are compile-time dead: `MR` bounds the accumulators the kernel keeps.
    ///
    /// # Safety
    /// As `matmul_few_rows_<MR>` (`m <= MR`), with `col < n` and `k_begin <= k_end <= k`; with
    /// `VEC`, the vector-path conditions and `k_begin % 4 == 0`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows_product<T: Element, const MR: usize, const VEC: bool>(
        a: *const T,
        b: *const T,
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
        if !VEC && T::DEFERS_WIDENING {
            // 16-bit rows that are not whole vectors: the next four rows of B are in flight
            // while these four are multiplied. Loaded and used in the same step, ptxas placed
            // each row's FMAs between the step's loads (32 registers), so a step waited on
            // about three round trips where the f32 kernel's waits on one.
            let mut rows = [[0u32; 4]; 4];
            if kk + 4 <= k_end {
                unroll!(u in [0, 1, 2, 3] {
                    // SAFETY: kk + u < k_end <= k and col < n.
                    rows[u] = unsafe { load_b_row_bits(b, kk + u as u32, n, col) };
                });
            }
            while kk + 4 <= k_end {
                let mut next = [[0u32; 4]; 4];
                if kk + 8 <= k_end {
                    unroll!(u in [0, 1, 2, 3] {
                        // SAFETY: kk + 4 + u < k_end <= k and col < n.
                        next[u] = unsafe { load_b_row_bits(b, kk + 4 + u as u32, n, col) };
                    });
                }
                let wide = rows.map(|r| r.map(T::widen_raw));
                // SAFETY: m <= MR, kk + 4 <= k_end <= k.
                unsafe { fma_a_rows4::<T, MR, VEC>(a, (m, k, kk), &wide, &mut acc) };
                rows = next;
                kk += 4;
            }
        }
        while kk + 4 <= k_end {
            // Four rows of B in flight before the first use.
            let mut rows = [[0.0f32; 4]; 4];
            unroll!(u in [0, 1, 2, 3] {
                // SAFETY: kk + u < k_end <= k and col < n.
                rows[u] = unsafe { load_b_row::<T, VEC>(b, kk + u as u32, n, col) };
            });
            // SAFETY: m <= MR, kk + 4 <= k_end <= k; with VEC, k % 4 == 0 and kk % 4 == 0
            // (k_begin % 4 == 0 on that path) and `a` aligned.
            unsafe { fma_a_rows4::<T, MR, VEC>(a, (m, k, kk), &rows, &mut acc) };
            kk += 4;
        }
        // The last k_len % 4 rows (only off the vector path, where k_len can be ragged).
        while kk < k_end {
            // SAFETY: kk < k_end <= k and col < n.
            let row = unsafe { load_b_row::<T, VEC>(b, kk, n, col) };
            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                if i < MR && (i as u32) < m {
                    // SAFETY: row i < m and column kk < k.
                    let x = unsafe { T::load_nc(a.wrapping_add(i * k as usize + kk as usize)) };
                    unroll!(j in [0, 1, 2, 3] {
                        acc[i][j] = fma(x, row[j], acc[i][j]);
                    });
                }
            });
            kk += 1;
        }
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if i < MR && (i as u32) < m {
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

    /// Row `row` of `C` (`n` values) over `k_begin .. k_end`, by one warp, written to `out` by
    /// lanes `0..n`. `VA`: vector loads of `A` (`k % 4 == 0`, `k_begin % 4 == 0`, aligned `a`);
    /// `VB`: vector loads of `B` ([`few_cols_vector_b`](super::few_cols_vector_b), aligned `b`).
    /// Columns at or past `NC` are compile-time dead.
    ///
    /// # Safety
    /// As `matmul_few_cols_<NC>` (`n <= NC`), with `row < m`, `k_begin <= k_end <= k`, and the
    /// whole warp calling.
    #[inline(always)]
    unsafe fn cols_product<T: Element, const NC: usize, const VA: bool, const VB: bool>(
        a: *const T,
        b: *const T,
        out: *mut f32,
        k: u32,
        n: u32,
        (row, k_begin, k_end): (u32, u32, u32),
    ) {
        let lane = warp::lane_id();
        let a_row = a.wrapping_add(row as usize * k as usize);
        let mut acc = [0.0f32; 16];
        let mut k0 = k_begin;
        while k0 < k_end {
            let left = k_end - k0;
            // Eight vector loads of A in flight before the first use (with four, a 65536 x
            // 4096 GEMV read A at 1.5 TB/s).
            let mut a_raw = [Loaded4::<T>::ZERO; FEW_COLS_LOADS as usize];
            let mut a_vals = [[0.0f32; 4]; FEW_COLS_LOADS as usize];
            unroll!(h in [0, 1, 2, 3, 4, 5, 6, 7] {
                let local = 4 * lane + 128 * h as u32;
                let at = a_row.wrapping_add((k0 + local) as usize);
                // SAFETY: columns k0 + local + u < k_end <= k of row < m where admitted; with VA,
                // left % 4 == 0 (the 4 are all inside or all out) and 16-byte aligned (k, k0 and
                // local are multiples of 4).
                unsafe {
                    if T::DEFERS_WIDENING {
                        a_raw[h] = guarded::load4_raw::<T, VA>(at, true, local, left);
                    } else {
                        a_vals[h] = guarded::load4::<T, VA>(at, true, local, left);
                    }
                }
            });
            if T::DEFERS_WIDENING {
                // Widened only once all eight are in flight.
                a_vals = a_raw.map(|v| v.widen::<VA>());
            }
            unroll!(h in [0, 1, 2, 3, 4, 5, 6, 7] {
                let group = 4 * lane + 128 * h as u32;
                if NC == 1 && VB {
                    // One column: B's rows group .. group + 4 are 4 consecutive floats.
                    if group < left {
                        // SAFETY: VB with n == 1 means k % 4 == 0 (so left % 4 == 0 and the 4
                        // rows are all inside) and an aligned b; k0 + group is a multiple of 4.
                        let y = unsafe { T::load4_nc(b.wrapping_add((k0 + group) as usize)) };
                        unroll!(u in [0, 1, 2, 3] {
                            acc[0] = fma(a_vals[h][u], y[u], acc[0]);
                        });
                    }
                } else {
                    unroll!(u in [0, 1, 2, 3] {
                        let local = group + u as u32;
                        if local < left {
                            let b_row = b.wrapping_add((k0 + local) as usize * n as usize);
                            let x = a_vals[h][u];
                            if VB {
                                unroll!(q in [0, 1, 2, 3] {
                                    if 4 * q < NC && 4 * (q as u32) < n {
                                        // SAFETY: row k0 + local < k of B, columns 4q .. 4q + 4 <= n
                                        // (n % 4 == 0), aligned for four elements.
                                        let y = unsafe { T::load4_nc(b_row.add(4 * q)) };
                                        unroll!(t in [0, 1, 2, 3] {
                                            acc[4 * q + t] = fma(x, y[t], acc[4 * q + t]);
                                        });
                                    }
                                });
                            } else {
                                unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
                                    if j < NC && (j as u32) < n {
                                        // SAFETY: row k0 + local < k of B, column j < n.
                                        let y = unsafe { T::load_nc(b_row.add(j)) };
                                        acc[j] = fma(x, y, acc[j]);
                                    }
                                });
                            }
                        }
                    });
                }
            });
            k0 += if left < FEW_COLS_STEP { left } else { FEW_COLS_STEP };
        }
        unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] {
            if j < NC && (j as u32) < n {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_rows_kernel_is_the_shortest_that_holds_m() {
        assert_eq!(few_rows_kernel(1), Some("matmul_few_rows_1"));
        assert_eq!(few_rows_kernel(3), Some("matmul_few_rows_4"));
        assert_eq!(few_rows_kernel(16), Some("matmul_few_rows_16"));
        assert_eq!(few_rows_kernel(17), None);
        assert!(!few_rows_uses_panel(4) && few_rows_uses_panel(5) && few_rows_uses_panel(16));
        assert!(!few_rows_uses_panel(17));
        let (f32, bf16) = (OperandType::F32, OperandType::Bf16);
        assert_eq!((few_rows_blocks_per_sm(f32, 1), few_rows_blocks_per_sm(bf16, 1)), (Some(12), Some(9)));
        assert_eq!((few_rows_blocks_per_sm(f32, 2), few_rows_blocks_per_sm(bf16, 2)), (Some(12), Some(8)));
        assert_eq!((few_rows_blocks_per_sm(bf16, 4), few_rows_blocks_per_sm(OperandType::F16, 3)), (Some(6), Some(6)));
        assert_eq!((few_rows_blocks_per_sm(f32, 4), few_rows_blocks_per_sm(OperandType::F16, 5)), (Some(8), Some(4)));
        assert_eq!((few_rows_blocks_per_sm(bf16, 9), few_rows_blocks_per_sm(f32, 16)), (Some(3), Some(3)));
        assert_eq!(few_rows_blocks_per_sm(f32, 17), None);
        assert_eq!(FEW_ROWS_KERNELS.last().unwrap().0, FEW_ROWS_MAX_M);
    }

    #[test]
    fn few_cols_kernel_is_the_smallest_that_holds_n() {
        assert_eq!(few_cols_kernel(1), Some("matmul_few_cols_1"));
        assert_eq!(few_cols_kernel(5), Some("matmul_few_cols_8"));
        assert_eq!(few_cols_kernel(17), None);
        assert_eq!(FEW_COLS_KERNELS.last().unwrap().0, FEW_COLS_MAX_N);
    }

    #[test]
    fn launch_contracts_use_whole_warps() {
        assert_eq!(FEW_ROWS_BLOCK_COLS, 512);
        assert_eq!(FEW_COLS_ROWS_PER_BLOCK, 8);
        assert_eq!(FEW_COLS_STEP, 1024);
        assert!(FEW_COLS_THREADS.is_multiple_of(32) && FEW_ROWS_THREADS.is_multiple_of(32));
    }

    #[test]
    fn vector_paths_need_rows_that_start_on_16_bytes() {
        assert!(few_rows_vector_path(4096, 65_536) && !few_rows_vector_path(4096, 5) && !few_rows_vector_path(6, 8));
        assert!(few_cols_vector_path(100_000) && !few_cols_vector_path(4097));
        assert!(few_cols_vector_b(4096, 1) && !few_cols_vector_b(4097, 1));
        assert!(few_cols_vector_b(4097, 8) && !few_cols_vector_b(4096, 5));
    }
}
