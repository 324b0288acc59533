//! Launch planning for `kernels::matmul::decode` (`matmul_decode_bf16`, `matmul_decode_f16`):
//! BF16 (or F16) `C = A B` for `m <= 16` on the warp-level tensor cores, memory-bound on `B`.
//! Its operands are `wgmma_bf16`'s (or `wgmma_f16`'s: 16-bit, rows a multiple of 16 bytes, which
//! [`super::GemmPlan`] prepares), read in place.
//!
//! The grid is one block of `decode::THREADS` threads per strip of `decode::BLOCK_N` columns of
//! `C`, times the splits of `k` (the grid's z). The split ([`choose_split`]) aims at one wave of
//! `decode::BLOCKS_PER_SM` blocks per SM: a memory-bound kernel is fastest when every SM streams
//! for the whole run and no block waits for a second wave, and each split costs a pass over `m
//! x n` partial sums (written by the kernel and added in split order by each strip's last
//! block, in the same launch, so the result is deterministic).

use super::shape::MatmulShape;
use super::split_k::SplitK;
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;
use kernels::matmul::decode::{BLOCKS_PER_SM, MAX_M, THREADS, strips};

/// Shortest split: one super-step of `B` for each of the block's warps (`8 x 48` rows), which is
/// long enough that the partial sums a split adds (`m x n x 4` bytes written and read back) stay
/// under 1/12 of the `B` it reads (`k_chunk x n x 2`) at `m = 16`. Two super-steps per warp (the
/// earlier floor, so that a warp's loads overlap) left short-`k` products with few column strips
/// in too few blocks: 6x2552x784 in BF16 ran in 0.014 ms on 3 splits and 0.009 ms on 8 (cuBLASLt
/// 0.009) on the H200.
///
/// ```
/// use hopper_kernels::matmul::decode::MIN_CHUNK;
/// use kernels::matmul::decode::{SUPER_K, WARPS};
/// assert_eq!(MIN_CHUNK, WARPS * SUPER_K);
/// ```
pub const MIN_CHUNK: u32 = kernels::matmul::decode::WARPS * kernels::matmul::decode::SUPER_K;

/// The split of `k` for `shape` on `sm` SMs, and why: none when the column strips alone give
/// every SM a block; otherwise as many splits as fit the strips into one wave of
/// `BLOCKS_PER_SM` blocks per SM (rounded down: a block in a second wave would leave most SMs
/// idle while it streams), each at least [`MIN_CHUNK`] long, and no longer where one more split
/// fits the wave (a longer split gives one warp a second super-step of `B`, and the whole block
/// waits for it: on the H200, BF16 6 x 2552 x 784 took 0.0115 ms on 6 splits of 432 and 0.0089
/// on 8 of 320).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, decode};
/// // 64 strips of 4096 columns: 4 splits make 256 blocks on the 264 slots of 132 SMs.
/// let (s, why) = decode::choose_split(MatmulShape::new(16, 4096, 4096)?, 132);
/// assert_eq!(s, SplitK { splits: 4, k_chunk: 1024 });
/// assert!(why.contains("one wave"), "{why}");
/// // 224 strips of 14336 columns give every SM a block: no split.
/// assert_eq!(decode::choose_split(MatmulShape::new(1, 4096, 14336)?, 132).0.splits, 1);
/// # Ok(()) }
/// ```
pub fn choose_split(shape: MatmulShape, sm: u32) -> (SplitK, String) {
    let sm = sm.max(1);
    let strips = strips(shape.n.min(u32::MAX as usize) as u32);
    // Saturating: a device model may claim any SM count (u32::MAX SMs split nothing).
    let slots = BLOCKS_PER_SM.saturating_mul(sm);
    if strips >= sm {
        let why = format!(
            "{strips} column strips of {} give each of {sm} SMs a block: no split",
            kernels::matmul::decode::BLOCK_N
        );
        return (SplitK::none(shape.k), why);
    }
    let wanted = slots / strips;
    let mut s = SplitK::about(shape.k, wanted, MIN_CHUNK);
    // A split a little longer than MIN_CHUNK (its count rounded down) gives the first warp a
    // second super-step, and every block waits for it; one more split, where the wave holds it,
    // keeps each warp to one.
    let one_step = shape.k.div_ceil(MIN_CHUNK as usize);
    if s.k_chunk > MIN_CHUNK && one_step <= wanted as usize {
        s = SplitK::about(shape.k, one_step as u32, 1);
    }
    let why = if s.splits > 1 {
        let length = if s.k_chunk >= MIN_CHUNK {
            format!("splits at least {MIN_CHUNK} long")
        } else {
            format!("splits of {} rows, one super-step of B per warp", s.k_chunk)
        };
        format!(
            "{strips} column strips x {} splits of k = {} blocks in one wave of {slots} slots ({BLOCKS_PER_SM} per SM), \
             {length}; partial sums added in split order",
            s.splits,
            strips as u64 * s.splits as u64
        )
    } else {
        format!("{strips} column strips; k = {} is too short to split into {MIN_CHUNK}-row parts", shape.k)
    };
    (s, why)
}

/// The launch of `matmul_decode_bf16` or `matmul_decode_f16` on `shape` with `split`: `(strips, 1, splits)` blocks of
/// `THREADS` threads, its 32 KiB of shared memory static. Refuses `m > 16` and grids CUDA cannot
/// launch.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, decode};
/// let cfg = decode::plan(MatmulShape::new(7, 4095, 4097)?, SplitK { splits: 4, k_chunk: 1024 })?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((65, 1, 4), (256, 1, 1), 0));
/// let err = decode::plan(MatmulShape::new(17, 64, 64)?, SplitK::none(64)).unwrap_err().to_string();
/// assert!(err.contains("at most 16 rows"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    if shape.m > MAX_M as usize {
        return Err(Error::InvalidArgument(format!(
            "decode_bf16 and decode_f16 multiply at most {MAX_M} rows of A (one m16 tensor-core tile); {shape} has \
             m = {}: use wgmma_bf16, wgmma_f16 or auto",
            shape.m
        )));
    }
    for (name, v) in [("k", shape.k), ("n", shape.n)] {
        if v >= i32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{name} = {v} exceeds the decode kernels' 2^31 - 1")));
        }
    }
    if split.k_chunk == 0 || !split.k_chunk.is_multiple_of(4) {
        return Err(Error::InvalidArgument(format!(
            "a split of k into parts of {}: the decode kernels take a positive multiple of 4 (their 8-byte loads of A)",
            split.k_chunk
        )));
    }
    if split.splits == 0 || split.splits > 65_535 {
        return Err(Error::InvalidArgument(format!(
            "{} splits of k: the decode kernels take 1 to 65535 (the grid's z)",
            split.splits
        )));
    }
    Ok(LaunchConfig {
        grid_dim: (strips(shape.n as u32), 1, split.splits),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_sm_count_a_device_model_claims_splits_without_overflow() {
        for sm in [0, 1, 132, u32::MAX / 2, u32::MAX] {
            let (s, _) = choose_split(MatmulShape::new(1, 1, 1).unwrap(), sm);
            assert_eq!(s.splits, 1, "{sm} SMs");
        }
    }

    fn shape(m: usize, k: usize, n: usize) -> MatmulShape {
        MatmulShape::new(m, k, n).unwrap()
    }

    #[test]
    fn the_split_fills_one_wave_of_two_blocks_per_sm_when_the_strips_do_not() {
        // (k, n) -> splits on 132 SMs.
        for ((k, n), want) in [
            ((4096, 4096), 4),  // 64 strips: 256 of 264 slots
            ((14336, 4096), 4), // the same strips, longer splits
            ((4096, 14336), 1), // 224 strips >= 132 SMs
            ((8192, 28672), 1), // 448 strips
            ((4095, 4097), 4),  // 65 strips: 4 x 65 = 260
            ((17, 33), 1),      // too short to split
            ((1, 1), 1),
            ((2552, 784), 7),    // 13 strips: 20 wanted, k / MIN_CHUNK = 6 splits of 432: 7 of 368
            ((65_536, 64), 171), // one strip: 171 splits of 384, one super-step per warp
        ] {
            let (s, why) = choose_split(shape(16, k, n), 132);
            assert_eq!(s.splits, want, "k = {k}, n = {n}: {why}");
            let strips = strips(n as u32);
            assert!(strips * s.splits <= 2 * 132 || s.splits == 1, "one wave: {why}");
            // At least MIN_CHUNK long, or as many splits as one super-step per warp needs.
            assert!(s.splits == 1 || s.k_chunk >= MIN_CHUNK || s.splits as usize == k.div_ceil(MIN_CHUNK as usize));
            // The reason names the length the split has.
            assert!(s.splits == 1 || why.contains("at least") == (s.k_chunk >= MIN_CHUNK), "{why}");
            assert!(
                (s.splits as u64 - 1) * (s.k_chunk as u64) < k as u64 && s.splits as u64 * s.k_chunk as u64 >= k as u64
            );
        }
    }

    #[test]
    fn the_plan_refuses_tall_shapes_and_empty_splits() {
        assert!(plan(shape(17, 64, 64), SplitK::none(64)).unwrap_err().to_string().contains("at most 16 rows"));
        assert!(plan(shape(16, 64, 64), SplitK { splits: 0, k_chunk: 8 }).is_err());
        assert!(
            plan(shape(16, 64, 64), SplitK { splits: 2, k_chunk: 34 })
                .unwrap_err()
                .to_string()
                .contains("multiple of 4")
        );
        let cfg = plan(shape(1, 1, 1), SplitK::none(1)).unwrap();
        assert_eq!(cfg.grid_dim, (1, 1, 1));
        assert_eq!(plan(shape(16, 4096, 14336), SplitK::none(4096)).unwrap().grid_dim, (224, 1, 1));
    }
}
