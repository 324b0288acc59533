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

use super::{MatmulVariant, PrecisionPolicy, SplitK};

/// The element type of a matrix.
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
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Bf16 => "bf16",
            Self::F16 => "f16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::Bf16 | Self::F16 => 2,
        }
    }
}

named_enum!(DType, "element type");

/// A Rust type a GEMM operand's device buffer holds: `f32`, `half::bf16` or `half::f16`.
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
    pub fn new(dtype: DType, order: Order) -> Self {
        Self { dtype, order, ld: None, batch_stride: None }
    }

    /// A packed row-major matrix of `dtype`.
    pub fn row_major(dtype: DType) -> Self {
        Self::new(dtype, Order::RowMajor)
    }

    /// A packed column-major matrix of `dtype`.
    pub fn col_major(dtype: DType) -> Self {
        Self::new(dtype, Order::ColMajor)
    }

    /// This layout with leading dimension `ld`.
    pub fn ld(self, ld: usize) -> Self {
        Self { ld: Some(ld), ..self }
    }

    /// This layout with batch stride `stride` (elements).
    pub fn batch_stride(self, stride: usize) -> Self {
        Self { batch_stride: Some(stride), ..self }
    }

    /// The leading dimension of a `rows x cols` matrix in this layout.
    pub fn leading(&self, (rows, cols): (usize, usize)) -> usize {
        let packed = match self.order {
            Order::RowMajor => cols,
            Order::ColMajor => rows,
        };
        self.ld.unwrap_or(packed)
    }

    /// Elements one `rows x cols` matrix spans: `(lines - 1) * ld + line length`.
    pub fn span(&self, (rows, cols): (usize, usize)) -> usize {
        let (lines, len) = match self.order {
            Order::RowMajor => (rows, cols),
            Order::ColMajor => (cols, rows),
        };
        (lines.max(1) - 1).saturating_mul(self.leading((rows, cols))).saturating_add(len)
    }

    /// The batch stride of a `rows x cols` matrix in this layout.
    pub fn stride(&self, dims: (usize, usize)) -> usize {
        self.batch_stride.unwrap_or_else(|| self.span(dims))
    }

    /// Elements a buffer of `batch` such matrices must hold.
    pub fn needed_elements(&self, dims: (usize, usize), batch: usize) -> usize {
        (batch.max(1) - 1).saturating_mul(self.stride(dims)).saturating_add(self.span(dims))
    }
}

/// `D = alpha * op(A) * op(B) + beta * C` over a strided batch; see the
/// [module documentation](self). Built with [`GemmDesc::new`] and its setters, checked by
/// [`GemmPlan::new`](super::GemmPlan::new).
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
    /// planner's choices); `None`: the planner's.
    pub split_k: Option<SplitK>,
}

impl GemmDesc {
    /// `D = A * B` for `m x k` by `k x n`, all packed row-major `f32`, one product, `auto` under
    /// the default policy.
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
        }
    }

    /// With `A`'s layout.
    pub fn a(self, a: Layout) -> Self {
        Self { a, ..self }
    }

    /// With `B`'s layout.
    pub fn b(self, b: Layout) -> Self {
        Self { b, ..self }
    }

    /// With `D`'s (and `C`'s) layout.
    pub fn d(self, d: Layout) -> Self {
        Self { d, ..self }
    }

    /// With `op(A) = A^T` when `yes`.
    pub fn transpose_a(self, yes: bool) -> Self {
        Self { transpose_a: yes, ..self }
    }

    /// With `op(B) = B^T` when `yes`.
    pub fn transpose_b(self, yes: bool) -> Self {
        Self { transpose_b: yes, ..self }
    }

    /// With `alpha` and `beta`.
    pub fn alpha_beta(self, alpha: f32, beta: f32) -> Self {
        Self { alpha, beta, ..self }
    }

    /// With `batch` products.
    pub fn batch(self, batch: usize) -> Self {
        Self { batch, ..self }
    }

    /// With the precision policy `policy`.
    pub fn policy(self, policy: PrecisionPolicy) -> Self {
        Self { policy, ..self }
    }

    /// With the kernel `variant`, which runs the row-major product the plan reduces the
    /// descriptor to: with a column-major `D`, that is `D^T = op(B)^T op(A)^T`, `n x m`, so a
    /// narrow-row kernel (`few_rows`) then takes a narrow `n`.
    pub fn variant(self, variant: MatmulVariant) -> Self {
        Self { variant, ..self }
    }

    /// With `k` split as `split` for the kernels that take one.
    pub fn split_k(self, split: Option<SplitK>) -> Self {
        Self { split_k: split, ..self }
    }

    /// `A` as stored: `m x k`, or `k x m` when transposed.
    pub fn a_rows_cols(&self) -> (usize, usize) {
        if self.transpose_a { (self.k, self.m) } else { (self.m, self.k) }
    }

    /// `B` as stored: `k x n`, or `n x k` when transposed.
    pub fn b_rows_cols(&self) -> (usize, usize) {
        if self.transpose_b { (self.n, self.k) } else { (self.k, self.n) }
    }

    /// `D` (and `C`): `m x n`.
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
