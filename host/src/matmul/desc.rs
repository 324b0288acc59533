//! The GEMM descriptor: `D = alpha * op(A) * op(B) + beta * C`, as cuBLASLt describes it (a
//! matmul descriptor and matrix layouts), planned once into a [`GemmPlan`](super::GemmPlan) and
//! launched many times.
//!
//! - `op` is none or transpose, per operand; each operand is row- or column-major, with a leading
//!   dimension of at least its packed one.
//! - A strided batch runs `batch` products, operand `X` of product `i` at `i * batch_stride`
//!   elements from the first (cuBLAS's `gemmStridedBatched`).
//! - `A` and `B` share an element type: `f32`, BF16 or F16; `C` and `D` share theirs, any of the
//!   three; products accumulate in `f32`. `C` has `D`'s layout; without a separate `C` the plan
//!   reads `D` before it writes it.
//! - `f32` operands are multiplied under the descriptor's [`PrecisionPolicy`] (`auto`) or by the
//!   kernel its [`MatmulVariant`] names.
//!
//! ```
//! use hopper_kernels::matmul::{DType, GemmDesc, Layout, Order};
//! // D (64 x 32, column-major, ld 40) = 2 A^T B - D, A stored 128 x 64 in BF16, B 128 x 32.
//! let desc = GemmDesc::new(64, 32, 128)
//!     .a(Layout::row_major(DType::Bf16))
//!     .b(Layout::row_major(DType::Bf16))
//!     .d(Layout::new(DType::F32, Order::ColMajor).ld(40))
//!     .transpose_a(true)
//!     .alpha_beta(2.0, -1.0);
//! assert_eq!(desc.a_rows_cols(), (128, 64));
//! assert_eq!(desc.d.needed_elements((64, 32), 1), 31 * 40 + 64); // 32 columns of 40
//! ```

use super::{MatmulVariant, PrecisionPolicy, SplitK, TileWidth};

/// The element type of a matrix.
///
/// ```
/// use hopper_kernels::matmul::DType;
/// assert_eq!("BF16".parse::<DType>(), Ok(DType::Bf16));
/// assert_eq!(DType::F16.to_string(), "f16");
/// let err = "f64".parse::<DType>().unwrap_err();
/// assert_eq!(err, "unknown element type `f64`: choose from f32, bf16, f16");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE `f32`.
    F32,
    /// `bfloat16` (`half::bf16`): 8 exponent and 7 mantissa bits.
    Bf16,
    /// IEEE half precision (`half::f16`): 5 exponent and 10 mantissa bits.
    F16,
}

impl DType {
    /// Every type.
    pub const ALL: [Self; 3] = [Self::F32, Self::Bf16, Self::F16];

    /// The name the CLI takes and prints.
    ///
    /// ```
    /// use hopper_kernels::matmul::DType;
    /// let names: Vec<&str> = DType::ALL.iter().map(|t| t.name()).collect();
    /// assert_eq!(names, ["f32", "bf16", "f16"]);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
        }
    }

    /// Bytes per element.
    ///
    /// ```
    /// use hopper_kernels::matmul::DType;
    /// assert_eq!((DType::F32.size(), DType::Bf16.size(), DType::F16.size()), (4, 2, 2));
    /// ```
    pub fn size(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::Bf16 | Self::F16 => 2,
        }
    }
}

named_enum!(DType, "element type");

/// A Rust type a GEMM operand's device buffer holds: `f32`, `half::bf16` or `half::f16`.
///
/// ```
/// use hopper_kernels::matmul::{DType, GemmElement};
/// fn dtype_of<T: GemmElement>(_: &[T]) -> DType {
///     T::DTYPE
/// }
/// assert_eq!(dtype_of(&[1.0f32]), DType::F32);
/// assert_eq!(dtype_of(&[half::bf16::ONE]), DType::Bf16);
/// assert_eq!(dtype_of(&[half::f16::ONE]), DType::F16);
/// ```
pub trait GemmElement: cudarc::driver::DeviceRepr + Copy + 'static {
    /// Its [`DType`].
    const DTYPE: DType;
}

impl GemmElement for f32 {
    const DTYPE: DType = DType::F32;
}

impl GemmElement for half::bf16 {
    const DTYPE: DType = DType::Bf16;
}

impl GemmElement for half::f16 {
    const DTYPE: DType = DType::F16;
}

/// Where consecutive elements of a matrix lie: along its rows (row-major, C order) or down its
/// columns (column-major, Fortran and cuBLAS order).
///
/// ```
/// use hopper_kernels::matmul::{DType, Layout, Order};
/// // A 3 x 4 matrix: rows of 4 apart in row-major order, columns of 3 in column-major.
/// assert_eq!(Layout::new(DType::F32, Order::RowMajor).leading((3, 4)), 4);
/// assert_eq!(Layout::new(DType::F32, Order::ColMajor).leading((3, 4)), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Row `r` starts at `r * ld`.
    RowMajor,
    /// Column `c` starts at `c * ld`.
    ColMajor,
}

/// How one operand lies in its buffer: element type, order, leading dimension and batch stride.
/// The rows and columns come from the descriptor's `m`, `n`, `k` and transposes.
///
/// ```
/// use hopper_kernels::matmul::{DType, Layout, Order};
/// // Column-major BF16 with 2 padding rows per column, batches 1024 elements apart.
/// let l = Layout::col_major(DType::Bf16).ld(34).batch_stride(1024);
/// assert_eq!((l.dtype, l.order, l.ld, l.batch_stride), (DType::Bf16, Order::ColMajor, Some(34), Some(1024)));
/// // Three 32 x 8 matrices: the last one spans 7 columns of 34 and 32 rows.
/// assert_eq!(l.needed_elements((32, 8), 3), 2 * 1024 + 7 * 34 + 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    /// Element type.
    pub dtype: DType,
    /// Row- or column-major.
    pub order: Order,
    /// Elements from one row (row-major) or column (column-major) to the next; `None`: packed
    /// (the columns, or the rows).
    pub ld: Option<usize>,
    /// Elements from one product of a batch to the next; `None`: packed (the matrix's span).
    pub batch_stride: Option<usize>,
}

impl Layout {
    /// A packed matrix of `dtype` in `order`.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout, Order};
    /// let l = Layout::new(DType::F16, Order::ColMajor);
    /// assert_eq!((l.ld, l.batch_stride), (None, None)); // packed
    /// assert_eq!(l, Layout::col_major(DType::F16));
    /// ```
    pub fn new(dtype: DType, order: Order) -> Self {
        Self { dtype, order, ld: None, batch_stride: None }
    }

    /// A packed row-major matrix of `dtype`.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout, Order};
    /// assert_eq!(Layout::row_major(DType::F32).order, Order::RowMajor);
    /// assert_eq!(Layout::row_major(DType::F32).span((3, 4)), 12);
    /// ```
    pub fn row_major(dtype: DType) -> Self {
        Self::new(dtype, Order::RowMajor)
    }

    /// A packed column-major matrix of `dtype`.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout, Order};
    /// assert_eq!(Layout::col_major(DType::F32).order, Order::ColMajor);
    /// assert_eq!(Layout::col_major(DType::F32).leading((3, 4)), 3);
    /// ```
    pub fn col_major(dtype: DType) -> Self {
        Self::new(dtype, Order::ColMajor)
    }

    /// This layout with leading dimension `ld`.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// // A 3 x 4 view into a matrix with rows of 10.
    /// let view = Layout::row_major(DType::F32).ld(10);
    /// assert_eq!(view.leading((3, 4)), 10);
    /// assert_eq!(view.span((3, 4)), 2 * 10 + 4);
    /// ```
    pub fn ld(self, ld: usize) -> Self {
        Self { ld: Some(ld), ..self }
    }

    /// This layout with batch stride `stride` (elements).
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// let packed = Layout::row_major(DType::F32);
    /// assert_eq!(packed.stride((3, 4)), 12); // the matrix's span
    /// assert_eq!(packed.batch_stride(100).stride((3, 4)), 100);
    /// ```
    pub fn batch_stride(self, stride: usize) -> Self {
        Self { batch_stride: Some(stride), ..self }
    }

    /// The leading dimension of a `rows x cols` matrix in this layout.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// assert_eq!(Layout::row_major(DType::F32).leading((3, 4)), 4);
    /// assert_eq!(Layout::col_major(DType::F32).leading((3, 4)), 3);
    /// assert_eq!(Layout::col_major(DType::F32).ld(8).leading((3, 4)), 8);
    /// ```
    pub fn leading(&self, (rows, cols): (usize, usize)) -> usize {
        let packed = match self.order {
            Order::RowMajor => cols,
            Order::ColMajor => rows,
        };
        self.ld.unwrap_or(packed)
    }

    /// Elements one `rows x cols` matrix spans: `(lines - 1) * ld + line length`.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// // 3 x 4 at leading dimension 10: two full rows and the last row's 4, or three full columns
    /// // and the last column's 3.
    /// assert_eq!(Layout::row_major(DType::F32).ld(10).span((3, 4)), 24);
    /// assert_eq!(Layout::col_major(DType::F32).ld(10).span((3, 4)), 33);
    /// ```
    pub fn span(&self, (rows, cols): (usize, usize)) -> usize {
        let (lines, len) = match self.order {
            Order::RowMajor => (rows, cols),
            Order::ColMajor => (cols, rows),
        };
        (lines.max(1) - 1).saturating_mul(self.leading((rows, cols))).saturating_add(len)
    }

    /// The batch stride of a `rows x cols` matrix in this layout.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// let l = Layout::row_major(DType::F32).ld(10);
    /// assert_eq!(l.stride((3, 4)), l.span((3, 4)));
    /// assert_eq!(l.batch_stride(64).stride((3, 4)), 64);
    /// ```
    pub fn stride(&self, dims: (usize, usize)) -> usize {
        self.batch_stride.unwrap_or_else(|| self.span(dims))
    }

    /// Elements a buffer of `batch` such matrices must hold.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, Layout};
    /// let packed = Layout::row_major(DType::F32);
    /// assert_eq!(packed.needed_elements((3, 4), 5), 60);
    /// // Four strides of 100, then the last matrix's span.
    /// assert_eq!(packed.ld(10).batch_stride(100).needed_elements((3, 4), 5), 4 * 100 + 24);
    /// ```
    pub fn needed_elements(&self, dims: (usize, usize), batch: usize) -> usize {
        (batch.max(1) - 1).saturating_mul(self.stride(dims)).saturating_add(self.span(dims))
    }
}

/// `D = alpha * op(A) * op(B) + beta * C` over a strided batch; see the
/// [module documentation](self). Built with [`GemmDesc::new`] and its setters, checked by
/// [`GemmPlan::new`](super::GemmPlan::new).
///
/// ```
/// use hopper_kernels::matmul::{GemmDesc, MatmulVariant, PrecisionPolicy};
/// let desc = GemmDesc::new(64, 32, 128); // m, n, k
/// assert_eq!((desc.batch, desc.alpha, desc.beta), (1, 1.0, 0.0));
/// assert_eq!((desc.policy, desc.variant, desc.split_k), (PrecisionPolicy::High, MatmulVariant::Auto, None));
/// assert_eq!((desc.a_rows_cols(), desc.b_rows_cols(), desc.d_rows_cols()), ((64, 128), (128, 32), (64, 32)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmDesc {
    /// Rows of `op(A)`, `C` and `D`.
    pub m: usize,
    /// Columns of `op(B)`, `C` and `D`.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
    /// Products in the batch.
    pub batch: usize,
    /// Whether `op(A) = A^T` (then `A` is stored `k x m`).
    pub transpose_a: bool,
    /// Whether `op(B) = B^T` (then `B` is stored `n x k`).
    pub transpose_b: bool,
    /// `A`'s layout.
    pub a: Layout,
    /// `B`'s layout.
    pub b: Layout,
    /// `D`'s layout, and `C`'s.
    pub d: Layout,
    /// The product's factor.
    pub alpha: f32,
    /// `C`'s factor (0: `C` is not read, and may hold NaN).
    pub beta: f32,
    /// How `f32` operands may be multiplied when `variant` is `auto`.
    pub policy: PrecisionPolicy,
    /// The kernel: `auto` (the planner's choice) or one by name.
    pub variant: MatmulVariant,
    /// A split of `k` instead of the planner's, for the kernels that take one (for measuring the
    /// planner's choices; the tensor-core tile kernels take ranges of whole stages,
    /// [`MatmulVariant::split_granule`]); `None`: the planner's.
    pub split_k: Option<SplitK>,
    /// The tile width of the tensor-core kernels that come in several, instead of the planner's
    /// choice (for measuring it); `None`: the planner's.
    pub tile: Option<TileWidth>,
}

impl GemmDesc {
    /// `D = A * B` for `m x k` by `k x n`, all packed row-major `f32`, one product, `auto` under
    /// the default policy.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, GemmDesc, Layout};
    /// let desc = GemmDesc::new(64, 32, 128);
    /// assert_eq!((desc.m, desc.n, desc.k), (64, 32, 128));
    /// assert_eq!(desc.a, Layout::row_major(DType::F32));
    /// assert_eq!(desc.d, Layout::row_major(DType::F32));
    /// ```
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        let f32 = Layout::row_major(DType::F32);
        Self {
            m,
            n,
            k,
            batch: 1,
            transpose_a: false,
            transpose_b: false,
            a: f32,
            b: f32,
            d: f32,
            alpha: 1.0,
            beta: 0.0,
            policy: PrecisionPolicy::default(),
            variant: MatmulVariant::Auto,
            split_k: None,
            tile: None,
        }
    }

    /// With `A`'s layout.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, GemmDesc, Layout};
    /// let desc = GemmDesc::new(64, 32, 128).a(Layout::col_major(DType::F32).ld(80));
    /// // A is 64 x 128 in columns of 80 elements (16 of padding).
    /// assert_eq!(desc.a.needed_elements(desc.a_rows_cols(), desc.batch), 127 * 80 + 64);
    /// ```
    pub fn a(self, a: Layout) -> Self {
        Self { a, ..self }
    }

    /// With `B`'s layout.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, GemmDesc, Layout};
    /// let desc = GemmDesc::new(64, 32, 128).a(Layout::row_major(DType::Bf16)).b(Layout::row_major(DType::Bf16));
    /// assert_eq!((desc.a.dtype, desc.b.dtype, desc.d.dtype), (DType::Bf16, DType::Bf16, DType::F32));
    /// ```
    pub fn b(self, b: Layout) -> Self {
        Self { b, ..self }
    }

    /// With `D`'s (and `C`'s) layout.
    ///
    /// ```
    /// use hopper_kernels::matmul::{DType, GemmDesc, Layout};
    /// // D (and C) in F16, column-major, as cuBLAS stores it.
    /// let desc = GemmDesc::new(64, 32, 128).d(Layout::col_major(DType::F16));
    /// assert_eq!(desc.d.leading(desc.d_rows_cols()), 64);
    /// ```
    pub fn d(self, d: Layout) -> Self {
        Self { d, ..self }
    }

    /// With `op(A) = A^T` when `yes`.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// // op(A) = A^T: A is stored k x m.
    /// assert_eq!(GemmDesc::new(64, 32, 128).transpose_a(true).a_rows_cols(), (128, 64));
    /// ```
    pub fn transpose_a(self, yes: bool) -> Self {
        Self { transpose_a: yes, ..self }
    }

    /// With `op(B) = B^T` when `yes`.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// // op(B) = B^T: B is stored n x k.
    /// assert_eq!(GemmDesc::new(64, 32, 128).transpose_b(true).b_rows_cols(), (32, 128));
    /// ```
    pub fn transpose_b(self, yes: bool) -> Self {
        Self { transpose_b: yes, ..self }
    }

    /// With `alpha` and `beta`.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// // D = 2 A B - D (with no separate C, D is read before it is written).
    /// let desc = GemmDesc::new(64, 32, 128).alpha_beta(2.0, -1.0);
    /// assert_eq!((desc.alpha, desc.beta), (2.0, -1.0));
    /// ```
    pub fn alpha_beta(self, alpha: f32, beta: f32) -> Self {
        Self { alpha, beta, ..self }
    }

    /// With `batch` products.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// // 8 products of packed matrices, one after another in each buffer.
    /// let desc = GemmDesc::new(64, 32, 128).batch(8);
    /// assert_eq!(desc.a.needed_elements(desc.a_rows_cols(), desc.batch), 8 * 64 * 128);
    /// ```
    pub fn batch(self, batch: usize) -> Self {
        Self { batch, ..self }
    }

    /// With the precision policy `policy`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{GemmDesc, MatmulDevice, PrecisionPolicy, describe_plan};
    /// // Under `highest`, a wide f32 product stays on the CUDA cores.
    /// let desc = GemmDesc::new(4096, 4096, 4096).policy(PrecisionPolicy::Highest);
    /// assert!(describe_plan(&desc, MatmulDevice::H200)?.contains("sgemm_warp_tiled"));
    /// # Ok(()) }
    /// ```
    pub fn policy(self, policy: PrecisionPolicy) -> Self {
        Self { policy, ..self }
    }

    /// With the kernel `variant`, which runs the row-major product the plan reduces the
    /// descriptor to: with a column-major `D`, that is `D^T = op(B)^T op(A)^T`, `n x m`, so a
    /// narrow-row kernel (`few_rows`) then takes a narrow `n`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{GemmDesc, MatmulDevice, MatmulVariant, describe_plan};
    /// let desc = GemmDesc::new(512, 512, 512).variant(MatmulVariant::Tiled32);
    /// assert!(describe_plan(&desc, MatmulDevice::H100)?.contains(": tiled32: grid 16x16x1"));
    /// # Ok(()) }
    /// ```
    pub fn variant(self, variant: MatmulVariant) -> Self {
        Self { variant, ..self }
    }

    /// With `k` split as `split` for the kernels that take one.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{GemmDesc, MatmulDevice, MatmulVariant, SplitK, describe_plan};
    /// let desc = GemmDesc::new(256, 256, 4096).variant(MatmulVariant::Sgemm).split_k(Some(SplitK::about(4096, 4, 8)));
    /// let text = describe_plan(&desc, MatmulDevice::H100)?;
    /// assert!(text.contains("split-K 4 x 1024 columns of A") && text.contains("split forced"), "{text}");
    /// # Ok(()) }
    /// ```
    pub fn split_k(self, split: Option<SplitK>) -> Self {
        Self { split_k: split, ..self }
    }

    /// With the tensor-core tile width `tile` instead of the planner's choice.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{DType, GemmDesc, Layout, MatmulDevice, MatmulVariant, TileWidth, describe_plan};
    /// let bf16 = Layout::row_major(DType::Bf16);
    /// let desc = GemmDesc::new(4096, 4096, 4096).a(bf16).b(bf16).variant(MatmulVariant::WgmmaBf16);
    /// assert!(describe_plan(&desc, MatmulDevice::H200)?.contains("wgmma_bf16:"));
    /// let narrow = describe_plan(&desc.tile(Some(TileWidth::N128)), MatmulDevice::H200)?;
    /// assert!(narrow.contains("wgmma_bf16_n128") && narrow.contains("n128 tiles requested"), "{narrow}");
    /// # Ok(()) }
    /// ```
    pub fn tile(self, tile: Option<TileWidth>) -> Self {
        Self { tile, ..self }
    }

    /// `A` as stored: `m x k`, or `k x m` when transposed.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// assert_eq!(GemmDesc::new(2, 3, 4).a_rows_cols(), (2, 4));
    /// assert_eq!(GemmDesc::new(2, 3, 4).transpose_a(true).a_rows_cols(), (4, 2));
    /// ```
    pub fn a_rows_cols(&self) -> (usize, usize) {
        if self.transpose_a { (self.k, self.m) } else { (self.m, self.k) }
    }

    /// `B` as stored: `k x n`, or `n x k` when transposed.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// assert_eq!(GemmDesc::new(2, 3, 4).b_rows_cols(), (4, 3));
    /// assert_eq!(GemmDesc::new(2, 3, 4).transpose_b(true).b_rows_cols(), (3, 4));
    /// ```
    pub fn b_rows_cols(&self) -> (usize, usize) {
        if self.transpose_b { (self.n, self.k) } else { (self.k, self.n) }
    }

    /// `D` (and `C`): `m x n`.
    ///
    /// ```
    /// use hopper_kernels::matmul::GemmDesc;
    /// // Transposes change how A and B are stored, never D.
    /// assert_eq!(GemmDesc::new(2, 3, 4).transpose_a(true).transpose_b(true).d_rows_cols(), (2, 3));
    /// ```
    pub fn d_rows_cols(&self) -> (usize, usize) {
        (self.m, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_count_the_last_line_only_up_to_the_matrix() {
        let row = Layout::row_major(DType::F32).ld(10);
        assert_eq!(row.span((3, 4)), 2 * 10 + 4);
        let col = Layout::col_major(DType::F32).ld(10);
        assert_eq!(col.span((3, 4)), 3 * 10 + 3);
        assert_eq!(Layout::row_major(DType::F32).span((3, 4)), 12);
        assert_eq!(Layout::row_major(DType::F32).needed_elements((3, 4), 5), 60);
        assert_eq!(row.batch_stride(100).needed_elements((3, 4), 5), 4 * 100 + 24);
        assert_eq!(Layout::row_major(DType::F32).span((0, 4)), 4);
    }

    #[test]
    fn the_descriptor_stores_transposed_operands_the_other_way_round() {
        let d = GemmDesc::new(2, 3, 4).transpose_a(true).transpose_b(true);
        assert_eq!((d.a_rows_cols(), d.b_rows_cols(), d.d_rows_cols()), ((4, 2), (3, 4), (2, 3)));
        assert_eq!(DType::Bf16.size(), 2);
        assert_eq!("BF16".parse::<DType>(), Ok(DType::Bf16));
    }
}
