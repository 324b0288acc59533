//! Random inputs on the device for timing: as many copies of a product's operands as rotating
//! through them takes to keep the L2 cache from holding them, within free memory.

use crate::timing::rotation_sets;
use hopper_kernels::Gpu;
use hopper_kernels::error::{Result, format_bytes};
use hopper_kernels::matmul::{DeviceMatrices, MatmulShape};
use hopper_kernels::reference::random_matrix;

/// Random inputs of `shape` on the device, in as many copies as timing needs to rotate through
/// ([`rotation_sets`]) and free memory holds; `A` and `B` of the first copy are also returned on
/// the host for checking.
pub struct InputSets {
    /// Host `A` of `sets[0]`.
    pub a: Vec<f32>,
    /// Host `B` of `sets[0]`.
    pub b: Vec<f32>,
    /// The device copies, each with fresh random `A` and `B` and its own `C`.
    pub sets: Vec<DeviceMatrices>,
}

impl InputSets {
    /// Draws and uploads the sets, after checking that all of them fit in free device memory.
    pub fn upload(gpu: &Gpu, shape: MatmulShape, rng: &mut impl rand::Rng) -> Result<Self> {
        let info = gpu.info();
        let set_bytes = shape.bytes();
        let free = info.free_memory.saturating_sub(256 << 20);
        let count = rotation_sets(set_bytes, info.l2_bytes).min((free / set_bytes.max(1)).max(1) as usize);
        let what = format!("{count} input set(s) of a {shape} matmul ({} each)", format_bytes(set_bytes));
        gpu.ensure_fits(&what, count as u64 * set_bytes)?;
        let (la, lb, _) = shape.lens();
        let (a, b) = (random_matrix(rng, la), random_matrix(rng, lb));
        let mut sets = vec![DeviceMatrices::upload(gpu, shape, &a, &b)?];
        for _ in 1..count {
            sets.push(DeviceMatrices::upload(gpu, shape, &random_matrix(rng, la), &random_matrix(rng, lb))?);
        }
        Ok(Self { a, b, sets })
    }
}
