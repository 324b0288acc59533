//! Matrix products on the GPU: the GEMM descriptor ([`GemmDesc`]) and its plan ([`GemmPlan`],
//! launched on device buffers), the precision policies, the `auto` planner over the kernel
//! families ([`plan()`]), one launch plan per kernel family (beside the kernels of
//! `kernels::matmul`), and owned row-major matrices ([`DeviceMatrices`]) for the command line and
//! the tests.
//!
//! Planning needs no GPU: the planners take a device model.
//!
//! ```
//! # fn main() -> hopper_kernels::Result<()> {
//! use hopper_kernels::matmul::{GemmDesc, MatmulDevice, MatmulShape, MatmulVariant, describe_plan, plan};
//! // f32 at FP32's accuracy (the default `high` policy) on an H200: split-TF32 tensor cores.
//! let p = plan(MatmulVariant::Auto, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H200)?;
//! assert_eq!(p.variant(), MatmulVariant::WgmmaTf32x3);
//! let text = describe_plan(&GemmDesc::new(4096, 4096, 4096), MatmulDevice::H200)?;
//! assert!(text.starts_with("1 product(s) of 4096x4096x4096: "), "{text}");
//! # Ok(()) }
//! ```

mod convert;
pub mod decode;
pub mod desc;
pub mod gemm;
mod launch;
pub mod naive;
pub mod plan;
mod precision;
mod run;
pub mod sgemm;
pub mod sgemm_4x4;
pub mod sgemm_warp_tiled;
mod shape;
pub mod short_k;
pub mod skinny;
pub mod split_k;
pub mod tiled;
mod variant;
pub mod wgmma;

pub use convert::convert_matrix;
pub use desc::{DType, GemmDesc, GemmElement, Layout, Order};
pub use gemm::{GemmPlan, Tf32x3Regions, describe_plan};
pub use plan::{MatmulDevice, MatmulPlan, OperandType, PlanOptions, TileWidth, plan, plan_with};
pub use precision::{
    F16_UNIT, F32_UNDERFLOW_UNIT, Precision, PrecisionPolicy, TF32_INSTRUCTION_K, TF32_UNIT, TF32X3_PRODUCT_BOUND,
    TF32X3_RUN, f16_range_violation, round_to_bf16, round_to_f16,
};
pub use run::{DeviceMatrices, launch_plan, plan_gemm, run, run_plan};
pub use shape::{MAX_GRID_Y, MatmulShape, grid_over_c};
pub use split_k::SplitK;
pub use variant::MatmulVariant;
