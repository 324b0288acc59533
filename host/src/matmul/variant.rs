//! The table of matmul variants: the one list that the CLI, the tests and the benchmarks iterate.

use super::precision::Precision;
use super::shape::MatmulShape;
use kernels::matmul::skinny::FEW_ROWS_MAX_M;

/// The GPU matmul variants: `auto` (the planner's choice under a [`PrecisionPolicy`](super::PrecisionPolicy)) and each
/// kernel family.
///
/// ```
/// use hopper_kernels::matmul::MatmulVariant;
/// // Names as the CLI takes them, in any case; Display prints the name.
/// let v: MatmulVariant = "SGEMM_Warp_Tiled".parse().unwrap();
/// assert_eq!((v, v.to_string()), (MatmulVariant::SgemmWarpTiled, "sgemm_warp_tiled".to_string()));
/// let err = "sgem".parse::<MatmulVariant>().unwrap_err();
/// assert!(err.starts_with("unknown matmul variant `sgem`: choose from auto, naive, tiled16"), "{err}");
/// assert_eq!(MatmulVariant::ALL.len(), MatmulVariant::PLANNERS.len() + MatmulVariant::KERNELS.len());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatmulVariant {
    /// The planner picks the kernel and its configuration from the shape, the device and the
    /// precision policy ([`super::plan()`]): under the default `high`, wide products on Hopper run
    /// the guarded `wgmma_tf32x3` (FP32's class and bound on every input, 0.56-0.89x cuBLAS
    /// FP32's time), everything else the FP32 CUDA-core kernels.
    Auto,
    /// One thread per output, operands straight from global memory.
    Naive,
    /// The Guide's shared-memory tiles, 16x16.
    Tiled16,
    /// The Guide's shared-memory tiles, 32x32.
    Tiled32,
    /// 128x128 block tiles, an 8x8 register tile per thread, 16-byte loads, double-buffered
    /// shared memory; split-K when the tiles alone would leave SMs idle. Where a side of `C` is
    /// at most 64 (and `k >= 256`), the same block on a tile as narrow as that side: 512x32,
    /// 256x64, 64x256 or 32x512 ([`super::sgemm::tile_for`]); for `k < 512`, 64x256 where it
    /// leaves no SM more blocks ([`super::sgemm::tile_on`]). Small products (at most 10^8
    /// multiply-adds, `k` not far beyond `sqrt(m n)`: [`super::sgemm_4x4::takes`]) run on
    /// 32x32 or 32x64 tiles with a 4x4 register tile per thread (`sgemm_4x4_*`), many more
    /// blocks than the GPU has SMs.
    Sgemm,
    /// 128x128 block tiles of four warps, a 64x64 tile per warp and 8x16 per thread: twice
    /// `sgemm`'s FMAs per shared-memory load, for long `k` and full waves.
    SgemmWarpTiled,
    /// Memory-bound kernel for `m <= 16`: streams `B` once, `m x 4` accumulators per thread.
    FewRows,
    /// Memory-bound kernel for `n <= 16`: streams `A` once, one warp per row of `C`.
    FewCols,
    /// The kernel for `k <= 16`, where writing `C` bounds the time: consecutive threads store
    /// consecutive elements of a row of `C`, each thread's columns of `B` held in registers for
    /// the 16 rows of its block ([`super::short_k`]).
    ShortK,
    /// Hopper tensor cores (`wgmma`, sm_90a) on `A` and `B` rounded to BF16: TMA into a 4-stage
    /// ring, two consumer warpgroups on 128x256 tiles, a persistent grid. Compared with cuBLAS
    /// BF16.
    WgmmaBf16,
    /// `wgmma_bf16`'s kernel on `A` and `B` rounded to F16 (IEEE half: 11 significant bits
    /// where BF16 has 8, 5 exponent bits where it has 8), `m64n256k16.f32.f16.f16`, `f32`
    /// accumulation. `f32` inputs beyond F16's range (`|x| >= 65520`) are refused
    /// ([`Error::OutOfRange`](crate::Error::OutOfRange)) where the library rounds them
    /// ([`super::DeviceMatrices`]); a [`super::GemmDesc`] with `f32` operands converts them on
    /// the GPU, where such values become infinities. Compared with cuBLAS FP16.
    WgmmaF16,
    /// Hopper tensor cores in TF32 math on the `f32` inputs as they are: `C^T = B^T A^T`, with
    /// row-major `B` loaded from shared memory into the instruction's register operand (TF32
    /// takes no transposed operand from shared memory). Compared with cuBLAS TF32.
    WgmmaTf32,
    /// The same as `wgmma_bf16`'s kernel in TF32, after transposing `B` on the GPU (part of
    /// the measured time). Compared with cuBLAS TF32.
    WgmmaTf32Transposed,
    /// Products within FP32's bound on TF32 tensor cores by the split-TF32 method ("3xTF32"),
    /// guarded: a scan of `A` and `B` on the GPU (`matmul_tf32x3_scan`) picks powers of two that
    /// bring both into the range where the split is exact, or, for non-finite inputs, ranges too
    /// wide and a `C` that could overflow, the FP32 kernel `auto` would run under `highest`
    /// instead. Each scaled operand is split on the GPU into a TF32 part and the remainder, `a =
    /// a_big + a_small` (`matmul_split_tf32x3`), and `A_small B_big + A_big B_small + A_big B_big`
    /// computed as one product with `k` tripled by `wgmma_tf32_promoted` (`wgmma_tf32`'s product
    /// on 128x128 tiles, its tensor-core sums added into `f32` every 96 of the tripled `k`, the
    /// scales undone in its epilogue). All of it is part of the measured time. Compared with
    /// cuBLAS FP32.
    WgmmaTf32x3,
    /// Hopper tensor cores for `m <= 16` (decode shapes) on `A` and `B` rounded to BF16:
    /// `mma.sync.m16n8k16` on `B` streamed from global memory into registers (16-byte loads, no
    /// shared-memory staging), `k` split over the grid so that every SM streams, the splits added
    /// in a fixed order. Compared with cuBLAS BF16.
    DecodeBf16,
    /// [`Self::DecodeBf16`] on `A` and `B` in F16 (IEEE half): the same kernel with the F16
    /// `mma.sync`. Compared with cuBLAS FP16.
    DecodeF16,
}

named_enum!(MatmulVariant, "matmul variant");

impl MatmulVariant {
    /// Every variant: the planners first, then the kernels simplest first.
    pub const ALL: [Self; 16] = [
        Self::Auto,
        Self::Naive,
        Self::Tiled16,
        Self::Tiled32,
        Self::Sgemm,
        Self::SgemmWarpTiled,
        Self::FewRows,
        Self::FewCols,
        Self::ShortK,
        Self::WgmmaBf16,
        Self::WgmmaF16,
        Self::WgmmaTf32,
        Self::WgmmaTf32Transposed,
        Self::WgmmaTf32x3,
        Self::DecodeBf16,
        Self::DecodeF16,
    ];

    /// The planners: the variants that pick a kernel family rather than name one.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// // Planners name no kernel of their own.
    /// assert!(MatmulVariant::PLANNERS.iter().all(|v| v.kernel().is_none()));
    /// ```
    pub const PLANNERS: [Self; 1] = [Self::Auto];

    /// The kernel families: [`Self::ALL`] after the [`Self::PLANNERS`].
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// assert!(MatmulVariant::KERNELS.iter().all(|v| v.kernel().is_some()));
    /// assert_eq!(MatmulVariant::KERNELS[..], MatmulVariant::ALL[MatmulVariant::PLANNERS.len()..]);
    /// ```
    pub const KERNELS: [Self; 15] = {
        let mut kernels = [Self::Naive; 15];
        let mut i = 0;
        while i < kernels.len() {
            kernels[i] = Self::ALL[i + Self::PLANNERS.len()];
            i += 1;
        }
        kernels
    };

    /// The name the CLI and reports use.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// assert_eq!(MatmulVariant::WgmmaTf32x3.name(), "wgmma_tf32x3");
    /// for v in MatmulVariant::ALL {
    ///     assert_eq!(v.name().parse::<MatmulVariant>(), Ok(v));
    /// }
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Naive => "naive",
            Self::Tiled16 => "tiled16",
            Self::Tiled32 => "tiled32",
            Self::Sgemm => "sgemm",
            Self::SgemmWarpTiled => "sgemm_warp_tiled",
            Self::FewRows => "few_rows",
            Self::FewCols => "few_cols",
            Self::ShortK => "short_k",
            Self::WgmmaBf16 => "wgmma_bf16",
            Self::WgmmaF16 => "wgmma_f16",
            Self::WgmmaTf32 => "wgmma_tf32",
            Self::WgmmaTf32Transposed => "wgmma_tf32_transposed",
            Self::WgmmaTf32x3 => "wgmma_tf32x3",
            Self::DecodeBf16 => "decode_bf16",
            Self::DecodeF16 => "decode_f16",
        }
    }

    /// The kernel's PTX symbol (for `few_rows` and `few_cols`, the widest of the family: the
    /// planner picks the one that fits `m` or `n`, `kernels::matmul::skinny::few_rows_kernel`
    /// and `few_cols_kernel`; for `wgmma_tf32x3`, the product kernel `wgmma_tf32` that runs after
    /// the split); `None` for `auto`, which runs whichever kernel it plans.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// assert_eq!(MatmulVariant::Auto.kernel(), None);
    /// assert_eq!(MatmulVariant::Sgemm.kernel(), Some("sgemm"));
    /// assert_eq!(MatmulVariant::FewRows.kernel(), Some("matmul_few_rows_16")); // the widest
    /// assert_eq!(MatmulVariant::WgmmaTf32x3.kernel(), Some("wgmma_tf32_promoted"));
    /// ```
    pub fn kernel(self) -> Option<&'static str> {
        match self {
            Self::Auto => None,
            Self::Naive => Some(kernels::matmul::naive::KERNEL),
            Self::Tiled16 => Some(kernels::matmul::tiled::KERNEL_TILE16),
            Self::Tiled32 => Some(kernels::matmul::tiled::KERNEL_TILE32),
            Self::Sgemm => Some(kernels::matmul::sgemm::KERNEL),
            Self::SgemmWarpTiled => Some(kernels::matmul::sgemm_warp_tiled::KERNEL),
            Self::FewRows => Some(kernels::matmul::skinny::FEW_ROWS_KERNELS[4].1),
            Self::FewCols => Some(kernels::matmul::skinny::FEW_COLS_KERNELS[4].1),
            Self::ShortK => Some(kernels::matmul::short_k::KERNELS[0]),
            Self::WgmmaBf16 => Some(kernels::matmul::wgmma::KERNEL_BF16),
            Self::WgmmaF16 => Some(kernels::matmul::wgmma::KERNEL_F16),
            Self::WgmmaTf32 => Some(kernels::matmul::wgmma::KERNEL_TF32),
            Self::WgmmaTf32x3 => Some(kernels::matmul::wgmma::KERNEL_TF32_PROMOTED),
            Self::WgmmaTf32Transposed => Some(kernels::matmul::wgmma::KERNEL_TF32_TRANSPOSED),
            Self::DecodeBf16 => Some(kernels::matmul::decode::KERNEL),
            Self::DecodeF16 => Some(kernels::matmul::decode::KERNEL_F16),
        }
    }

    /// The precision of the variant's products: FP32 for all but the tensor-core variants;
    /// `auto`'s contract under the default policy is FP32's (a plan's own kernel gives the bound
    /// its run is checked on: [`super::MatmulPlan::precision`]).
    ///
    /// ```
    /// use hopper_kernels::matmul::{MatmulVariant, Precision};
    /// assert_eq!(MatmulVariant::SgemmWarpTiled.precision(), Precision::Fp32);
    /// assert_eq!(MatmulVariant::WgmmaBf16.precision(), Precision::Bf16);
    /// assert_eq!(MatmulVariant::WgmmaF16.precision(), Precision::Fp16);
    /// assert_eq!(MatmulVariant::WgmmaTf32.precision(), Precision::Tf32);
    /// // Split-TF32 has its own bound, and competes with FP32.
    /// assert_eq!(MatmulVariant::WgmmaTf32x3.precision().baseline(), Precision::Fp32);
    /// ```
    pub fn precision(self) -> Precision {
        match self {
            Self::WgmmaBf16 | Self::DecodeBf16 => Precision::Bf16,
            Self::WgmmaF16 | Self::DecodeF16 => Precision::Fp16,
            Self::WgmmaTf32 | Self::WgmmaTf32Transposed => Precision::Tf32,
            Self::WgmmaTf32x3 => Precision::Tf32x3,
            _ => Precision::Fp32,
        }
    }

    /// Whether the variant runs only on Hopper's tensor cores (the `sm_90a` module); `auto` runs
    /// anywhere, on the FP32 kernels where there are no tensor cores.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// let hopper_only: Vec<&str> =
    ///     MatmulVariant::ALL.iter().filter(|v| v.needs_tensor_cores()).map(|v| v.name()).collect();
    /// assert_eq!(
    ///     hopper_only,
    ///     ["wgmma_bf16", "wgmma_f16", "wgmma_tf32", "wgmma_tf32_transposed", "wgmma_tf32x3", "decode_bf16", "decode_f16"]
    /// );
    /// assert!(!MatmulVariant::Auto.needs_tensor_cores());
    /// ```
    pub fn needs_tensor_cores(self) -> bool {
        matches!(
            self,
            Self::WgmmaBf16
                | Self::WgmmaF16
                | Self::WgmmaTf32
                | Self::WgmmaTf32Transposed
                | Self::WgmmaTf32x3
                | Self::DecodeBf16
                | Self::DecodeF16
        )
    }

    /// Whether the kernel splits `k` over the grid's z dimension (and so takes a `k_chunk`).
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// let splitting: Vec<&str> = MatmulVariant::ALL.iter().filter(|v| v.splits_k()).map(|v| v.name()).collect();
    /// assert_eq!(
    ///     splitting,
    ///     [
    ///         "sgemm",
    ///         "sgemm_warp_tiled",
    ///         "few_rows",
    ///         "few_cols",
    ///         "wgmma_bf16",
    ///         "wgmma_f16",
    ///         "wgmma_tf32",
    ///         "wgmma_tf32_transposed",
    ///         "decode_bf16",
    ///         "decode_f16"
    ///     ]
    /// );
    /// ```
    pub fn splits_k(self) -> bool {
        matches!(
            self,
            Self::Sgemm
                | Self::SgemmWarpTiled
                | Self::FewRows
                | Self::FewCols
                | Self::WgmmaBf16
                | Self::WgmmaF16
                | Self::WgmmaTf32
                | Self::WgmmaTf32Transposed
                | Self::DecodeBf16
                | Self::DecodeF16
        )
    }

    /// Whether the variant's kernels add the partial products of a split of `k` themselves (in
    /// split order: each tile's last work item, or the blocks of the tile's cluster for the
    /// `_cluster` kernels; a decode kernel's tiles are its strips of columns) rather than through
    /// `matmul_split_k_reduce`: every tensor-core variant that takes a split.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulVariant;
    /// assert!(MatmulVariant::WgmmaBf16.adds_its_splits() && MatmulVariant::WgmmaTf32.adds_its_splits());
    /// assert!(MatmulVariant::DecodeBf16.adds_its_splits() && !MatmulVariant::Sgemm.adds_its_splits());
    /// // wgmma_tf32x3 runs its product unsplit.
    /// assert!(!MatmulVariant::WgmmaTf32x3.adds_its_splits());
    /// ```
    pub fn adds_its_splits(self) -> bool {
        self.needs_tensor_cores() && self.splits_k()
    }

    /// The multiple of columns of `k` a split's range must be (all but the last): the
    /// tensor-core tile kernels split `k` in whole stages of their pipeline (64 BF16 or F16
    /// columns, 32 TF32), the others in [`CHUNK_GRANULE`](super::split_k::CHUNK_GRANULE).
    ///
    /// ```
    /// use hopper_kernels::matmul::{MatmulVariant, SplitK};
    /// assert_eq!(MatmulVariant::WgmmaBf16.split_granule(), 64);
    /// assert_eq!(MatmulVariant::WgmmaTf32.split_granule(), 32);
    /// assert_eq!(MatmulVariant::Sgemm.split_granule(), 8);
    /// // Three ranges of k = 1000 for wgmma_f16: whole stages of 64.
    /// let v = MatmulVariant::WgmmaF16;
    /// assert_eq!(SplitK::about_in(1000, 3, 1, v.split_granule()), SplitK { splits: 3, k_chunk: 384 });
    /// ```
    pub fn split_granule(self) -> u32 {
        use kernels::matmul::wgmma::Operand;
        match self {
            Self::WgmmaBf16 => Operand::Bf16.block_k(),
            Self::WgmmaF16 => Operand::F16.block_k(),
            Self::WgmmaTf32 | Self::WgmmaTf32Transposed => Operand::Tf32.block_k(),
            _ => super::split_k::CHUNK_GRANULE,
        }
    }

    /// Whether the variant multiplies `shape`: the narrow-shape kernels take only their narrow
    /// side, `short_k` only `k <= 32`; every other variant takes any shape.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulShape, MatmulVariant};
    /// let (short, tall) = (MatmulShape::new(16, 4096, 4096)?, MatmulShape::new(17, 4096, 4096)?);
    /// assert!(MatmulVariant::FewRows.supports(short) && !MatmulVariant::FewRows.supports(tall));
    /// assert!(MatmulVariant::Sgemm.supports(short) && MatmulVariant::Sgemm.supports(tall));
    /// # Ok(()) }
    /// ```
    pub fn supports(self, shape: MatmulShape) -> bool {
        match self {
            Self::FewRows => shape.m <= FEW_ROWS_MAX_M as usize,
            Self::DecodeBf16 | Self::DecodeF16 => shape.m <= kernels::matmul::decode::MAX_M as usize,
            Self::ShortK => shape.k <= kernels::matmul::short_k::MAX_K as usize,
            Self::FewCols => {
                shape.n <= kernels::matmul::skinny::few_cols_max_n(shape.m.min(u32::MAX as usize) as u32) as usize
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_variant_names_a_kernel_the_ptx_declares() {
        for v in MatmulVariant::KERNELS {
            let names =
                if v.precision() == Precision::Fp32 { kernels::KERNEL_NAMES } else { kernels::HOPPER_KERNEL_NAMES };
            assert!(names.contains(&v.kernel().unwrap()), "{}", v.name());
        }
        assert_eq!(MatmulVariant::WgmmaBf16.precision(), Precision::Bf16);
        assert_eq!(MatmulVariant::WgmmaF16.precision(), Precision::Fp16);
        assert_eq!(MatmulVariant::WgmmaF16.kernel(), Some(kernels::matmul::wgmma::KERNEL_F16));
        assert_eq!("wgmma_f16".parse::<MatmulVariant>(), Ok(MatmulVariant::WgmmaF16));
        assert_eq!(MatmulVariant::WgmmaTf32.precision(), Precision::Tf32);
        assert_eq!(MatmulVariant::WgmmaTf32x3.precision(), Precision::Tf32x3);
        assert_eq!(MatmulVariant::WgmmaTf32x3.precision().baseline(), Precision::Fp32);
        assert_eq!(MatmulVariant::WgmmaTf32x3.kernel(), Some(kernels::matmul::wgmma::KERNEL_TF32_PROMOTED));
        assert_eq!(MatmulVariant::Auto.kernel(), None);
        assert_eq!(MatmulVariant::Auto.precision(), Precision::Fp32);
        assert_eq!(&MatmulVariant::ALL[..1], &MatmulVariant::PLANNERS);
        assert_eq!(&MatmulVariant::ALL[1..], &MatmulVariant::KERNELS);
    }

    #[test]
    fn only_the_wgmma_kernels_need_tensor_cores() {
        let needing: Vec<&str> =
            MatmulVariant::ALL.iter().filter(|v| v.needs_tensor_cores()).map(|v| v.name()).collect();
        assert_eq!(
            needing,
            [
                "wgmma_bf16",
                "wgmma_f16",
                "wgmma_tf32",
                "wgmma_tf32_transposed",
                "wgmma_tf32x3",
                "decode_bf16",
                "decode_f16"
            ]
        );
        assert!(MatmulVariant::KERNELS.iter().all(|v| v.needs_tensor_cores() == (v.precision() != Precision::Fp32)));
    }

    #[test]
    fn narrow_kernels_support_only_their_narrow_side() {
        let (wide, short, thin) = (
            MatmulShape::new(64, 64, 64).unwrap(),
            MatmulShape::new(16, 64, 1000).unwrap(),
            MatmulShape::new(1000, 64, 16).unwrap(),
        );
        assert!(!MatmulVariant::FewRows.supports(wide) && MatmulVariant::FewRows.supports(short));
        assert!(!MatmulVariant::DecodeBf16.supports(wide) && MatmulVariant::DecodeBf16.supports(short));
        assert!(!MatmulVariant::FewCols.supports(wide) && MatmulVariant::FewCols.supports(thin));
        let outer = MatmulShape::new(1000, 16, 1000).unwrap();
        assert!(!MatmulVariant::ShortK.supports(wide) && MatmulVariant::ShortK.supports(outer));
        assert!(
            MatmulVariant::ALL
                .iter()
                .filter(|v| {
                    !matches!(
                        v,
                        MatmulVariant::FewRows
                            | MatmulVariant::FewCols
                            | MatmulVariant::ShortK
                            | MatmulVariant::DecodeBf16
                            | MatmulVariant::DecodeF16
                    )
                })
                .all(|v| v.supports(wide))
        );
    }

    #[test]
    fn names_round_trip_through_from_str() {
        for v in MatmulVariant::ALL {
            assert_eq!(v.name().parse::<MatmulVariant>().unwrap(), v);
            assert_eq!(v.to_string(), v.name());
        }
        assert!("sgem".parse::<MatmulVariant>().unwrap_err().contains("choose from auto, naive"));
    }
}
