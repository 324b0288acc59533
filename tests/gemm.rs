//! The GEMM descriptor on device buffers, every combination: `D = alpha op(A) op(B) + beta C` with
//! row- and column-major operands, transposes, leading dimensions past the packed ones, strided
//! batches, alpha and beta, `f32`, BF16 and F16 operands and outputs; each result against the
//! float64 product of the operands as stored, and where cuBLAS computes the same thing in one
//! type, against `cublasGemmStridedBatched` too. `D` is poisoned with NaN where `beta = 0`.

use cudarc::cublas::{CudaBlas, Gemm, StridedBatchedConfig, sys::cublasOperation_t};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use half::{bf16, f16};
use hopper_kernels::Gpu;
use hopper_kernels::matmul::{
    DType, GemmDesc, GemmElement, GemmPlan, Layout, MatmulDevice, MatmulVariant, OperandType, Order, Precision,
    PrecisionPolicy, SplitK, TileWidth, describe_plan,
};
use rand::Rng;
use rayon::prelude::*;
use support::{fresh_rng, gpu, hopper_gpu};

/// A value type of the tests: widened to `f64` for the reference, narrowed from `f32` draws.
trait Value: GemmElement + DeviceRepr + ValidAsZeroBits + Default + Copy + Send + Sync {
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
    /// Relative rounding of a result stored in this type.
    const UNIT: f64;
}

impl Value for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const UNIT: f64 = 0.0;
}

impl Value for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    const UNIT: f64 = 1.0 / 256.0;
}

impl Value for f16 {
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        self.to_f32() as f64
    }
    const UNIT: f64 = 1.0 / 2048.0;
}

/// Element `(r, c)` of a `rows x cols` matrix stored in `layout`, batch `i`.
fn at(layout: Layout, (rows, cols): (usize, usize), batch: usize, (r, c): (usize, usize)) -> usize {
    let ld = layout.leading((rows, cols));
    let within = match layout.order {
        Order::RowMajor => r * ld + c,
        Order::ColMajor => c * ld + r,
    };
    batch * layout.stride((rows, cols)) + within
}

/// Random values for every element a buffer of `desc`'s operand spans (padding included).
fn draw<T: Value>(rng: &mut impl Rng, len: usize) -> Vec<T> {
    (0..len).map(|_| T::from_f32(rng.random_range(-1.0f32..1.0))).collect()
}

/// Runs `desc` on random operands of types `TA` (A and B) and `TD` (C and D) and checks every
/// element of every product against the float64 reference; returns `D` for comparisons.
fn check<TA: Value, TD: Value>(gpu: &Gpu, rng: &mut impl Rng, desc: GemmDesc) -> Vec<TD> {
    check_at::<TA, TD>(gpu, rng, desc, 0)
}

/// As [`check`], with `D` a view `d_offset` elements into its buffer, which holds `d_offset` more
/// after it (NaN): those around the view must keep their bits.
fn check_at<TA: Value, TD: Value>(gpu: &Gpu, rng: &mut impl Rng, desc: GemmDesc, d_offset: usize) -> Vec<TD> {
    let (a_dims, b_dims, d_dims) = (desc.a_rows_cols(), desc.b_rows_cols(), desc.d_rows_cols());
    let a: Vec<TA> = draw(rng, desc.a.needed_elements(a_dims, desc.batch));
    let b: Vec<TA> = draw(rng, desc.b.needed_elements(b_dims, desc.batch));
    let c: Vec<TD> = draw(rng, desc.d.needed_elements(d_dims, desc.batch));
    let plan = GemmPlan::new(gpu, desc).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
    let s = gpu.stream();
    let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    // beta = 0: D starts as NaN, which must not leak into the result.
    let start: Vec<TD> = if desc.beta == 0.0 { vec![TD::from_f32(f32::NAN); c.len()] } else { c.clone() };
    let guard = vec![TD::from_f32(f32::NAN); d_offset];
    let mut dd: CudaSlice<TD> = s.clone_htod(&[&guard[..], &start[..], &guard[..]].concat()).unwrap();
    let mut ws = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1)).unwrap();
    let mut view = dd.slice_mut(d_offset..d_offset + start.len());
    plan.launch(gpu, &da, &db, &mut view, &mut ws).unwrap_or_else(|e| panic!("{plan}: {e}"));
    let whole: Vec<TD> = s.clone_dtoh(&dd).unwrap();
    for j in (0..d_offset).chain(d_offset + start.len()..whole.len()) {
        assert_eq!(
            whole[j].to_f64().to_bits(),
            guard[0].to_f64().to_bits(),
            "{plan}: element {j} of D's buffer, outside the view, changed"
        );
    }
    let got = whole[d_offset..d_offset + start.len()].to_vec();
    let k = desc.k;
    let bound = plan.precision().tolerance(k);
    // The float64 reference is most of the test's time: op(A)'s rows and op(B)'s columns are
    // gathered once into contiguous float64 runs of k, so that its inner loop walks memory in order
    // (a column of a long row-major B is one cache miss per element), and rows run in parallel.
    let gather = |len: usize, value: &(dyn Fn(usize, usize, usize) -> f64 + Sync)| -> Vec<f64> {
        (0..desc.batch * len * k).into_par_iter().map(|j| value(j / (len * k), j / k % len, j % k)).collect()
    };
    let op_a = gather(desc.m, &|i, r, kk| {
        let ra = if desc.transpose_a { (kk, r) } else { (r, kk) };
        a[at(desc.a, a_dims, i, ra)].to_f64()
    });
    let op_b = gather(desc.n, &|i, col, kk| {
        let rb = if desc.transpose_b { (col, kk) } else { (kk, col) };
        b[at(desc.b, b_dims, i, rb)].to_f64()
    });
    (0..desc.batch * desc.m).into_par_iter().for_each(|row| {
        let (i, r) = (row / desc.m, row % desc.m);
        let a_row = &op_a[row * k..(row + 1) * k];
        for col in 0..desc.n {
            let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
            let b_col = &op_b[(i * desc.n + col) * k..(i * desc.n + col + 1) * k];
            for (&x, &y) in a_row.iter().zip(b_col) {
                sum += x * y;
                magnitude += (x * y).abs();
            }
            let di = at(desc.d, d_dims, i, (r, col));
            let cv = if desc.beta == 0.0 { 0.0 } else { c[di].to_f64() };
            let want = desc.alpha as f64 * sum + desc.beta as f64 * cv;
            let scale = desc.alpha.abs() as f64 * magnitude + desc.beta.abs() as f64 * cv.abs();
            let g = got[di].to_f64();
            let tol = bound * scale + TD::UNIT * want.abs() + 4.0 * f32::EPSILON as f64 * scale + 1e-30;
            assert!(
                (g - want).abs() <= tol,
                "{plan}: batch {i} D[{r}][{col}] = {g}, want {want} (error {:.2e} > {tol:.2e})",
                (g - want).abs()
            );
        }
    });
    // Padding between D's rows (or columns) and batches is left as it was.
    let mut written = vec![false; got.len()];
    for i in 0..desc.batch {
        for r in 0..desc.m {
            for col in 0..desc.n {
                written[at(desc.d, d_dims, i, (r, col))] = true;
            }
        }
    }
    for (j, w) in written.iter().enumerate() {
        if !w {
            assert_eq!(got[j].to_f64().to_bits(), start[j].to_f64().to_bits(), "{plan}: padding element {j} changed");
        }
    }
    got
}

/// Every order, transpose and padding combination of one type pair, batched and not, with and
/// without alpha and beta.
fn every_layout<TA: Value, TD: Value>(gpu: &Gpu, rng: &mut impl Rng, (m, n, k): (usize, usize, usize)) {
    let (ta, td) = (TA::DTYPE, TD::DTYPE);
    for order_a in [Order::RowMajor, Order::ColMajor] {
        for order_b in [Order::RowMajor, Order::ColMajor] {
            for order_d in [Order::RowMajor, Order::ColMajor] {
                for (transpose_a, transpose_b) in [(false, false), (true, false), (false, true), (true, true)] {
                    for (pad, batch, (alpha, beta)) in [(0, 1, (1.0, 0.0)), (3, 3, (-0.5, 2.0))] {
                        let layout = |dtype, order, dims: (usize, usize)| {
                            let packed = if order == Order::RowMajor { dims.1 } else { dims.0 };
                            let l = Layout::new(dtype, order).ld(packed + pad);
                            if batch > 1 { l.batch_stride(l.span(dims) + 5) } else { l }
                        };
                        let mut desc = GemmDesc::new(m, n, k)
                            .transpose_a(transpose_a)
                            .transpose_b(transpose_b)
                            .alpha_beta(alpha, beta)
                            .batch(batch);
                        desc = desc
                            .a(layout(ta, order_a, desc.a_rows_cols()))
                            .b(layout(ta, order_b, desc.b_rows_cols()))
                            .d(layout(td, order_d, desc.d_rows_cols()));
                        check::<TA, TD>(gpu, rng, desc);
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_layout_transpose_batch_and_alpha_beta_of_f32_matches_the_float64_product() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm f32 layouts"));
    every_layout::<f32, f32>(&gpu, &mut rng, (37, 29, 45));
    // The tensor-core sizes (auto runs split-TF32 there on Hopper), and a forced FP32 kernel.
    every_layout::<f32, f32>(&gpu, &mut rng, (1280, 1024, 160));
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_layout_of_bf16_and_f16_operands_and_outputs_matches_the_float64_product() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm 16-bit layouts"));
    // (m, n, k); the last two are decode shapes on Hopper, BF16 on `decode_bf16` under auto where
    // the canonical m' (m for a row-major D, n for a column-major one) is at most 16.
    for shape in [(33, 17, 40), (1280, 1024, 160), (12, 12, 300), (5, 1000, 300)] {
        every_layout::<bf16, f32>(&gpu, &mut rng, shape);
        every_layout::<f16, f32>(&gpu, &mut rng, shape);
        every_layout::<bf16, bf16>(&gpu, &mut rng, shape);
        every_layout::<f16, f16>(&gpu, &mut rng, shape);
        every_layout::<f32, bf16>(&gpu, &mut rng, shape);
    }
}

/// The descriptor `variant` is tested with: a transposed column-major `A`, a row-major `B`, leading
/// dimensions past the packed ones, alpha and beta, a batch of two; BF16 operands for
/// `wgmma_bf16` and `decode_bf16`, F16 for `wgmma_f16` and `decode_f16`, `f32` for the rest.
fn variant_desc(variant: MatmulVariant) -> GemmDesc {
    let (m, n, k) = match variant {
        MatmulVariant::FewRows | MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => (5, 70, 90),
        MatmulVariant::FewCols => (70, 5, 90),
        MatmulVariant::ShortK => (70, 50, 12),
        _ => (70, 50, 90),
    };
    let dtype = match variant.precision() {
        Precision::Bf16 => DType::Bf16,
        Precision::Fp16 => DType::F16,
        _ => DType::F32,
    };
    GemmDesc::new(m, n, k)
        .variant(variant)
        .transpose_a(true)
        // A is stored k x m: column-major, its leading dimension strides k rows.
        .a(Layout::new(dtype, Order::ColMajor).ld(k + 2))
        .b(Layout::new(dtype, Order::RowMajor).ld(n + 1))
        // The narrow kernels run the row-major product; a column-major D would swap m and n.
        .d(match variant {
            MatmulVariant::FewRows | MatmulVariant::FewCols | MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => {
                Layout::row_major(DType::F32).ld(n + 3)
            }
            _ => Layout::col_major(DType::F32).ld(m + 3),
        })
        .alpha_beta(1.5, -1.0)
        .batch(2)
}

#[test]
fn every_kernel_variant_plans_its_layout_test_on_the_h200_model() {
    for variant in MatmulVariant::ALL {
        let desc = variant_desc(variant);
        if let Err(e) = describe_plan(&desc, MatmulDevice::H200) {
            panic!("{variant}: {desc:?}: {e}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_kernel_variant_takes_every_layout() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm variants"));
    for variant in MatmulVariant::ALL {
        if variant.needs_tensor_cores() && gpu.hopper_status().is_err() {
            continue;
        }
        let desc = variant_desc(variant);
        match variant.precision() {
            Precision::Bf16 => check::<bf16, f32>(&gpu, &mut rng, desc),
            Precision::Fp16 => check::<f16, f32>(&gpu, &mut rng, desc),
            _ => check::<f32, f32>(&gpu, &mut rng, desc),
        };
    }
}

/// Launches `plan` (on packed row-major `m x k` and `k x n` operands of type `T` and an `m x n`
/// `f32` `D`, with a separate random `C` where `with_c`) on random operands, then `reruns` times
/// more on the same buffers: each rerun's `D` must equal the first's bit for bit.
fn assert_reruns_bitwise_equal<T: Value>(
    gpu: &Gpu,
    rng: &mut impl Rng,
    plan: &GemmPlan,
    (m, k, n): (usize, usize, usize),
    with_c: bool,
    reruns: usize,
) {
    let s = gpu.stream();
    let (a, b): (Vec<T>, Vec<T>) = (draw(rng, m * k), draw(rng, k * n));
    let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    let dc = with_c.then(|| s.clone_htod(&draw::<f32>(rng, m * n)).unwrap());
    let mut ws = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1)).unwrap();
    let mut d = s.alloc_zeros::<f32>(m * n).unwrap();
    let mut run = || {
        match &dc {
            Some(dc) => plan.launch_with_c(gpu, &da, &db, dc, &mut d, &mut ws).unwrap(),
            None => plan.launch(gpu, &da, &db, &mut d, &mut ws).unwrap(),
        }
        s.clone_dtoh(&d).unwrap()
    };
    let first = run();
    for _ in 0..reruns {
        let again = run();
        assert!(first.iter().zip(&again).all(|(x, y)| x.to_bits() == y.to_bits()), "{plan}: reruns differ");
    }
}

/// F16 operands through the descriptor: `auto` runs them on `wgmma_f16` where BF16 ones take
/// `wgmma_bf16` (and on the FP32 kernels elsewhere), and `wgmma_f16` named takes every shape;
/// square, rectangular and ragged shapes, `D` NaN-poisoned, against the float64 product under
/// the plan's bound; reruns bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn f16_operands_run_on_wgmma_f16_through_the_descriptor_and_match_the_float64_product() {
    let (gpu, mut rng) = hopper_gpu("gemm f16 on wgmma_f16");
    let f16_rows = Layout::row_major(DType::F16);
    // (m, k, n) as the matmul tests name them; GemmDesc::new takes (m, n, k).
    for (m, k, n) in [(1, 1, 1), (17, 33, 65), (256, 256, 256), (1000, 800, 1200), (4097, 129, 8193)] {
        let auto = GemmDesc::new(m, n, k).a(f16_rows).b(f16_rows);
        let planned = GemmPlan::new(&gpu, auto).unwrap();
        let bf16_rows = Layout::row_major(DType::Bf16);
        let bf16_plan = GemmPlan::new(&gpu, GemmDesc::new(m, n, k).a(bf16_rows).b(bf16_rows)).unwrap();
        // Where auto takes wgmma_bf16 for BF16, it takes wgmma_f16 for F16.
        let tensor_cores = bf16_plan.kernel_plan().variant() == MatmulVariant::WgmmaBf16;
        assert_eq!(planned.kernel_plan().variant() == MatmulVariant::WgmmaF16, tensor_cores, "{planned}");
        check::<f16, f32>(&gpu, &mut rng, auto);
        let named = auto.variant(MatmulVariant::WgmmaF16);
        check::<f16, f32>(&gpu, &mut rng, named);
        // A column-major D with a leading dimension, transposed A (computed as D^T = B^T A^T).
        let odd = GemmDesc::new(m, n, k)
            .variant(MatmulVariant::WgmmaF16)
            .transpose_a(true)
            .a(Layout::row_major(DType::F16).ld(m + 5))
            .b(f16_rows)
            .d(Layout::col_major(DType::F32).ld(m + 3));
        check::<f16, f32>(&gpu, &mut rng, odd);
        // Reruns are bitwise equal.
        let plan = GemmPlan::new(&gpu, named).unwrap();
        assert_reruns_bitwise_equal::<f16>(&gpu, &mut rng, &plan, (m, k, n), false, 3);
    }
}

/// BF16 and F16 operands whose rows are not 16-byte multiples (which the TMA cannot read) on the
/// tensor cores without a copy: the `_ld` forms of the 128 x 64 and 128 x 128 tile kernels load
/// them as they lie, from any 2-byte boundary (leading dimensions past the row, odd ones, a batch
/// of two whose second product starts mid-row); ragged `m`, `k` and `n`, `k` of one stage of 64
/// and of two (the most they take); `D` NaN-poisoned, against the float64 product; reruns
/// bitwise equal.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn sixteen_bit_rows_of_any_length_run_on_the_tensor_cores_as_they_lie() {
    let (gpu, mut rng) = hopper_gpu("gemm 16-bit rows as they lie");
    // (m, k, n) as the matmul tests name them.
    // k of one stage of 64 and of two (the planner's LD_MAX_K).
    // 3000 x 1001 of C is more tiles than SMs (192 of 128 x 128, 384 of 128 x 64): blocks take
    // several, and the producers' ring runs on across them.
    for (m, k, n) in [
        (1000, 39, 102),
        (129, 20, 65),
        (300, 128, 257),
        (17, 101, 130),
        (5, 77, 77),
        (2000, 65, 1001),
        (3000, 40, 1001),
    ] {
        for tile in [TileWidth::N64, TileWidth::N128] {
            for (dtype, variant) in [(DType::Bf16, MatmulVariant::WgmmaBf16), (DType::F16, MatmulVariant::WgmmaF16)] {
                let rows = Layout::row_major(dtype);
                let named = GemmDesc::new(m, n, k).a(rows).b(rows).variant(variant).tile(Some(tile));
                let views = named.a(rows.ld(k + 3)).b(rows.ld(n + 1)).batch(2);
                for desc in [named, views] {
                    let plan = GemmPlan::new(&gpu, desc).unwrap_or_else(|e| panic!("{desc:?}: {e}"));
                    assert!(plan.kernel_plan().kernel().ends_with("_ld"), "{plan}");
                    match dtype {
                        DType::Bf16 => check::<bf16, f32>(&gpu, &mut rng, desc),
                        _ => check::<f16, f32>(&gpu, &mut rng, desc),
                    };
                }
                if dtype != DType::Bf16 {
                    continue;
                }
                let plan = GemmPlan::new(&gpu, named).unwrap();
                assert_reruns_bitwise_equal::<bf16>(&gpu, &mut rng, &plan, (m, k, n), false, 1);
            }
        }
    }
}

#[test]
fn sixteen_bit_operands_with_unaligned_rows_plan_the_ld_kernels_and_no_copy() {
    for dtype in [DType::Bf16, DType::F16] {
        let rows = Layout::row_major(dtype);
        // Rows of 39 and 102 elements: neither a 16-byte multiple.
        let text = describe_plan(&GemmDesc::new(6185, 102, 39).a(rows).b(rows), MatmulDevice::H200).unwrap();
        assert!(text.contains("_n64_ld") && text.contains("read as they lie") && !text.contains(" via "), "{text}");
        // Rows of 16-byte multiples keep the TMA, and so does a k of more than two stages of 64
        // (the copy and the TMA outpace the producer's 2-byte loads there).
        let aligned = describe_plan(&GemmDesc::new(1000, 1000, 1000).a(rows).b(rows), MatmulDevice::H200).unwrap();
        assert!(!aligned.contains("_ld"), "{aligned}");
        let long = describe_plan(&GemmDesc::new(333, 555, 777).a(rows).b(rows), MatmulDevice::H200).unwrap();
        assert!(!long.contains("_ld") && long.contains(" via "), "{long}");
    }
}

/// BF16 and F16 operands on the CUDA-core kernels (`sgemm`, `few_rows`, `few_cols`), read as they
/// lie: `auto` takes them for small and narrow shapes, and the kernels named take 16-bit operands
/// without a conversion. Every accumulator width of the narrow kernels, the vector path (`k` and
/// `n` multiples of 4) and the scalar one, every tile of `sgemm` (128 x 128, the narrow 512 x
/// 32, 256 x 64, 64 x 256 and 32 x 512, the small 64 x 128 and 64 x 64), forced splits of `k`,
/// a batch of three; `D`
/// NaN-poisoned, against the float64 product under the FP32 bound (the products are exact);
/// reruns bitwise equal.
fn sixteen_bit_cuda_core<T: Value>(gpu: &Gpu, rng: &mut impl Rng, operands: OperandType) {
    let rows = Layout::row_major(T::DTYPE);
    // (m, k, n), as the matmul tests name them.
    let shapes: [(usize, usize, usize); 25] = [
        (1, 1, 1),
        // One row, rows of A and B off 8-byte boundaries: few_rows' guarded scalar loads, where
        // auto took the decode kernel before.
        (1, 673, 88),
        (1, 302, 75),
        (3, 7, 5),
        (2, 4096, 13),
        (4, 300, 8),
        (7, 64, 1000),
        (9, 1000, 4),
        (16, 300, 33),
        (16, 2048, 16),
        (33, 17, 1),
        (40, 64, 16),
        (100, 129, 100),
        (300, 40, 300),
        (4096, 36, 2),
        (1000, 12, 3),
        (1000, 300, 9),
        (300, 200, 27),
        (50, 300, 700),
        (700, 300, 50),
        (2000, 260, 40),
        (300, 12, 700),
        (17, 1, 513),
        // k of 17 to 32 on rows of any alignment: short_k's two columns a thread, which auto
        // takes for small outputs instead of copying both operands for the tensor cores.
        (1812, 27, 494),
        (300, 19, 701),
    ];
    for (m, k, n) in shapes {
        let mut variants = vec![MatmulVariant::Auto, MatmulVariant::Sgemm];
        if m <= 16 {
            variants.push(MatmulVariant::FewRows);
        }
        if n <= 16 || (m > 16 && n <= 32) {
            variants.push(MatmulVariant::FewCols);
        }
        if k <= kernels::matmul::short_k::MAX_K as usize {
            variants.push(MatmulVariant::ShortK);
        }
        for variant in variants {
            for split in [None, Some(2u32), Some(5)] {
                if split.is_some() && variant == MatmulVariant::ShortK {
                    continue; // short_k takes no split of k
                }
                let split = split.map(|splits| SplitK::about(k, splits, 1));
                let mut desc = GemmDesc::new(m, n, k).a(rows).b(rows).variant(variant).split_k(split);
                if split.is_none() && m * n < 5000 {
                    desc = desc.batch(3);
                }
                let plan = match GemmPlan::new(gpu, desc) {
                    Ok(plan) => plan,
                    // Auto on the tensor cores (decode_bf16) takes no forced split of this size.
                    Err(e) if variant == MatmulVariant::Auto && split.is_some() => {
                        eprintln!("{m}x{k}x{n} {split:?}: {e}");
                        continue;
                    }
                    Err(e) => panic!("{desc:?}: {e}"),
                };
                let on_cuda_cores = matches!(
                    plan.kernel_plan().variant(),
                    MatmulVariant::Sgemm | MatmulVariant::FewRows | MatmulVariant::FewCols | MatmulVariant::ShortK
                );
                if variant != MatmulVariant::Auto {
                    assert!(on_cuda_cores, "{plan}");
                }
                if on_cuda_cores {
                    assert_eq!(plan.kernel_plan().operand_type(), operands, "{plan}");
                    assert!(!plan.to_string().contains(" via "), "16-bit operands are read as they lie: {plan}");
                    assert!(plan.kernel_plan().kernel().contains(operands.suffix()), "{plan}");
                }
                check::<T, f32>(gpu, rng, desc);
            }
        }
        // Reruns are bitwise equal (a split of k included).
        let split = SplitK::about(k, 3, 1);
        let desc = GemmDesc::new(m, n, k).a(rows).b(rows).variant(MatmulVariant::Sgemm).split_k(Some(split));
        let plan = GemmPlan::new(gpu, desc).unwrap();
        assert_reruns_bitwise_equal::<T>(gpu, rng, &plan, (m, k, n), false, 1);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn bf16_and_f16_operands_run_on_the_cuda_core_kernels_as_they_lie() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm 16-bit on the CUDA cores"));
    sixteen_bit_cuda_core::<bf16>(&gpu, &mut rng, OperandType::Bf16);
    sixteen_bit_cuda_core::<f16>(&gpu, &mut rng, OperandType::F16);
}

/// `few_cols` on BF16 or F16 operands above 16 rows (`matmul_few_cols_shared`): even `k` up to
/// 16 columns in steps of 256 elements loaded in pairs (`skinny::few_cols_shared_step`), one
/// under, at and over a step and several with a ragged last; odd `k`, splits of at most 128 and
/// more than 16 columns in steps of 128 single loads; unsplit (a batch of three) and in forced
/// splits; `D` NaN-poisoned, against the float64 product under the FP32 bound; reruns bitwise
/// equal.
fn sixteen_bit_few_cols_shared<T: Value>(gpu: &Gpu, rng: &mut impl Rng, operands: OperandType) {
    let rows = Layout::row_major(T::DTYPE);
    // (m, k, n), as the matmul tests name them.
    let shapes: [(usize, usize, usize); 11] = [
        (300, 34, 3),
        (100, 128, 8),
        (17, 254, 2),
        (17, 256, 8),
        (100, 258, 9),
        (33, 1030, 16),
        (1000, 510, 12),
        (65, 2050, 7),
        (100, 257, 9),
        (1000, 1031, 5),
        (300, 512, 27),
    ];
    for (m, k, n) in shapes {
        for split in [None, Some(2u32), Some(5)] {
            let split = split.map(|splits| SplitK::about(k, splits, 1));
            let mut desc = GemmDesc::new(m, n, k).a(rows).b(rows).variant(MatmulVariant::FewCols).split_k(split);
            if split.is_none() {
                desc = desc.batch(3);
            }
            let plan = GemmPlan::new(gpu, desc).unwrap();
            let kernel = plan.kernel_plan().kernel();
            assert!(kernel.starts_with("matmul_few_cols_shared_") && kernel.contains(operands.suffix()), "{plan}");
            check::<T, f32>(gpu, rng, desc);
        }
    }
    let (m, k, n) = (1000, 1030, 12);
    let split = SplitK { splits: 3, k_chunk: 344 };
    let desc = GemmDesc::new(m, n, k).a(rows).b(rows).variant(MatmulVariant::FewCols).split_k(Some(split));
    let plan = GemmPlan::new(gpu, desc).unwrap();
    assert_reruns_bitwise_equal::<T>(gpu, rng, &plan, (m, k, n), false, 1);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn few_cols_on_bf16_and_f16_shares_b_in_paired_and_single_steps_and_matches_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm 16-bit few_cols shared"));
    sixteen_bit_few_cols_shared::<bf16>(&gpu, &mut rng, OperandType::Bf16);
    sixteen_bit_few_cols_shared::<f16>(&gpu, &mut rng, OperandType::F16);
}

/// One tensor-core tile variant with its split of `k` through the descriptor, on operands of
/// type `T`: as planned with alpha, beta and `C` (the partials reduced into the epilogue's
/// accumulator), with a transposed column-major `A`, a column-major `D` with a leading dimension
/// and a batch of two (the canonical product `D^T = B^T A^T` split again), and with a forced
/// split; each against the float64 product under the plan's bound, `D` NaN-poisoned where beta
/// is 0; reruns bitwise equal.
fn split_k_through_the_descriptor<T: Value>(
    gpu: &Gpu,
    rng: &mut impl Rng,
    variant: MatmulVariant,
    shapes: &[(usize, usize, usize)],
) {
    let rows = Layout::row_major(T::DTYPE);
    // (m, k, n) as the matmul tests name them; GemmDesc::new takes (m, n, k).
    for &(m, k, n) in shapes {
        let with_c = GemmDesc::new(m, n, k).variant(variant).a(rows).b(rows).alpha_beta(1.5, -1.0);
        let plan = GemmPlan::new(gpu, with_c).unwrap();
        assert!(plan.kernel_plan().is_split(), "{variant} was meant to split k here: {plan}");
        check::<T, f32>(gpu, rng, with_c);
        check::<T, f32>(gpu, rng, with_c.alpha_beta(1.0, 0.0));
        // A column-major D makes the canonical product D^T = B^T A^T, whose n rows the decode
        // kernels do not take: they get a padded row-major D.
        let odd_d = match variant {
            MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => Layout::row_major(DType::F32).ld(n + 3),
            _ => Layout::col_major(DType::F32).ld(m + 3),
        };
        let odd = GemmDesc::new(m, n, k)
            .variant(variant)
            .transpose_a(true)
            .a(Layout::new(T::DTYPE, Order::ColMajor).ld(k + 2))
            .b(rows.ld(n + 1))
            .d(odd_d)
            .alpha_beta(-0.5, 2.0)
            .batch(2);
        check::<T, f32>(gpu, rng, odd);
        let forced = SplitK::about_in(k, 3, 1, variant.split_granule());
        check::<T, f32>(gpu, rng, with_c.split_k(Some(forced)));
        // Reruns of the planned split are bitwise equal.
        assert_reruns_bitwise_equal::<T>(gpu, rng, &plan, (m, k, n), true, 3);
    }
}

/// `decode_bf16` and `decode_f16` split `k` through the descriptor (each strip's last block adds
/// the partial products) with alpha, beta and `C` right, transposed and padded layouts, a batch of
/// two, a forced split and bitwise-equal reruns; small enough for compute-sanitizer.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_decode_split_k_through_the_descriptor_keeps_alpha_beta_c_and_layouts() {
    let (gpu, mut rng) = hopper_gpu("gemm decode split-K");
    // One strip to several, ragged k and n (a strip of 8 columns of 64), 1 to 16 rows.
    let shapes = [(5, 4097, 72), (16, 3000, 200), (1, 9000, 64)];
    split_k_through_the_descriptor::<bf16>(&gpu, &mut rng, MatmulVariant::DecodeBf16, &shapes);
    split_k_through_the_descriptor::<f16>(&gpu, &mut rng, MatmulVariant::DecodeF16, &shapes);
}

/// `wgmma_bf16`, `wgmma_f16` and `wgmma_tf32` split `k` through the descriptor with alpha, beta
/// and `C` right, and `auto` gives BF16 and F16 operands (and `f32` under `medium`) the split
/// where it takes the tensor cores.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_wgmma_split_k_through_the_descriptor_keeps_alpha_beta_c_and_layouts() {
    let (gpu, mut rng) = hopper_gpu("gemm wgmma split-K");
    let shapes = [(24, 13_368, 171), (119, 7460, 1650), (5, 4097, 7), (591, 7821, 8)];
    split_k_through_the_descriptor::<bf16>(&gpu, &mut rng, MatmulVariant::WgmmaBf16, &shapes);
    split_k_through_the_descriptor::<f16>(&gpu, &mut rng, MatmulVariant::WgmmaF16, &shapes);
    split_k_through_the_descriptor::<f32>(&gpu, &mut rng, MatmulVariant::WgmmaTf32, &shapes);
    // auto: 1024 x 16384 x 1280 is 40 tiles of 128 x 256 for the tensor cores: k is split.
    let (m, k, n) = (1024, 16_384, 1280);
    for desc in [
        GemmDesc::new(m, n, k).a(Layout::row_major(DType::Bf16)).b(Layout::row_major(DType::Bf16)),
        GemmDesc::new(m, n, k).a(Layout::row_major(DType::F16)).b(Layout::row_major(DType::F16)),
        GemmDesc::new(m, n, k).policy(PrecisionPolicy::Medium),
    ] {
        let desc = desc.alpha_beta(0.75, 0.5);
        let plan = GemmPlan::new(&gpu, desc).unwrap();
        assert!(plan.kernel_plan().variant().needs_tensor_cores() && plan.kernel_plan().is_split(), "{plan}");
        match desc.a.dtype {
            DType::Bf16 => check::<bf16, f32>(&gpu, &mut rng, desc),
            DType::F16 => check::<f16, f32>(&gpu, &mut rng, desc),
            _ => check::<f32, f32>(&gpu, &mut rng, desc),
        };
    }
}

/// cuBLAS's column-major `gemmStridedBatched` of the same descriptor (one type throughout).
fn cublas<T: Value>(gpu: &Gpu, desc: GemmDesc, a: &CudaSlice<T>, b: &CudaSlice<T>, c: &mut CudaSlice<T>)
where
    CudaBlas: Gemm<T>,
{
    // e = whether op(X) is X's memory read column-major, transposed.
    let e = |t: bool, o: Order| t ^ (o == Order::RowMajor);
    let op = |t: bool| if t { cublasOperation_t::CUBLAS_OP_T } else { cublasOperation_t::CUBLAS_OP_N };
    let (ea, eb) = (e(desc.transpose_a, desc.a.order), e(desc.transpose_b, desc.b.order));
    let (lda, ldb) = (desc.a.leading(desc.a_rows_cols()), desc.b.leading(desc.b_rows_cols()));
    let (sa, sb) = (desc.a.stride(desc.a_rows_cols()), desc.b.stride(desc.b_rows_cols()));
    let (ldd, sd) = (desc.d.leading(desc.d_rows_cols()), desc.d.stride(desc.d_rows_cols()));
    let blas = CudaBlas::new(gpu.stream().clone()).unwrap();
    let (alpha, beta) = (T::from_f32(desc.alpha), T::from_f32(desc.beta));
    let i = |x: usize| x as i32;
    let (gemm, a_first) = if desc.d.order == Order::ColMajor {
        ((op(ea), op(eb), i(desc.m), i(desc.n)), true)
    } else {
        // D^T = op(B)^T op(A)^T.
        ((op(!eb), op(!ea), i(desc.n), i(desc.m)), false)
    };
    let (transa, transb, m, n) = gemm;
    let (lda_, ldb_, sa_, sb_) = if a_first { (lda, ldb, sa, sb) } else { (ldb, lda, sb, sa) };
    let cfg = StridedBatchedConfig {
        gemm: cudarc::cublas::GemmConfig {
            transa,
            transb,
            m,
            n,
            k: i(desc.k),
            alpha,
            lda: i(lda_),
            ldb: i(ldb_),
            beta,
            ldc: i(ldd),
        },
        batch_size: i(desc.batch),
        stride_a: sa_ as i64,
        stride_b: sb_ as i64,
        stride_c: sd as i64,
    };
    // SAFETY: the buffers hold the batch of matrices the configuration describes (drawn for
    // this descriptor's layouts), on this handle's stream.
    unsafe { if a_first { blas.gemm_strided_batched(cfg, a, b, c) } else { blas.gemm_strided_batched(cfg, b, a, c) } }
        .unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_layout_of_f32_bf16_and_f16_matches_cublas_gemm_strided_batched() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemm vs cublas"));
    fn compare<T: Value>(gpu: &Gpu, rng: &mut impl Rng, desc: GemmDesc)
    where
        CudaBlas: Gemm<T>,
    {
        let s = gpu.stream();
        let a: Vec<T> = draw(rng, desc.a.needed_elements(desc.a_rows_cols(), desc.batch));
        let b: Vec<T> = draw(rng, desc.b.needed_elements(desc.b_rows_cols(), desc.batch));
        let c: Vec<T> = draw(rng, desc.d.needed_elements(desc.d_rows_cols(), desc.batch));
        let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        let (mut ours, mut theirs) = (s.clone_htod(&c).unwrap(), s.clone_htod(&c).unwrap());
        let plan = GemmPlan::new(gpu, desc).unwrap();
        let mut ws = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1)).unwrap();
        plan.launch(gpu, &da, &db, &mut ours, &mut ws).unwrap();
        cublas(gpu, desc, &da, &db, &mut theirs);
        let (ours, theirs) = (s.clone_dtoh(&ours).unwrap(), s.clone_dtoh(&theirs).unwrap());
        // Both within their bounds of the same product: within twice the bound of each other.
        let scale = desc.k as f64 * (desc.alpha.abs() as f64 + desc.beta.abs() as f64);
        let tol = 2.0 * (plan.precision().tolerance(desc.k) * scale + T::UNIT * scale) + 1e-6;
        for (j, (x, y)) in ours.iter().zip(&theirs).enumerate() {
            assert!(
                (x.to_f64() - y.to_f64()).abs() <= tol,
                "{plan}: element {j}: ours {} cuBLAS {}",
                x.to_f64(),
                y.to_f64()
            );
        }
    }
    for order_d in [Order::RowMajor, Order::ColMajor] {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for (order_a, order_b) in [(Order::RowMajor, Order::ColMajor), (Order::ColMajor, Order::RowMajor)] {
                let desc = |dtype| {
                    let d = GemmDesc::new(96, 80, 72).transpose_a(ta).transpose_b(tb).alpha_beta(0.75, 0.5).batch(3);
                    let lay = |o: Order, dims: (usize, usize)| {
                        let packed = if o == Order::RowMajor { dims.1 } else { dims.0 };
                        Layout::new(dtype, o).ld(packed + 8)
                    };
                    d.a(lay(order_a, d.a_rows_cols())).b(lay(order_b, d.b_rows_cols())).d(lay(order_d, d.d_rows_cols()))
                };
                compare::<f32>(&gpu, &mut rng, desc(DType::F32));
                compare::<bf16>(&gpu, &mut rng, desc(DType::Bf16));
                compare::<f16>(&gpu, &mut rng, desc(DType::F16));
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn wrong_types_short_buffers_and_overlaps_are_refused_before_anything_is_enqueued() {
    let gpu = gpu();
    let s = gpu.stream();
    let plan = GemmPlan::new(&gpu, GemmDesc::new(8, 8, 8)).unwrap();
    let (a, b) = (s.alloc_zeros::<f32>(64).unwrap(), s.alloc_zeros::<f32>(64).unwrap());
    let mut d = s.alloc_zeros::<f32>(64).unwrap();
    let mut ws = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1)).unwrap();
    let a16 = s.alloc_zeros::<bf16>(64).unwrap();
    let err = plan.launch(&gpu, &a16, &b, &mut d, &mut ws).unwrap_err();
    assert!(matches!(err, hopper_kernels::Error::DTypeMismatch { operand: "A", .. }), "{err}");
    let short = s.alloc_zeros::<f32>(63).unwrap();
    let err = plan.launch(&gpu, &short, &b, &mut d, &mut ws).unwrap_err();
    assert!(matches!(err, hopper_kernels::Error::BufferTooSmall { buffer: "A", len: 63, needed: 64 }), "{err}");
    let err = plan.launch_with_c(&gpu, &a, &b, &short, &mut d, &mut ws).unwrap_err();
    assert!(matches!(err, hopper_kernels::Error::BufferTooSmall { buffer: "C", len: 63, needed: 64 }), "{err}");
    // Disjoint views of one allocation are separate operands.
    let mut whole = s.clone_htod(&[1.0f32; 128]).unwrap();
    let (left, mut right) = whole.split_at_mut(64);
    plan.launch(&gpu, &left, &b, &mut right, &mut ws).unwrap();
}

/// `D` as a view one float into its allocation, off a 16-byte boundary, written by the product
/// kernel itself (`f32`, packed, alpha 1, beta 0): `wgmma_bf16` and `wgmma_f16`, which store `C`
/// through the TMA where its rows are 16-byte multiples, take their row-staged form there
/// instead (as they do for other rows); against the float64 product, the floats on either side of
/// the view left as they were.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_d_off_a_16_byte_boundary_is_stored_by_the_row_staged_epilogue() {
    let (gpu, mut rng) = hopper_gpu("gemm unaligned d");
    for (m, n, k) in [(130, 300, 70), (130, 259, 70)] {
        let desc = |variant, dtype| {
            GemmDesc::new(m, n, k).variant(variant).a(Layout::row_major(dtype)).b(Layout::row_major(dtype))
        };
        check_at::<bf16, f32>(&gpu, &mut rng, desc(MatmulVariant::WgmmaBf16, DType::Bf16), 1);
        check_at::<f16, f32>(&gpu, &mut rng, desc(MatmulVariant::WgmmaF16, DType::F16), 1);
    }
}

/// One row of `f32` on `matmul_gemv` with `D` a view 1, 2 and 3 floats into its allocation, off
/// a 16-byte boundary: unsplit the kernel writes `D` itself and takes its scalar path (every
/// eighth column a thread, 4-byte loads and stores); split, the reduction writes it. Against the
/// float64 product, the floats on either side of the view left as they were.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn one_row_with_d_off_a_16_byte_boundary_takes_the_gemv_scalar_path() {
    let (gpu, mut rng) = (gpu(), fresh_rng("gemv unaligned d"));
    for (n, k, splits) in [(4224, 4096, 1), (4256, 4099, 1), (1024, 4096, 4)] {
        let desc = GemmDesc::new(1, n, k).variant(MatmulVariant::FewRows);
        let plan = GemmPlan::new(&gpu, desc).unwrap();
        assert_eq!(plan.kernel_plan().kernel(), "matmul_gemv", "{plan}");
        assert_eq!(plan.kernel_plan().split().map_or(1, |s| s.splits), splits, "{plan}");
        for d_offset in [1, 2, 3] {
            check_at::<f32, f32>(&gpu, &mut rng, desc, d_offset);
        }
    }
}

/// Launches `desc`'s plan four times on the same buffers (new `A` each time) and compares `D` bit
/// for bit with a fresh plan's first launch (a direct one) on the same inputs: the plan's second
/// launch captures its launches into a graph, the third and fourth replay it.
fn replays_equal_direct_launches<T: Value>(gpu: &Gpu, rng: &mut impl Rng, desc: GemmDesc) {
    let s = gpu.stream();
    let (a_dims, b_dims, d_dims) = (desc.a_rows_cols(), desc.b_rows_cols(), desc.d_rows_cols());
    let b: Vec<T> = draw(rng, desc.b.needed_elements(b_dims, desc.batch));
    let c: Vec<f32> = draw(rng, desc.d.needed_elements(d_dims, desc.batch));
    let a_len = desc.a.needed_elements(a_dims, desc.batch);
    let plan = GemmPlan::new(gpu, desc).unwrap();
    let (mut da, db, dc) = (s.alloc_zeros::<T>(a_len).unwrap(), s.clone_htod(&b).unwrap(), s.clone_htod(&c).unwrap());
    let mut ws = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1)).unwrap();
    let (mut replayed, mut direct) = (s.alloc_zeros::<f32>(c.len()).unwrap(), s.alloc_zeros::<f32>(c.len()).unwrap());
    for launch in 0..4 {
        let a: Vec<T> = draw(rng, a_len);
        s.memcpy_htod(&a, &mut da).unwrap();
        plan.launch_with_c(gpu, &da, &db, &dc, &mut replayed, &mut ws).unwrap();
        let fresh = GemmPlan::new(gpu, desc).unwrap();
        let mut fresh_ws = s.alloc_zeros::<u8>(fresh.workspace_bytes().max(1)).unwrap();
        fresh.launch_with_c(gpu, &da, &db, &dc, &mut direct, &mut fresh_ws).unwrap();
        let (got, want) = (s.clone_dtoh(&replayed).unwrap(), s.clone_dtoh(&direct).unwrap());
        let differ = got.iter().zip(&want).position(|(x, y)| x.to_bits() != y.to_bits());
        assert!(differ.is_none(), "{plan}: launch {launch} differs from a direct launch at element {differ:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn hopper_plans_replay_their_launches_with_the_results_of_direct_launches() {
    let (gpu, mut rng) = hopper_gpu("hopper_plans_replay_their_launches");
    let rows = |t| Layout::row_major(t);
    // Plans of one kernel replay too: `few_cols` on f32, and the BF16 tiles with their tensor maps.
    replays_equal_direct_launches::<f32>(&gpu, &mut rng, GemmDesc::new(333, 1, 8));
    replays_equal_direct_launches::<bf16>(
        &gpu,
        &mut rng,
        GemmDesc::new(256, 256, 256).a(rows(DType::Bf16)).b(rows(DType::Bf16)),
    );
    // An epilogue (alpha, beta, C) after the tensor-core product.
    replays_equal_direct_launches::<f32>(&gpu, &mut rng, GemmDesc::new(300, 70, 256).alpha_beta(1.5, -1.0));
    // BF16 rows of 26 elements, not 16-byte multiples: A and B converted before the product.
    replays_equal_direct_launches::<bf16>(
        &gpu,
        &mut rng,
        GemmDesc::new(300, 70, 26).a(rows(DType::Bf16)).b(rows(DType::Bf16)),
    );
    // One row: few_rows split into partial products, then their reduction.
    replays_equal_direct_launches::<f32>(&gpu, &mut rng, GemmDesc::new(1, 29, 492));
    // A batch of three products of one launch each; and split-TF32 with its guard and passes.
    replays_equal_direct_launches::<f32>(&gpu, &mut rng, GemmDesc::new(64, 96, 128).batch(3));
    replays_equal_direct_launches::<f32>(&gpu, &mut rng, GemmDesc::new(2048, 2048, 2048));
}
