//! Every matmul variant and configuration against a float64 CPU reference: square,
//! rectangular, ragged and random shapes, fresh random inputs each run, `C` poisoned with NaN
//! before every launch; split-K plans bitwise reproducible. The tensor-core variants (on
//! compute capability 9.0) are held to their precision's reference and bound
//! (`hopper_kernels::matmul::Precision`).

use approx::relative_eq;
use hopper_kernels::matmul::{
    self, DeviceMatrices, GemmPlan, MatmulShape, MatmulVariant, PlanOptions, Precision, PrecisionPolicy, SplitK,
    TileWidth,
};
use hopper_kernels::reference::{MatmulReference, random_matrix};
use hopper_kernels::{Error, Gpu};
use rand::Rng;
use support::{fresh_rng, gpu, hopper_gpu};

/// Whether `variant` can run on `gpu`: the tensor-core variants need compute capability 9.0.
fn runs_here(gpu: &Gpu, variant: MatmulVariant) -> bool {
    !variant.needs_tensor_cores() || gpu.hopper_status().is_ok()
}

/// Every plan worth checking on `shape`: each variant that takes it as the planner plans it,
/// and the split-K kernels with `k` forced into 2 and 3 ranges (when `k` is long enough), so
/// that the split and the reduction run on every shape the tests cover.
fn every_plan(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = Vec::new();
    for variant in MatmulVariant::ALL.into_iter().filter(|v| v.supports(shape) && runs_here(gpu, *v)) {
        plans.push(matmul::plan_gemm(gpu, variant, shape, PlanOptions::default()).unwrap());
        if variant.splits_k() {
            for wanted in [2, 3] {
                let split = SplitK::about_in(shape.k, wanted, 1, variant.split_granule());
                if split.splits > 1 {
                    let options = PlanOptions { split: Some(split), ..PlanOptions::default() };
                    plans.push(matmul::plan_gemm(gpu, variant, shape, options).unwrap());
                }
            }
        }
    }
    plans
}

/// Runs every plan on fresh random `A`, `B` of `shape` and asserts each element of `C` is
/// within `tolerance * sum|a*b|` of its precision's reference (or within 4 eps relative),
/// naming the plan and the first element that is not.
fn assert_every_variant_matches_cpu(gpu: &Gpu, rng: &mut impl Rng, (m, k, n): (usize, usize, usize)) {
    assert_plans_match_cpu(gpu, rng, (m, k, n), every_plan)
}

/// [`assert_every_variant_matches_cpu`] for the plans `plans` gives.
fn assert_plans_match_cpu(
    gpu: &Gpu,
    rng: &mut impl Rng,
    (m, k, n): (usize, usize, usize),
    mut plans: impl FnMut(&Gpu, MatmulShape) -> Vec<GemmPlan>,
) {
    let shape = MatmulShape::new(m, k, n).unwrap();
    let (a, b) = (random_matrix(rng, m * k), random_matrix(rng, k * n));
    let reference = MatmulReference::new(&a, &b, m, k, n);
    let (mut bf16_reference, mut fp16_reference) = (None, None);
    let mut mats = DeviceMatrices::upload(gpu, shape, &a, &b).unwrap();
    for plan in plans(gpu, shape) {
        let precision = plan.precision();
        let rounded = || {
            let (a, b) = (precision.reference_inputs(&a), precision.reference_inputs(&b));
            MatmulReference::new(&a, &b, m, k, n)
        };
        let reference = match precision {
            Precision::Bf16 => bf16_reference.get_or_insert_with(rounded),
            Precision::Fp16 => fp16_reference.get_or_insert_with(rounded),
            Precision::Fp32 | Precision::Tf32 | Precision::Tf32x3 => &reference,
        };
        let c = matmul::run_plan(gpu, &plan, &mut mats).unwrap();
        for (i, &got) in c.iter().enumerate() {
            let (want, scale) = (reference.values[i], reference.scales[i]);
            assert!(
                relative_eq!(
                    got as f64,
                    want,
                    epsilon = precision.tolerance(k) * scale,
                    max_relative = 4.0 * f32::EPSILON as f64
                ),
                "{plan} on {shape}: C[{}][{}] = {got}, want {want} (scale {scale})",
                i / n,
                i % n
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_variant_matches_cpu_on_square_sizes() {
    let (gpu, mut rng) = (gpu(), fresh_rng("square"));
    for size in [1, 17, 1000, 1024] {
        assert_every_variant_matches_cpu(&gpu, &mut rng, (size, size, size));
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_variant_matches_cpu_on_rectangular_1000x800x1200() {
    let (gpu, mut rng) = (gpu(), fresh_rng("rectangular"));
    assert_every_variant_matches_cpu(&gpu, &mut rng, (1000, 800, 1200));
    assert_every_variant_matches_cpu(&gpu, &mut rng, (1200, 800, 1000));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_variant_matches_cpu_on_ragged_shapes() {
    let (gpu, mut rng) = (gpu(), fresh_rng("ragged"));
    // One less, equal and one more than each tile, vectors, and a long inner dimension.
    let shapes = [
        (1, 1, 33),
        (33, 1, 1),
        (1, 1000, 1),
        (15, 17, 31),
        (16, 16, 16),
        (17, 15, 33),
        (31, 32, 33),
        (32, 31, 64),
        (33, 65, 31),
        (63, 1, 65),
        (2, 4096, 3),
        (129, 100, 1),
        // sgemm's 128 x 128 x 8 tiles: just below, at and above them, on the 16-byte path
        // (k and n multiples of 4) and on the scalar fallback (k or n not).
        (127, 128, 129),
        (128, 128, 128),
        (129, 132, 132),
        (129, 129, 128),
        (128, 127, 127),
        (257, 20, 260),
        (130, 7, 255),
        (3, 4, 4),
        (255, 1, 4),
        // The narrow kernels: GEMV both ways, their 16-wide limit and one past it, ragged k
        // around few_cols' 256-deep pieces and few_rows' 4-row steps, unaligned rows.
        (1, 300, 1),
        (1, 257, 513),
        (16, 255, 1000),
        (17, 33, 16),
        (5, 1000, 3),
        (700, 513, 16),
        (2, 6, 2050),
        (1000, 6, 2),
        (3, 4099, 5),
        // few_rows_{8,16} stage A in panels of 1024 / 512 columns: several panels, the last
        // ragged, on the scalar path (k odd) with a partial last block of columns.
        (12, 1031, 130),
        (7, 2051, 70),
    ];
    for shape in shapes {
        assert_every_variant_matches_cpu(&gpu, &mut rng, shape);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_variant_matches_cpu_on_200_random_shapes_up_to_300() {
    let (gpu, mut rng) = (gpu(), fresh_rng("random shapes"));
    for _ in 0..200 {
        let shape = (rng.random_range(1..=300), rng.random_range(1..=300), rng.random_range(1..=300));
        assert_every_variant_matches_cpu(&gpu, &mut rng, shape);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_variant_matches_cpu_on_suite_shapes_with_narrow_sides() {
    let (gpu, mut rng) = (gpu(), fresh_rng("narrow suite shapes"));
    for shape in
        [(3, 100_000, 5), (1, 4096, 8192), (8192, 4096, 1), (16, 2048, 4096), (64, 8192, 64), (128, 16_384, 128)]
    {
        assert_every_variant_matches_cpu(&gpu, &mut rng, shape);
    }
}

/// The plans of the tensor-core variants alone (`decode_bf16` where `m <= 16`), the variants of
/// several tile widths on each width.
fn tensor_core_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = Vec::new();
    for v in [
        MatmulVariant::WgmmaBf16,
        MatmulVariant::WgmmaF16,
        MatmulVariant::WgmmaTf32,
        MatmulVariant::WgmmaTf32Transposed,
        MatmulVariant::WgmmaTf32x3,
        MatmulVariant::DecodeBf16,
        MatmulVariant::DecodeF16,
    ] {
        if !v.supports(shape) {
            continue;
        }
        let widths: Vec<Option<TileWidth>> =
            if TILE_WIDTHS.contains(&v) { widths_of(v).into_iter().map(Some).collect() } else { vec![None] };
        for tile in widths {
            let options = PlanOptions { tile, ..PlanOptions::default() };
            plans.push(matmul::plan_gemm(gpu, v, shape, options).unwrap());
        }
    }
    plans
}

/// The tensor-core variants whose kernels come in several tile widths (128 x 256 or 256 x 128,
/// 128 x 128, 128 x 64 and 16 x 128).
const TILE_WIDTHS: [MatmulVariant; 3] = [MatmulVariant::WgmmaBf16, MatmulVariant::WgmmaF16, MatmulVariant::WgmmaTf32];

/// The tile widths `variant`'s family has a kernel of (the kernels crate's `with_tile`), widest
/// first.
fn widths_of(variant: MatmulVariant) -> Vec<TileWidth> {
    let kernel = variant.kernel().unwrap();
    TileWidth::ALL
        .into_iter()
        .filter(|w| kernels::matmul::wgmma::with_tile(kernel, w.instruction_n()).is_some())
        .collect()
}

/// `variant` (`decode_bf16` or `decode_f16`) as planned, unsplit, and split in 2, 3, 7 and 12
/// (where `k` allows): every way its output is written (directly, or as partials added by the
/// strip's last block, in one group of loads and in two).
fn decode_plans(gpu: &Gpu, variant: MatmulVariant, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = vec![matmul::plan_gemm(gpu, variant, shape, PlanOptions::default()).unwrap()];
    let mut splits = vec![SplitK::none(shape.k)];
    splits.extend([2, 3, 7, 12].map(|w| SplitK::about(shape.k, w, 1)).into_iter().filter(|s| s.splits > 1));
    for split in splits {
        let options = PlanOptions { split: Some(split), ..PlanOptions::default() };
        plans.push(matmul::plan_gemm(gpu, variant, shape, options).unwrap());
    }
    plans
}

/// `decode_bf16` and `decode_f16` on the decode shapes: `m` in {1, 2, 7, 8, 15, 16} (one and
/// both halves of the 16-row tile, and one short of each) times `(k, n)` from one element to LLM
/// weights, ragged ones included (`k` not a multiple of the 16- and 48-row steps, `n` not of the
/// 64-column strips; 2552 x 784 planned into 7 splits of one super-step per warp); `C`
/// poisoned, against the float64 product of the inputs rounded to the kernel's type under its
/// bound; then every plan rerun for bitwise equality. The reference of
/// each `(k, n)` is computed once for 16 rows: a product of fewer rows is its first rows.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_decode_kernels_match_cpu_on_decode_shapes_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = hopper_gpu("decode_bf16");
    for (variant, (k, n)) in [MatmulVariant::DecodeBf16, MatmulVariant::DecodeF16].into_iter().flat_map(|v| {
        [(1, 1), (17, 33), (2552, 784), (4096, 4096), (4096, 14336), (14336, 4096), (4095, 4097)].map(|s| (v, s))
    }) {
        let (a, b) = (random_matrix(&mut rng, 16 * k), random_matrix(&mut rng, k * n));
        let precision = variant.precision();
        let (ar, br) = (precision.reference_inputs(&a), precision.reference_inputs(&b));
        let reference = MatmulReference::new(&ar, &br, 16, k, n);
        for m in [1, 2, 7, 8, 15, 16] {
            let shape = MatmulShape::new(m, k, n).unwrap();
            let mut mats = DeviceMatrices::upload(&gpu, shape, &a[..m * k], &b).unwrap();
            for plan in decode_plans(&gpu, variant, shape) {
                assert_eq!(plan.precision(), precision);
                let c = matmul::run_plan(&gpu, &plan, &mut mats).unwrap();
                for (i, &got) in c.iter().enumerate() {
                    let (want, scale) = (reference.values[i], reference.scales[i]);
                    assert!(
                        relative_eq!(
                            got as f64,
                            want,
                            epsilon = precision.tolerance(k) * scale,
                            max_relative = 4.0 * f32::EPSILON as f64
                        ),
                        "{} on {shape}: C[{}][{}] = {got}, want {want} (scale {scale})",
                        plan.kernel_plan(),
                        i / n,
                        i % n
                    );
                }
                let again = matmul::run_plan(&gpu, &plan, &mut mats).unwrap();
                let same = c.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{} on {shape}: two runs differ (a race?)", plan.kernel_plan());
            }
        }
    }
}

/// Kept small for compute-sanitizer (`run.sh sanitize`, filter `tensor_core`): edges of the
/// 128 x 256 tiles and of the 64- and 32-deep stages, rows not a multiple of 16 bytes, several
/// tiles per block of the persistent grid (more tiles than SMs), and products of fewer rows than
/// a tile, whose `A` boxes stop at the 8-row atom past `m` (64, 65, 96).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tensor_core_variants_match_cpu_on_tile_edges_and_unaligned_rows() {
    let (gpu, mut rng) = hopper_gpu("tensor cores");
    for shape in [
        (1, 1, 1),
        (128, 64, 256),
        (129, 65, 257),
        (127, 33, 255),
        (3, 7, 5),
        (200, 129, 9),
        (1, 300, 1),
        (64, 129, 300),
        (65, 64, 257),
        (96, 200, 129),
    ] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, tensor_core_plans);
    }
    // 17 x 2 tiles of 128 x 256 on at most 132 blocks.
    assert_plans_match_cpu(&gpu, &mut rng, (2100, 70, 300), tensor_core_plans);
}

/// Up to `k = ROW_ORDER_MAX_K` the 16-bit kernels take their tiles a row of tiles at a time:
/// more tiles than SMs (each block several), with rows of `C` the TMA stores (`n % 4 == 0`) and
/// rows it cannot (the row-staged epilogue), one stage of `k` and two.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tensor_core_tiles_taken_a_row_at_a_time_match_cpu() {
    let (gpu, mut rng) = hopper_gpu("tensor cores, short k");
    for shape in [(4100, 40, 1100), (4100, 40, 1101), (2300, 128, 2049)] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, tensor_core_plans);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tensor_core_variants_give_equal_results_on_every_run() {
    let (gpu, mut rng) = hopper_gpu("tensor-core determinism");
    let shape = MatmulShape::new(1000, 1000, 1000).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &tensor_core_plans(&gpu, shape));
}

/// `wgmma_tf32` on each tile width, unsplit and with `k` forced into about 2, 3 and 7 ranges,
/// for an `A` whose rows are not 16-byte multiples: the `_unaligned_a` kernels (checked to be
/// planned so) wherever `A` has four tiles of rows or more, the classes' tiles add no wave of
/// work items on the GPU's SMs and the split's chunks cover `k + 3` columns; they read `A` as it
/// lies in four classes of rows.
fn unaligned_a_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = Vec::new();
    let sms = gpu.info().sm_count as u64;
    for tile in [TileWidth::N256, TileWidth::N128, TileWidth::N64] {
        for split in forced_splits(shape.k, &[2, 3, 7], MatmulVariant::WgmmaTf32.split_granule()) {
            let options = PlanOptions { split: Some(split), tile: Some(tile), ..PlanOptions::default() };
            let plan = matmul::plan_gemm(gpu, MatmulVariant::WgmmaTf32, shape, options).unwrap();
            let kernel = plan.kernel_plan().kernel();
            let plain = kernel.trim_end_matches("_unaligned_a");
            let classes = kernels::matmul::wgmma::unaligned_a_kernel(plain).expect("every TF32 tile kernel has one");
            let rows = matmul::wgmma::tile_of(classes).0 as usize;
            let waves = |kernel: &str| (matmul::wgmma::tiles(shape, kernel) * split.splits as u64).div_ceil(sms);
            let covered = split.splits == 1 || split.splits as u64 * split.k_chunk as u64 >= shape.k as u64 + 3;
            let expected = shape.m >= 4 * rows && waves(classes) <= waves(plain) && covered;
            assert_eq!(kernel.ends_with("_unaligned_a"), expected, "{plan}");
            plans.push(plan);
        }
    }
    plans
}

/// TF32's tile kernels on `A` rows of 1 to 4001 floats (never a multiple of 4), read as they lie
/// in four classes of rows: the classes' own tiles, their maps' rows starting up to 3 columns
/// early with `B`'s rows shifted to match, one stage past `k`, tiles of one class ending the
/// class's rows, splits ending on `k + 3`; against the float64 product with `C` NaN-poisoned,
/// then bitwise-equal reruns.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tf32_reads_unaligned_a_in_classes_of_rows_and_matches_cpu() {
    let (gpu, mut rng) = hopper_gpu("wgmma_tf32 unaligned A");
    let mut classes = 0;
    for shape in [(600, 1031, 257), (1025, 97, 64), (513, 33, 130), (2100, 4001, 27), (1100, 5, 300), (1030, 1, 9)] {
        let counted = |gpu: &Gpu, shape: MatmulShape| {
            let plans = unaligned_a_plans(gpu, shape);
            classes += plans.iter().filter(|p| p.kernel_plan().kernel().ends_with("_unaligned_a")).count();
            plans
        };
        assert_plans_match_cpu(&gpu, &mut rng, shape, counted);
    }
    // 35 of the 45 plans on the H200.
    assert!(classes >= 30, "only {classes} plans read A in classes of rows");
    let shape = MatmulShape::new(1031, 1031, 200).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &unaligned_a_plans(&gpu, shape));
}

/// A class's map starts its rows up to 3 columns early, in the row before: with an infinity in
/// the last column of every row 1 apart from a class boundary, each row of `C` of those rows is
/// that infinity times `B`'s last row (its sign), and every other row is finite and within its
/// bound (the kernel zeroes those leading columns before the first stage's multiply, so that no
/// zero row of `B` meets the infinity).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tf32_unaligned_a_keeps_each_rows_infinity_in_its_own_row() {
    let (gpu, mut rng) = hopper_gpu("wgmma_tf32 unaligned A infinities");
    let (m, k, n) = (600, 1031, 70);
    let shape = MatmulShape::new(m, k, n).unwrap();
    let mut a = random_matrix(&mut rng, m * k);
    let b = random_matrix(&mut rng, k * n);
    for r in (0..m).filter(|r| r % 2 == 1) {
        a[r * k + k - 1] = f32::INFINITY;
    }
    let reference = MatmulReference::new(&a, &b, m, k, n);
    let mut mats = DeviceMatrices::upload(&gpu, shape, &a, &b).unwrap();
    for plan in unaligned_a_plans(&gpu, shape) {
        let tolerance = plan.precision().tolerance(k);
        let c = matmul::run_plan(&gpu, &plan, &mut mats).unwrap();
        for (i, &got) in c.iter().enumerate() {
            let (r, j) = (i / n, i % n);
            if r % 2 == 1 {
                let last = b[(k - 1) * n + j];
                let want = if last == 0.0 { f32::NAN } else { f32::INFINITY.copysign(last) };
                assert!(got == want || (want.is_nan() && got.is_nan()), "{plan}: C[{r}][{j}] = {got}, want {want}");
            } else {
                let (want, scale) = (reference.values[i], reference.scales[i]);
                assert!(
                    relative_eq!(
                        got as f64,
                        want,
                        epsilon = tolerance * scale,
                        max_relative = 4.0 * f32::EPSILON as f64
                    ),
                    "{plan}: C[{r}][{j}] = {got}, want {want} (scale {scale})"
                );
            }
        }
    }
}

/// No split of `k`, then `k` in about each of `wanted` ranges of whole `granule`s where `k` holds
/// more than one (each split count once).
fn forced_splits(k: usize, wanted: &[u32], granule: u32) -> Vec<SplitK> {
    let mut splits = vec![SplitK::none(k)];
    splits.extend(wanted.iter().map(|&w| SplitK::about_in(k, w, 1, granule)).filter(|s| s.splits > 1));
    splits.dedup();
    splits
}

/// `wgmma_tf32`, `wgmma_bf16` and `wgmma_f16` on their 16-row tiles (the `_n16` kernels),
/// unsplit and with `k` forced into about 2, 3 and 7 ranges of whole stages where `k` holds them.
fn n16_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = Vec::new();
    for variant in TILE_WIDTHS {
        for split in forced_splits(shape.k, &[2, 3, 7], variant.split_granule()) {
            let options = PlanOptions { split: Some(split), tile: Some(TileWidth::N16), ..PlanOptions::default() };
            let plan = matmul::plan_gemm(gpu, variant, shape, options).unwrap();
            assert!(plan.kernel_plan().kernel().ends_with("_n16"), "{plan}");
            plans.push(plan);
        }
    }
    plans
}

/// The `_n16` kernels on `m` of 1, 2, 7, 15 and 16 (and, asked for, 17 and 40: several tiles of
/// 16 rows) times `(k, n)` from one element to a weight matrix, ragged against their 32- and
/// 64-deep stages and 128-column tiles, split or not: against the float64 product under each
/// precision's bound, and every plan rerun bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_sixteen_row_tiles_match_cpu_on_decode_shapes_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = hopper_gpu("the _n16 kernels");
    for m in [1, 2, 7, 15, 16, 17, 40] {
        for (k, n) in [(1, 1), (33, 129), (300, 257), (2048, 1000), (4096, 4096)] {
            assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), n16_plans);
        }
    }
    let shape = MatmulShape::new(16, 3000, 520).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &n16_plans(&gpu, shape));
}

/// `few_rows` on one row of `f32` with `k` of `GEMV_MIN_K` or more (`matmul_gemv`, `k` split
/// among each block's row groups), unsplit and split ([`forced_split_plans`]).
fn gemv_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let plans = forced_split_plans(gpu, MatmulVariant::FewRows, shape);
    for plan in &plans {
        assert_eq!(plan.kernel_plan().kernel(), "matmul_gemv", "{plan}");
    }
    plans
}

/// One row of `f32` (`matmul_gemv`) on the smallest `B` it takes and around it: `n` a multiple
/// of its blocks' 32 columns and ragged past them (a block's last columns outside `C`), `k` odd,
/// a long `k` on two blocks, a weight matrix; unsplit and split into 2, 3 and 7, against the
/// float64 product, and every plan rerun bitwise equal. (Its scalar path: `tests/gemm.rs`, a
/// `D` off a 16-byte boundary.)
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn one_row_of_f32_splits_k_inside_the_block_and_matches_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemv"));
    for shape in [(1, 8192, 512), (1, 4099, 1028), (1, 65_536, 64), (1, 1024, 4100), (1, 4096, 4096)] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, gemv_plans);
    }
    let shape = MatmulShape::new(1, 5001, 1032).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &gemv_plans(&gpu, shape));
}

/// `variant` planned for the shape unsplit and with `k` forced into about 2, 3 and 7 ranges
/// where `k` holds them.
fn forced_split_plans(gpu: &Gpu, variant: MatmulVariant, shape: MatmulShape) -> Vec<GemmPlan> {
    plans_with_splits(gpu, variant, shape, forced_splits(shape.k, &[2, 3, 7], variant.split_granule()))
}

/// `variant` planned for the shape with each of `splits` forced.
fn plans_with_splits(gpu: &Gpu, variant: MatmulVariant, shape: MatmulShape, splits: Vec<SplitK>) -> Vec<GemmPlan> {
    splits
        .into_iter()
        .map(|split| {
            let options = PlanOptions { split: Some(split), ..PlanOptions::default() };
            matmul::plan_gemm(gpu, variant, shape, options).unwrap()
        })
        .collect()
}

/// `few_cols` (`matmul_few_cols_shared_{8,16,32}` above 16 rows and from 2 columns), unsplit and
/// split ([`forced_split_plans`]).
fn few_cols_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    forced_split_plans(gpu, MatmulVariant::FewCols, shape)
}

/// `few_cols` on outputs of 17 to 1000 rows and 2 to 32 columns, where a block's rows share each
/// step's slice of `B` through shared memory: `k` one under, at and over a step of 128, several
/// steps with a ragged last; split or not; against the float64 product under FP32's bound, and
/// reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn few_cols_with_shared_b_matches_cpu_on_narrow_outputs_and_reruns_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("few_cols shared"));
    for m in [17, 33, 100, 1000] {
        for k in [127, 128, 129, 1031] {
            for n in [2, 5, 8, 9, 16, 17, 27, 32] {
                let shape = MatmulShape::new(m, k, n).unwrap();
                let plans = few_cols_plans(&gpu, shape);
                assert!(plans[0].kernel_plan().kernel().starts_with("matmul_few_cols_shared_"), "{}", plans[0]);
                assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), few_cols_plans);
            }
        }
    }
    let shape = MatmulShape::new(1000, 3000, 12).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &few_cols_plans(&gpu, shape));
}

/// `few_cols` on rows of `A` of at most 32 elements (`matmul_few_cols_short_k_{8,32}`, a thread
/// a row): one row to several blocks of 128 with a ragged last, `k` of 1 to 32, every width to
/// 32 columns (16 at 16 rows or fewer); split or not; against the float64 product under FP32's
/// bound, and reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn few_cols_on_short_rows_takes_a_thread_a_row_and_matches_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("few_cols short k"));
    for m in [1, 17, 129, 1000, 8098] {
        for k in [1, 3, 8, 17, 32] {
            for n in [1, 2, 8, 9, 16, 17, 32] {
                if n > kernels::matmul::skinny::few_cols_max_n(m as u32) as usize {
                    continue;
                }
                let shape = MatmulShape::new(m, k, n).unwrap();
                let plans = few_cols_plans(&gpu, shape);
                assert!(plans[0].kernel_plan().kernel().starts_with("matmul_few_cols_short_k_"), "{}", plans[0]);
                assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), few_cols_plans);
            }
        }
    }
    let shape = MatmulShape::new(1000, 31, 13).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &few_cols_plans(&gpu, shape));
}

/// `variant` with `k` forced into more splits than 32, where the reduction spreads them over up
/// to 32 rows of its block (`matmul::split_k::REDUCE_MAX_ROWS`): about 33, 64, 161 and 256 (the
/// most the planner takes), as many of them as `k` holds.
fn many_split_plans(gpu: &Gpu, variant: MatmulVariant, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut splits = forced_splits(shape.k, &[33, 64, 161, 256], variant.split_granule());
    splits.retain(|s| s.splits > 32);
    let plans = plans_with_splits(gpu, variant, shape, splits);
    assert!(!plans.is_empty(), "{}: k = {} holds no split above 32", variant.name(), shape.k);
    plans
}

/// Products split into 33 to 256 ranges of `k` on outputs of 1 to 139 columns (one row of `C`
/// over 161 partials, the case that moved the reduction to 32 rows a block), `C` ragged against
/// the reduction's 8 threads of 4 elements a row: against the float64 product under FP32's
/// bound, and every plan reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn split_k_reductions_of_many_splits_match_cpu_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("many splits"));
    let cases = [
        (MatmulVariant::FewRows, (1, 2565, 139)),
        (MatmulVariant::FewRows, (4, 2605, 269)),
        (MatmulVariant::FewRows, (8, 2912, 26)),
        (MatmulVariant::FewCols, (8, 10_397, 3)),
        (MatmulVariant::FewCols, (2, 3848, 1)),
        (MatmulVariant::Sgemm, (24, 13_368, 171)),
    ];
    for (variant, (m, k, n)) in cases {
        let shape = MatmulShape::new(m, k, n).unwrap();
        let plans = |gpu: &Gpu, shape| many_split_plans(gpu, variant, shape);
        assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), plans);
        assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &many_split_plans(&gpu, variant, shape));
    }
}

/// `sgemm` on the tile the shape takes, unsplit and split ([`forced_split_plans`]).
fn sgemm_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    forced_split_plans(gpu, MatmulVariant::Sgemm, shape)
}

/// For each shape: the planner's `sgemm` kernel is one `expected` accepts, and every plan of
/// [`sgemm_plans`] matches the float64 product. The kernels the shapes took.
fn assert_sgemm_tiles_match_cpu(
    gpu: &Gpu,
    rng: &mut impl Rng,
    shapes: &[(usize, usize, usize)],
    expected: impl Fn(&str) -> bool,
) -> std::collections::BTreeSet<&'static str> {
    let mut seen = std::collections::BTreeSet::new();
    for &(m, k, n) in shapes {
        let shape = MatmulShape::new(m, k, n).unwrap();
        let plan = matmul::plan_gemm(gpu, MatmulVariant::Sgemm, shape, PlanOptions::default()).unwrap();
        let kernel = plan.kernel_plan().kernel();
        assert!(expected(kernel), "{plan}");
        seen.insert(kernel);
        assert_plans_match_cpu(gpu, rng, (m, k, n), sgemm_plans);
    }
    seen
}

/// For each shape, every plan of [`sgemm_plans`] gives bitwise equal results run after run.
fn assert_sgemm_plans_rerun_bitwise_equal(gpu: &Gpu, rng: &mut impl Rng, shapes: &[(usize, usize, usize)]) {
    for &(m, k, n) in shapes {
        let shape = MatmulShape::new(m, k, n).unwrap();
        assert_plans_rerun_bitwise_equal(gpu, rng, shape, &sgemm_plans(gpu, shape));
    }
}

/// `sgemm`'s narrow tiles (512 x 32, 256 x 64 for outputs at most 32 or 64 columns wide, 64 x 256
/// and 32 x 512 for outputs that short, `k` from 256): one past and one short of each tile's long
/// side, ragged narrow sides, `k` whole slices or ragged, on the vector path and off it; split or
/// not; against the float64 product under FP32's bound, and reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sgemm_narrow_tiles_match_cpu_on_narrow_outputs_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sgemm narrow tiles"));
    let mut shapes = Vec::new();
    for (long, narrow) in [(511, 32), (513, 17), (1000, 27), (255, 64), (257, 33), (700, 50), (2000, 1)] {
        for k in [256, 262, 1031] {
            shapes.extend([(long, k, narrow), (narrow, k, long)]);
        }
    }
    let seen = assert_sgemm_tiles_match_cpu(&gpu, &mut rng, &shapes, |k| k.starts_with("sgemm_") && k.contains('x'));
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_sgemm_plans_rerun_bitwise_equal(&gpu, &mut rng, &[(3000, 2000, 40)]);
}

/// `sgemm`'s 64 x 256 tiles, which it takes for `k` under 512 where they leave no SM more blocks
/// than 128 x 128 (`sgemm::tile_on`), the grid fills the SMs and the product is too large for the
/// 4 x 4 kernels: `k` from 2 to 300, one past a tile's rows and columns, on the 16-byte path and
/// off it, split and not; against the float64 product under FP32's bound, and reruns bitwise
/// equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sgemm_wide_tiles_for_short_k_match_cpu_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sgemm wide tiles"));
    let shapes =
        [(6000, 8, 3000), (9000, 2, 6000), (2001, 17, 3001), (12_000, 26, 433), (4042, 65, 1243), (1000, 300, 2000)];
    assert_sgemm_tiles_match_cpu(&gpu, &mut rng, &shapes, |k| k == "sgemm_64x256");
    assert_sgemm_plans_rerun_bitwise_equal(&gpu, &mut rng, &[(4042, 65, 1243)]);
}

/// `sgemm`'s small tiles, which the planner takes where 128 x 128 tiles leave the SMs few warps
/// (`plan::SGEMM_MIN_WARPS`) in products too large for the 4 x 4 kernels: 64 x 128 (128 threads)
/// and 64 x 64 (64 threads), one past and short of a tile's rows and columns, `k` whole slices or
/// ragged, on the 16-byte path and off it, split and not; against the float64 product under
/// FP32's bound, and reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sgemm_small_tiles_match_cpu_on_small_grids_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sgemm small tiles"));
    let shapes = [
        (854, 334, 3510),
        (854, 336, 3512),
        (1025, 129, 4000),
        (1001, 203, 1067),
        (1008, 200, 1064),
        (3000, 60, 1000),
        (8193, 75, 257),
    ];
    let seen = assert_sgemm_tiles_match_cpu(&gpu, &mut rng, &shapes, |k| ["sgemm_64x128", "sgemm_64x64"].contains(&k));
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_sgemm_plans_rerun_bitwise_equal(&gpu, &mut rng, &[(854, 336, 3512), (1001, 203, 1067)]);
}

/// The 4 x 4-per-thread kernels `sgemm` runs small products on (`sgemm_4x4::takes`): 32 x 32
/// tiles, and 32 x 64 for outputs at most 64 columns wide; a single element, exact tiles, one
/// past and one short of a tile's rows and columns, `k` of one element, whole slices or ragged,
/// on the 16-byte path and off it, split and not; against the float64 product under FP32's
/// bound, and reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sgemm_4x4_tiles_match_cpu_on_small_products_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("sgemm 4x4 tiles"));
    let shapes = [
        (1, 1, 1),
        (32, 8, 32),
        (33, 7, 65),
        (31, 17, 33),
        (64, 64, 64),
        (65, 9, 63),
        (100, 129, 100),
        (129, 75, 129),
        (300, 12, 700),
        (950, 108, 270),
        (486, 114, 1008),
        (12_426, 33, 19),
        (8830, 45, 55),
        (148, 548, 249),
        (1000, 60, 200),
    ];
    let seen = assert_sgemm_tiles_match_cpu(&gpu, &mut rng, &shapes, |k| k.starts_with("sgemm_4x4_"));
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_sgemm_plans_rerun_bitwise_equal(&gpu, &mut rng, &[(950, 108, 270), (33, 7, 65), (148, 548, 249)]);
}

/// `short_k` alone, as planned.
fn short_k_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    vec![matmul::plan_gemm(gpu, MatmulVariant::ShortK, shape, PlanOptions::default()).unwrap()]
}

/// `short_k` (`k <= 32`: four columns a thread up to 16, two above): every `k` from 1 to 32, `C`
/// one short of, exactly on and one past its tiles of 512 and 256 columns, a single column,
/// narrow and ragged products (rows of every alignment); against the float64 product under
/// FP32's bound, reruns bitwise equal; `auto` takes it where the other sides are wide.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn short_k_matches_cpu_for_every_k_up_to_32_on_tile_edges_and_reruns_bitwise_equal() {
    let (gpu, mut rng) = (gpu(), fresh_rng("short k"));
    for k in 1..=32 {
        for (m, n) in [(15, 511), (16, 512), (17, 513), (40, 1), (300, 1103), (33, 255), (1000, 29)] {
            assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), short_k_plans);
        }
    }
    let shape = MatmulShape::new(2840, 16, 2119).unwrap();
    let auto = matmul::plan_gemm(&gpu, MatmulVariant::Auto, shape, PlanOptions::default()).unwrap();
    assert_eq!(auto.kernel_plan().kernel(), "matmul_short_k", "{auto}");
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, [&auto]);
    let shape = MatmulShape::new(2455, 19, 3667).unwrap();
    assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &short_k_plans(&gpu, shape));
}

/// The tensor-core tile variants, which split `k` in whole stages of their pipeline.
const WGMMA_TILE_VARIANTS: [MatmulVariant; 4] =
    [MatmulVariant::WgmmaBf16, MatmulVariant::WgmmaF16, MatmulVariant::WgmmaTf32, MatmulVariant::WgmmaTf32Transposed];

/// Each tensor-core tile variant as planned, unsplit, and with `k` forced into about 2, 3, 7 and
/// the most (up to 256) ranges of whole stages, where `k` holds them: every way the kernels'
/// work items cover `k` and write their output (`C` directly, through the TMA or not, or
/// partial products added by the split-K reduction).
fn wgmma_split_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let mut plans = Vec::new();
    for variant in WGMMA_TILE_VARIANTS {
        plans.push(matmul::plan_gemm(gpu, variant, shape, PlanOptions::default()).unwrap());
        let granule = variant.split_granule();
        // The wide tile with every split count; the narrow one (where the variant has one) with
        // a few, which cover the same epilogues.
        let mut widths = vec![(None, &[2, 3, 7, 256][..])];
        if TILE_WIDTHS.contains(&variant) {
            // Every width but the 16-row one (split by n16_plans).
            widths = widths_of(variant)
                .into_iter()
                .filter(|&w| w != TileWidth::N16)
                .map(|w| (Some(w), if w == TileWidth::N256 { &[2, 3, 7, 256][..] } else { &[3, 256][..] }))
                .collect();
        }
        for (tile, wanted) in widths {
            for split in forced_splits(shape.k, wanted, granule) {
                let options = PlanOptions { split: Some(split), tile, ..PlanOptions::default() };
                let plan = matmul::plan_gemm(gpu, variant, shape, options)
                    .unwrap_or_else(|e| panic!("{variant} {split:?} {tile:?}: {e}"));
                assert_eq!(plan.kernel_plan().split(), Some(split), "{plan}");
                plans.push(plan);
            }
        }
    }
    plans
}

/// The shapes of the H200 sweep where the unsplit tensor-core kernels were 4-13x cuBLASLt's time
/// (1 to 41 tiles for 132 SMs, long `k`), m x k x n.
const SPLIT_K_SWEEP_SHAPES: [(usize, usize, usize); 12] = [
    (24, 13_368, 171),
    (8, 10_397, 3),
    (1, 8340, 1),
    (1, 7862, 3),
    (591, 7821, 8),
    (79, 8453, 1077),
    (119, 7460, 1650),
    (174, 4970, 21),
    (56, 3192, 89),
    (975, 3821, 24),
    (5202, 3876, 1),
    (3133, 1711, 1),
];

/// `wgmma_bf16`, `wgmma_f16`, `wgmma_tf32` and `wgmma_tf32_transposed` on the sweep's worst
/// shapes: the planner splits `k` for every one of them, and the planned and forced splits match
/// the float64 product under each precision's bound, `C` NaN-poisoned.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_wgmma_split_k_matches_cpu_on_the_sweeps_small_outputs_with_long_k() {
    let (gpu, mut rng) = hopper_gpu("wgmma split-K sweep shapes");
    for (m, k, n) in SPLIT_K_SWEEP_SHAPES {
        let shape = MatmulShape::new(m, k, n).unwrap();
        for variant in WGMMA_TILE_VARIANTS {
            let plan = matmul::plan_gemm(&gpu, variant, shape, PlanOptions::default()).unwrap();
            let split = plan.kernel_plan().split().unwrap();
            assert!(split.splits > 1 && plan.kernel_plan().is_split(), "{plan}");
        }
        assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), wgmma_split_plans);
    }
}

/// Split `k` on ragged shapes: `k` not a multiple of the 64- or 32-deep stage nor of the split's
/// range, `m` or `n` of 1, `n` odd (scalar stores) or a multiple of 4 (where the unsplit BF16
/// and F16 kernels store through the TMA), several tiles and several work items per block.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_wgmma_split_k_matches_cpu_on_ragged_shapes() {
    let (gpu, mut rng) = hopper_gpu("wgmma split-K ragged");
    for shape in [
        (1, 1000, 1),
        (1, 777, 255),
        (3, 1031, 1),
        (17, 999, 33),
        (64, 65, 64),
        (5, 4097, 7),
        (130, 513, 4),
        (129, 4099, 257),
        (200, 2049, 301),
        (300, 3000, 600),
        (2100, 700, 300),
    ] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, wgmma_split_plans);
    }
}

/// Kept small for compute-sanitizer (filter `tensor_core`): the tile kernels' splits of `k`
/// planned and forced (down to one stage per split), work items of several splits per block, the
/// partial products' direct stores on tile edges, `n` odd and a multiple of 4.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tensor_core_split_k_matches_cpu_on_small_shapes() {
    let (gpu, mut rng) = hopper_gpu("tensor-core split-K");
    for shape in [(1, 300, 1), (3, 200, 5), (130, 129, 4), (129, 513, 257)] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, wgmma_split_plans);
    }
}

/// `wgmma_bf16` and `wgmma_f16` split in 2 to 8 ranges of each tile width: the `_cluster`
/// kernels wherever the work items fit one wave (each tile's splits one cluster, adding up in
/// its shared memory), checked to be planned so.
fn cluster_split_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    let device = matmul::MatmulDevice::of_gpu(gpu);
    let mut plans = Vec::new();
    for variant in [MatmulVariant::WgmmaBf16, MatmulVariant::WgmmaF16] {
        for tile in [TileWidth::N256, TileWidth::N128, TileWidth::N64] {
            for wanted in 2..=kernels::matmul::wgmma::MAX_CLUSTER_SPLITS {
                let split = SplitK::about_in(shape.k, wanted, 1, variant.split_granule());
                let options = PlanOptions { split: Some(split), tile: Some(tile), ..PlanOptions::default() };
                let plan = matmul::plan_gemm(gpu, variant, shape, options).unwrap();
                let kernel = plan.kernel_plan();
                let tiles = matmul::wgmma::tiles(shape, kernel.kernel());
                let at_once = split.splits > 1
                    && tiles * split.splits as u64 <= device.cluster_blocks[split.splits as usize - 1] as u64;
                if at_once {
                    assert_eq!(kernel.cluster_blocks(), split.splits, "{plan}");
                    assert_eq!(kernel.workspace_floats(), 0, "{plan}");
                }
                plans.push(plan);
            }
        }
    }
    plans
}

/// The cluster-summed splits of `k` (2 to 8 blocks per cluster, every tile width, BF16 and F16)
/// on ragged shapes: `m` below one tile and above it, `k` not a multiple of the stage, `n` odd
/// (scalar stores) and a multiple of 4 (vector stores), against the float64 product with `C`
/// NaN-poisoned; then bitwise-equal reruns. Small enough for compute-sanitizer (filter
/// `tensor_core`).
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tensor_core_cluster_split_sums_match_cpu_and_rerun_bitwise_equal() {
    let (gpu, mut rng) = hopper_gpu("wgmma cluster split-K");
    for (m, k, n) in [(1, 1000, 3), (64, 777, 300), (130, 1031, 257), (200, 2049, 512)] {
        assert_plans_match_cpu(&gpu, &mut rng, (m, k, n), cluster_split_plans);
        let shape = MatmulShape::new(m, k, n).unwrap();
        let plans = cluster_split_plans(&gpu, shape);
        let clustered = plans.iter().filter(|p| p.kernel_plan().cluster_blocks() > 1);
        assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, clustered);
    }
}

/// The planner learns from the driver how many tensor-core tile blocks run at once in clusters
/// of 1 to 8 (a cluster's blocks share a GPC), and sums a split in clusters only where all its
/// work items fit at once.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_cluster_capacity_comes_from_the_driver_and_bounds_the_cluster_sums() {
    let (gpu, _) = hopper_gpu("cluster capacity");
    let device = matmul::MatmulDevice::of_gpu(&gpu);
    eprintln!("blocks held at once in clusters of 1-8: {:?}", device.cluster_blocks);
    assert_eq!(device.cluster_blocks[0], device.sm_count, "one block per SM");
    for (i, &blocks) in device.cluster_blocks.iter().enumerate() {
        let size = i as u32 + 1;
        assert!(blocks > 0 && blocks <= device.sm_count && blocks.is_multiple_of(size), "{size}: {blocks}");
    }
    // 2 to 8 splits of 1 to 132 tiles of 128 x 128 (m = 128, n = 128 t): clusters exactly where
    // the work items fit.
    for size in 2..=8u32 {
        for tiles in [1, 8, 16, 32, 33, 64, 66] {
            let shape = MatmulShape::new(128, 64 * 8 * size as usize, 128 * tiles).unwrap();
            let split = SplitK::about_in(shape.k, size, 1, 64);
            let options = PlanOptions { split: Some(split), tile: Some(TileWidth::N128), ..PlanOptions::default() };
            let plan = matmul::plan_with(MatmulVariant::WgmmaBf16, shape, device, options).unwrap();
            let fits = (tiles as u32) * size <= device.cluster_blocks[size as usize - 1];
            assert_eq!(plan.cluster_blocks() > 1, fits, "{plan}");
        }
    }
}

/// Every split plan of the tensor-core tile kernels gives bitwise the same `C` on every run:
/// partial products in the workspace, added in split order, no atomics.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_wgmma_split_k_plans_give_bitwise_equal_results_on_every_run() {
    let (gpu, mut rng) = hopper_gpu("wgmma split-K determinism");
    for (m, k, n) in [(24, 13_368, 171), (119, 7460, 1650), (5202, 3876, 1), (129, 4099, 257)] {
        let shape = MatmulShape::new(m, k, n).unwrap();
        let plans = wgmma_split_plans(&gpu, shape);
        let split = plans.iter().filter(|p| p.kernel_plan().is_split());
        assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, split);
    }
}

/// `wgmma_f16`'s plan alone.
fn f16_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<GemmPlan> {
    vec![matmul::plan_gemm(gpu, MatmulVariant::WgmmaF16, shape, PlanOptions::default()).unwrap()]
}

/// `wgmma_f16` on square, rectangular and ragged shapes (m, n of 1; k not a multiple of the
/// 64-deep stage; n not a multiple of 4, so the direct stores; several tiles per block) under
/// FP16's bound against the float64 product of the F16-rounded inputs, `C` NaN-poisoned; then
/// bitwise-equal reruns.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_wgmma_f16_matches_cpu_on_square_rectangular_and_ragged_shapes_and_reruns_bitwise_equal() {
    let (gpu, mut rng) = hopper_gpu("wgmma_f16");
    for shape in [
        (1, 1, 1),
        (17, 33, 65),
        (256, 256, 256),
        (1000, 800, 1200),
        (1200, 800, 1000),
        (129, 65, 257),
        (127, 33, 255),
        (2100, 70, 300),
        (1, 300, 1),
        (4097, 129, 8193),
    ] {
        assert_plans_match_cpu(&gpu, &mut rng, shape, f16_plans);
    }
    for (m, k, n) in [(1000, 800, 1200), (4097, 129, 8193), (17, 33, 65)] {
        let shape = MatmulShape::new(m, k, n).unwrap();
        assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, &f16_plans(&gpu, shape)[..1]);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_gpu_f16_rounding_equals_the_half_crates_bit_for_bit_and_out_of_range_inputs_are_refused() {
    let (gpu, mut rng) = hopper_gpu("f16 rounding");
    let (m, k, n) = (37, 45, 3);
    let mut a = random_matrix(&mut rng, m * k);
    // Ties, NaN, infinities, F16 subnormals, values that underflow, the largest finite F16 and
    // the largest value that still rounds to it.
    a[..9].copy_from_slice(&[
        1.0 + 1.0 / 2048.0,
        f32::NAN,
        f32::INFINITY,
        -3.0e-6,
        1e-9,
        65504.0,
        -65519.0,
        1.0 + 3.0 / 2048.0,
        f32::NEG_INFINITY,
    ]);
    let b = random_matrix(&mut rng, k * n);
    let shape = MatmulShape::new(m, k, n).unwrap();
    let mut mats = DeviceMatrices::upload(&gpu, shape, &a, &b).unwrap();
    let (da, db) = mats.f16_operands(&gpu).unwrap();
    let to_bits = |v: Vec<half::f16>| v.into_iter().map(half::f16::to_bits).collect::<Vec<u16>>();
    let (ga, gb) = (to_bits(gpu.download(da).unwrap()), to_bits(gpu.download(db).unwrap()));
    for (host, dev) in [(&a, &ga), (&b, &gb)] {
        for (i, (&x, &got)) in host.iter().zip(dev).enumerate() {
            let want = half::f16::from_f32(x).to_bits();
            let both_nan = x.is_nan() && half::f16::from_bits(got).is_nan();
            assert!(got == want || both_nan, "[{i}] = {x:e}: {got:#06x}, want {want:#06x}");
        }
    }
    // A row of F16 subnormals (below 2^-14 = 6.1e-5) multiplies as they are, not flushed to zero:
    // the row's products are all subnormal, so a flush would miss its whole sum.
    let mut tiny = random_matrix(&mut rng, m * k);
    for (j, v) in tiny[..k].iter_mut().enumerate() {
        *v = (j as f32 + 1.0) * -1.0e-6;
    }
    let mut mats = DeviceMatrices::upload(&gpu, shape, &tiny, &b).unwrap();
    let c = matmul::run(&gpu, MatmulVariant::WgmmaF16, &mut mats).unwrap();
    let (ra, rb) = (Precision::Fp16.reference_inputs(&tiny), Precision::Fp16.reference_inputs(&b));
    let reference = MatmulReference::new(&ra, &rb, m, k, n);
    for (i, (&got, (&want, &scale))) in c.iter().zip(reference.values.iter().zip(&reference.scales)).enumerate() {
        let bound = Precision::Fp16.bound(k, scale);
        assert!((got as f64 - want).abs() <= bound, "C[{}][{}] = {got:e}, want {want:e}", i / n, i % n);
    }
    // One element past F16's range in B: refused by the copies, by wgmma_f16 and by cuBLAS FP16.
    let mut big = b.clone();
    big[7] = -65520.0;
    let mut mats = DeviceMatrices::upload(&gpu, shape, &a[..], &big).unwrap();
    let refused = |e: &Error| matches!(e, Error::OutOfRange { operand: "B", index: 7, .. });
    let e = mats.f16_operands(&gpu).unwrap_err();
    assert!(refused(&e) && e.to_string().contains("-65520"), "{e}");
    let plan = matmul::plan_gemm(&gpu, MatmulVariant::WgmmaF16, shape, PlanOptions::default()).unwrap();
    let e = matmul::run_plan(&gpu, &plan, &mut mats).unwrap_err();
    assert!(refused(&e), "{e}");
    let blas = host::cublas::Sgemm::new(&gpu).unwrap();
    let e = blas.run_in(&gpu, Precision::Fp16, &mut mats).unwrap_err().to_string();
    assert!(e.contains("outside f16's finite range"), "{e}");
    // BF16 holds it: wgmma_bf16 runs on the same matrices.
    matmul::run(&gpu, MatmulVariant::WgmmaBf16, &mut mats).unwrap();
}

/// Uploads fresh random `A` and `B` of `shape` and asserts that each of `plans` reruns bitwise
/// equal on them ([`assert_runs_bitwise_equal`]).
fn assert_plans_rerun_bitwise_equal<'a>(
    gpu: &Gpu,
    rng: &mut impl Rng,
    shape: MatmulShape,
    plans: impl IntoIterator<Item = &'a GemmPlan>,
) {
    let (a, b) = (random_matrix(rng, shape.m * shape.k), random_matrix(rng, shape.k * shape.n));
    let mut mats = DeviceMatrices::upload(gpu, shape, &a, &b).unwrap();
    for plan in plans {
        assert_runs_bitwise_equal(gpu, plan, &mut mats);
    }
}

/// Runs `plan` four times on the same inputs and asserts every `C` is bitwise the first.
fn assert_runs_bitwise_equal(gpu: &Gpu, plan: &GemmPlan, mats: &mut DeviceMatrices) {
    let first = matmul::run_plan(gpu, plan, mats).unwrap();
    for _ in 0..3 {
        let again = matmul::run_plan(gpu, plan, mats).unwrap();
        let same = first.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{plan} on {}: two runs differ (a race?)", mats.shape());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_gpu_bf16_rounding_equals_the_half_crates_bit_for_bit() {
    let (gpu, mut rng) = hopper_gpu("bf16 rounding");
    let (m, k, n) = (37, 45, 3);
    let mut a = random_matrix(&mut rng, m * k);
    // Ties, NaN, infinities, subnormals and the largest finite value.
    a[..6].copy_from_slice(&[1.0 + 1.0 / 256.0, f32::NAN, f32::INFINITY, -1e-40, f32::MAX, 1.0 + 3.0 / 256.0]);
    let b = random_matrix(&mut rng, k * n);
    let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(m, k, n).unwrap(), &a, &b).unwrap();
    let (da, db) = mats.bf16_operands(&gpu).unwrap();
    let to_bits = |v: Vec<half::bf16>| v.into_iter().map(half::bf16::to_bits).collect::<Vec<u16>>();
    let (ga, gb) = (to_bits(gpu.download(da).unwrap()), to_bits(gpu.download(db).unwrap()));
    let (lda, ldb) = (k, n);
    for (host, dev, rows, cols, ld) in [(&a, &ga, m, k, lda), (&b, &gb, k, n, ldb)] {
        for r in 0..rows {
            for c in 0..ld {
                let want = if c < cols { half::bf16::from_f32(host[r * cols + c]).to_bits() } else { 0 };
                let got = dev[r * ld + c];
                let both_nan = c < cols && host[r * cols + c].is_nan() && half::bf16::from_bits(got).is_nan();
                assert!(got == want || both_nan, "[{r}][{c}]: {got:#06x}, want {want:#06x}");
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_gpu_tf32x3_split_scales_and_splits_as_the_cpu_bit_for_bit() {
    use kernels::matmul::tf32x3::{Decision, GUARD_DECISION, SPLIT_B, power_of_two, split_tf32, tf32x3_position};
    let (gpu, mut rng) = hopper_gpu("tf32x3 split");
    let (m, k, n) = (37, 45, 3);
    let mut a = random_matrix(&mut rng, m * k);
    // Ties, a subnormal, zeros and large values, every one finite and their ranges together
    // within what the guard's scaling holds, so that it takes the split path, with scales.
    a[..10].copy_from_slice(&[1.0 + 1.0 / 2048.0, -1e-40, 3.0e9, -2.5e9, 0.0, -0.0, 2e-40, 1.5, 1e10, -7e-30]);
    let mut b = random_matrix(&mut rng, k * n);
    b[..4].copy_from_slice(&[1e-5, -3.0e4, 1.0 + 1.0 / 2048.0, 65504.0]);
    let shape = MatmulShape::new(m, k, n).unwrap();
    let mut mats = DeviceMatrices::upload(&gpu, shape, &a, &b).unwrap();
    let plan = matmul::plan_gemm(&gpu, MatmulVariant::WgmmaTf32x3, shape, PlanOptions::default()).unwrap();
    matmul::run_plan(&gpu, &plan, &mut mats).unwrap();
    let order = matmul::wgmma::Tf32x3Order::DEFAULT;
    let regions = plan.tf32x3_regions().unwrap();
    let workspace = gpu.download(mats.workspace().unwrap()).unwrap();
    let words = |at: usize, n: usize| -> Vec<u32> {
        workspace[at..at + 4 * n].chunks(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
    };
    let guard = words(regions.guard, kernels::matmul::tf32x3::GUARD_WORDS);
    let Decision::Split(scales) = Decision::from_word(guard[GUARD_DECISION]) else {
        panic!("the guard refused finite inputs of a moderate range: {guard:x?}")
    };
    // A's subnormal values need scaling: pass 1 wrote the scaled split.
    assert_ne!((scales.a, scales.b), (0, 0), "{scales:?}");
    let (ld_a, ld_b) = (regions.ld_a, regions.ld_b);
    let floats = |at: usize, n: usize| -> Vec<f32> { words(at, n).into_iter().map(f32::from_bits).collect() };
    let (ga, gb) = (floats(regions.a, m * ld_a), floats(regions.b, 3 * k * ld_b));
    let (k32, chunk) = (k as u32, order.chunk(k as u32));
    for (host, dev, rows, cols, ld, k_along_rows, parts, scale) in
        [(&a, &ga, m, k, ld_a, false, order.a_small_parts(), scales.a), (&b, &gb, k, n, ld_b, true, SPLIT_B, scales.b)]
    {
        for r in 0..rows {
            for c in 0..cols {
                let (big, small) = split_tf32(host[r * cols + c] * power_of_two(scale));
                for part in 0..3 {
                    let want = if parts >> part & 1 != 0 { small } else { big };
                    let (dr, dc) = if k_along_rows {
                        (tf32x3_position(r as u32, part, k32, chunk) as usize, c)
                    } else {
                        (r, tf32x3_position(c as u32, part, k32, chunk) as usize)
                    };
                    let got = dev[dr * ld + dc];
                    assert_eq!(got.to_bits(), want.to_bits(), "[{r}][{c}] part {part}: {got:e}, want {want:e}");
                }
            }
        }
    }
}

/// `wgmma_tf32x3` (what `auto` runs on wide shapes on Hopper) against cuBLAS FP32, both against
/// the float64 product: on inputs of both signs and on same-sign inputs, where the tensor cores'
/// truncating additions would drift over a long `k` if their sums were not added in `f32` every
/// 32 of `k`, its largest error is no larger than cuBLAS FP32's.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_tf32x3_is_at_least_as_accurate_as_cublas_fp32_on_mixed_and_same_sign_inputs() {
    let (gpu, mut rng) = hopper_gpu("tf32x3 against fp32");
    let blas = host::cublas::Sgemm::new(&gpu).unwrap();
    for (m, k, n) in [(1024, 4096, 1024), (2048, 8192, 2048)] {
        let shape = MatmulShape::new(m, k, n).unwrap();
        for same_sign in [false, true] {
            let mut a = random_matrix(&mut rng, m * k);
            let mut b = random_matrix(&mut rng, k * n);
            if same_sign {
                a.iter_mut().chain(b.iter_mut()).for_each(|v| *v = v.abs());
            }
            let reference = MatmulReference::new(&a, &b, m, k, n);
            let mut mats = DeviceMatrices::upload(&gpu, shape, &a, &b).unwrap();
            let x3 = reference.max_error(&matmul::run(&gpu, MatmulVariant::WgmmaTf32x3, &mut mats).unwrap());
            let fp32 = reference.max_error(&blas.run(&gpu, &mut mats).unwrap());
            eprintln!("{shape}, same sign {same_sign}: wgmma_tf32x3 {x3:.2e}, cublas fp32 {fp32:.2e}");
            assert!(x3 <= fp32, "{shape}, same sign {same_sign}: wgmma_tf32x3 {x3:.2e} > cublas fp32 {fp32:.2e}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_workspace_shorter_than_the_plan_takes_is_refused_before_anything_runs() {
    let gpu = gpu();
    let plan =
        matmul::plan_gemm(&gpu, MatmulVariant::Sgemm, MatmulShape::new(64, 8192, 64).unwrap(), PlanOptions::default())
            .unwrap();
    assert!(plan.workspace_bytes() > 0, "{plan}");
    let s = gpu.stream();
    let (a, b) = (s.alloc_zeros::<f32>(64 * 8192).unwrap(), s.alloc_zeros::<f32>(8192 * 64).unwrap());
    let mut d = s.alloc_zeros::<f32>(64 * 64).unwrap();
    let mut short = s.alloc_zeros::<u8>(plan.workspace_bytes() - 1).unwrap();
    let err = plan.launch(&gpu, &a, &b, &mut d, &mut short).unwrap_err();
    assert!(matches!(err, Error::BufferTooSmall { buffer: "workspace", .. }), "{err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_bf16_fp16_and_tf32_baselines_match_cpu_under_their_bounds() {
    let (gpu, mut rng) = (gpu(), fresh_rng("cublas reduced precision"));
    let (m, k, n) = (300, 203, 101);
    let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
    let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(m, k, n).unwrap(), &a, &b).unwrap();
    let blas = host::cublas::Sgemm::new(&gpu).unwrap();
    for precision in [Precision::Bf16, Precision::Fp16, Precision::Tf32] {
        let (ra, rb) = (precision.reference_inputs(&a), precision.reference_inputs(&b));
        let reference = MatmulReference::new(&ra, &rb, m, k, n);
        let err = reference.max_error(&blas.run_in(&gpu, precision, &mut mats).unwrap());
        assert!(err <= precision.tolerance(k), "cuBLAS {precision:?} error {err}");
        if blas.has_lt() {
            let err = reference.max_error(&blas.run_lt(&gpu, precision, &mut mats).unwrap());
            assert!(err <= precision.tolerance(k), "cuBLASLt {precision:?} error {err}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn split_k_plans_give_bitwise_equal_results_on_every_run() {
    let (gpu, mut rng) = (gpu(), fresh_rng("split-k determinism"));
    for (m, k, n) in [(1024, 1024, 1024), (64, 8192, 64), (3, 100_000, 5), (1, 4096, 1024), (16, 16_384, 300)] {
        let shape = MatmulShape::new(m, k, n).unwrap();
        let highest =
            PlanOptions { policy: PrecisionPolicy::Highest, split: None, tile: None, ..PlanOptions::default() };
        let plan = matmul::plan_gemm(&gpu, MatmulVariant::Auto, shape, highest).unwrap();
        assert!(plan.kernel_plan().is_split(), "{shape} was meant to exercise a split: {plan}");
        assert_plans_rerun_bitwise_equal(&gpu, &mut rng, shape, [&plan]);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn cublas_baseline_matches_cpu_on_a_rectangular_shape() {
    let (gpu, mut rng) = (gpu(), fresh_rng("cublas"));
    let (m, k, n) = (300, 200, 100);
    let (a, b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
    let reference = MatmulReference::new(&a, &b, m, k, n);
    let mut mats = DeviceMatrices::upload(&gpu, MatmulShape::new(m, k, n).unwrap(), &a, &b).unwrap();
    let sgemm = host::cublas::Sgemm::new(&gpu).unwrap();
    let err = reference.max_error(&sgemm.run(&gpu, &mut mats).unwrap());
    assert!(err <= reference.tolerance(), "cuBLAS error {err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn matmul_larger_than_free_device_memory_is_refused_before_allocating() {
    let gpu = gpu();
    // Three square matrices of 12 n^2 bytes in all, n chosen to need twice this device's memory.
    let side = ((2 * gpu.info().total_memory / 12) as f64).sqrt().ceil() as usize;
    let shape = MatmulShape::new(side, side, side).unwrap();
    assert!(shape.bytes() > gpu.info().total_memory);
    let err = gpu.ensure_fits(&format!("a {shape} matmul"), shape.bytes()).unwrap_err();
    assert!(matches!(err, Error::OutOfDeviceMemory { .. }), "{err}");
    assert!(err.to_string().contains("free"), "{err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn matmul_upload_rejects_inputs_whose_lengths_do_not_match_the_shape() {
    let gpu = gpu();
    let shape = MatmulShape::new(4, 4, 4).unwrap();
    let err = DeviceMatrices::upload(&gpu, shape, &[1.0; 16], &[1.0; 15]).err().unwrap();
    assert!(err.to_string().contains("do not match"), "{err}");
}
