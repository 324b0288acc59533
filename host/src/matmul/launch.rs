//! The launches of a planned product on device addresses: the CUDA-core kernels and their split-K
//! reduction, the tensor-core kernels with their tensor maps, and split-TF32's split, product and
//! guarded FP32 fallback. [`super::GemmPlan`] checks every buffer before it calls these, which is
//! what makes each `unsafe` launch below sound.

use super::plan::MatmulPlan;
use super::shape::MatmulShape;
use super::variant::MatmulVariant;
use super::wgmma::{self, TensorMap2d, Tf32x3Order};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::sys::{self, CUtensorMapDataType};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use kernels::matmul::tf32x3;
use kernels::matmul::wgmma::{Operand, PROMOTED_BLOCK_ROWS};
use std::collections::HashMap;

/// Device addresses of one canonical product `C' = A' B'` and its workspace regions.
pub(super) struct Product {
    /// `A'` (`m x k`, row-major at `ld_a`).
    pub a: u64,
    /// `B'` (`k x n` at `ld_b`; `B'^T`, `n x k`, for `wgmma_tf32_transposed`).
    pub b: u64,
    /// `C'` (`m x n`, packed).
    pub c: u64,
    /// `A'`'s leading dimension, elements.
    pub ld_a: usize,
    /// `B'`'s.
    pub ld_b: usize,
    /// The split-K partials.
    pub split_k: u64,
    /// Split-TF32's `A''` and `B''`.
    pub tf32x3: (u64, u64),
    /// Split-TF32's guard.
    pub guard: u64,
}

/// Every kernel `plan` launches.
pub(super) fn kernels_of(plan: &MatmulPlan) -> Vec<&'static str> {
    let mut names = vec![plan.kernel()];
    if plan.reduce().is_some() {
        names.push(kernels::matmul::split_k::KERNEL);
    }
    if plan.variant() == MatmulVariant::WgmmaTf32x3 {
        names.push(tf32x3::KERNEL_SPLIT);
    }
    if let Some(fallback) = plan.fallback() {
        names.extend(kernels_of(fallback));
    }
    names
}

/// Launches `plan` on `p`: `maps` gives the device copy of a list of tensor maps for the
/// addresses they describe.
pub(super) fn product(
    gpu: &Gpu,
    plan: &MatmulPlan,
    functions: &HashMap<&'static str, CudaFunction>,
    p: &Product,
    right_transposed: bool,
    mut maps: impl FnMut([u64; 3], &[(TensorMap2d, u64, CUtensorMapDataType)]) -> Result<u64>,
) -> Result<()> {
    let s = plan.shape();
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    let f32_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    let bf16_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    let f16_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    // With a split of k the tile kernels write their partial products to the workspace, and the
    // reduction adds them into C'; without one they write C'.
    let split = plan.split().unwrap_or(super::split_k::SplitK::none(s.k));
    // With a split the tile kernels store their partial products in the workspace and add them
    // into C' themselves (the last work item of each tile), counting on per-tile counters.
    let split_out = split.splits > 1;
    // The maps in `list`, C' among them where `c_in_maps`; `a_offsets` for the unaligned-A
    // kernels (their maps of A's classes of rows first).
    let mut tensor_core = |kernel: &str,
                           list: Vec<(TensorMap2d, u64, CUtensorMapDataType)>,
                           c_in_maps: bool,
                           a_offsets: Option<u32>|
     -> Result<()> {
        let key = [p.a, p.b, if c_in_maps { p.c } else { 0 }];
        let maps = maps(key, &list)?;
        if plan.cluster_blocks() > 1 {
            return cluster_product(gpu, plan, &functions[plan.kernel()], maps, p.c, split.k_chunk);
        }
        let (partials, counters) = if split_out {
            let tiles = usize::try_from(wgmma::tiles(s, plan.kernel())).unwrap_or(usize::MAX);
            (p.split_k, gpu.split_counters(tiles)?)
        } else {
            (0, 0)
        };
        // The unaligned-A kernels count k past A's by the classes' largest offset.
        let stage_k = if a_offsets.is_some() { k + kernels::matmul::wgmma::UNALIGNED_A_EXTRA_K } else { k };
        let mut builder = gpu.stream().launch_builder(&functions[kernel]);
        // Unsplit, a chunk past the k they count (the planner's covers A's k only).
        let k_chunk = if a_offsets.is_some() && !split_out { u32::MAX } else { split.k_chunk };
        builder.arg(&maps).arg(&p.c).arg(&partials).arg(&counters).arg(&m).arg(&stage_k).arg(&n).arg(&k_chunk);
        if let Some(offsets) = &a_offsets {
            builder.arg(offsets);
        }
        // SAFETY: the kernel contract (kernels::matmul::wgmma): the maps describe A' and B' (and
        // C' where listed, never with a split) as the plan laid them out, in the boxes and
        // swizzle the kernel takes; the output is C' (m*n f32); with a split, the partials are
        // the workspace region of splits*m*n f32 the plan laid out, overlapping neither operand
        // nor C' (checked by the plan), and the counters are this stream's, one zero u32 per
        // tile at least, which launches on this stream (one at a time) leave zero; k_chunk is
        // the plan's, a multiple of the kernel's stage below k or at least k (check_split and
        // the planner's granule check), so the kernel's splits are the plan's (for the
        // unaligned-A kernels the plan's chunks cover k + 3, the k they take, and unsplit
        // they get a chunk past it; their classes' offsets are the maps' own); the launch
        // config and its dynamic shared memory are the planner's, allowed when the plan was made.
        unsafe { builder.launch(plan.launch_config()) }?;
        Ok(())
    };
    match plan.variant() {
        MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16 if kernels::matmul::wgmma::is_ld_kernel(plan.kernel()) => {
            ld_product(gpu, plan, &functions[plan.kernel()], p, split.k_chunk)
        }
        MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16 => {
            let (op, data_type) = if plan.variant() == MatmulVariant::WgmmaF16 {
                (Operand::F16, f16_type)
            } else {
                (Operand::Bf16, bf16_type)
            };
            let tile_rows = wgmma::tile_of(plan.kernel()).0;
            let [map_a, map_b] = wgmma::tensor_maps(s, op, p.ld_a, p.ld_b, tile_rows);
            // The 16-row kernels store C' directly.
            let n16 = tile_rows == kernels::matmul::wgmma::N16_BLOCK_ROWS;
            let mut list = vec![(map_a, p.a, data_type), (map_b, p.b, data_type)];
            // A split's partials are stored directly (no map); C' through the TMA where it can:
            // where C' does not start on a 16-byte boundary (a view into a larger matrix), which
            // the TMA's stores need, the planned kernel's row-staged form stores it instead (the
            // same launch: block, grid and shared memory).
            let (kernel, c_map) = match wgmma::c_map(s).filter(|_| !split_out && !n16) {
                Some(_) if !p.c.is_multiple_of(16) => (kernels::matmul::wgmma::rows_kernel(plan.kernel()), None),
                c_map => (plan.kernel(), c_map),
            };
            if let Some(map_c) = c_map {
                list.push((map_c, p.c, f32_type));
            }
            tensor_core(kernel, list, c_map.is_some(), None)
        }
        MatmulVariant::WgmmaTf32 if kernels::matmul::wgmma::aligned_a_kernel(plan.kernel()) != plan.kernel() => {
            // A as it lies, in four classes of rows, each a map from its own 16-byte aligned base.
            let tile_rows = wgmma::tile_of(plan.kernel()).0;
            let (classes, map_b, offsets) = wgmma::tensor_maps_unaligned_a(s, p.a, p.ld_a, p.ld_b, tile_rows);
            let mut list: Vec<_> = classes.iter().map(|&(map, base)| (map, base, f32_type)).collect();
            list.push((map_b, p.b, f32_type));
            tensor_core(plan.kernel(), list, false, Some(offsets))
        }
        MatmulVariant::WgmmaTf32 => {
            // A's boxes span the tile's rows of C (wgmma_tf32: 256, wgmma_tf32_n128 and _n64: 128).
            let [map_a, map_b] = wgmma::tensor_maps_rs(s, p.ld_a, p.ld_b, wgmma::tile_of(plan.kernel()).0);
            tensor_core(plan.kernel(), vec![(map_a, p.a, f32_type), (map_b, p.b, f32_type)], false, None)
        }
        MatmulVariant::WgmmaTf32Transposed => {
            debug_assert!(right_transposed, "the plan gives wgmma_tf32_transposed B'^T");
            let [map_a, map_bt] = wgmma::tensor_maps(s, Operand::Tf32, p.ld_a, p.ld_b, wgmma::tile_of(plan.kernel()).0);
            tensor_core(plan.kernel(), vec![(map_a, p.a, f32_type), (map_bt, p.b, f32_type)], false, None)
        }
        MatmulVariant::WgmmaTf32x3 => tf32x3_product(gpu, plan, functions, p, maps, Tf32x3Order::DEFAULT),
        MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => decode(gpu, plan, functions, p),
        _ => fp32(gpu, plan, functions, p, 0),
    }
}

/// An `_ld` tensor-core plan (`kernels::matmul::wgmma::KERNEL_BF16_N64_LD`): the operands' own
/// addresses and leading dimensions instead of tensor maps, no split of `k` (`MatmulPlan::with_ld`).
fn ld_product(gpu: &Gpu, plan: &MatmulPlan, function: &CudaFunction, p: &Product, k_chunk: u32) -> Result<()> {
    let s = plan.shape();
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    let (lda, ldb) = (ld_arg(p.ld_a, "A'")?, ld_arg(p.ld_b, "B'")?);
    let (maps, partials, counters) = (0u64, 0u64, 0u64);
    let mut builder = gpu.stream().launch_builder(function);
    builder.arg(&maps).arg(&p.c).arg(&partials).arg(&counters).arg(&m).arg(&k).arg(&n).arg(&k_chunk);
    builder.arg(&p.a).arg(&p.b).arg(&lda).arg(&ldb);
    // SAFETY: the `_ld` kernels' contract (kernels::matmul::wgmma): A' (m x k at lda) and B' (k x
    // n at ldb) are the plan's operands in the kernel's 16-bit type, read-only here, which the
    // plan checked against the buffers' lengths and C' (m*n f32) against overlap; no split
    // (with_ld plans none), so no partials or counters, and k_chunk covers k; the launch config
    // (LD_THREADS threads, the rows form's dynamic shared memory) is the planner's, allowed when
    // the plan was made.
    unsafe { builder.launch(plan.launch_config()) }?;
    Ok(())
}

/// A leading dimension as the kernels' `u32`, or an error naming the operand.
fn ld_arg(ld: usize, what: &str) -> Result<u32> {
    u32::try_from(ld).map_err(|_| Error::LimitExceeded {
        what: format!("{what}'s leading dimension"),
        value: ld as u64,
        limit: u32::MAX as u64,
    })
}

/// A `_cluster` tensor-core plan: each tile's splits of `k` as one cluster of blocks, which add
/// their partial products through each other's shared memory (no workspace, no counters).
fn cluster_product(
    gpu: &Gpu,
    plan: &MatmulPlan,
    function: &CudaFunction,
    maps: u64,
    c: u64,
    k_chunk: u32,
) -> Result<()> {
    let s = plan.shape();
    let cfg = plan.launch_config();
    let (mut maps, mut c, mut partials, mut counters) = (maps, c, 0u64, 0u64);
    let (mut m, mut k, mut n, mut k_chunk) = (s.m as u32, s.k as u32, s.n as u32, k_chunk);
    let mut params: [*mut std::ffi::c_void; 8] = [
        (&mut maps as *mut u64).cast(),
        (&mut c as *mut u64).cast(),
        (&mut partials as *mut u64).cast(),
        (&mut counters as *mut u64).cast(),
        (&mut m as *mut u32).cast(),
        (&mut k as *mut u32).cast(),
        (&mut n as *mut u32).cast(),
        (&mut k_chunk as *mut u32).cast(),
    ];
    // SAFETY: the kernel contract (kernels::matmul::wgmma, the `_cluster` kernels): the
    // parameters match its signature; the maps describe A' and B' as the plan laid them out; C'
    // holds m*n f32; the grid is a block per work item (tiles x splits) in clusters of the
    // plan's splits, which the plan keeps within MAX_CLUSTER_SPLITS; k_chunk is the plan's, a
    // multiple of the kernel's stage; the dynamic shared memory is the planner's, allowed when
    // the plan was made.
    unsafe { crate::gpu::launch_in_clusters(function, cfg, gpu.stream(), plan.cluster_blocks(), &mut params) }?;
    Ok(())
}

/// An FP32 plan: its kernel and, with a split, the reduction. `guard` is 0 (they run) or the
/// address of a split-TF32 guard (they run only on its FP32 path).
fn fp32(
    gpu: &Gpu,
    plan: &MatmulPlan,
    functions: &HashMap<&'static str, CudaFunction>,
    p: &Product,
    guard: u64,
) -> Result<()> {
    let s = plan.shape();
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    let (split, reduce) = (plan.split(), plan.reduce());
    // With a split the kernel writes its partial products to the workspace, and the reduction
    // below writes C'; without one it writes C'.
    let out = if reduce.is_some() { p.split_k } else { p.c };
    let k_chunk = split.map(|s| s.k_chunk);
    let mut builder = gpu.stream().launch_builder(&functions[plan.kernel()]);
    builder.arg(&p.a).arg(&p.b).arg(&out).arg(&m).arg(&k).arg(&n);
    // Only the kernels that split k take its chunk length and a guard.
    if let Some(k_chunk) = &k_chunk {
        builder.arg(k_chunk).arg(&guard);
    }
    // SAFETY: the kernel contracts (kernels::matmul docs): A' and B' hold m*k and k*n packed f32,
    // the output is C' (m*n) or, with a split, the workspace region of splits*m*n the plan laid
    // out, disjoint from both; the planner gives the kernel's block shape, a grid z equal to the
    // splits and a k_chunk that is a positive multiple of 8; the guard is 0 or a finished split's.
    unsafe { builder.launch(plan.launch_config()) }?;
    reduce_partials(gpu, plan, functions, p, guard)
}

/// With a split of `k` (a reduction in the plan), `matmul_split_k_reduce` of the partial
/// products the plan's kernel wrote to the workspace into `C'`; nothing otherwise. `guard` is 0
/// or the address of a split-TF32 guard (the reduction then runs only on its FP32 path).
fn reduce_partials(
    gpu: &Gpu,
    plan: &MatmulPlan,
    functions: &HashMap<&'static str, CudaFunction>,
    p: &Product,
    guard: u64,
) -> Result<()> {
    let s = plan.shape();
    let (Some(split), Some(cfg)) = (plan.split(), plan.reduce()) else { return Ok(()) };
    let len = u32::try_from(s.m as u64 * s.n as u64).map_err(|_| Error::LimitExceeded {
        what: "m * n of a split-K reduction".into(),
        value: s.m as u64 * s.n as u64,
        limit: u32::MAX as u64,
    })?;
    let splits = split.splits;
    let mut builder = gpu.stream().launch_builder(&functions[kernels::matmul::split_k::KERNEL]);
    builder.arg(&p.split_k).arg(&p.c).arg(&len).arg(&splits).arg(&guard);
    // SAFETY: the workspace region holds splits*m*n floats written by the plan's kernel before
    // this on the same stream, C' holds m*n; disjoint; the guard is 0 or a split-TF32 guard
    // written on this stream before.
    unsafe { builder.launch(cfg) }?;
    Ok(())
}

/// A `decode_bf16` or `decode_f16` plan: the kernel on 16-bit `A'` and `B'` as they lie (16-byte aligned rows,
/// which its 16-byte loads need of the base addresses too); with a split, the kernel adds its partial products.
fn decode(gpu: &Gpu, plan: &MatmulPlan, functions: &HashMap<&'static str, CudaFunction>, p: &Product) -> Result<()> {
    let s = plan.shape();
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    for (operand, address, ld) in [("A'", p.a, p.ld_a), ("B'", p.b, p.ld_b)] {
        if !address.is_multiple_of(16) || !ld.is_multiple_of(8) {
            return Err(Error::Unsupported(format!(
                "{operand} at {address:#x} with leading dimension {ld}: {} reads 16-bit rows with 16-byte loads, \
                 so it needs a 16-byte aligned address and a leading dimension that is a multiple of 8",
                plan.variant()
            )));
        }
    }
    let (ld_a, ld_b) = (u32::try_from(p.ld_a), u32::try_from(p.ld_b));
    let (Ok(ld_a), Ok(ld_b)) = (ld_a, ld_b) else {
        return Err(Error::LimitExceeded {
            what: format!("a leading dimension of {}", plan.variant()),
            value: p.ld_a.max(p.ld_b) as u64,
            limit: u32::MAX as u64,
        });
    };
    let split = plan.split().unwrap_or(super::split_k::SplitK::none(s.k));
    // With a split the kernel stores its partial products in the workspace and each strip's last
    // block adds them into C', counting on per-strip counters.
    let (partials, counters) = if split.splits > 1 {
        (p.split_k, gpu.split_counters(kernels::matmul::decode::strips(n) as usize)?)
    } else {
        (0, 0)
    };
    let mut builder = gpu.stream().launch_builder(&functions[plan.kernel()]);
    builder.arg(&p.a).arg(&p.b).arg(&partials).arg(&p.c).arg(&counters);
    builder.arg(&m).arg(&k).arg(&n).arg(&ld_a).arg(&ld_b).arg(&split.k_chunk);
    // SAFETY: the kernel contract (kernels::matmul::decode): A' (m x k at ld_a) and B' (k x n at
    // ld_b) are 16-bit, 16-byte aligned with leading dimensions multiples of 8 (checked above),
    // read-only here; C' holds m*n f32; with a split, the partials are the workspace region of
    // splits*m*n f32 the plan laid out, disjoint from the operands and C', and the counters are
    // this stream's, one zero u32 per strip at least, which launches on this stream (one at a
    // time) leave zero; m <= 16 and the grid (strips, 1, splits) with splits = ceil(k /
    // k_chunk) are the planner's (decode::plan, check_split).
    unsafe { builder.launch(plan.launch_config()) }?;
    Ok(())
}

/// The grid of `matmul_split_tf32x3` for `shape` on `sm_count` SMs: `A'` and `B'` in one launch
/// (`blockIdx.z`), a few blocks per SM each (`kernels::matmul::tf32x3::split_grid_blocks`).
pub fn split_grid(shape: MatmulShape, sm_count: u32) -> LaunchConfig {
    let widest = shape.k.max(shape.n).min(u32::MAX as usize) as u32;
    let most_rows = shape.m.max(shape.k).min(u32::MAX as usize) as u32;
    let grid_dim = tf32x3::split_grid_blocks(widest, most_rows, sm_count);
    LaunchConfig { grid_dim, block_dim: (tf32x3::SPLIT_THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// A `wgmma_tf32x3` plan: the split of `A'` and `B'` in `order` with the guard's range reduction
/// and decision (pass 0), the scaled split where the decision needs one (pass 1),
/// `wgmma_tf32_promoted` on `(m, 3k, n)`, and the plan's FP32 fallback, which runs only where the
/// guard refused the split path; all on the stream, with no synchronisation.
pub(super) fn tf32x3_product(
    gpu: &Gpu,
    plan: &MatmulPlan,
    functions: &HashMap<&'static str, CudaFunction>,
    p: &Product,
    mut maps: impl FnMut([u64; 3], &[(TensorMap2d, u64, CUtensorMapDataType)]) -> Result<u64>,
    order: Tf32x3Order,
) -> Result<()> {
    let fallback = plan.fallback().ok_or_else(|| {
        Error::InvalidArgument(format!("{}: a split-TF32 plan without its FP32 fallback", plan.variant().name()))
    })?;
    let s = plan.shape();
    let k3 = u32::try_from(3 * s.k).map_err(|_| Error::LimitExceeded {
        what: "3k (the split operands' inner dimension)".into(),
        value: 3 * s.k as u64,
        limit: u32::MAX as u64,
    })?;
    let (m, k, n) = (s.m as u32, s.k as u32, s.n as u32);
    let (ld_a, ld_b, _) = wgmma::tf32x3_layout(s);
    let (split_a, split_b) = p.tf32x3;
    // Pass 0 reduces into zeroed words and counts its blocks from zero.
    // SAFETY: the guard region holds GUARD_WORDS u32 of the workspace, on this stream.
    unsafe {
        sys::cuMemsetD32Async(p.guard, 0, tf32x3::GUARD_WORDS, gpu.stream().cu_stream()).result()?;
    }
    let (chunk, parts) = (order.chunk(k), order.a_small_parts());
    let (ld_a32, ld_b32) = (ld_a as u32, ld_b as u32);
    let grid = split_grid(s, gpu.info().sm_count);
    for pass in [0u32, 1] {
        let mut builder = gpu.stream().launch_builder(&functions[tf32x3::KERNEL_SPLIT]);
        builder.arg(&p.a).arg(&p.b).arg(&split_a).arg(&split_b).arg(&m).arg(&k).arg(&n);
        builder.arg(&ld_a32).arg(&ld_b32).arg(&parts).arg(&chunk).arg(&pass).arg(&p.guard);
        // SAFETY: A' and B' hold m*k and k*n packed f32; A'' (m x ld_a, ld_a >= 3k) and B'' (3k
        // x ld_b, ld_b >= n), rows padded to 16 bytes, are workspace regions the plan laid out
        // for this shape, 256-byte aligned and disjoint; 3k < 2^32 (checked above); chunk >= 1;
        // the guard was zeroed above before pass 0, and pass 1 follows it; split_grid's grid.
        unsafe { builder.launch(grid) }?;
    }
    let tripled = MatmulShape::new(s.m, 3 * s.k, s.n)?;
    let [map_a, map_b] = wgmma::tensor_maps_rs(tripled, ld_a, ld_b, PROMOTED_BLOCK_ROWS);
    let f32_type = CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    let maps = maps([split_a, split_b, 1], &[(map_a, split_a, f32_type), (map_b, split_b, f32_type)])?;
    let mut builder = gpu.stream().launch_builder(&functions[plan.kernel()]);
    builder.arg(&maps).arg(&p.c).arg(&m).arg(&k3).arg(&n).arg(&p.guard);
    // SAFETY: the kernel contract (kernels::matmul::wgmma, wgmma_tf32_promoted) on (m, 3k, n):
    // the maps describe A'' and B'' (written above on this stream) in the boxes tensor_maps_rs
    // gives for PROMOTED_BLOCK_ROWS; C' holds m*n f32 and overlaps neither; the plan's launch
    // config and shared memory, allowed when the plan was made; the guard was written above.
    unsafe { builder.launch(plan.launch_config()) }?;
    fp32(gpu, fallback, functions, p, p.guard)
}
