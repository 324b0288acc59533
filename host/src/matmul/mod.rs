//! Matrix products on the GPU: the problem shape, the table of variants, the `auto` planner
//! ([`plan`]), one launch plan per kernel family (beside the kernels of `kernels::matmul`), and
//! the one launcher that every caller (CLI, tests, benchmarks) goes through.

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

pub use plan::{MatmulDevice, MatmulPlan, PlanOptions, plan, plan_with};
pub use precision::{F32_UNDERFLOW_UNIT, Precision, PrecisionPolicy, TF32_UNIT, TF32X3_PRODUCT_BOUND, round_to_bf16};
pub use run::{DeviceMatrices, InputSets, device_of, launch, launch_plan, run, run_plan};
pub use shape::{MAX_GRID_Y, MatmulShape, grid_over_c};
pub use split_k::SplitK;
pub use variant::MatmulVariant;
