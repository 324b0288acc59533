// Over 600 lines with its documentation: about 470 lines of code; the rest are doc comments (launch
// contracts, the algorithm) and 40 lines of unit tests.
//! `wgmma_bf16`, `wgmma_f16`, `wgmma_tf32_transposed` and `wgmma_tf32`: Hopper tensor-core
//! matrix products, `C = A * B` with `f32` accumulation and output, operands copied by the TMA
//! into a ring of shared-memory stages and multiplied by `wgmma` (sm_90a only: these kernels build
//! into the second PTX module, `kernels_sm90a.ptx`, with the `hopper` feature).
//!
//! This documentation is that of the first three, which share one body; `wgmma_tf32` (`C^T =
//! B^T A^T` with `B` through registers) is documented at its body (`gpu_rs`).
//!
//! # Parameters
//! `maps`: tensor maps (`A`, then `B`, then for `wgmma_bf16` with `n % 4 == 0` and no split of
//! `k` `C`, [`TENSOR_MAP_BYTES`] each) in global memory, 64-byte aligned; `c`: row-major `C[m x
//! n]` `f32`; `m, k, n >= 1`; `k_chunk`: columns of `k` per split, a multiple of the stage's `K`
//! ([`Operand::block_k`]) when it is less than `k`, so that `splits = ceil(k / k_chunk)`
//! ([`split_k_stages`]); `k_chunk >= k` is no split. With a split, `partials` holds the `splits`
//! partial products `C_z[m x n]` one after another (split `z` at `partials + z * m * n`) and
//! `counters` one `u32` per block tile, zero at the launch (the launch leaves them zero): each
//! work item stores its partial product, and the last of a tile's items to finish adds the
//! tile's partial products in split order into `C` (`split_tail::finish` in the source);
//! without a split both may be null. `wgmma_bf16` and `wgmma_f16` (with or without `_n128`) take
//! no split, only their `_rows` and `_cluster` forms do (given one, they trap). The `_cluster`
//! forms run a split of `k` (2 to [`MAX_CLUSTER_SPLITS`]) without `partials` and `counters`
//! (both may be null): a block per work item, launched in clusters of `splits` blocks (block
//! `b` is split `b % splits` of tile `b / splits`); once every block of a cluster has its
//! partial product in its shared memory, each adds its share of the tile's rows in split order
//! from all of them (`cluster_sum` in the source, the same bits as `split_tail::finish`) into
//! `C`. A `_cluster` kernel launched otherwise traps.
//! - `wgmma_bf16`: `A` is `m x k` BF16 row-major (K-major), `B` is `k x n` BF16 row-major
//!   (N-major, which the instruction's transpose bit takes), rows padded to 16 bytes.
//!   Maps: `A` dims `{k, m}`, box `{64, a_box_rows(m, 128)}`; `B` dims `{n, k}`, box `{64,
//!   64}`; when `n % 4 == 0`, `C` (`f32`, the same memory as `c`) dims `{n, m}`, box `{32, 64}`;
//!   128-byte swizzle.
//! - `wgmma_f16`: the same with F16 (IEEE half) `A` and `B` (`m64n256k16.f32.f16.f16`).
//! - The `_ld` forms of the 16-bit 128 x 64 and 128 x 128 kernels ([`KERNEL_BF16_N64_LD`]): no
//!   maps; `A` and `B` row-major at any leading dimension from any 2-byte boundary, loaded by
//!   a producer warpgroup ([`LD_THREADS`] threads a block).
//! - `wgmma_tf32_transposed`: `A` is `m x k` `f32` (K-major) and `Bt = B^T` is `n x k` `f32`
//!   (K-major: TF32 takes no transpose), rows padded to 16 bytes. Maps: `A` dims `{k, m}`, box
//!   `{32, a_box_rows(m, 128)}`; `Bt` dims `{k, n}`, box `{32, 256}`; 128-byte swizzle.
//!
//! The TMA reads zeros outside the tensors, so ragged edges of `m`, `n` and `k` need no code:
//! zeros add nothing to the products. Where `m` is under a tile's rows, `A`'s box stops at the
//! 8-row atom past row `m` ([`a_box_rows`]) and the kernels zero the tile's other rows once. The
//! epilogues stage the accumulators in shared memory, a warpgroup's 64 rows x 32 columns at a
//! time: with the `C` map the TMA stores each box (and skips elements outside the tensor; a
//! warpgroup whose rows all lie past `m` stores none); in `wgmma_bf16_rows` and `wgmma_f16_rows`
//! (which the host launches where `C`'s rows are not 16-byte aligned or a split of `k` writes
//! partial products) the warpgroup reads each box back by rows and stores each row's 32 floats
//! from one warp instruction, guarded. The other kernels store without a map (`wgmma_tf32_transposed`;
//! `wgmma_bf16`/`wgmma_f16` given no `C` map) straight from the accumulators' fragments.
//!
//! # Thread mapping
//! [`THREADS`] = 288: warpgroups 0 and 1 (warps 0-7) consume, each multiplying its 64 rows of
//! the 128 x 256 block tile with `m64n256k16` (BF16, F16) or `m64n256k8` (TF32) instructions into
//! 128 `f32` accumulators per thread; warp 8 produces: its first lane issues the TMA copies.
//!
//! # Tiling
//! Block tile [`BLOCK_M`] x [`BLOCK_N`], [`BLOCK_K_BYTES`] of `K` per stage (64 BF16 or F16, or
//! 32 TF32: one 128-byte swizzle row), [`STAGES`] stages of [`STAGE_BYTES`] each. Persistent grid: block
//! `b` takes work items `b, b + grid, ...` of `tiles x splits` ([`work_item`]: a tile in
//! [`tile_coords`] order, bands of [`GROUP_M`] tile rows, so that the tiles in flight share their
//! rows of `A` and columns of `B` in L2, or a row of tiles at a time where `k` is at most
//! [`ROW_ORDER_MAX_K`] and the tiles' time is their stores; and a split of `k`, [`split_k_stages`]). Each stage
//! has a `full` barrier (the producer's expected bytes, completed by the TMA) and an `empty`
//! barrier (one arrival per consumer warpgroup, from its first thread, once the `wgmma` reading
//! the stage completed: CUTLASS's `PipelineTmaAsync`; 256 per-thread arrivals measured the same).
//!
//! # Epilogue
//! `wgmma_bf16` and `wgmma_f16` with `n % 4 == 0` and no split of `k` store `C` through shared memory: each consumer
//! warpgroup writes its 64 x 256 part as 8 boxes of 64 rows x 32 columns (128-byte swizzled, so
//! that a warp's 8 rows land in different banks) into [`EPILOGUE_BUFFERS`] boxes of its own, and
//! its first thread has the TMA store each box (`cp.async.bulk.tensor` shared -> global, whole
//! 128-byte lines) while the warpgroup fills the next; the last stores drain while the next
//! tile's `wgmma` run. Otherwise (and in `wgmma_tf32_transposed`) each thread stores its
//! accumulator pairs directly.
//!
//! # Safety
//! The maps describe the operands as above, with the boxes and swizzle given; `c` holds `m*n`
//! `f32` and overlaps nothing the `A` and `B` maps describe; with a split, `partials` holds
//! `splits*m*n` `f32` overlapping none of the others, and `counters` holds a zero `u32` per tile
//! that no other launch uses while this one runs (the `_rows` forms; the `_cluster` forms take a
//! grid of `tiles x splits` blocks in clusters of `splits` instead); the `C` map, where there is one, describes
//! `c`; the block is [`THREADS`] threads and the launch gives [`DYNAMIC_SHARED_BYTES`] bytes of
//! dynamic shared memory ([`dynamic_shared_bytes`] of the kernel's tile and stages).

use crate::device::mbarrier;
pub use crate::device::tma::TENSOR_MAP_BYTES;

/// PTX symbol of the BF16 kernel.
pub const KERNEL_BF16: &str = "wgmma_bf16";
/// PTX symbol of the F16 kernel (`wgmma_bf16`'s body on IEEE half operands).
pub const KERNEL_F16: &str = "wgmma_f16";
/// PTX symbol of the TF32 kernel on `B^T` (transposed by the host on the GPU).
pub const KERNEL_TF32_TRANSPOSED: &str = "wgmma_tf32_transposed";
/// PTX symbol of the TF32 kernel that multiplies `C^T = B^T A^T` with `B^T` from registers.
pub const KERNEL_TF32: &str = "wgmma_tf32";
/// PTX symbol of the TF32 kernel that accumulates in the tensor cores for
/// [`PROMOTE_K_TILES`] stages at a time and adds each such partial product into `f32`
/// registers (the promoted kernel documented in this module's source): the product of `wgmma_tf32x3`'s split operands.
pub const KERNEL_TF32_PROMOTED: &str = "wgmma_tf32_promoted";
/// PTX symbol of `wgmma_bf16` with the row-staged epilogue only (no `C` map): the kernel the
/// host launches where `C`'s rows are not 16-byte aligned or `k` is split. A kernel of its own
/// because the two epilogues together take more registers than a 288-thread block may have.
pub const KERNEL_BF16_ROWS: &str = "wgmma_bf16_rows";
/// PTX symbol of `wgmma_f16` with the row-staged epilogue only (as [`KERNEL_BF16_ROWS`]).
pub const KERNEL_F16_ROWS: &str = "wgmma_f16_rows";
/// PTX symbol of `wgmma_bf16` on tiles of 128 x [`N128_BLOCK_N`] (`m64n128k16`).
pub const KERNEL_BF16_N128: &str = "wgmma_bf16_n128";
/// PTX symbol of `wgmma_f16` on tiles of 128 x [`N128_BLOCK_N`].
pub const KERNEL_F16_N128: &str = "wgmma_f16_n128";
/// PTX symbol of `wgmma_bf16_n128` with the row-staged epilogue only (as [`KERNEL_BF16_ROWS`]).
pub const KERNEL_BF16_N128_ROWS: &str = "wgmma_bf16_n128_rows";
/// PTX symbol of `wgmma_f16_n128` with the row-staged epilogue only.
pub const KERNEL_F16_N128_ROWS: &str = "wgmma_f16_n128_rows";
/// PTX symbol of `wgmma_tf32` on tiles of [`TF32_N64_BLOCK_ROWS`] x [`TF32_N64_BLOCK_COLS`] of
/// `C` (`m64n64k8` on `C^T`, both consumer warpgroups on the same 64 columns, 64 rows each,
/// [`TF32_N64_STAGES`] stages): outputs at most 64 columns wide, where `wgmma_tf32`'s 128
/// columns are mostly padding.
pub const KERNEL_TF32_N64: &str = "wgmma_tf32_n64";
/// PTX symbol of `wgmma_tf32` reading an `A` whose rows are not 16-byte multiples as it lies:
/// rows `r, r + 4, r + 8, ...` ("class" `r`, [`class_rows`]) are `16 x ld` bytes apart, so each
/// class is a tensor map of its own, from its first row's start rounded down to 16 bytes; a
/// tile takes rows of one class ([`class_tile`]), its map's rows starting the class's offset
/// ([`class_offsets`]) early, and `B`'s rows of `k` start as many early to match (rows before 0
/// load as zeros). Where `A` would otherwise be copied into 16-byte rows first.
pub const KERNEL_TF32_UNALIGNED_A: &str = "wgmma_tf32_unaligned_a";
/// [`KERNEL_TF32_UNALIGNED_A`] on `wgmma_tf32_n128`'s tiles.
pub const KERNEL_TF32_N128_UNALIGNED_A: &str = "wgmma_tf32_n128_unaligned_a";
/// [`KERNEL_TF32_UNALIGNED_A`] on `wgmma_tf32_n64`'s tiles.
pub const KERNEL_TF32_N64_UNALIGNED_A: &str = "wgmma_tf32_n64_unaligned_a";
/// PTX symbol of `wgmma_bf16` on tiles of 128 x [`N64_BLOCK_N`] (`m64n64k16`, [`N64_STAGES`]
/// stages): narrow outputs and mid-sized products, which the wider tiles leave as too few
/// tiles for the SMs or as padding columns.
pub const KERNEL_BF16_N64: &str = "wgmma_bf16_n64";
/// PTX symbol of `wgmma_f16` on tiles of 128 x [`N64_BLOCK_N`].
pub const KERNEL_F16_N64: &str = "wgmma_f16_n64";
/// PTX symbol of `wgmma_bf16_n64` with the row-staged epilogue only (as [`KERNEL_BF16_ROWS`]).
pub const KERNEL_BF16_N64_ROWS: &str = "wgmma_bf16_n64_rows";
/// PTX symbol of `wgmma_f16_n64` with the row-staged epilogue only.
pub const KERNEL_F16_N64_ROWS: &str = "wgmma_f16_n64_rows";
/// PTX symbol of `wgmma_tf32` on tiles of 128 x 128 of `C` (`m64n128k8` on `C^T`, `A` in boxes
/// of 128 rows).
pub const KERNEL_TF32_N128: &str = "wgmma_tf32_n128";
/// PTX symbol of `wgmma_tf32` on tiles of [`N16_BLOCK_ROWS`] rows x 128 columns of `C`
/// (`m64n16k8` on `C^T`, [`N16_STAGES`] stages): `m <= 16`, where the time is the time to read
/// `B` and the wider tiles' rows would be padding.
pub const KERNEL_TF32_N16: &str = "wgmma_tf32_n16";
/// PTX symbol of `wgmma_bf16` on [`KERNEL_TF32_N16`]'s tiles and pipeline (`m64n16k16` on
/// `C^T`, `B` as the instruction's M-major operand): `m <= 16`.
pub const KERNEL_BF16_N16: &str = "wgmma_bf16_n16";
/// PTX symbol of `wgmma_f16` on 16-row tiles ([`KERNEL_BF16_N16`]).
pub const KERNEL_F16_N16: &str = "wgmma_f16_n16";
/// PTX symbol of `wgmma_bf16` for a split of `k` launched in clusters: a cluster's blocks are one
/// tile's splits, and add their partial products through each other's shared memory, with no
/// workspace and no counters (`cluster_sum` in the source).
pub const KERNEL_BF16_CLUSTER: &str = "wgmma_bf16_cluster";
/// PTX symbol of `wgmma_f16`'s cluster-summed split ([`KERNEL_BF16_CLUSTER`]).
pub const KERNEL_F16_CLUSTER: &str = "wgmma_f16_cluster";
/// PTX symbol of `wgmma_bf16_n128`'s cluster-summed split ([`KERNEL_BF16_CLUSTER`]).
pub const KERNEL_BF16_N128_CLUSTER: &str = "wgmma_bf16_n128_cluster";
/// PTX symbol of `wgmma_f16_n128`'s cluster-summed split ([`KERNEL_BF16_CLUSTER`]).
pub const KERNEL_F16_N128_CLUSTER: &str = "wgmma_f16_n128_cluster";
/// PTX symbol of `wgmma_bf16_n64`'s cluster-summed split ([`KERNEL_BF16_CLUSTER`]).
pub const KERNEL_BF16_N64_CLUSTER: &str = "wgmma_bf16_n64_cluster";
/// PTX symbol of `wgmma_f16_n64`'s cluster-summed split ([`KERNEL_BF16_CLUSTER`]).
pub const KERNEL_F16_N64_CLUSTER: &str = "wgmma_f16_n64_cluster";
/// PTX symbol of `wgmma_bf16_n64_rows` whose operands the block loads itself from rows of any
/// length (`_ld`): a producer warpgroup of [`LD_THREADS`] reads `A` and `B` as they lie in
/// memory, element by element (predicated 2-byte loads, zeros outside the matrices), and writes
/// them into the ring in the 128-byte swizzled layout the TMA would have given, so that rows
/// which are not 16-byte multiples (which the TMA cannot read) need no copy first.
pub const KERNEL_BF16_N64_LD: &str = "wgmma_bf16_n64_ld";
/// PTX symbol of `wgmma_f16_n64_rows` loading its operands as they lie ([`KERNEL_BF16_N64_LD`]).
pub const KERNEL_F16_N64_LD: &str = "wgmma_f16_n64_ld";
/// PTX symbol of `wgmma_bf16_n128_rows` loading its operands as they lie ([`KERNEL_BF16_N64_LD`]).
pub const KERNEL_BF16_N128_LD: &str = "wgmma_bf16_n128_ld";
/// PTX symbol of `wgmma_f16_n128_rows` loading its operands as they lie ([`KERNEL_BF16_N64_LD`]).
pub const KERNEL_F16_N128_LD: &str = "wgmma_f16_n128_ld";
/// Threads per block of the `_ld` kernels: the two consumer warpgroups and a producer
/// warpgroup whose 128 threads load the operands.
pub const LD_THREADS: u32 = (CONSUMERS + 1) * 128;
/// Threads of an `_ld` kernel's producer warpgroup: each arrives on a stage's `full` barrier
/// once its share of the stage is in shared memory.
pub const LD_PRODUCERS: u32 = 128;

/// The `_ld` form of a 16-bit tile kernel on 128 x 64 or 128 x 128 tiles (any epilogue), if it
/// has one: its operands read as they lie ([`KERNEL_BF16_N64_LD`]).
///
/// ```
/// use kernels::matmul::wgmma::{ld_kernel, KERNEL_BF16_N64_ROWS, KERNEL_F16_N128, KERNEL_BF16};
/// assert_eq!(ld_kernel(KERNEL_BF16_N64_ROWS), Some("wgmma_bf16_n64_ld"));
/// assert_eq!(ld_kernel(KERNEL_F16_N128), Some("wgmma_f16_n128_ld"));
/// assert_eq!(ld_kernel(KERNEL_BF16), None);
/// ```
pub const fn ld_kernel(kernel: &str) -> Option<&'static str> {
    match kernel.as_bytes() {
        b"wgmma_bf16_n64" | b"wgmma_bf16_n64_rows" | b"wgmma_bf16_n64_ld" => Some(KERNEL_BF16_N64_LD),
        b"wgmma_f16_n64" | b"wgmma_f16_n64_rows" | b"wgmma_f16_n64_ld" => Some(KERNEL_F16_N64_LD),
        b"wgmma_bf16_n128" | b"wgmma_bf16_n128_rows" | b"wgmma_bf16_n128_ld" => Some(KERNEL_BF16_N128_LD),
        b"wgmma_f16_n128" | b"wgmma_f16_n128_rows" | b"wgmma_f16_n128_ld" => Some(KERNEL_F16_N128_LD),
        _ => None,
    }
}

/// Whether `kernel` is one of the `_ld` kernels ([`ld_kernel`]).
///
/// ```
/// use kernels::matmul::wgmma::is_ld_kernel;
/// assert!(is_ld_kernel("wgmma_f16_n64_ld") && !is_ld_kernel("wgmma_f16_n64_rows"));
/// ```
pub const fn is_ld_kernel(kernel: &str) -> bool {
    matches!(
        kernel.as_bytes(),
        b"wgmma_bf16_n64_ld" | b"wgmma_f16_n64_ld" | b"wgmma_bf16_n128_ld" | b"wgmma_f16_n128_ld"
    )
}

/// The most splits of `k` a `_cluster` kernel adds: blocks per cluster, the portable most.
pub const MAX_CLUSTER_SPLITS: u32 = 8;
/// Floats after each row of a `_cluster` kernel's partial product in shared memory: 8, so that a
/// half-warp's 8-byte stores to 4 rows land in different banks, and rows stay 16-byte aligned.
pub const CLUSTER_SUM_PAD: u32 = 8;
/// Bytes of a `_cluster` kernel's partial product of a tile `block_n` wide in shared memory
/// (in the ring, which the block's one work item has finished with by then).
///
/// ```
/// use kernels::matmul::wgmma::{BLOCK_N, N128_BLOCK_N, N128_STAGES, STAGES, BLOCK_M, BLOCK_K_BYTES, cluster_sum_bytes};
/// // It fits the ring of either tile width.
/// assert!(cluster_sum_bytes(BLOCK_N) <= STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K_BYTES);
/// assert!(cluster_sum_bytes(N128_BLOCK_N) <= N128_STAGES * (BLOCK_M + N128_BLOCK_N) * BLOCK_K_BYTES);
/// ```
pub const fn cluster_sum_bytes(block_n: u32) -> u32 {
    BLOCK_M * (block_n + CLUSTER_SUM_PAD) * 4
}
const _: () = assert!(cluster_sum_bytes(BLOCK_N) <= STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K_BYTES);
const _: () = assert!(cluster_sum_bytes(N128_BLOCK_N) <= N128_STAGES * (BLOCK_M + N128_BLOCK_N) * BLOCK_K_BYTES);
const _: () = assert!(cluster_sum_bytes(N64_BLOCK_N) <= N64_STAGES * (BLOCK_M + N64_BLOCK_N) * BLOCK_K_BYTES);
/// The kernels of the sm_90a module.
pub const KERNEL_NAMES: &[&str] = &[
    KERNEL_BF16,
    KERNEL_F16,
    KERNEL_TF32_TRANSPOSED,
    KERNEL_TF32,
    KERNEL_TF32_PROMOTED,
    KERNEL_BF16_ROWS,
    KERNEL_F16_ROWS,
    KERNEL_BF16_N128,
    KERNEL_F16_N128,
    KERNEL_BF16_N128_ROWS,
    KERNEL_F16_N128_ROWS,
    KERNEL_TF32_N128,
    KERNEL_TF32_N16,
    KERNEL_BF16_N16,
    KERNEL_F16_N16,
    KERNEL_BF16_CLUSTER,
    KERNEL_F16_CLUSTER,
    KERNEL_BF16_N128_CLUSTER,
    KERNEL_F16_N128_CLUSTER,
    KERNEL_BF16_N64,
    KERNEL_F16_N64,
    KERNEL_BF16_N64_ROWS,
    KERNEL_F16_N64_ROWS,
    KERNEL_BF16_N64_CLUSTER,
    KERNEL_F16_N64_CLUSTER,
    KERNEL_TF32_N64,
    KERNEL_TF32_UNALIGNED_A,
    KERNEL_TF32_N128_UNALIGNED_A,
    KERNEL_TF32_N64_UNALIGNED_A,
    KERNEL_BF16_N64_LD,
    KERNEL_F16_N64_LD,
    KERNEL_BF16_N128_LD,
    KERNEL_F16_N128_LD,
];
/// The cluster-summed kernel for `kernel` (`wgmma_bf16`, `wgmma_f16`, their `_n128` and `_n64` forms, or
/// any of their `_rows` forms), if it has one.
///
/// ```
/// use kernels::matmul::wgmma::{cluster_kernel, KERNEL_BF16_N128_ROWS, KERNEL_BF16_N128_CLUSTER, KERNEL_F16, KERNEL_F16_CLUSTER, KERNEL_TF32};
/// assert_eq!(cluster_kernel(KERNEL_BF16_N128_ROWS), Some(KERNEL_BF16_N128_CLUSTER));
/// assert_eq!(cluster_kernel(KERNEL_F16), Some(KERNEL_F16_CLUSTER));
/// assert_eq!(cluster_kernel(KERNEL_TF32), None);
/// ```
pub const fn cluster_kernel(kernel: &str) -> Option<&'static str> {
    match kernel.as_bytes() {
        b"wgmma_bf16" | b"wgmma_bf16_rows" | b"wgmma_bf16_cluster" => Some(KERNEL_BF16_CLUSTER),
        b"wgmma_f16" | b"wgmma_f16_rows" | b"wgmma_f16_cluster" => Some(KERNEL_F16_CLUSTER),
        b"wgmma_bf16_n128" | b"wgmma_bf16_n128_rows" | b"wgmma_bf16_n128_cluster" => Some(KERNEL_BF16_N128_CLUSTER),
        b"wgmma_f16_n128" | b"wgmma_f16_n128_rows" | b"wgmma_f16_n128_cluster" => Some(KERNEL_F16_N128_CLUSTER),
        b"wgmma_bf16_n64" | b"wgmma_bf16_n64_rows" | b"wgmma_bf16_n64_cluster" => Some(KERNEL_BF16_N64_CLUSTER),
        b"wgmma_f16_n64" | b"wgmma_f16_n64_rows" | b"wgmma_f16_n64_cluster" => Some(KERNEL_F16_N64_CLUSTER),
        _ => None,
    }
}
/// The row-staged kernel for `kernel` (`wgmma_bf16`, `wgmma_f16` or their `_n128` and `_n64` forms), else
/// `kernel` itself.
///
/// ```
/// use kernels::matmul::wgmma::{rows_kernel, KERNEL_BF16, KERNEL_BF16_ROWS, KERNEL_F16_N128, KERNEL_F16_N128_ROWS, KERNEL_TF32};
/// assert_eq!(rows_kernel(KERNEL_BF16), KERNEL_BF16_ROWS);
/// assert_eq!(rows_kernel(KERNEL_F16_N128), KERNEL_F16_N128_ROWS);
/// assert_eq!(rows_kernel(KERNEL_TF32), KERNEL_TF32);
/// ```
pub const fn rows_kernel(kernel: &'static str) -> &'static str {
    match kernel.as_bytes() {
        b"wgmma_bf16" => KERNEL_BF16_ROWS,
        b"wgmma_f16" => KERNEL_F16_ROWS,
        b"wgmma_bf16_n128" => KERNEL_BF16_N128_ROWS,
        b"wgmma_f16_n128" => KERNEL_F16_N128_ROWS,
        b"wgmma_bf16_n64" => KERNEL_BF16_N64_ROWS,
        b"wgmma_f16_n64" => KERNEL_F16_N64_ROWS,
        _ => kernel,
    }
}

/// The kernel of the same family and operands as `kernel` whose instruction is `m64n{n}`:
/// tiles 256 (`n = 256`), 128 (`n = 128`) or, for the 16-bit kernels, 64 wide (`n = 64`), or
/// for the TF32 kernels, which tile `C^T`, of 256, 128 rows of `C` (and `n = 64`: 128 x 64
/// tiles, [`KERNEL_TF32_N64`]); `n = 16` is the `_n16`
/// kernels' 16 rows of `C` on `C^T` in every family ([`KERNEL_TF32_N16`], [`KERNEL_BF16_N16`]);
/// `None` where the family has no such kernel.
///
/// ```
/// use kernels::matmul::wgmma::{with_tile, KERNEL_BF16, KERNEL_BF16_N128, KERNEL_BF16_N64_ROWS, KERNEL_BF16_ROWS, KERNEL_TF32, KERNEL_TF32_N128, KERNEL_TF32_N16, KERNEL_TF32_PROMOTED};
/// assert_eq!(with_tile(KERNEL_BF16, 128), Some(KERNEL_BF16_N128));
/// assert_eq!(with_tile(KERNEL_TF32_N128, 256), Some(KERNEL_TF32));
/// assert_eq!(with_tile(KERNEL_TF32, 16), Some(KERNEL_TF32_N16));
/// assert_eq!(with_tile(KERNEL_BF16, 16), Some("wgmma_bf16_n16"));
/// assert_eq!(with_tile(KERNEL_BF16, 64), Some("wgmma_bf16_n64"));
/// assert_eq!(with_tile(KERNEL_BF16_ROWS, 64), Some(KERNEL_BF16_N64_ROWS));
/// assert_eq!(with_tile(KERNEL_TF32, 64), Some("wgmma_tf32_n64"));
/// assert_eq!(with_tile(KERNEL_TF32_PROMOTED, 128), None);
/// ```
pub const fn with_tile(kernel: &str, n: u32) -> Option<&'static str> {
    let (wide, narrow, n64, n16) = match kernel.as_bytes() {
        b"wgmma_bf16" | b"wgmma_bf16_n128" | b"wgmma_bf16_n64" | b"wgmma_bf16_n16" => {
            (KERNEL_BF16, KERNEL_BF16_N128, Some(KERNEL_BF16_N64), Some(KERNEL_BF16_N16))
        }
        b"wgmma_f16" | b"wgmma_f16_n128" | b"wgmma_f16_n64" | b"wgmma_f16_n16" => {
            (KERNEL_F16, KERNEL_F16_N128, Some(KERNEL_F16_N64), Some(KERNEL_F16_N16))
        }
        b"wgmma_bf16_rows" | b"wgmma_bf16_n128_rows" | b"wgmma_bf16_n64_rows" => {
            (KERNEL_BF16_ROWS, KERNEL_BF16_N128_ROWS, Some(KERNEL_BF16_N64_ROWS), Some(KERNEL_BF16_N16))
        }
        b"wgmma_f16_rows" | b"wgmma_f16_n128_rows" | b"wgmma_f16_n64_rows" => {
            (KERNEL_F16_ROWS, KERNEL_F16_N128_ROWS, Some(KERNEL_F16_N64_ROWS), Some(KERNEL_F16_N16))
        }
        b"wgmma_tf32" | b"wgmma_tf32_n128" | b"wgmma_tf32_n64" | b"wgmma_tf32_n16" => {
            (KERNEL_TF32, KERNEL_TF32_N128, Some(KERNEL_TF32_N64), Some(KERNEL_TF32_N16))
        }
        _ => return None,
    };
    match n {
        256 => Some(wide),
        128 => Some(narrow),
        64 => n64,
        16 => n16,
        _ => None,
    }
}
/// The form of TF32 tile kernel `kernel` that reads an `A` of any row length as it lies
/// ([`KERNEL_TF32_UNALIGNED_A`]), if it has one.
///
/// ```
/// use kernels::matmul::wgmma::{unaligned_a_kernel, KERNEL_TF32, KERNEL_TF32_N16, KERNEL_TF32_N64_UNALIGNED_A};
/// assert_eq!(unaligned_a_kernel(KERNEL_TF32), Some("wgmma_tf32_unaligned_a"));
/// assert_eq!(unaligned_a_kernel("wgmma_tf32_n64"), Some(KERNEL_TF32_N64_UNALIGNED_A));
/// assert_eq!(unaligned_a_kernel(KERNEL_TF32_N16), None);
/// ```
pub const fn unaligned_a_kernel(kernel: &str) -> Option<&'static str> {
    match kernel.as_bytes() {
        b"wgmma_tf32" => Some(KERNEL_TF32_UNALIGNED_A),
        b"wgmma_tf32_n128" => Some(KERNEL_TF32_N128_UNALIGNED_A),
        b"wgmma_tf32_n64" => Some(KERNEL_TF32_N64_UNALIGNED_A),
        _ => None,
    }
}

/// The kernel [`unaligned_a_kernel`] made of, for one of its results; `kernel` itself otherwise.
///
/// ```
/// use kernels::matmul::wgmma::aligned_a_kernel;
/// assert_eq!(aligned_a_kernel("wgmma_tf32_n128_unaligned_a"), "wgmma_tf32_n128");
/// assert_eq!(aligned_a_kernel("wgmma_bf16"), "wgmma_bf16");
/// ```
pub const fn aligned_a_kernel(kernel: &str) -> &str {
    match kernel.as_bytes() {
        b"wgmma_tf32_unaligned_a" => KERNEL_TF32,
        b"wgmma_tf32_n128_unaligned_a" => KERNEL_TF32_N128,
        b"wgmma_tf32_n64_unaligned_a" => KERNEL_TF32_N64,
        _ => kernel,
    }
}

/// Columns the unaligned-`A` kernels count past `A`'s `k` (their `k` argument is `k` plus this):
/// a class's rows start up to 3 columns early, so its stages end up to 3 columns late.
pub const UNALIGNED_A_EXTRA_K: u32 = 3;

/// Threads per block of `wgmma_tf32`: two consumer warpgroups and a producer warpgroup,
/// whole so that it can give registers to the consumers (`setmaxnreg`).
pub const TF32_THREADS: u32 = (CONSUMERS + 1) * 128;
/// Registers the producer warpgroup of `wgmma_tf32` keeps.
pub const TF32_PRODUCER_REGISTERS: u32 = 40;
/// Registers each consumer thread of `wgmma_tf32` takes: 128 accumulators, two sets of 16
/// fragment registers and addresses. `128 * 40 + 256 * 232 = 64,512` of the SM's 65,536.
pub const TF32_CONSUMER_REGISTERS: u32 = 232;
/// `.maxntid` of the kernels that need one, which `cargo xtask build-ptx` writes into the PTX:
/// `wgmma_tf32`'s register cap at entry, which its launch needs and `setmaxnreg` needs to take
/// effect; for the row-staged kernels the cap that keeps the driver's JIT within the 168
/// registers a 288-thread block may have (ptxas gives them 168 under it, about 190 without, and
/// the uncapped JIT's launch failed with `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`), and for
/// `wgmma_tf32_transposed`, whose split of `k` is summed in the kernel (it has no `_rows` form).
/// `wgmma_bf16`, `wgmma_f16` and their `_n128` forms launch without it (154 registers from the
/// driver's JIT), and ran faster so: `wgmma_bf16` at 8192^3 took 1.526-1.544 ms without and
/// 1.627-1.686 ms with `.maxntid 288` (same process, alternating; 4096^3 within the spread).
pub const MAX_THREADS: &[(&str, u32)] = &[
    (KERNEL_TF32_TRANSPOSED, THREADS),
    (KERNEL_TF32, TF32_THREADS),
    (KERNEL_TF32_PROMOTED, TF32_THREADS),
    (KERNEL_TF32_N128, TF32_THREADS),
    (KERNEL_TF32_N16, TF32_THREADS),
    (KERNEL_TF32_N64, TF32_THREADS),
    (KERNEL_TF32_UNALIGNED_A, TF32_THREADS),
    (KERNEL_TF32_N128_UNALIGNED_A, TF32_THREADS),
    (KERNEL_TF32_N64_UNALIGNED_A, TF32_THREADS),
    (KERNEL_BF16_N16, TF32_THREADS),
    (KERNEL_F16_N16, TF32_THREADS),
    (KERNEL_BF16_ROWS, THREADS),
    (KERNEL_F16_ROWS, THREADS),
    (KERNEL_BF16_CLUSTER, THREADS),
    (KERNEL_F16_CLUSTER, THREADS),
    (KERNEL_BF16_N128_CLUSTER, THREADS),
    (KERNEL_F16_N128_CLUSTER, THREADS),
    (KERNEL_BF16_N64_ROWS, THREADS),
    (KERNEL_F16_N64_ROWS, THREADS),
    (KERNEL_BF16_N64_CLUSTER, THREADS),
    (KERNEL_F16_N64_CLUSTER, THREADS),
    (KERNEL_BF16_N64_LD, LD_THREADS),
    (KERNEL_F16_N64_LD, LD_THREADS),
    (KERNEL_BF16_N128_LD, LD_THREADS),
    (KERNEL_F16_N128_LD, LD_THREADS),
];
/// `.maxntid` of every kernel in the checked build (`cargo xtask build-ptx` without
/// `--release`): its bounds and overflow checks cost registers, and the driver's JIT gave the
/// checked `wgmma_bf16` more than the 224 that 288 threads can have (`CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES`);
/// the cap makes the JIT fit the block (spilling if it must: the checked build is not timed).
pub const CHECKED_MAX_THREADS: &[(&str, u32)] = &[
    (KERNEL_BF16, THREADS),
    (KERNEL_F16, THREADS),
    (KERNEL_TF32_TRANSPOSED, THREADS),
    (KERNEL_TF32, TF32_THREADS),
    (KERNEL_TF32_PROMOTED, TF32_THREADS),
    (KERNEL_BF16_ROWS, THREADS),
    (KERNEL_F16_ROWS, THREADS),
    (KERNEL_BF16_N128, THREADS),
    (KERNEL_F16_N128, THREADS),
    (KERNEL_BF16_N128_ROWS, THREADS),
    (KERNEL_F16_N128_ROWS, THREADS),
    (KERNEL_TF32_N128, TF32_THREADS),
    (KERNEL_TF32_N16, TF32_THREADS),
    (KERNEL_TF32_N64, TF32_THREADS),
    (KERNEL_TF32_UNALIGNED_A, TF32_THREADS),
    (KERNEL_TF32_N128_UNALIGNED_A, TF32_THREADS),
    (KERNEL_TF32_N64_UNALIGNED_A, TF32_THREADS),
    (KERNEL_BF16_N16, TF32_THREADS),
    (KERNEL_F16_N16, TF32_THREADS),
    (KERNEL_BF16_CLUSTER, THREADS),
    (KERNEL_F16_CLUSTER, THREADS),
    (KERNEL_BF16_N128_CLUSTER, THREADS),
    (KERNEL_F16_N128_CLUSTER, THREADS),
    (KERNEL_BF16_N64, THREADS),
    (KERNEL_F16_N64, THREADS),
    (KERNEL_BF16_N64_ROWS, THREADS),
    (KERNEL_F16_N64_ROWS, THREADS),
    (KERNEL_BF16_N64_CLUSTER, THREADS),
    (KERNEL_F16_N64_CLUSTER, THREADS),
    (KERNEL_BF16_N64_LD, LD_THREADS),
    (KERNEL_F16_N64_LD, LD_THREADS),
    (KERNEL_BF16_N128_LD, LD_THREADS),
    (KERNEL_F16_N128_LD, LD_THREADS),
];
/// Columns of TF32 `B` per TMA box in `wgmma_tf32` (128 bytes).
pub const TF32_B_BOX_N: u32 = 32;

/// Rows of `C` per block tile (two consumer warpgroups of 64 rows).
pub const BLOCK_M: u32 = 128;
/// Columns of `C` per block tile (`n = 256` of one `wgmma`).
pub const BLOCK_N: u32 = 256;
/// Bytes of `K` per stage: one 128-byte swizzle row.
pub const BLOCK_K_BYTES: u32 = 128;
/// Stages in the shared-memory ring.
pub const STAGES: u32 = 4;
/// Consumer warpgroups.
pub const CONSUMERS: u32 = 2;
/// Threads per block: the consumer warpgroups and one producer warp.
pub const THREADS: u32 = CONSUMERS * 128 + 32;
/// Bytes of `A` per stage.
pub const STAGE_A_BYTES: u32 = BLOCK_M * BLOCK_K_BYTES;
/// Bytes of `B` per stage.
pub const STAGE_B_BYTES: u32 = BLOCK_N * BLOCK_K_BYTES;
/// Bytes per stage (a multiple of 1024, so every stage starts a swizzle pattern).
pub const STAGE_BYTES: u32 = STAGE_A_BYTES + STAGE_B_BYTES;

/// Rows of the TMA box that loads a tile's `tile_rows` rows of the operand with `m` rows (`A`):
/// all of them, or where `m` is smaller, `m` rounded up to whole 8-row swizzle atoms. The rest
/// of the tile's rows stay zero in shared memory (the kernels zero them once), so that no box
/// reaches far past `A`'s last row: the copy engine fills such rows with zeros slowly. H200,
/// `wgmma_bf16_n128` on 112 tiles of 4096 x 14336, unsplit, with 128-row boxes: m = 64
/// 0.044 ms, 96 0.039, 127 0.037, 128 0.036 (cuBLASLt 0.034-0.036).
///
/// ```
/// use kernels::matmul::wgmma::a_box_rows;
/// assert_eq!(a_box_rows(64, 128), 64);
/// assert_eq!(a_box_rows(65, 128), 72);
/// assert_eq!(a_box_rows(1000, 128), 128);
/// assert_eq!(a_box_rows(1, 16), 8);
/// ```
pub const fn a_box_rows(m: u32, tile_rows: u32) -> u32 {
    if m >= tile_rows {
        tile_rows
    } else if m == 0 {
        8
    } else {
        m.next_multiple_of(8)
    }
}
/// Columns of BF16 (or F16) `B` per TMA box (128 bytes, the most a 128-byte swizzled box row
/// spans).
pub const BF16_B_BOX_N: u32 = 64;
/// Tile rows per band of the tile order.
pub const GROUP_M: u32 = 16;
/// Columns of `C` per box of `wgmma_bf16`'s epilogue (128 bytes of `f32`: one 128-byte swizzle
/// row).
pub const EPILOGUE_BOX_N: u32 = 32;
/// Rows of `C` per epilogue box: a consumer warpgroup's rows.
pub const EPILOGUE_BOX_M: u32 = 64;
/// Bytes of one epilogue box in shared memory.
pub const EPILOGUE_BOX_BYTES: u32 = EPILOGUE_BOX_N * EPILOGUE_BOX_M * 4;
/// Epilogue boxes in shared memory per consumer warpgroup: one filled while the TMA stores the
/// other.
pub const EPILOGUE_BUFFERS: u32 = 2;
/// Bytes of the epilogue's boxes (after the ring, so 1024-byte aligned).
pub const EPILOGUE_BYTES: u32 = CONSUMERS * EPILOGUE_BUFFERS * EPILOGUE_BOX_BYTES;
/// Dynamic shared memory per block of the shared-operand kernels with tiles of [`BLOCK_M`] x
/// `block_n` and a ring of `stages`: the stages, the epilogue's boxes, the barriers, and 1024
/// bytes of slack to align the ring to the swizzle pattern (the dynamic window's own alignment
/// is not promised).
///
/// ```
/// use kernels::matmul::wgmma::{BLOCK_N, DYNAMIC_SHARED_BYTES, N128_BLOCK_N, N128_STAGES, dynamic_shared_bytes};
/// assert_eq!(dynamic_shared_bytes(BLOCK_N, 4), DYNAMIC_SHARED_BYTES);
/// // Both fit the 227 KiB a block may have.
/// assert!(dynamic_shared_bytes(N128_BLOCK_N, N128_STAGES) <= 227 * 1024);
/// ```
pub const fn dynamic_shared_bytes(block_n: u32, stages: u32) -> u32 {
    stages * (BLOCK_M + block_n) * BLOCK_K_BYTES + EPILOGUE_BYTES + 2 * stages * mbarrier::BYTES + FLAG_BYTES + 1024
}
/// Bytes after the barriers for the word that tells a split's consumers whether their work item
/// was its tile's last ([`SPLIT_CONSUMERS_BARRIER`]).
pub const FLAG_BYTES: u32 = 16;
/// The named barrier of the two consumer warpgroups together (ids 1 and 2 are each warpgroup's
/// own), at the end of a work item of a split of `k`.
pub const SPLIT_CONSUMERS_BARRIER: u32 = 3;
/// Dynamic shared memory per block of the 128 x 256 tile kernels ([`dynamic_shared_bytes`]).
pub const DYNAMIC_SHARED_BYTES: u32 = dynamic_shared_bytes(BLOCK_N, STAGES);
/// Columns of `C` per block tile of the `_n128` kernels (`n = 128` of one `wgmma`): half the
/// tiles' work, so that twice as many tiles spread a mid-sized product over the SMs (1024^3 is
/// 32 tiles of 128 x 256 on 132 SMs, 64 of 128 x 128).
pub const N128_BLOCK_N: u32 = 128;
/// Stages in the ring of the `_n128` kernels: their stages are two thirds the size, so the same
/// shared memory holds more of them.
pub const N128_STAGES: u32 = 6;
/// Dynamic shared memory per block of `wgmma_bf16_n128`, `wgmma_f16_n128` and their `_rows`
/// forms ([`dynamic_shared_bytes`]).
pub const N128_DYNAMIC_SHARED_BYTES: u32 = dynamic_shared_bytes(N128_BLOCK_N, N128_STAGES);
/// Columns of `C` per block tile of the `_n64` kernels (`n = 64` of one `wgmma`): twice the
/// `_n128` tiles again (1024^3 is 128 tiles of 128 x 64, one per SM), and a quarter of the
/// 256-wide tiles' padding where `n` is narrow.
pub const N64_BLOCK_N: u32 = 64;
/// Stages in the ring of the `_n64` kernels: 24 KiB each, as many as fit beside the epilogue's
/// boxes (8 x 24 KiB + 32 KiB of the 227 KiB a block may have), so that an SM keeps as many
/// bytes in flight from the memory as with the wider tiles.
pub const N64_STAGES: u32 = 8;
/// Dynamic shared memory per block of the `_n64` kernels ([`dynamic_shared_bytes`]).
///
/// ```
/// use kernels::matmul::wgmma::N64_DYNAMIC_SHARED_BYTES;
/// assert!(N64_DYNAMIC_SHARED_BYTES <= 227 * 1024);
/// ```
pub const N64_DYNAMIC_SHARED_BYTES: u32 = dynamic_shared_bytes(N64_BLOCK_N, N64_STAGES);

/// Rows of `C` per block tile of `wgmma_tf32_promoted` (the `n = 128` of its instruction, on
/// `C^T`); its columns are [`BLOCK_M`], as in `wgmma_tf32`.
pub const PROMOTED_BLOCK_ROWS: u32 = 128;
/// Stages of `wgmma_tf32_promoted` that accumulate in the tensor cores before their sum is
/// added into the `f32` registers: 3 x 32 = 96 of `K`, 32 products of each of the three
/// split-TF32 parts when `K` is the split operands' `3k`. The tensor cores add with truncation,
/// so an accumulation over all of `K` drifts with its length (on same-sign inputs, 40x FP32's
/// error at `k = 4096`); the error of short runs added in `f32` stays at or below FP32's.
/// Measured on the H100 (error / sum |a*b| on same-sign 1024x4096x1024, against cuBLAS FP32's
/// 1.1e-6; time at 4096^3): 1, 2, 3 and 6 stages: 8.6e-7, 7.9e-7, 8.5e-7 and 1.4e-6; 1.69,
/// 1.67, 1.49 and 1.58 ms.
pub const PROMOTE_K_TILES: u32 = 3;
/// Stages in `wgmma_tf32_promoted`'s ring.
pub const PROMOTED_STAGES: u32 = 6;
/// Tile rows per band of `wgmma_tf32_promoted`'s tile order.
pub const PROMOTED_GROUP_M: u32 = 2;
/// Bytes per stage of `wgmma_tf32_promoted`: 32 of `K` of [`BLOCK_M`] columns of `B` and of
/// [`PROMOTED_BLOCK_ROWS`] rows of `A`.
pub const PROMOTED_STAGE_BYTES: u32 = (BLOCK_M + PROMOTED_BLOCK_ROWS) * BLOCK_K_BYTES;
/// Dynamic shared memory of a `C^T` kernel (`wgmma_tf32` and its narrower forms, the `_n16`
/// kernels): `stages` stages of `stage_bytes`, their full and empty barriers, the split's flag,
/// and 1024 bytes to align the ring to the swizzle pattern (no epilogue boxes: these kernels
/// store `C` from registers).
///
/// ```
/// use kernels::matmul::wgmma::{c_transposed_shared_bytes, N16_DYNAMIC_SHARED_BYTES, N16_STAGES, N16_STAGE_BYTES};
/// assert_eq!(c_transposed_shared_bytes(N16_STAGE_BYTES, N16_STAGES), N16_DYNAMIC_SHARED_BYTES);
/// ```
pub const fn c_transposed_shared_bytes(stage_bytes: u32, stages: u32) -> u32 {
    stages * stage_bytes + 2 * stages * mbarrier::BYTES + FLAG_BYTES + 1024
}
/// Dynamic shared memory of `wgmma_tf32_promoted` ([`c_transposed_shared_bytes`]).
pub const PROMOTED_DYNAMIC_SHARED_BYTES: u32 = c_transposed_shared_bytes(PROMOTED_STAGE_BYTES, PROMOTED_STAGES);

/// Rows of `C` per block tile of [`KERNEL_TF32_N16`] (the `n = 16` of its instruction, on
/// `C^T`); its columns are [`BLOCK_M`], as in `wgmma_tf32`.
pub const N16_BLOCK_ROWS: u32 = 16;
/// Stages in the ring of [`KERNEL_TF32_N16`]: its stages (16 KiB of `B`, 2 KiB of `A`) are what
/// an SM has in flight from the memory, and a deep ring keeps the stream going while the
/// consumers multiply (10 x 18 KiB of the 227 KiB a block may have).
pub const N16_STAGES: u32 = 10;
/// Bytes per stage of [`KERNEL_TF32_N16`]: 32 of `K` of [`BLOCK_M`] columns of `B` and of
/// [`N16_BLOCK_ROWS`] rows of `A` (a multiple of 1024: every stage starts a swizzle pattern).
pub const N16_STAGE_BYTES: u32 = (BLOCK_M + N16_BLOCK_ROWS) * BLOCK_K_BYTES;
const _: () = assert!(N16_STAGE_BYTES.is_multiple_of(1024));
/// Dynamic shared memory of [`KERNEL_TF32_N16`] ([`c_transposed_shared_bytes`]).
///
/// ```
/// use kernels::matmul::wgmma::N16_DYNAMIC_SHARED_BYTES;
/// assert!(N16_DYNAMIC_SHARED_BYTES <= 227 * 1024);
/// ```
pub const N16_DYNAMIC_SHARED_BYTES: u32 = c_transposed_shared_bytes(N16_STAGE_BYTES, N16_STAGES);

/// Rows of `C` per block tile of [`KERNEL_TF32_N64`]: each consumer warpgroup's 64 (the `n =
/// 64` of its instruction, on `C^T`).
pub const TF32_N64_BLOCK_ROWS: u32 = CONSUMERS * 64;
/// Columns of `C` per block tile of [`KERNEL_TF32_N64`]: one instruction's `m = 64`, shared by
/// both consumer warpgroups.
pub const TF32_N64_BLOCK_COLS: u32 = 64;
/// Ring depth of [`KERNEL_TF32_N64`]: stages of 24 KiB (64 columns of `B` and 128 rows of `A`,
/// 32 of `k` each).
pub const TF32_N64_STAGES: u32 = 8;
/// Bytes per stage of [`KERNEL_TF32_N64`].
pub const TF32_N64_STAGE_BYTES: u32 = (TF32_N64_BLOCK_COLS + TF32_N64_BLOCK_ROWS) * BLOCK_K_BYTES;
const _: () = assert!(TF32_N64_STAGE_BYTES.is_multiple_of(1024));
/// Dynamic shared memory per block of [`KERNEL_TF32_N64`] ([`c_transposed_shared_bytes`]).
///
/// ```
/// use kernels::matmul::wgmma::TF32_N64_DYNAMIC_SHARED_BYTES;
/// assert!(TF32_N64_DYNAMIC_SHARED_BYTES <= 227 * 1024);
/// ```
pub const TF32_N64_DYNAMIC_SHARED_BYTES: u32 = c_transposed_shared_bytes(TF32_N64_STAGE_BYTES, TF32_N64_STAGES);

/// Block tiles of `wgmma_tf32_promoted` over `C` (`m x n`).
pub const fn promoted_tiles(m: u32, n: u32) -> u32 {
    n.div_ceil(BLOCK_M) * m.div_ceil(PROMOTED_BLOCK_ROWS)
}

/// The element type a kernel multiplies: bytes per element and `K` per instruction. The
/// discriminant is the kernel body's const parameter ([`Operand::from_id`]).
///
/// ```
/// use kernels::matmul::wgmma::Operand;
/// assert_eq!((Operand::F16.bytes(), Operand::F16.block_k(), Operand::F16.instruction_k()), (2, 64, 16));
/// assert_eq!(Operand::from_id(Operand::F16 as u8), Operand::F16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Operand {
    /// BF16 inputs (`m64n256k16.f32.bf16.bf16`).
    Bf16 = 0,
    /// TF32 inputs stored as `f32` (`m64n256k8`).
    Tf32 = 1,
    /// F16 (IEEE half) inputs (`m64n256k16.f32.f16.f16`).
    F16 = 2,
}

impl Operand {
    /// The operand whose discriminant is `id` (anything unknown is TF32, the 4-byte layout).
    ///
    /// ```
    /// use kernels::matmul::wgmma::Operand;
    /// for op in [Operand::Bf16, Operand::Tf32, Operand::F16] {
    ///     assert_eq!(Operand::from_id(op as u8), op);
    /// }
    /// ```
    pub const fn from_id(id: u8) -> Self {
        match id {
            0 => Self::Bf16,
            2 => Self::F16,
            _ => Self::Tf32,
        }
    }
    /// Bytes per element in memory.
    ///
    /// ```
    /// use kernels::matmul::wgmma::Operand;
    /// assert_eq!((Operand::Bf16.bytes(), Operand::F16.bytes(), Operand::Tf32.bytes()), (2, 2, 4));
    /// ```
    pub const fn bytes(self) -> u32 {
        match self {
            Self::Bf16 | Self::F16 => 2,
            Self::Tf32 => 4,
        }
    }
    /// `K` per stage.
    pub const fn block_k(self) -> u32 {
        BLOCK_K_BYTES / self.bytes()
    }
    /// `K` per `wgmma` instruction (32 bytes).
    pub const fn instruction_k(self) -> u32 {
        32 / self.bytes()
    }
}

/// Block tiles over `C`.
pub const fn tiles(m: u32, n: u32) -> u32 {
    m.div_ceil(BLOCK_M) * n.div_ceil(BLOCK_N)
}

/// The `(tile row, tile column)` of tile `t` of `tiles_m x tiles_n`: bands of [`GROUP_M`] tile
/// rows (the last band possibly narrower), column by column within a band.
pub const fn tile_coords(t: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
    tile_coords_in_bands(t, tiles_m, tiles_n, GROUP_M)
}

/// Longest `k` for which the persistent 16-bit tensor-core kernels (and `wgmma_tf32_transposed`)
/// take their tiles a row of tiles of
/// `C` at a time (left to right, then the next row) instead of in [`tile_coords`]' bands of
/// [`GROUP_M`] tile rows. Up to it a tile is one or two stages of `k` and its time is the store
/// of `C`; `A` and `B` are at most 128 columns (rows) deep and stay in L2 in any order, so the
/// bands buy nothing, and the tiles in flight then write whole rows of `C`. Stores alone of
/// 128 x 128 tiles into an 8841 x 6665 `C` on the H200: 0.070 ms a row of tiles at a time
/// against 0.116 in bands of 16 (128 x 64: 0.102 against 0.165; `scripts/store_order_probe.cu`).
pub const ROW_ORDER_MAX_K: u32 = 128;

/// [`tile_coords`] with bands of `group` tile rows.
pub const fn tile_coords_in_bands(t: u32, tiles_m: u32, tiles_n: u32, group: u32) -> (u32, u32) {
    let per_band = group * tiles_n;
    let band = t / per_band;
    let first = band * group;
    let rows = if tiles_m - first < group { tiles_m - first } else { group };
    let within = t % per_band;
    (first + within % rows, within / rows)
}

/// Rows of `A` in class `r` of the unaligned-`A` kernels ([`KERNEL_TF32_UNALIGNED_A`]): rows `r,
/// r + 4, r + 8, ...` below `m`, whose starts are all the same distance past a 16-byte boundary
/// (rows of `f32` four apart are `16 x` the leading dimension bytes apart).
///
/// ```
/// use kernels::matmul::wgmma::class_rows;
/// assert_eq!([0, 1, 2, 3].map(|r| class_rows(10, r)), [3, 3, 2, 2]);
/// assert_eq!(class_rows(2, 3), 0);
/// ```
pub const fn class_rows(m: u32, r: u32) -> u32 {
    if m > r { (m - r).div_ceil(4) } else { 0 }
}

/// Row tiles of `tile_rows` rows the unaligned-`A` kernels cut `m` rows into: each class's rows
/// ([`class_rows`]) in tiles of their own.
///
/// ```
/// use kernels::matmul::wgmma::class_row_tiles;
/// // 600 rows: four classes of 150, two tiles of 128 each.
/// assert_eq!(class_row_tiles(600, 128), 8);
/// assert_eq!(class_row_tiles(513, 128), 5);
/// ```
pub const fn class_row_tiles(m: u32, tile_rows: u32) -> u32 {
    let mut tiles = 0;
    let mut r = 0;
    while r < 4 {
        tiles += class_rows(m, r).div_ceil(tile_rows);
        r += 1;
    }
    tiles
}

/// Row tile `q` of [`class_row_tiles`]: `(class, tile within the class)`, class 0's tiles first.
///
/// ```
/// use kernels::matmul::wgmma::class_tile;
/// // 513 rows: class 0 has 129 rows (two tiles of 128), classes 1-3 128 each.
/// assert_eq!([0, 1, 2, 3, 4].map(|q| class_tile(q, 513, 128)), [(0, 0), (0, 1), (1, 0), (2, 0), (3, 0)]);
/// ```
pub const fn class_tile(q: u32, m: u32, tile_rows: u32) -> (u32, u32) {
    let mut q = q;
    let mut r = 0;
    while r < 3 {
        let tiles = class_rows(m, r).div_ceil(tile_rows);
        if q < tiles {
            return (r, q);
        }
        q -= tiles;
        r += 1;
    }
    (3, q)
}

/// Where class `r`'s rows of `A` start past a 16-byte boundary, in elements, for `A` at byte
/// address `a` (4-byte aligned) with leading dimension `ld` (elements): each of the four in a
/// byte of the unaligned-`A` kernels' `a_offsets` argument.
///
/// ```
/// use kernels::matmul::wgmma::class_offsets;
/// // Rows of 11159 floats from an aligned base: row r starts 3r elements past a boundary (mod 4).
/// assert_eq!(class_offsets(0x1000, 11_159), 0x01_02_03_00);
/// // Rows of 4k floats: every row aligned where the base is.
/// assert_eq!(class_offsets(0x1004, 64), 0x01_01_01_01);
/// ```
pub const fn class_offsets(a: u64, ld: u64) -> u32 {
    let mut offsets = 0;
    let mut r = 0;
    while r < 4 {
        let c = ((a / 4 + r * ld) % 4) as u32;
        offsets |= c << (8 * r);
        r += 1;
    }
    offsets
}

/// The split of `k` a launch with `k_chunk` makes, in stages of `block_k`: `(stages per split,
/// splits)`. Split `z` multiplies stages `z * per .. min((z + 1) * per, ceil(k / block_k))`,
/// whole stages except where `k` itself ends (the TMA reads zeros past it), so a `k_chunk` that
/// is a multiple of `block_k` splits `k` exactly as `ceil(k / k_chunk)` ranges of `k_chunk`
/// columns; `k_chunk >= k` is one split (no workspace: the kernel writes `C`).
///
/// ```
/// use kernels::matmul::wgmma::split_k_stages;
/// // k = 1000 in stages of 64 (16 stages): chunks of 256 columns are 4 splits of 4 stages.
/// assert_eq!(split_k_stages(1000, 256, 64), (4, 4));
/// // A chunk of at least k: one split of every stage.
/// assert_eq!(split_k_stages(1000, 1000, 64), (16, 1));
/// ```
pub const fn split_k_stages(k: u32, k_chunk: u32, block_k: u32) -> (u32, u32) {
    let stages = k.div_ceil(block_k);
    let per = k_chunk.div_ceil(block_k);
    let per = if per == 0 { 1 } else { per };
    let splits = stages.div_ceil(per);
    (per, if splits == 0 { 1 } else { splits })
}

/// Work item `w` of a split launch over `tiles` output tiles: `(tile, split)`, every tile of
/// split 0 first, then of split 1, ..., so that the blocks in flight share the `k` range of
/// their operands' rows and columns in L2.
///
/// ```
/// use kernels::matmul::wgmma::work_item;
/// assert_eq!(work_item(0, 3), (0, 0));
/// assert_eq!(work_item(4, 3), (1, 1));
/// ```
pub const fn work_item(w: u32, tiles: u32) -> (u32, u32) {
    (w % tiles, w / tiles)
}

/// Zeroes rows `from..to` (128 bytes each) of the operand tile at `tile(s)` of each of `stages`
/// stages, the consumer warpgroups' threads taking words in turn (`t` their index), orders the
/// stores before the async proxy's reads (`wgmma`) with `fence.proxy.async.shared::cta`, and
/// waits for both warpgroups ([`SPLIT_CONSUMERS_BARRIER`]). Rows a box never reaches
/// ([`a_box_rows`]) then multiply as zeros. The producer's copies run meanwhile: they write
/// other rows.
///
/// # Safety
/// Every consumer thread calls it before its first `wgmma`; each `tile(s) + 128 * to` lies
/// inside the block's shared memory, and nothing else touches those rows.
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
#[inline(always)]
unsafe fn zero_rows(tile: impl Fn(u32) -> u32, stages: u32, from: u32, to: u32, t: u32) {
    use crate::device::{shared, thread, tma};
    if from >= to {
        return;
    }
    let bytes = (to - from) * BLOCK_K_BYTES;
    for s in 0..stages {
        let rows = tile(s) + from * BLOCK_K_BYTES;
        let mut at = 8 * t;
        while at < bytes {
            // SAFETY: inside rows from..to of stage s's tile (contract), 8-byte aligned (tiles
            // start on 1024 bytes); one writer per 8 bytes.
            unsafe { shared::store_v2_f32(rows + at, [0.0; 2]) };
            at += 8 * CONSUMERS * 128;
        }
    }
    tma::fence_proxy_async_shared();
    thread::sync_named(SPLIT_CONSUMERS_BARRIER, CONSUMERS * 128);
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
mod gpu {
    use super::*;
    use crate::device::shared::{self, SharedScalar};
    use crate::device::wgmma::{self, Accumulators, Swizzle};
    use crate::device::{cluster, mem, thread, tma};

    /// Eight 16-bit elements from `src`, each zero-extended in a word: elements `first + e <
    /// limit` where `inside`, zero elsewhere, each a predicated 2-byte load ([`pack`] makes the
    /// chunk's four words of them).
    ///
    /// # Safety
    /// Every element the guards admit is a valid 2-byte aligned element of global memory that
    /// nothing writes while the kernel runs.
    #[inline(always)]
    unsafe fn ld_chunk(src: *const u16, inside: bool, first: u32, limit: u32) -> [u32; 8] {
        let mut h = [0u32; 8];
        unroll!(e in [0, 1, 2, 3, 4, 5, 6, 7] {
            // SAFETY: loaded only where the guards admit it (contract).
            h[e] = unsafe { mem::load_global_nc_u16_if(src.wrapping_add(e) as *const u8, inside && first + (e as u32) < limit) };
        });
        h
    }

    /// Eight zero-extended 16-bit elements packed in four words, element 0 in the low half of
    /// word 0 (the order in memory).
    #[inline(always)]
    fn pack(h: [u32; 8]) -> [u32; 4] {
        [h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16)]
    }

    /// The kernels' shared memory: `stages` stages of `stage_bytes` (`A`'s rows, then `B`'s
    /// columns), the epilogue's boxes and the barriers, from a 1024-byte aligned base.
    #[derive(Clone, Copy)]
    struct Ring {
        base: u32,
        stage_bytes: u32,
        stages: u32,
    }

    impl Ring {
        fn a(self, s: u32) -> u32 {
            self.base + s * self.stage_bytes
        }
        fn b(self, s: u32) -> u32 {
            self.a(s) + STAGE_A_BYTES
        }
        /// Epilogue box `i` of warpgroup `wg`.
        fn epilogue(self, wg: u32, i: u32) -> u32 {
            self.base + self.stages * self.stage_bytes + (wg * EPILOGUE_BUFFERS + i) * EPILOGUE_BOX_BYTES
        }
        fn full(self, s: u32) -> u32 {
            self.base + self.stages * self.stage_bytes + EPILOGUE_BYTES + s * mbarrier::BYTES
        }
        fn empty(self, s: u32) -> u32 {
            self.full(self.stages) + s * mbarrier::BYTES
        }
        /// The last-item flag of a split's work item (`split_tail::finish`).
        fn flag(self) -> u32 {
            self.empty(self.stages)
        }
    }

    /// The body `wgmma_bf16`, `wgmma_f16`, `wgmma_tf32_transposed` and their `_n128` and `_rows`
    /// forms share; `INPUT` is the [`Operand`]'s discriminant, `Acc` the accumulators of the
    /// instruction's `n` (the tile's columns: `[f32; 128]` for 256, `[f32; 64]` for 128),
    /// `STAGES_` the ring's depth.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the kernels' own parameter list
    pub(super) unsafe fn run<
        const INPUT: u8,
        const STAGED: bool,
        const CLUSTER: bool,
        Acc: Accumulators,
        const STAGES_: u32,
        const LD: bool,
    >(
        maps: *const u8,
        c: *mut f32,
        partials: *mut f32,
        counters: *mut u32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
        (a_src, b_src, lda, ldb): (*const u16, *const u16, u32, u32),
    ) {
        let op = Operand::from_id(INPUT);
        // 16-bit inputs: B N-major (transposed by the instruction), C through the TMA.
        let half = op.bytes() == 2;
        let block_n = Acc::N;
        let stage_bytes = (BLOCK_M + block_n) * BLOCK_K_BYTES;
        let shared_bytes = dynamic_shared_bytes(block_n, STAGES_);
        // SAFETY: the launch gives dynamic_shared_bytes(Acc::N, STAGES_) of dynamic shared
        // memory (kernel contract).
        let window = unsafe { crate::dynamic_shared_array!(WGMMA_RING: u32, shared_bytes as usize / 4) };
        let ring = Ring { base: (window.address_of(0) + 1023) & !1023, stage_bytes, stages: STAGES_ };
        let tid = thread::thread_idx_x();
        let warp = tid / 32;
        if tid == 0 {
            for s in 0..STAGES_ {
                // SAFETY: fresh barriers inside the dynamic window (dynamic_shared_bytes counts
                // them); no thread uses them before the fence and the barrier below.
                unsafe {
                    // The TMA's one expecting arrival, or each producer thread's (`_ld`).
                    mbarrier::init(ring.full(s), if LD { LD_PRODUCERS } else { 1 });
                    mbarrier::init(ring.empty(s), CONSUMERS);
                }
            }
            // The copy engine (async proxy) arrives on these barriers: make their
            // initialisation visible to it.
            tma::fence_proxy_async_shared();
        }
        // A's box holds a_box_rows of the tile's rows; the consumers zero the rest of every
        // stage's A rows once, and the copies never write them.
        // The `_ld` producers write every row of every stage (zeros past m).
        let a_rows = if LD { BLOCK_M } else { a_box_rows(m, BLOCK_M) };
        let tx_bytes = stage_bytes - (BLOCK_M - a_rows) * BLOCK_K_BYTES;
        thread::sync_threads();

        let (tiles_m, tiles_n) = (m.div_ceil(BLOCK_M), n.div_ceil(block_n));
        let tiles = tiles_m * tiles_n;
        let coords = |tile| {
            if k <= ROW_ORDER_MAX_K { (tile / tiles_n, tile % tiles_n) } else { tile_coords(tile, tiles_m, tiles_n) }
        };
        let k_tiles = k.div_ceil(op.block_k());
        let (per_split, splits) = split_k_stages(k, k_chunk, op.block_k());
        let work = tiles * splits;
        let (first, step) = (thread::block_idx_x(), thread::grid_dim_x());
        let map_a = maps;
        let map_b = maps.wrapping_add(TENSOR_MAP_BYTES);
        let map_c = maps.wrapping_add(2 * TENSOR_MAP_BYTES);
        // C through the TMA where its rows are 16-byte multiples (the TMA's stride rule) and C
        // is one product (a split's partial products have no map).
        let tma_store = !STAGED && half && n.is_multiple_of(4) && splits == 1;
        // The 16-bit kernels without `_rows` take no split (the host launches the `_rows` form
        // for one), so that they carry no code for it: the registers the driver's JIT gives
        // them stay within the 224 a 288-thread block may have (with the split's sum compiled
        // in, `wgmma_bf16`'s launch failed with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES on the H200).
        let split_out = !CLUSTER && splits > 1 && (STAGED || !half);
        if splits > 1 && !split_out && !CLUSTER {
            // A broken launch contract: stop the kernel rather than write partial products.
            panic!();
        }
        // The `_cluster` kernels: a cluster's blocks are one tile's splits, one work item each,
        // and add their partial products through each other's shared memory (`cluster_sum`).
        if CLUSTER && (cluster::dim_blocks() != splits || step != work) {
            // A broken launch contract: a block would sum a tile it does not share.
            panic!();
        }
        // A `_cluster` kernel's work item `w` is split `w % splits` (its block's rank in the
        // cluster) of tile `w / splits`.
        let item_of = |w: u32| if CLUSTER { (w / splits, w % splits) } else { work_item(w, tiles) };

        if LD && warp >= CONSUMERS * 4 {
            // The `_ld` producers: a stage's 128 rows of A (8 chunks of 16 bytes each) and its
            // 64 rows of k of B (block_n / 8 chunks each), a chunk per thread at a time,
            // consecutive threads on consecutive chunks of a row (coalesced); every element
            // loaded on its own (rows of any length start anywhere), zeros outside the matrices,
            // stored where the TMA's 128-byte swizzle puts it.
            let p = tid - CONSUMERS * 128;
            let mut use_index = 0u32;
            let mut item = first;
            while item < work {
                let (tile, z) = item_of(item);
                let (tm, tn) = coords(tile);
                let (row0, col0) = (tm * BLOCK_M, tn * block_n);
                let kt0 = z * per_split;
                let kt1 = if k_tiles - kt0 < per_split { k_tiles } else { kt0 + per_split };
                for kt in kt0..kt1 {
                    let s = use_index % STAGES_;
                    let k0 = kt * op.block_k();
                    // SAFETY: the empty barrier's phase completes once both consumer warpgroups
                    // finished reading stage s (as for the TMA producer).
                    unsafe { mbarrier::wait_parity(ring.empty(s), mbarrier::ring_parity(use_index, STAGES_) ^ 1) };
                    // The loads are issued before the stores: one or two round trips a stage,
                    // where a chunk's loads, packing and store in turn cost one a chunk (H200:
                    // 604x1975x2142 0.122 ms that way against 0.028 through the copy).
                    // This thread's i-th chunk of A: (row of the tile, chunk of the row); of B:
                    // (box of 64 columns, row of k, chunk of the row).
                    let a_slot = |i: u32| {
                        let q = p + LD_PRODUCERS * i;
                        (q / 8, q % 8)
                    };
                    let b_slot = |i: u32| {
                        let q = p + LD_PRODUCERS * i;
                        (q / 512, (q % 512) / 8, q % 8)
                    };
                    let mut a_halves = [[0u32; 8]; 8];
                    let mut b_halves = [[0u32; 8]; 8];
                    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                        let (r, chunk) = a_slot(i as u32);
                        let (row, col) = (row0 + r, k0 + 8 * chunk);
                        let src = a_src.wrapping_add(row as usize * lda as usize + col as usize);
                        // SAFETY: elements of rows < m and columns < k of A (lda apart), which
                        // nothing writes while the kernel runs (kernel contract).
                        a_halves[i] = unsafe { ld_chunk(src, row < m, col, k) };
                    });
                    // B's loads join A's where the registers allow (128 x 64 tiles: 96 in
                    // flight); 128 x 128 tiles load B after storing A (128 would spill).
                    let b_with_a = block_n <= N64_BLOCK_N;
                    // A macro, not a closure over b_halves: as a closure the 128 x 128 kernels
                    // spilled.
                    macro_rules! load_b {
                        () => {
                            unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                                // The tile's chunks of B: 64 rows of k x block_n / 8 (a compile-time bound).
                                if (i as u32) < block_n / 16 {
                                    let (bx, kr, chunk) = b_slot(i as u32);
                                    let (krow, col) = (k0 + kr, col0 + bx * BF16_B_BOX_N + 8 * chunk);
                                    let src = b_src.wrapping_add(krow as usize * ldb as usize + col as usize);
                                    // SAFETY: elements of rows < k and columns < n of B (ldb
                                    // apart), read-only (kernel contract).
                                    b_halves[i] = unsafe { ld_chunk(src, krow < k, col, n) };
                                }
                            })
                        };
                    }
                    if b_with_a {
                        load_b!();
                    }
                    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                        let (r, chunk) = a_slot(i as u32);
                        // SAFETY: row r < 128 of stage s's A, a 16-byte chunk this thread alone
                        // writes while the stage is empty.
                        unsafe { shared::store_v4_u32(ring.a(s) + wgmma::swizzle_128b(r * 128 + chunk * 16), pack(a_halves[i])) };
                    });
                    if !b_with_a {
                        load_b!();
                    }
                    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                        if (i as u32) < block_n / 16 {
                            let (bx, kr, chunk) = b_slot(i as u32);
                            let at = ring.b(s) + bx * BF16_B_BOX_N * BLOCK_K_BYTES;
                            // SAFETY: inside stage s's B (box bx of block_n / 64, row kr < 64), a
                            // chunk this thread alone writes while the stage is empty.
                            unsafe { shared::store_v4_u32(at + wgmma::swizzle_128b(kr * 128 + chunk * 16), pack(b_halves[i])) };
                        }
                    });
                    // wgmma (the async proxy) reads what these generic stores wrote.
                    tma::fence_proxy_async_shared();
                    // SAFETY: an initialised barrier expecting LD_PRODUCERS arrivals, one per
                    // producer thread per stage.
                    unsafe { mbarrier::arrive(ring.full(s)) };
                    use_index += 1;
                }
                item += step;
            }
        } else if warp == CONSUMERS * 4 {
            if tid.is_multiple_of(32) {
                // SAFETY: the maps are valid tensor maps in global memory (kernel contract).
                unsafe {
                    tma::prefetch_tensormap(map_a);
                    tma::prefetch_tensormap(map_b);
                }
                let mut use_index = 0u32;
                let mut item = first;
                while item < work {
                    let (tile, z) = item_of(item);
                    let (tm, tn) = coords(tile);
                    let (row0, col0) = ((tm * BLOCK_M) as i32, (tn * block_n) as i32);
                    let kt0 = z * per_split;
                    let kt1 = if k_tiles - kt0 < per_split { k_tiles } else { kt0 + per_split };
                    for kt in kt0..kt1 {
                        let s = use_index % STAGES_;
                        let k0 = (kt * op.block_k()) as i32;
                        // SAFETY: the empty barrier's phase completes once both consumer
                        // warpgroups finished reading stage s (the first trip waits on the phase
                        // before the first, which counts as complete); the full barrier's phase
                        // then expects exactly the bytes of the boxes below, which land in stage
                        // s only.
                        unsafe {
                            mbarrier::wait_parity(ring.empty(s), mbarrier::ring_parity(use_index, STAGES_) ^ 1);
                            mbarrier::arrive_expect_tx(ring.full(s), tx_bytes);
                            tma::load_2d(ring.a(s), map_a, k0, row0, ring.full(s));
                            if half {
                                for j in 0..block_n / BF16_B_BOX_N {
                                    let dst = ring.b(s) + j * BF16_B_BOX_N * BLOCK_K_BYTES;
                                    tma::load_2d(dst, map_b, col0 + (j * BF16_B_BOX_N) as i32, k0, ring.full(s));
                                }
                            } else {
                                tma::load_2d(ring.b(s), map_b, k0, col0, ring.full(s));
                            }
                        }
                        use_index += 1;
                    }
                    item += step;
                }
            }
        } else {
            // Consumers.
            // SAFETY: rows a_rows..BLOCK_M of each stage's A, inside the ring, which no copy
            // writes; every consumer thread is here before its first wgmma.
            unsafe { zero_rows(|s| ring.a(s), STAGES_, a_rows, BLOCK_M, tid) };
            let wg = warp / 4;
            let t = tid % 128;
            // Zero bits through `zeroed` (a memset) rather than `[0.0; N]` (a store loop with a
            // run-time index, which kept the array in local memory). The first `wgmma` of every
            // tile ignores these values (scale-d 0) anyway.
            let mut acc = Acc::zeroed();
            let mut use_index = 0u32;
            let mut item = first;
            // One arrival per warpgroup on the stage's empty barrier (CUTLASS's
            // `PipelineTmaAsync`), from its first thread.
            let release = |s: u32| {
                if t == 0 {
                    // SAFETY: an initialised barrier expecting one arrival per consumer
                    // warpgroup; the wait before the call covered the group that read stage s
                    // (the whole warpgroup's `wgmma`).
                    unsafe { mbarrier::arrive(ring.empty(s)) };
                }
            };
            while item < work {
                let (tile, z) = item_of(item);
                let (tm, tn) = coords(tile);
                // The split's stages, as the producer loads them (kt counts from the split's
                // first). z < splits, so kt0 < k_tiles (wrapping only spares the checked build's
                // overflow checks).
                let left = k_tiles.wrapping_sub(z.wrapping_mul(per_split));
                let k_len = if left < per_split { left } else { per_split };
                for kt in 0..k_len {
                    let s = use_index % STAGES_;
                    // SAFETY: an initialised barrier; its phase completes when the stage's bytes
                    // have landed.
                    unsafe { mbarrier::wait_parity(ring.full(s), mbarrier::ring_parity(use_index, STAGES_)) };
                    wgmma::fence();
                    let a = wgmma::descriptor(ring.a(s) + wg * 64 * BLOCK_K_BYTES, 16, 1024, Swizzle::B128);
                    if half {
                        // B is N-major: boxes of 64 columns 8192 bytes apart (leading offset),
                        // groups of 8 rows of K 1024 bytes apart (stride offset).
                        let b = wgmma::descriptor(ring.b(s), BF16_B_BOX_N * BLOCK_K_BYTES, 1024, Swizzle::B128);
                        unroll!(kk in [0, 1, 2, 3] {
                            let scale_d = (kt > 0 || kk > 0) as u32;
                            let (ak, bk) = (wgmma::advance(a, kk as u32 * 32), wgmma::advance(b, kk as u32 * 16 * BLOCK_K_BYTES));
                            // SAFETY: all 128 threads of this warpgroup issue it after the fence,
                            // on stage s, which is refilled only after this warpgroup's arrival
                            // on its empty barrier below, after a wait that covers this group.
                            unsafe {
                                if op == Operand::F16 {
                                    acc.mma_f16_b_n_major(ak, bk, scale_d)
                                } else {
                                    acc.mma_bf16_b_n_major(ak, bk, scale_d)
                                }
                            };
                        });
                    } else {
                        let b = wgmma::descriptor(ring.b(s), 16, 1024, Swizzle::B128);
                        unroll!(kk in [0, 1, 2, 3] {
                            let scale_d = (kt > 0 || kk > 0) as u32;
                            // SAFETY: as for the 16-bit branch.
                            unsafe { acc.mma_tf32(wgmma::advance(a, kk as u32 * 32), wgmma::advance(b, kk as u32 * 32), scale_d) };
                        });
                    }
                    wgmma::commit_group();
                    // One group stays in flight; the one before it has completed, so its stage
                    // can be refilled.
                    acc.wait_group::<1>();
                    if kt > 0 {
                        release((use_index + STAGES_ - 1) % STAGES_);
                    }
                    use_index += 1;
                }
                acc.wait_group::<0>();
                release((use_index + STAGES_ - 1) % STAGES_);

                if CLUSTER {
                    // Both warpgroups' last `wgmma` have read the ring (and every stage of the
                    // block's one work item has landed): it now holds this split's partial
                    // product, row-major with rows of `block_n + CLUSTER_SUM_PAD` floats, so that
                    // the 4 rows of a half-warp's 8-byte stores fill different banks.
                    thread::sync_named(SPLIT_CONSUMERS_BARRIER, CONSUMERS * 128);
                    let stride = block_n + CLUSTER_SUM_PAD;
                    let lr = wg * 64 + (t / 32) * 16 + (t % 32) / 4;
                    unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                  24, 25, 26, 27, 28, 29, 30, 31] {
                        // The tile's 8-column chunks (a compile-time bound).
                        if (j as u32) < block_n / 8 {
                            unroll!(h in [0, 1] {
                                let offset = ((lr + 8 * h as u32) * stride + 8 * j as u32 + 2 * (t % 4)) * 4;
                                // SAFETY: inside the ring (128 rows of `stride` floats fit it:
                                // CLUSTER_SUM_BYTES), 8-byte aligned; the barrier above ended
                                // every read of the ring, and each element has one writer.
                                unsafe {
                                    shared::store_v2_f32(
                                        ring.base + offset,
                                        [acc.get(4 * j + 2 * h), acc.get(4 * j + 2 * h + 1)],
                                    )
                                };
                            });
                        }
                    });
                } else if tma_store && tm * BLOCK_M + wg * 64 >= m {
                    // A warpgroup whose 64 rows all lie past C's last stores nothing: boxes wholly
                    // outside C are no work for the TMA to skip.
                } else if tma_store {
                    // Boxes of 64 rows x 32 columns through shared memory (128-byte swizzled, so
                    // that a warp's rows fill different banks), each stored by the TMA in whole
                    // lines while the warpgroup fills the next; the last two drain during the
                    // next tile's loop.
                    let (x0, y0) = ((tn * block_n) as i32, (tm * BLOCK_M + wg * 64) as i32);
                    let lr = (t / 32) * 16 + (t % 32) / 4;
                    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                      // The tile's boxes of 32 columns (a compile-time bound).
                      if (i as u32) < block_n / EPILOGUE_BOX_N {
                        let buf = ring.epilogue(wg, i as u32 % EPILOGUE_BUFFERS);
                        if t == 0 {
                            // The store that read this box two boxes ago is done with it.
                            tma::bulk_wait_group_read::<{ EPILOGUE_BUFFERS - 1 }>();
                        }
                        thread::sync_named(1 + wg, 128);
                        unroll!(jj in [0, 1, 2, 3] {
                            let j = 4 * i + jj;
                            unroll!(h in [0, 1] {
                                let offset = (lr + 8 * h as u32) * 128 + (8 * jj as u32 + 2 * (t % 4)) * 4;
                                // SAFETY: inside this warpgroup's box (64 rows of 128 bytes),
                                // 8-byte aligned (the swizzle moves 16-byte chunks); no store
                                // reads the box until the barrier below, and the last one that
                                // did finished reading (the wait and barrier above).
                                unsafe {
                                    shared::store_v2_f32(
                                        buf + wgmma::swizzle_128b(offset),
                                        [acc.get(4 * j + 2 * h), acc.get(4 * j + 2 * h + 1)],
                                    )
                                };
                            });
                        });
                        // The TMA (async proxy) reads what these generic stores wrote.
                        tma::fence_proxy_async_shared();
                        thread::sync_named(1 + wg, 128);
                        if t == 0 {
                            // SAFETY: the C map (kernel contract: dims {n, m}, box {32, 64},
                            // 128-byte swizzle) and a box the warpgroup wrote and fenced above,
                            // left alone until a later wait covers this group; the TMA skips
                            // elements outside C, and each element of C has one owner tile.
                            unsafe { tma::store_2d(map_c, x0 + (i as u32 * EPILOGUE_BOX_N) as i32, y0, buf) };
                            tma::bulk_commit_group();
                        }
                      }
                    });
                } else if !STAGED {
                    let row = tm * BLOCK_M + wg * 64 + (t / 32) * 16 + (t % 32) / 4;
                    let col0 = tn * block_n + 2 * (t % 4);
                    let even = n.is_multiple_of(2);
                    // Split z's partial product, or without a split C itself. Wrapping: the plan
                    // keeps splits x m x n inside the workspace, and the checked build's overflow
                    // checks would cost registers here.
                    let out = if split_out {
                        partials.wrapping_add((z as usize).wrapping_mul(m as usize).wrapping_mul(n as usize))
                    } else {
                        c
                    };
                    unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                  24, 25, 26, 27, 28, 29, 30, 31] {
                        let col = col0 + 8 * j as u32;
                        unroll!(h in [0, 1] {
                            let r = row + 8 * h as u32;
                            // The tile's 8-column chunks (a compile-time bound).
                            if (j as u32) < block_n / 8 && r < m && col < n {
                                let (v0, v1) = (acc.get(4 * j + 2 * h), acc.get(4 * j + 2 * h + 1));
                                let p = out.wrapping_add(r as usize * n as usize + col as usize);
                                // SAFETY: r < m and col < n: inside C (or split z's slice, which
                                // the contract gives with a split); with n even, col even and
                                // col + 1 < n, so the pair is 8-byte aligned and inside the row. Each
                                // element of C has one owner thread.
                                unsafe {
                                    if even {
                                        mem::store_global_v2_f32(p, [v0, v1]);
                                    } else {
                                        mem::store_global_f32(p, v0);
                                        if col + 1 < n {
                                            mem::store_global_f32(p.wrapping_add(1), v1);
                                        }
                                    }
                                }
                            }
                        });
                    });
                } else {
                    // Through the same boxes, read back by rows: a warp then stores 32
                    // consecutive floats of one row (whole lines) where the fragments' own
                    // stores spread each warp instruction over 8 rows. Direct fragment stores
                    // ran at 0.55 TB/s on the H200 (8841x28x6665, n odd: 406 us against
                    // cuBLASLt's 105). Two boxes are written before either is read back, so
                    // that 32 accumulators are dead by then: a 288-thread block may have 168
                    // registers (warps get them four at a time), and reading back one box while
                    // all 128 accumulators lived took more.
                    let (x0, y0) = (tn * block_n, tm * BLOCK_M + wg * 64);
                    // Split z's partial product, or without a split C itself (wrapping, as in
                    // the direct stores above).
                    let out = if split_out {
                        partials.wrapping_add((z as usize).wrapping_mul(m as usize).wrapping_mul(n as usize))
                    } else {
                        c
                    };
                    let lr = (t / 32) * 16 + (t % 32) / 4;
                    let lane = t % 32;
                    // Rows of the boxes inside C (a run-time bound: the read-back stays a loop).
                    let rows = if m > y0 { (m - y0).min(EPILOGUE_BOX_M) } else { 0 };
                    unroll!(pair in [0, 1, 2, 3] {
                      // The tile's pairs of boxes (a compile-time bound).
                      if (pair as u32) < block_n / (2 * EPILOGUE_BOX_N) {
                        // Every thread has read back the boxes of the last pair.
                        thread::sync_named(1 + wg, 128);
                        unroll!(side in [0, 1] {
                            let buf = ring.epilogue(wg, side as u32);
                            unroll!(jj in [0, 1, 2, 3] {
                                let j = 8 * pair + 4 * side + jj;
                                unroll!(h in [0, 1] {
                                    let offset = (lr + 8 * h as u32) * 128 + (8 * jj as u32 + 2 * (t % 4)) * 4;
                                    // SAFETY: inside this warpgroup's box, 8-byte aligned; no
                                    // thread reads the box until the barrier below, and every
                                    // read of its last use ended before the barrier above.
                                    unsafe {
                                        shared::store_v2_f32(
                                            buf + wgmma::swizzle_128b(offset),
                                            [acc.get(4 * j + 2 * h), acc.get(4 * j + 2 * h + 1)],
                                        )
                                    };
                                });
                            });
                        });
                        thread::sync_named(1 + wg, 128);
                        for side in 0..EPILOGUE_BUFFERS {
                            let buf = ring.epilogue(wg, side);
                            let col = x0 + (2 * pair as u32 + side) * EPILOGUE_BOX_N + lane;
                            if col < n {
                                let mut r = t / 32;
                                let mut p = out.wrapping_add((y0 + r) as usize * n as usize + col as usize);
                                // Four rows' loads before their stores: one at a time, each
                                // store waited for its load (8841x28x6665: 1.5 TB/s).
                                while r + 12 < rows {
                                    let mut v = [0.0f32; 4];
                                    unroll!(q in [0, 1, 2, 3] {
                                        // SAFETY: as below, rows r + 4q < rows of the box.
                                        v[q] = unsafe {
                                            f32::load_shared(buf + wgmma::swizzle_128b((r + 4 * q as u32) * 128 + lane * 4))
                                        };
                                    });
                                    unroll!(q in [0, 1, 2, 3] {
                                        // SAFETY: as below, for row y0 + r + 4q < m.
                                        unsafe { mem::store_global_f32(p.wrapping_add(4 * q * n as usize), v[q]) };
                                    });
                                    r += 16;
                                    p = p.wrapping_add(16 * n as usize);
                                }
                                while r < rows {
                                    // SAFETY: a 4-byte aligned element of this warpgroup's box,
                                    // written before the barrier above.
                                    let v = unsafe { f32::load_shared(buf + wgmma::swizzle_128b(r * 128 + lane * 4)) };
                                    // SAFETY: y0 + r < m and col < n: inside C (or split z's
                                    // slice, which the contract gives with a split); each element
                                    // has one owner thread.
                                    unsafe { mem::store_global_f32(p, v) };
                                    r += 4;
                                    p = p.wrapping_add(4 * n as usize);
                                }
                            }
                        }
                      }
                    });
                }
                // The next tile's first `wgmma` ignores the accumulators (scale-d 0); zeros here
                // tell the compiler so, which ends their live range at the epilogue instead of
                // carrying 64 or 128 registers around the loop (and through the split's tail).
                acc = Acc::zeroed();
                if split_out {
                    let (row0, col0) = (tm * BLOCK_M, tn * block_n);
                    let rows = (m - row0).min(BLOCK_M);
                    let cols = (n - col0).min(block_n);
                    let tile_counter = counters.wrapping_add(tile as usize);
                    // SAFETY: every consumer thread stored its share of split z's partial product
                    // above (the call's barrier waits for all of them); the counters and the
                    // partials are the kernel contract's; the flag word is this block's.
                    unsafe {
                        crate::matmul::wgmma::split_tail::finish(
                            partials,
                            c,
                            tile_counter,
                            splits,
                            m,
                            n,
                            (row0, rows, 1),
                            (col0, cols),
                            tid,
                            ring.flag(),
                        )
                    };
                }
                item += step;
            }
            if tma_store && t == 0 {
                // The block's shared memory must outlive the stores' reads of it.
                tma::bulk_wait_group::<0>();
            }
        }
        if CLUSTER {
            // Every block of the cluster has its partial product in its shared memory (the
            // barrier releases the stores above and acquires the other blocks').
            cluster::sync();
            if warp < CONSUMERS * 4 {
                let (tile, z) = item_of(first);
                let (tm, tn) = coords(tile);
                // SAFETY: every block of the cluster is one split of this tile (checked above)
                // and wrote its partial product at `ring.base` before the barrier; `c` holds
                // `m * n` floats (kernel contract).
                unsafe { cluster_sum(ring.base, c, splits, z, m, n, (tm * BLOCK_M, tn * block_n), block_n, tid) };
            }
            // No block leaves (and takes its shared memory with it) while another reads it.
            cluster::sync();
        }
    }

    /// The `_cluster` kernels' sum: the block of rank `z` adds rows `z, z + splits, ...` of the
    /// `splits` blocks' partial products of the tile at `(row0, col0)` in rank order (the order
    /// `split_tail::finish` adds them in, so both give the same bits), each row's columns four
    /// at a time from the blocks' shared memory, and stores them into `C`.
    ///
    /// # Safety
    /// Called by the `CONSUMERS * 128` consumer threads (`t` their index) of every block of a
    /// cluster of `splits <= MAX_CLUSTER_SPLITS` blocks, after a cluster barrier that follows
    /// each block's store of its partial product at `base` (128 rows of `block_n +
    /// CLUSTER_SUM_PAD` floats) and before one that precedes any block's exit; `c` holds `m * n`
    /// floats.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // a tile's place, the cluster and the output
    unsafe fn cluster_sum(
        base: u32,
        c: *mut f32,
        splits: u32,
        z: u32,
        m: u32,
        n: u32,
        (row0, col0): (u32, u32),
        block_n: u32,
        t: u32,
    ) {
        let stride = block_n + CLUSTER_SUM_PAD;
        let rows = (m - row0).min(BLOCK_M);
        let chunks = block_n / 4;
        let vector = n.is_multiple_of(4) && (c as usize).is_multiple_of(16);
        let mine = if rows > z { (rows - z).div_ceil(splits) } else { 0 };
        let mut e = t;
        while e < mine * chunks {
            let r = z + (e / chunks) * splits;
            let col = (e % chunks) * 4;
            let local = base + (r * stride + col) * 4;
            // Every block's four values first, so that the cluster's reads are in flight together.
            let mut parts = [[0.0f32; 4]; MAX_CLUSTER_SPLITS as usize];
            unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7] {
                if (q as u32) < splits {
                    // SAFETY: the same 16-byte aligned element of block q's partial product (q <
                    // splits, the cluster's size); the barriers around the call order it after
                    // that block's stores and before its exit.
                    parts[q] = unsafe { cluster::load_v4_f32(cluster::map_shared_rank(local, q as u32)) };
                }
            });
            let mut sum = parts[0];
            unroll!(q in [1, 2, 3, 4, 5, 6, 7] {
                if (q as u32) < splits {
                    for i in 0..4 {
                        sum[i] += parts[q][i];
                    }
                }
            });
            let gcol = col0 + col;
            if gcol < n {
                let p = c.wrapping_add((row0 + r) as usize * n as usize + gcol as usize);
                if vector {
                    // SAFETY: row0 + r < m, and with n a multiple of 4 so are gcol and its
                    // distance to n: the four floats lie inside C's row, 16-byte aligned (c
                    // checked above); each element of C has one writer.
                    unsafe { mem::store_global_v4_f32(p, sum) };
                } else {
                    for (i, v) in sum.iter().enumerate() {
                        if gcol + (i as u32) < n {
                            // SAFETY: inside C (row0 + r < m, gcol + i < n); one writer.
                            unsafe { mem::store_global_f32(p.wrapping_add(i), *v) };
                        }
                    }
                }
            }
            e += CONSUMERS * 128;
        }
    }
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
mod split_tail {
    use super::*;
    use crate::device::shared::SharedScalar;
    use crate::device::{atomic, mem, thread};

    /// The end of a work item of a split of `k` (`splits > 1`), once its consumer threads have
    /// stored split `z`'s partial product of the tile at `partials + z * m * n`: the tile's
    /// counter counts the item, and the tile's last item to arrive adds the `splits` partial
    /// products in split order (a fixed order, so that the sum does not depend on which item came
    /// last) into `C`'s `rows x cols` at `(row0, col0)` (rows `row_step` apart: 4 for the tiles of
    /// one class of rows of [`KERNEL_TF32_UNALIGNED_A`]), then sets the counter back to zero for
    /// the next launch. No second kernel reads the partials, and they are read while L2 still
    /// holds them.
    ///
    /// The counter is a release-acquire handshake between blocks: each item's first thread makes
    /// its block's stores visible (`fence.acq_rel.gpu` after the barrier that waited for them)
    /// before its increment; the last item's first thread fences after its own, so the block's
    /// loads after the second barrier see every item's stores. The loads go to L2 (`.cg`), where
    /// the other SMs' stores are.
    ///
    /// # Safety
    /// Called by all `CONSUMERS * 128` consumer threads (`t` their index) of every work item of
    /// the launch; `counter` is this tile's counter (zero at the launch's start, touched by no
    /// other launch while this one runs); `partials` holds `splits * m * n` `f32` and `c` `m * n`,
    /// not overlapping; `flag` is a shared word of this block that nothing else uses.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // a tile's place and the launch's buffers
    pub(super) unsafe fn finish(
        partials: *const f32,
        c: *mut f32,
        counter: *mut u32,
        splits: u32,
        m: u32,
        n: u32,
        (row0, rows, row_step): (u32, u32, u32),
        (col0, cols): (u32, u32),
        t: u32,
        flag: u32,
    ) {
        let consumers = CONSUMERS * 128;
        // Every consumer's partial stores of this item are done.
        thread::sync_named(SPLIT_CONSUMERS_BARRIER, consumers);
        if t == 0 {
            thread::thread_fence();
            // SAFETY: the tile's counter (contract).
            let arrived = unsafe { atomic::global_fetch_add_u32(counter, 1) };
            thread::thread_fence();
            // SAFETY: the block's flag word (contract); read by the consumers after the barrier
            // below, and written again only after the next item's first barrier.
            unsafe { u32::store_shared(flag, (arrived + 1 == splits) as u32) };
        }
        thread::sync_named(SPLIT_CONSUMERS_BARRIER, consumers);
        // SAFETY: written before the barrier above.
        if unsafe { u32::load_shared(flag) } == 0 {
            return;
        }
        let (warp, lane) = (t / 32, t % 32);
        let len = m as usize * n as usize;
        let vector = n.is_multiple_of(4) && (partials as usize | c as usize).is_multiple_of(16);
        let warps = consumers / 32;
        // Each warp takes ROWS of its rows at a time (r, r + warps, ...), so that a thread has
        // ROWS loads of each split in flight: one tile's sum is one block's work, and with one
        // row at a time it waited out an L2 round trip per row.
        const ROWS: usize = 4;
        let mut r = warp;
        while r < rows {
            let row_at = |q: usize| (row0 + (r + q as u32 * warps) * row_step) as usize * n as usize + col0 as usize;
            let live = |q: usize| r + (q as u32) * warps < rows;
            if vector {
                let mut col = lane * 4;
                while col < cols {
                    let mut sums = [[0.0f32; 4]; ROWS];
                    for (q, sum) in sums.iter_mut().enumerate() {
                        if live(q) {
                            // SAFETY: row0 + r + q * warps < m and col0 + col + 3 < n (n and col0
                            // multiples of 4), 16-byte aligned (checked above): inside split 0's
                            // partial product.
                            *sum =
                                unsafe { mem::load_global_cg_v4_f32(partials.wrapping_add(row_at(q) + col as usize)) };
                        }
                    }
                    for z in 1..splits as usize {
                        for (q, sum) in sums.iter_mut().enumerate() {
                            if live(q) {
                                let at = z * len + row_at(q) + col as usize;
                                // SAFETY: the same element of split z's partial product (z < splits).
                                let v = unsafe { mem::load_global_cg_v4_f32(partials.wrapping_add(at)) };
                                for i in 0..4 {
                                    sum[i] += v[i];
                                }
                            }
                        }
                    }
                    for (q, sum) in sums.iter().enumerate() {
                        if live(q) {
                            // SAFETY: inside C; the tile's elements have this one writer.
                            unsafe { mem::store_global_v4_f32(c.wrapping_add(row_at(q) + col as usize), *sum) };
                        }
                    }
                    col += 128;
                }
            } else {
                let mut col = lane;
                while col < cols {
                    let mut sums = [0.0f32; ROWS];
                    for (q, sum) in sums.iter_mut().enumerate() {
                        if live(q) {
                            // SAFETY: row0 + r + q * warps < m and col0 + col < n: inside every
                            // partial product.
                            *sum = unsafe { mem::load_global_cg_f32(partials.wrapping_add(row_at(q) + col as usize)) };
                        }
                    }
                    for z in 1..splits as usize {
                        for (q, sum) in sums.iter_mut().enumerate() {
                            if live(q) {
                                let at = z * len + row_at(q) + col as usize;
                                // SAFETY: as above, split z < splits.
                                *sum += unsafe { mem::load_global_cg_f32(partials.wrapping_add(at)) };
                            }
                        }
                    }
                    for (q, sum) in sums.iter().enumerate() {
                        if live(q) {
                            // SAFETY: inside C; one writer.
                            unsafe { mem::store_global_f32(c.wrapping_add(row_at(q) + col as usize), *sum) };
                        }
                    }
                    col += 32;
                }
            }
            r += ROWS as u32 * warps;
        }
        if t == 0 {
            // Back to zero for the next launch: every item of this tile has arrived.
            // SAFETY: the tile's counter (contract).
            unsafe { atomic::global_add_u32(counter, 0u32.wrapping_sub(splits)) };
        }
    }
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
mod gpu_rs {
    use super::*;
    use crate::device::wgmma::{self, Accumulators, Swizzle};
    use crate::device::{mem, shared::SharedScalar, thread, tma};

    /// `wgmma_tf32` and `wgmma_tf32_promoted`: `C^T = B^T * A^T`, so that `A` (K-major) is the
    /// instruction's shared `B` operand and `B` (row-major, so N-major) its `A` operand, loaded
    /// from shared memory into registers in the fragment layout (TF32 takes no transpose from
    /// shared memory). With `OP` BF16 or F16 (`wgmma_bf16_n16`, `wgmma_f16_n16`) the same
    /// product with `B` read by the instruction from shared memory as its M-major `A` operand
    /// (16-bit inputs take the transpose), a stage being 64 of `k`. Block tile: [`BLOCK_M`] =
    /// 128 columns of `C` (two warpgroups of 64) x `Acc::N` rows (256 for `wgmma_tf32`, 128 for
    /// `wgmma_tf32_promoted`), or with `SHARED_COLUMNS` (`wgmma_tf32_n64`) 64 columns, which both
    /// warpgroups load, x `CONSUMERS * Acc::N` rows, `Acc::N` each; a ring of `STAGES`, tiles in
    /// bands of `GROUP` tile rows.
    ///
    /// With `PROMOTE > 0`, each run of `PROMOTE` stages starts its accumulators from zero
    /// (`scale-d` 0) and, once waited for, is added into as many `f32` sums per thread, which
    /// are what the tile stores ([`PROMOTE_K_TILES`]); with 0, one accumulation over all of `k`.
    ///
    /// # Safety
    /// The kernel contract of `wgmma_tf32` (`Acc = [f32; 128]`, [`STAGES`], [`GROUP_M`], no
    /// promotion) or of `wgmma_tf32_promoted` (`[f32; 64]`, [`PROMOTED_STAGES`],
    /// [`PROMOTED_GROUP_M`], [`PROMOTE_K_TILES`]), `wgmma_tf32_n128`, `wgmma_tf32_n64`
    /// (`[f32; 32]`, [`TF32_N64_STAGES`], `SHARED_COLUMNS`) or one of the `_n16` kernels: an `A`
    /// box of `{128 bytes of k, a_box_rows(m, tile rows)}`, `B` boxes of `{128 bytes of n, k of
    /// a stage}`, and the dynamic shared memory of `STAGES` stages.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the kernels' own parameter list
    pub(super) unsafe fn run<
        Acc: Accumulators,
        const OP: u8,
        const STAGES_: u32,
        const GROUP: u32,
        const PROMOTE: u32,
        const SHARED_COLUMNS: bool,
        const UNALIGNED_A: bool,
    >(
        maps: *const u8,
        c: *mut f32,
        partials: *mut f32,
        counters: *mut u32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
        guard: *const u32,
        a_offsets: u32,
    ) {
        // The split-TF32 guard: on its FP32 path another kernel writes C; on its split path C is
        // the scaled operands' product times 2^-(a + b).
        let c_scale_exponent = if guard.is_null() {
            0
        } else {
            // SAFETY: a finished scan's guard (kernel contract).
            match unsafe { crate::matmul::tf32x3::decision_at(guard) } {
                crate::matmul::tf32x3::Decision::Split(s) => -(s.a + s.b),
                crate::matmul::tf32x3::Decision::Fp32 => return,
            }
        };
        // The tile: both warpgroups on 128 columns (64 each) and the instruction's `Acc::N` rows,
        // or with SHARED_COLUMNS both on the same 64 columns, `Acc::N` rows each.
        let (block_rows, block_cols) = if SHARED_COLUMNS { (CONSUMERS * Acc::N, 64) } else { (Acc::N, BLOCK_M) };
        // Registers move from the producer to the consumers only for the wide tiles' 64 or 128
        // accumulators: the 16-row tile's 8 fit what every thread has at entry, and ptxas
        // ignores `setmaxnreg` in a kernel it gives fewer registers than that (C7508).
        let rebalance = Acc::N >= 128;
        let stage_bytes = (block_cols + block_rows) * BLOCK_K_BYTES;
        // SAFETY: the launch gives the dynamic shared memory of STAGES_ stages (kernel contract).
        let window = unsafe { crate::dynamic_shared_array!(WGMMA_RS_RING: u32, DYNAMIC_SHARED_BYTES as usize / 4) };
        let base = (window.address_of(0) + 1023) & !1023;
        // Per stage: B's 32 rows of K x `block_cols` columns (boxes of 32 columns), then A's
        // `block_rows` rows x 32 of K.
        let b_stage = |s: u32| base + s * stage_bytes;
        let a_stage = |s: u32| b_stage(s) + block_cols * BLOCK_K_BYTES;
        let full = |s: u32| base + STAGES_ * stage_bytes + s * mbarrier::BYTES;
        let empty = |s: u32| full(STAGES_) + s * mbarrier::BYTES;
        // The last-item flag of a split's work item (after the barriers: FLAG_BYTES).
        let flag = empty(STAGES_);
        let tid = thread::thread_idx_x();
        let warp = tid / 32;
        if tid == 0 {
            for s in 0..STAGES_ {
                // SAFETY: fresh barriers inside the dynamic window, used only after the fence
                // and the block barrier below.
                unsafe {
                    mbarrier::init(full(s), 1);
                    mbarrier::init(empty(s), CONSUMERS * 128);
                }
            }
            tma::fence_proxy_async_shared();
        }
        // As in the shared-operand kernels: A's rows past its box stay zero.
        let a_rows = a_box_rows(m, block_rows);
        let tx_bytes = stage_bytes - (block_rows - a_rows) * BLOCK_K_BYTES;
        thread::sync_threads();

        // The transposed problem: its rows are C's columns. With UNALIGNED_A, each class of rows
        // of A (class_rows) in tiles of its own.
        let tiles_c = if UNALIGNED_A { class_row_tiles(m, block_rows) } else { m.div_ceil(block_rows) };
        let (tiles_r, tiles_c) = (n.div_ceil(block_cols), tiles_c);
        let tiles = tiles_r * tiles_c;
        // Row tile tc: its A map, its first row in that map, the columns the map's rows start
        // before A's rows (the class's offset), and where its rows lie in C: map row r is row
        // `first + step * r` of C, of `rows` rows in the map.
        let row_tile = |tc: u32| {
            if UNALIGNED_A {
                let (class, ct) = class_tile(tc, m, block_rows);
                let map = maps.wrapping_add(class as usize * TENSOR_MAP_BYTES);
                (map, ct * block_rows, (a_offsets >> (8 * class)) & 3, class, 4, class_rows(m, class))
            } else {
                (maps, tc * block_rows, 0, 0, 1, m)
            }
        };
        // A stage: 128 bytes of k (32 TF32, 64 BF16 or F16); B's TMA boxes as many columns wide.
        let op = Operand::from_id(OP);
        let block_k = op.block_k();
        let k_tiles = k.div_ceil(block_k);
        let (per_split, splits) = split_k_stages(k, k_chunk, block_k);
        let work = tiles * splits;
        let (first, step) = (thread::block_idx_x(), thread::grid_dim_x());
        let map_b = maps.wrapping_add(if UNALIGNED_A { 4 } else { 1 } * TENSOR_MAP_BYTES);

        if warp >= CONSUMERS * 4 {
            // The whole producer warpgroup gives back registers (`.aligned`), then one thread
            // issues the copies.
            if rebalance {
                wgmma::set_max_registers_dec::<TF32_PRODUCER_REGISTERS>();
            }
            if tid != CONSUMERS * 128 {
                return;
            }
            // SAFETY: valid tensor maps in global memory (kernel contract).
            unsafe {
                for class in 0..if UNALIGNED_A { 4 } else { 1 } {
                    tma::prefetch_tensormap(maps.wrapping_add(class * TENSOR_MAP_BYTES));
                }
                tma::prefetch_tensormap(map_b);
            }
            let mut use_index = 0u32;
            let mut item = first;
            while item < work {
                let (tile, z) = work_item(item, tiles);
                let (tr, tc) = tile_coords_in_bands(tile, tiles_r, tiles_c, GROUP);
                let (map_a, map_row0, shift, _, _, _) = row_tile(tc);
                let (col0, row0) = ((tr * block_cols) as i32, map_row0 as i32);
                let kt0 = z * per_split;
                let kt1 = if k_tiles - kt0 < per_split { k_tiles } else { kt0 + per_split };
                for kt in kt0..kt1 {
                    let s = use_index % STAGES_;
                    let k0 = (kt * block_k) as i32;
                    // SAFETY: as in the other kernels: stage s is free once its empty phase
                    // completes; the full phase expects exactly these boxes' bytes.
                    unsafe {
                        mbarrier::wait_parity(empty(s), mbarrier::ring_parity(use_index, STAGES_) ^ 1);
                        mbarrier::arrive_expect_tx(full(s), tx_bytes);
                        // The class's A map starts its rows `shift` columns early: B's rows
                        // start as many early (rows before 0 load as zeros).
                        for j in 0..block_cols / block_k {
                            let dst = b_stage(s) + j * block_k * BLOCK_K_BYTES;
                            tma::load_2d(dst, map_b, col0 + (j * block_k) as i32, k0 - shift as i32, full(s));
                        }
                        tma::load_2d(a_stage(s), map_a, k0, row0, full(s));
                    }
                    use_index += 1;
                }
                item += step;
            }
            return;
        }

        if rebalance {
            wgmma::set_max_registers_inc::<TF32_CONSUMER_REGISTERS>();
        }
        // SAFETY: rows a_rows..block_rows of each stage's A, inside the ring, which no copy
        // writes; every consumer thread (tid < CONSUMERS * 128) is here before its first wgmma.
        unsafe { zero_rows(a_stage, STAGES_, a_rows, block_rows, tid) };
        let wg = warp / 4;
        let t = tid % 128;
        let (fr, fc) = wgmma::a_fragment_position(t);
        // This thread's fragment rows (columns of C, within the tile) and their boxes.
        let wg_col = if SHARED_COLUMNS { 0 } else { wg * 64 };
        let wg_row = if SHARED_COLUMNS { wg * Acc::N } else { 0 };
        let j0 = wg_col + fr;
        let j1 = j0 + 8;
        let box0 = (j0 / TF32_B_BOX_N) * TF32_B_BOX_N * 4 * 32 + (j0 % TF32_B_BOX_N) * 4;
        let box1 = (j1 / TF32_B_BOX_N) * TF32_B_BOX_N * 4 * 32 + (j1 % TF32_B_BOX_N) * 4;
        let mut acc = Acc::zeroed();
        let mut use_index = 0u32;
        let mut item = first;
        while item < work {
            let (tile, z) = work_item(item, tiles);
            let (tr, tc) = tile_coords_in_bands(tile, tiles_r, tiles_c, GROUP);
            let (_, map_row0, shift, first_row, row_step, map_rows) = row_tile(tc);
            // The split's stages, counted from its first (as the producer loads them).
            let kt0 = z * per_split;
            let k_len = if k_tiles - kt0 < per_split { k_tiles - kt0 } else { per_split };
            // The promoted runs' sums (unused without promotion).
            let mut sum = Acc::zeroed();
            // One stage: its fragments loaded into registers, its 4 wgmma issued, then the group
            // before it waited for and its stage released. The PTX ISA leaves overwriting a
            // pending wgmma's A registers undefined: stages alternate between two expansions of
            // this macro, so that consecutive stages load into different PTX registers, and a
            // stage's registers are loaded again only after the wait that covers their group
            // (with one register set, loaded while the previous group was pending: wrong
            // products, right under compute-sanitizer's serialisation). A stage that ends a
            // promoted run (or the tile) also waits for its own group and adds the run into `sum`.
            macro_rules! consume_stage {
                ($kt:expr) => {{
                    let kt: u32 = $kt;
                    let s = use_index % STAGES_;
                    // SAFETY: an initialised barrier; completes when the stage's bytes landed.
                    unsafe { mbarrier::wait_parity(full(s), mbarrier::ring_parity(use_index, STAGES_)) };
                    if UNALIGNED_A && z == 0 && kt == 0 && shift > 0 {
                        // The first stage's first `shift` columns of each row are the end of the
                        // row before it in memory; B's rows there are zeros, but a zero times an
                        // infinity there is NaN: zeros in their place before any wgmma reads them.
                        let mut r = tid;
                        while r < block_rows {
                            for col in 0..shift {
                                // SAFETY: row r < block_rows of the stage's A, 4 bytes at column
                                // col < 4 (swizzled as the TMA wrote it), which the full barrier
                                // made visible and no wgmma reads before the barrier below.
                                unsafe { f32::store_shared(a_stage(s) + wgmma::swizzle_128b(r * 128 + col * 4), 0.0) };
                            }
                            r += CONSUMERS * 128;
                        }
                        // The instruction reads shared memory through the async proxy.
                        tma::fence_proxy_async_shared();
                        thread::sync_named(SPLIT_CONSUMERS_BARRIER, CONSUMERS * 128);
                    }
                    let bs = b_stage(s);
                    let mut frag = [[0u32; 4]; 4];
                    // The 16-bit kernels read B from shared memory in the instruction.
                    unroll!(kk in [0, 1, 2, 3] {
                      if OP == Operand::Tf32 as u8 {
                        let (r0, r1) = ((kk as u32) * 8 + fc, (kk as u32) * 8 + fc + 4);
                        // SAFETY: rows r0, r1 < 32 of the stage's B boxes (each row 128 bytes,
                        // 128-byte swizzled as the TMA wrote them), which the full barrier made
                        // visible and which stay until this thread's arrival on the empty barrier.
                        unsafe {
                            frag[kk] = [
                                u32::load_shared(bs + wgmma::swizzle_128b(r0 * 128 + box0 % 4096) + box0 / 4096 * 4096),
                                u32::load_shared(bs + wgmma::swizzle_128b(r0 * 128 + box1 % 4096) + box1 / 4096 * 4096),
                                u32::load_shared(bs + wgmma::swizzle_128b(r1 * 128 + box0 % 4096) + box0 / 4096 * 4096),
                                u32::load_shared(bs + wgmma::swizzle_128b(r1 * 128 + box1 % 4096) + box1 / 4096 * 4096),
                            ];
                        }
                      }
                    });
                    // Orders the fragment loads (and the accumulators' last reads) before the
                    // wgmma that read them.
                    wgmma::fence();
                    // This warpgroup's rows of A (all of the stage's, or with SHARED_COLUMNS its
                    // Acc::N of them: whole 1024-byte swizzle atoms).
                    let b = wgmma::descriptor(a_stage(s) + wg_row * BLOCK_K_BYTES, 16, 1024, Swizzle::B128);
                    // This warpgroup's 64 columns of B, one TMA box of the 16-bit kernels' stage
                    // (M-major: 16 rows of k, 2048 bytes, per instruction).
                    let a = wgmma::descriptor(bs + wg_col * BLOCK_K_BYTES, 64 * BLOCK_K_BYTES, 1024, Swizzle::B128);
                    // The first instruction of the tile (or of a promoted run) replaces the
                    // accumulators.
                    let run_start = if PROMOTE > 0 { kt % PROMOTE == 0 } else { kt == 0 };
                    unroll!(kk in [0, 1, 2, 3] {
                        let scale_d = (!run_start || kk > 0) as u32;
                        let bk = wgmma::advance(b, kk as u32 * 32);
                        let ak = wgmma::advance(a, kk as u32 * 16 * BLOCK_K_BYTES);
                        // SAFETY: all 128 threads of the warpgroup issue it after the fence; the
                        // stage stays until this thread's arrival, after a covering wait.
                        unsafe {
                            match op {
                                Operand::Tf32 => acc.mma_tf32_a_regs(frag[kk], bk, scale_d),
                                Operand::Bf16 => acc.mma_bf16_a_m_major(ak, bk, scale_d),
                                Operand::F16 => acc.mma_f16_a_m_major(ak, bk, scale_d),
                            }
                        };
                    });
                    wgmma::commit_group();
                    acc.wait_group::<1>();
                    if kt > 0 {
                        // SAFETY: an initialised barrier expecting one arrival per consumer
                        // thread; the group that read the previous stage has completed.
                        unsafe { mbarrier::arrive(empty((use_index + STAGES_ - 1) % STAGES_)) };
                    }
                    if PROMOTE > 0 && (kt % PROMOTE == PROMOTE - 1 || kt + 1 == k_len) {
                        acc.wait_group::<0>();
                        acc.add_into(&mut sum);
                    }
                    use_index += 1;
                }};
            }
            let mut kt = 0;
            while kt + 1 < k_len {
                consume_stage!(kt);
                consume_stage!(kt + 1);
                kt += 2;
            }
            if kt < k_len {
                consume_stage!(kt);
            }
            acc.wait_group::<0>();
            // SAFETY: as above, for the tile's last stage.
            unsafe { mbarrier::arrive(empty((use_index + STAGES_ - 1) % STAGES_)) };

            // Accumulator (row, col) is C^T's: C[row0 + col][col0 + row]. Register
            // 4q + 2h + e of this thread is C[row0 + 8q + 2 (t % 4) + e][col0 + fr + 8h]
            // (wgmma::accumulator_position); one row pointer walks down 8 rows per q.
            // Rows of the tile's map: map row r is C's row first_row + row_step * r.
            let row = map_row0 + wg_row + 2 * (t % 4);
            let col = tr * block_cols + wg_col + fr;
            let (col_ok, col8_ok) = (col < n, col + 8 < n);
            // Split z's partial product, or without a split C itself.
            let out = if PROMOTE == 0 && splits > 1 {
                partials.wrapping_add(z as usize * m as usize * n as usize)
            } else {
                c
            };
            let mut p = out.wrapping_add((first_row + row_step * row) as usize * n as usize + col as usize);
            let step8 = 8 * row_step as usize * n as usize;
            unroll!(q in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                          26, 27, 28, 29, 30, 31] {
                // The instruction's N / 8 groups of rows.
                if q < (Acc::N / 8) as usize {
                    let r = row + 8 * q as u32;
                    unroll!(e in [0, 1] {
                        if r + (e as u32) < map_rows {
                            let pe = p.wrapping_add(e * row_step as usize * n as usize);
                            // SAFETY: map row r + e < map_rows, so C's row first_row + row_step
                            // (r + e) < m, and the column checked: inside C (or split z's slice
                            // of the contract's partials); one owner per element.
                            unsafe {
                                let out = if PROMOTE > 0 { &sum } else { &acc };
                                let value = |i: usize| {
                                    let v = out.get(i);
                                    if PROMOTE > 0 { crate::matmul::tf32x3::scale_by_power_of_two(v, c_scale_exponent) } else { v }
                                };
                                if col_ok {
                                    mem::store_global_f32(pe, value(4 * q + e));
                                }
                                if col8_ok {
                                    mem::store_global_f32(pe.wrapping_add(8), value(4 * q + 2 + e));
                                }
                            }
                        }
                    });
                    p = p.wrapping_add(step8);
                }
            });
            // As in the shared-operand kernels: the next tile's first `wgmma` ignores them.
            acc = Acc::zeroed();
            // The promoted kernel never splits k (and passes no partials).
            if PROMOTE == 0 && splits > 1 {
                let rows = (map_rows - map_row0).min(block_rows);
                let (row0, col0) = (first_row + row_step * map_row0, tr * block_cols);
                let cols = (n - col0).min(block_cols);
                // SAFETY: as in the shared-operand kernels: every consumer stored its share of
                // split z's partial product above; the counters and partials are the contract's.
                unsafe {
                    crate::matmul::wgmma::split_tail::finish(
                        partials,
                        c,
                        counters.wrapping_add(tile as usize),
                        splits,
                        m,
                        n,
                        (row0, rows, row_step),
                        (col0, cols),
                        tid,
                        flag,
                    )
                };
            }
            item += step;
        }
    }
}

/// One tile kernel: the module documentation's parameters (then `$param`s of its own, if any),
/// handed to `$body` (then `$extra`).
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
macro_rules! tile_kernel {
    ($(#[$doc:meta])* $name:ident $(($($param:ident: $ty:ty),*))? => $body:path $(, $extra:expr)*) => {
        crate::hopper_kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                maps: *const u8,
                c: *mut f32,
                partials: *mut f32,
                counters: *mut u32,
                m: u32,
                k: u32,
                n: u32,
                k_chunk: u32,
                $($($param: $ty),*)?
            ) {
                // SAFETY: the kernel contract is the body's.
                unsafe { $body(maps, c, partials, counters, m, k, n, k_chunk $(, $extra)*) }
            }
        }
    };
}

/// The kernels of the shared-operand body (`gpu::run`), one line each: its name, then the body's
/// operand, epilogue (`true`: the row-staged one only), the cluster sum of a split (`true`: the
/// `_cluster` kernels), accumulators (the tile's width) and ring
/// depth. Every one takes the module documentation's parameters and contract.
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
macro_rules! shared_operand_kernels {
    ($($(#[$doc:meta])* $name:ident: $input:expr, $staged:literal, $cluster:literal, $acc:ty, $stages:expr;)*) => {
        $(
            tile_kernel! {
                $(#[$doc])*
                ///
                /// # Safety
                /// See the [module documentation](self), with the dynamic shared memory
                /// [`dynamic_shared_bytes`] gives the kernel's tile and stages.
                $name => gpu::run::<{ $input }, $staged, $cluster, $acc, $stages, false>,
                    (core::ptr::null(), core::ptr::null(), 0, 0)
            }
        )*
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
shared_operand_kernels! {
    /// `C = A * B` from BF16 operands on 128 x 256 tiles.
    wgmma_bf16: Operand::Bf16 as u8, false, false, [f32; 128], STAGES;
    /// `C = A * B` from F16 (IEEE half) operands: `wgmma_bf16` with `m64n256k16.f32.f16.f16`.
    wgmma_f16: Operand::F16 as u8, false, false, [f32; 128], STAGES;
    /// `wgmma_bf16` with the row-staged epilogue only ([`KERNEL_BF16_ROWS`]).
    wgmma_bf16_rows: Operand::Bf16 as u8, true, false, [f32; 128], STAGES;
    /// `wgmma_f16` with the row-staged epilogue only ([`KERNEL_F16_ROWS`]).
    wgmma_f16_rows: Operand::F16 as u8, true, false, [f32; 128], STAGES;
    /// `C = A * B` from `f32` operands in TF32 tensor-core math, `B` transposed by the host.
    wgmma_tf32_transposed: Operand::Tf32 as u8, false, false, [f32; 128], STAGES;
    /// `wgmma_bf16` on tiles of 128 x [`N128_BLOCK_N`] (`m64n128k16`, [`N128_STAGES`] stages,
    /// [`N128_DYNAMIC_SHARED_BYTES`]).
    wgmma_bf16_n128: Operand::Bf16 as u8, false, false, [f32; 64], N128_STAGES;
    /// `wgmma_f16` on tiles of 128 x [`N128_BLOCK_N`].
    wgmma_f16_n128: Operand::F16 as u8, false, false, [f32; 64], N128_STAGES;
    /// `wgmma_bf16_n128` with the row-staged epilogue only.
    wgmma_bf16_n128_rows: Operand::Bf16 as u8, true, false, [f32; 64], N128_STAGES;
    /// `wgmma_f16_n128` with the row-staged epilogue only.
    wgmma_f16_n128_rows: Operand::F16 as u8, true, false, [f32; 64], N128_STAGES;
    /// `wgmma_bf16` on a split of `k` summed in its cluster ([`KERNEL_BF16_CLUSTER`]).
    wgmma_bf16_cluster: Operand::Bf16 as u8, true, true, [f32; 128], STAGES;
    /// `wgmma_f16` on a split of `k` summed in its cluster.
    wgmma_f16_cluster: Operand::F16 as u8, true, true, [f32; 128], STAGES;
    /// `wgmma_bf16_n128` on a split of `k` summed in its cluster.
    wgmma_bf16_n128_cluster: Operand::Bf16 as u8, true, true, [f32; 64], N128_STAGES;
    /// `wgmma_f16_n128` on a split of `k` summed in its cluster.
    wgmma_f16_n128_cluster: Operand::F16 as u8, true, true, [f32; 64], N128_STAGES;
    /// `wgmma_bf16` on tiles of 128 x [`N64_BLOCK_N`] (`m64n64k16`, [`N64_STAGES`] stages,
    /// [`N64_DYNAMIC_SHARED_BYTES`]).
    wgmma_bf16_n64: Operand::Bf16 as u8, false, false, [f32; 32], N64_STAGES;
    /// `wgmma_f16` on tiles of 128 x [`N64_BLOCK_N`].
    wgmma_f16_n64: Operand::F16 as u8, false, false, [f32; 32], N64_STAGES;
    /// `wgmma_bf16_n64` with the row-staged epilogue only.
    wgmma_bf16_n64_rows: Operand::Bf16 as u8, true, false, [f32; 32], N64_STAGES;
    /// `wgmma_f16_n64` with the row-staged epilogue only.
    wgmma_f16_n64_rows: Operand::F16 as u8, true, false, [f32; 32], N64_STAGES;
    /// `wgmma_bf16_n64` on a split of `k` summed in its cluster.
    wgmma_bf16_n64_cluster: Operand::Bf16 as u8, true, true, [f32; 32], N64_STAGES;
    /// `wgmma_f16_n64` on a split of `k` summed in its cluster.
    wgmma_f16_n64_cluster: Operand::F16 as u8, true, true, [f32; 32], N64_STAGES;
}

/// The `_ld` kernels ([`KERNEL_BF16_N64_LD`]), one line each: its name, then the body's operand,
/// accumulators (the tile's width) and ring depth.
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
macro_rules! ld_kernels {
    ($($(#[$doc:meta])* $name:ident: $input:expr, $acc:ty, $stages:expr;)*) => {
        $(
            tile_kernel! {
                $(#[$doc])*
                ///
                /// # Safety
                /// As the kernel on the same tiles with the row-staged epilogue (the module
                /// documentation), except: `maps` is unused (may be null); `a` holds `A` (`m x
                /// k`, row `i` at element `i * lda`) and `b` holds `B` (`k x n`, row `p` at `p *
                /// ldb`), both 2-byte aligned, in the kernel's 16-bit type, read-only while it
                /// runs, overlapping neither `c` nor `partials`; the block is [`LD_THREADS`]
                /// threads.
                #[allow(clippy::too_many_arguments)]
                $name(a: *const u16, b: *const u16, lda: u32, ldb: u32)
                    => gpu::run::<{ $input }, true, false, $acc, $stages, true>,
                    (a, b, lda, ldb)
            }
        )*
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
ld_kernels! {
    /// `wgmma_bf16_n64_rows` loading its operands as they lie ([`KERNEL_BF16_N64_LD`]).
    wgmma_bf16_n64_ld: Operand::Bf16 as u8, [f32; 32], N64_STAGES;
    /// `wgmma_f16_n64_rows` loading its operands as they lie.
    wgmma_f16_n64_ld: Operand::F16 as u8, [f32; 32], N64_STAGES;
    /// `wgmma_bf16_n128_rows` loading its operands as they lie.
    wgmma_bf16_n128_ld: Operand::Bf16 as u8, [f32; 64], N128_STAGES;
    /// `wgmma_f16_n128_rows` loading its operands as they lie.
    wgmma_f16_n128_ld: Operand::F16 as u8, [f32; 64], N128_STAGES;
}

/// The kernels of the `C^T` body (`gpu_rs::run`) without promotion, one line each after its
/// documentation (which ends with the kernel's maps in its `# Safety` section): its name, then
/// the body's accumulators (the tile's rows of `C`), operand and ring depth. Every one takes the
/// module documentation's parameters and contract.
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
macro_rules! c_transposed_kernels {
    ($($(#[$doc:meta])* $name:ident: $acc:ty, $input:expr, $stages:expr, $shared:literal;)*) => {
        $(
            tile_kernel! {
                $(#[$doc])*
                $name => gpu_rs::run::<$acc, { $input }, $stages, GROUP_M, 0, $shared, false>, core::ptr::null(), 0
            }
        )*
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
c_transposed_kernels! {
    /// `C = A * B` in TF32 from row-major `A` and `B` as they are, `B` through registers; see
    /// [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{32, 256}`; `B` dims `{n, k}`, box `{32, 32}`; 128-byte
    /// swizzle; `k_chunk` a multiple of 32 below `k` (or at least `k`: no split); otherwise as
    /// the module documentation.
    wgmma_tf32: [f32; 128], Operand::Tf32 as u8, STAGES, false;
    /// `wgmma_tf32` on tiles of 128 x 128 of `C` (`m64n128k8` on `C^T`, [`PROMOTED_STAGES`]
    /// stages as `wgmma_tf32_promoted`, without its promotion); see [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{32, 128}`; `B` dims `{n, k}`, box `{32, 32}`; 128-byte
    /// swizzle; the launch gives [`TF32_THREADS`] threads and [`PROMOTED_DYNAMIC_SHARED_BYTES`];
    /// `k_chunk` as for `wgmma_tf32`; otherwise as the module documentation.
    wgmma_tf32_n128: [f32; 64], Operand::Tf32 as u8, PROMOTED_STAGES, false;
    /// `wgmma_tf32` on tiles of [`N16_BLOCK_ROWS`] x 128 of `C` (`m64n16k8` on `C^T`,
    /// [`N16_STAGES`] stages) for `m <= 16`; see [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{32, 16}`; `B` dims `{n, k}`, box `{32, 32}`; 128-byte
    /// swizzle; the launch gives [`TF32_THREADS`] threads and [`N16_DYNAMIC_SHARED_BYTES`];
    /// `k_chunk` as for `wgmma_tf32`; otherwise as the module documentation.
    wgmma_tf32_n16: [f32; 8], Operand::Tf32 as u8, N16_STAGES, false;
    /// `C = A * B` from BF16 operands for `m <= 16`: `wgmma_tf32_n16`'s tiles of
    /// [`N16_BLOCK_ROWS`] x 128 of `C` and pipeline, `m64n16k16` on `C^T` with `B` as the
    /// instruction's M-major `A` operand; see [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{64, 16}`; `B` dims `{n, k}`, box `{64, 64}`; 128-byte
    /// swizzle; the launch gives [`TF32_THREADS`] threads and [`N16_DYNAMIC_SHARED_BYTES`];
    /// `k_chunk` a multiple of 64 below `k` (or at least `k`: no split); otherwise as the module
    /// documentation.
    wgmma_bf16_n16: [f32; 8], Operand::Bf16 as u8, N16_STAGES, false;
    /// `wgmma_bf16_n16` on F16 (IEEE half) operands (`m64n16k16.f32.f16.f16`); see [`gpu_rs`].
    ///
    /// # Safety
    /// As `wgmma_bf16_n16`, with F16 operands.
    wgmma_f16_n16: [f32; 8], Operand::F16 as u8, N16_STAGES, false;
    /// `wgmma_tf32` on tiles of [`TF32_N64_BLOCK_ROWS`] x [`TF32_N64_BLOCK_COLS`] of `C`
    /// (`m64n64k8` on `C^T`, [`TF32_N64_STAGES`] stages): both consumer warpgroups load the
    /// same 64 columns of `B` into registers and multiply 64 rows of `A` each; see [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{32, 128}`; `B` dims `{n, k}`, box `{32, 32}`; 128-byte
    /// swizzle; the launch gives [`TF32_THREADS`] threads and [`TF32_N64_DYNAMIC_SHARED_BYTES`];
    /// `k_chunk` as for `wgmma_tf32`; otherwise as the module documentation.
    wgmma_tf32_n64: [f32; 32], Operand::Tf32 as u8, TF32_N64_STAGES, true;
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
crate::hopper_kernel! {
    /// `C = A * B` in TF32 as `wgmma_tf32`, accumulated in runs of [`PROMOTE_K_TILES`] stages
    /// added in `f32`; see [`gpu_rs`].
    ///
    /// # Safety
    /// The maps: `A` dims `{k, m}`, box `{32, 128}`; `B` dims `{n, k}`, box `{32, 32}`; 128-byte
    /// swizzle; the launch gives [`TF32_THREADS`] threads and [`PROMOTED_DYNAMIC_SHARED_BYTES`];
    /// `guard` is null (the kernel runs, unscaled) or the guard of a finished split-TF32 scan
    /// (`crate::matmul::tf32x3`: the kernel runs only on its split path, and scales `C` by
    /// `2^-(a + b)` with one rounding); otherwise as the module documentation.
    pub unsafe fn wgmma_tf32_promoted(maps: *const u8, c: *mut f32, m: u32, k: u32, n: u32, guard: *const u32) {
        // SAFETY: the kernel contract is the body's.
        unsafe {
            // One split: all of k.
            gpu_rs::run::<[f32; 64], { Operand::Tf32 as u8 }, PROMOTED_STAGES, PROMOTED_GROUP_M, PROMOTE_K_TILES, false, false>(
                maps,
                c,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                m,
                k,
                n,
                k,
                guard,
                0,
            )
        }
    }
}

/// The unaligned-`A` forms of the TF32 tile kernels, one line each after its documentation: its
/// name, then the body's accumulators, ring depth and whether both warpgroups share the tile's
/// columns (`wgmma_tf32_n64`'s tiles).
#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
macro_rules! unaligned_a_kernels {
    ($($(#[$doc:meta])* $name:ident: $acc:ty, $stages:expr, $shared:literal;)*) => {
        $(
            tile_kernel! {
                $(#[$doc])*
                ///
                /// # Safety
                /// As the kernel on the same tiles (the module documentation), with these maps:
                /// four of `A`, class `r`'s ([`class_rows`]) from byte address `a + 4 (r ld -
                /// o_r)` (`o_r` the class's offset, byte `r` of `a_offsets` =
                /// [`class_offsets`]`(a, ld)`), dims `{k + o_r, class_rows(m, r)}`, rows `16 ld`
                /// bytes apart, box `{32, a_box_rows(m, tile rows)}`; then `B`'s as for
                /// `wgmma_tf32`; 128-byte swizzle. `k` is `A`'s columns plus 3 (the stages cover
                /// the latest-starting class's rows), and `k_chunk` splits that `k` as for
                /// `wgmma_tf32`.
                #[allow(clippy::too_many_arguments)]
                $name(a_offsets: u32)
                    => gpu_rs::run::<$acc, { Operand::Tf32 as u8 }, $stages, GROUP_M, 0, $shared, true>,
                    core::ptr::null(),
                    a_offsets
            }
        )*
    };
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
unaligned_a_kernels! {
    /// `wgmma_tf32` on an `A` read as it lies in classes of rows ([`KERNEL_TF32_UNALIGNED_A`]).
    wgmma_tf32_unaligned_a: [f32; 128], STAGES, false;
    /// `wgmma_tf32_n128` on an `A` read as it lies in classes of rows.
    wgmma_tf32_n128_unaligned_a: [f32; 64], PROMOTED_STAGES, false;
    /// `wgmma_tf32_n64` on an `A` read as it lies in classes of rows.
    wgmma_tf32_n64_unaligned_a: [f32; 32], TF32_N64_STAGES, true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_fit_the_shared_memory_of_an_sm_and_start_swizzle_patterns() {
        assert_eq!(STAGE_BYTES % 1024, 0);
        assert_eq!(STAGE_BYTES, 48 * 1024);
        const { assert!(DYNAMIC_SHARED_BYTES <= 227 * 1024) };
        assert_eq!(Operand::Bf16.block_k(), 64);
        assert_eq!(Operand::F16.block_k(), 64);
        assert_eq!(Operand::F16.instruction_k(), Operand::Bf16.instruction_k());
        assert_eq!(Operand::Tf32.block_k(), 32);
        assert_eq!(Operand::Bf16.instruction_k() * 4, Operand::Bf16.block_k());
        assert_eq!(Operand::Tf32.instruction_k() * 4, Operand::Tf32.block_k());
        // BF16 B arrives as BLOCK_N / 64 boxes of 64 x 64, filling its stage share.
        assert_eq!((BLOCK_N / BF16_B_BOX_N) * BF16_B_BOX_N * 64 * 2, STAGE_B_BYTES);
        assert_eq!(THREADS, 288);
        assert_eq!(PROMOTED_STAGE_BYTES % 1024, 0);
        const { assert!(PROMOTED_DYNAMIC_SHARED_BYTES <= 227 * 1024) };
    }

    #[test]
    fn tile_order_visits_every_tile_once_in_bands_of_rows() {
        for (tiles_m, tiles_n) in [(1, 1), (32, 16), (33, 3), (5, 7), (64, 32), (17, 1)] {
            let mut seen = [false; 64 * 32];
            for t in 0..tiles_m * tiles_n {
                let (tm, tn) = tile_coords(t, tiles_m, tiles_n);
                assert!(tm < tiles_m && tn < tiles_n, "{t}: ({tm}, {tn}) of {tiles_m}x{tiles_n}");
                let i = (tm * 32 + tn) as usize;
                assert!(!seen[i]);
                seen[i] = true;
                assert_eq!(tm / GROUP_M, t / (GROUP_M * tiles_n));
            }
        }
        assert_eq!(tile_coords(1, 32, 16), (1, 0));
        assert_eq!(tile_coords(16, 32, 16), (0, 1));
        assert_eq!(tiles(4096, 4096), 512);
        assert_eq!(tiles(129, 257), 4);
    }

    #[test]
    fn splits_of_k_cover_every_stage_once_and_match_the_hosts_count() {
        for op in [Operand::Bf16, Operand::Tf32] {
            let bk = op.block_k();
            for k in [1u32, 31, 32, 33, 63, 64, 65, 171, 1000, 1077, 1650, 13_368] {
                let stages = k.div_ceil(bk);
                // Chunks of whole stages below k, and chunks of at least k (no split).
                for chunk in [bk, 2 * bk, 3 * bk, 7 * bk, k.next_multiple_of(8), k + 5, u32::MAX] {
                    let (per, splits) = split_k_stages(k, chunk, bk);
                    let mut next = 0;
                    for z in 0..splits {
                        let kt0 = z * per;
                        let kt1 = if stages - kt0 < per { stages } else { kt0 + per };
                        assert!(kt0 == next && kt1 > kt0, "k {k}, chunk {chunk}, split {z}");
                        next = kt1;
                    }
                    assert_eq!(next, stages, "k {k}, chunk {chunk}");
                    if chunk >= k {
                        assert_eq!(splits, 1);
                    } else {
                        // The host counts ceil(k / k_chunk) partial products.
                        assert_eq!(splits, k.div_ceil(chunk), "k {k}, chunk {chunk}");
                    }
                }
            }
        }
        assert_eq!(split_k_stages(5, 0, 64), (1, 1));
    }

    /// A CPU model of the kernels' split: work items as `work_item` and `split_k_stages` give
    /// them, each multiplying its tile over its stages (zeros past `k`, as the TMA reads them)
    /// into its split's slice, then the slices added in split order, as `matmul_split_k_reduce`
    /// does: the product, exactly (small integers), for ragged shapes and every chunk.
    #[test]
    fn a_cpu_model_of_the_split_work_items_adds_up_to_the_product() {
        const M: usize = 130;
        const K: usize = 200;
        const N: usize = 7;
        let a = |r: usize, kk: usize| ((r * 7 + kk * 3) % 5) as f32 - 2.0;
        let b = |kk: usize, c: usize| ((kk * 5 + c * 11) % 7) as f32 - 3.0;
        let bk = Operand::Bf16.block_k();
        let (tiles_m, tiles_n) = ((M as u32).div_ceil(BLOCK_M), (N as u32).div_ceil(BLOCK_N));
        let tiles = tiles_m * tiles_n;
        for k_chunk in [bk, 2 * bk, 3 * bk, K as u32] {
            let (per, splits) = split_k_stages(K as u32, k_chunk, bk);
            let mut partials = [0.0f32; 4 * M * N];
            let stages = (K as u32).div_ceil(bk);
            for w in 0..tiles * splits {
                let (tile, z) = work_item(w, tiles);
                let (tm, tn) = tile_coords(tile, tiles_m, tiles_n);
                let kt0 = z * per;
                let k_len = if stages - kt0 < per { stages - kt0 } else { per };
                for r in (tm * BLOCK_M) as usize..((tm + 1) * BLOCK_M) as usize {
                    for c in (tn * BLOCK_N) as usize..((tn + 1) * BLOCK_N) as usize {
                        let mut acc = 0.0f32;
                        for kk in (kt0 * bk) as usize..((kt0 + k_len) * bk) as usize {
                            if r < M && c < N && kk < K {
                                acc += a(r, kk) * b(kk, c);
                            }
                        }
                        if r < M && c < N {
                            partials[z as usize * M * N + r * N + c] = acc;
                        }
                    }
                }
            }
            for r in 0..M {
                for c in 0..N {
                    let sum: f32 = (0..splits as usize).map(|z| partials[z * M * N + r * N + c]).sum();
                    let want: f32 = (0..K).map(|kk| a(r, kk) * b(kk, c)).sum();
                    assert_eq!(sum, want, "k_chunk {k_chunk}: C[{r}][{c}]");
                }
            }
        }
    }

    #[test]
    fn work_items_take_every_tile_of_each_split_once() {
        for (tiles, splits) in [(1u32, 53u32), (41, 3), (7, 1), (5, 19)] {
            let mut seen = [false; 41 * 19];
            for w in 0..tiles * splits {
                let (t, z) = work_item(w, tiles);
                assert!(t < tiles && z < splits);
                let i = (z * tiles + t) as usize;
                assert!(!seen[i]);
                seen[i] = true;
            }
        }
    }
}
