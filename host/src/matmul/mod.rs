//! Matrix products on the GPU: the GEMM descriptor ([`GemmDesc`]) and its plan ([`GemmPlan`],
//! launched on device buffers), the precision policies, the `auto` planner over the kernel
//! families ([`plan()`]), one launch plan per kernel family (beside the kernels of
//! `kernels::matmul`), and owned row-major matrices ([`DeviceMatrices`]) for the command line and
//! the tests.

mod convert;
pub mod desc;
pub mod gemm;
mod launch;
pub mod naive;
pub mod plan;
mod precision;
mod run;
pub mod sgemm;
pub mod sgemm_warp_tiled;
mod shape;
pub mod skinny;
pub mod split_k;
pub mod tiled;
mod variant;
pub mod wgmma;

pub use convert::convert_matrix;
pub use desc::{DType, GemmDesc, GemmElement, Layout, Order};
pub use gemm::{GemmPlan, Tf32x3Regions, describe_plan};
pub use plan::{MatmulDevice, MatmulPlan, PlanOptions, plan, plan_with};
pub use precision::{
    F32_UNDERFLOW_UNIT, Precision, PrecisionPolicy, TF32_INSTRUCTION_K, TF32_UNIT, TF32X3_PRODUCT_BOUND, TF32X3_RUN,
    round_to_bf16,
};
pub use run::{DeviceMatrices, launch_plan, plan_gemm, run, run_plan};
pub use shape::{MAX_GRID_Y, MatmulShape, grid_over_c};
pub use split_k::SplitK;
pub use variant::MatmulVariant;
