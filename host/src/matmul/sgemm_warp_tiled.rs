//! Launch planning for `kernels::matmul::sgemm_warp_tiled`.

use super::shape::MatmulShape;
use super::split_k::SplitK;
use crate::error::{HostError, Result};
use cudarc::driver::LaunchConfig;
use kernels::matmul::sgemm_warp_tiled::{BLOCK_M, BLOCK_N, THREADS};

/// Blocks of `sgemm_warp_tiled` one SM keeps resident: 235 registers x 128 threads leave room
/// for two (ptxas report of the release PTX; 65,536 registers per SM).
pub const BLOCKS_PER_SM: u32 = 2;

/// The stream-K form of the launch (`kernels::matmul::sgemm_warp_tiled::KERNEL_STREAM_K`): the
/// first `dp_tiles` tiles one block each, then `sk_blocks` blocks sharing out the slices of `k` of
/// the rest evenly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamK {
    /// Tiles computed whole, one block each.
    pub dp_tiles: u32,
    /// Blocks sharing the remaining tiles.
    pub sk_blocks: u32,
}

/// Least estimated saving for which the planner shares out the last waves: `tiles / slots`
/// against `ceil(tiles / slots)` waves must be below this fraction (4096^3: 1024 tiles on 264
/// slots, 3.88 waves instead of 4).
pub const STREAM_K_MAX_FRACTION: f64 = 0.985;

/// The stream-K launch for `tiles` tiles on `slots` block slots, when the last wave would run
/// partial: all but the last two waves' worth of tiles (at least one wave and less than two is
/// left) whole, then one block per slot sharing the rest, 1 to 2 tiles' slices each. `None` for
/// fewer tiles than slots, or full waves.
pub fn stream_k_for(tiles: u64, slots: u64) -> Option<StreamK> {
    if slots == 0 || tiles < slots || tiles as f64 / slots as f64 > STREAM_K_MAX_FRACTION * tiles.div_ceil(slots) as f64
    {
        return None;
    }
    let dp_tiles = (tiles / slots - 1) * slots;
    Some(StreamK { dp_tiles: u32::try_from(dp_tiles).ok()?, sk_blocks: u32::try_from(slots).ok()? })
}

/// The launch of a stream-K plan: `dp_tiles + sk_blocks` blocks along x; the stream-K tiles
/// must be at least `sk_blocks` (no block's slices lie inside one tile).
pub fn plan_stream_k(shape: MatmulShape, sk: StreamK) -> Result<LaunchConfig> {
    let tiles = tiles(shape) as u64;
    if sk.sk_blocks == 0 || sk.dp_tiles as u64 + sk.sk_blocks as u64 > tiles {
        return Err(HostError::InvalidInput(format!(
            "a stream-K split of {tiles} tiles into {} whole ones and {} sharing blocks: the sharing blocks need at least as many tiles",
            sk.dp_tiles, sk.sk_blocks
        )));
    }
    Ok(LaunchConfig { grid_dim: (sk.dp_tiles + sk.sk_blocks, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// Tiles of `C` the grid's x and y cover.
pub fn tiles(shape: MatmulShape) -> usize {
    shape.m.div_ceil(BLOCK_M as usize) * shape.n.div_ceil(BLOCK_N as usize)
}

/// One block of `THREADS` threads per `BLOCK_M x BLOCK_N` tile of `C`, columns on x, one z
/// index per split of `k`; static shared memory only
/// (`kernels::matmul::sgemm_warp_tiled::SHARED_BYTES`).
pub fn plan(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    super::sgemm::tile_plan(shape, split, (BLOCK_M, BLOCK_N), THREADS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_k_shares_out_the_last_partial_wave() {
        // 4096^3: 1024 tiles, 3.88 waves of 264: two waves whole, 496 tiles over 264 blocks.
        assert_eq!(stream_k_for(1024, 264), Some(StreamK { dp_tiles: 528, sk_blocks: 264 }));
        // 8192^3: 4096 tiles, 15.5 waves: 14 waves whole, 400 tiles shared.
        assert_eq!(stream_k_for(4096, 264), Some(StreamK { dp_tiles: 3696, sk_blocks: 264 }));
        // One wave and a bit: every tile shared.
        assert_eq!(stream_k_for(344, 264), Some(StreamK { dp_tiles: 0, sk_blocks: 264 }));
        // Full or nearly full waves, or too few tiles: none.
        for tiles in [528, 527, 256, 0] {
            assert_eq!(stream_k_for(tiles, 264), None, "{tiles}");
        }
        let shape = MatmulShape::new(4096, 4096, 4096).unwrap();
        let cfg = plan_stream_k(shape, StreamK { dp_tiles: 528, sk_blocks: 264 }).unwrap();
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((792, 1, 1), (128, 1, 1)));
        assert!(plan_stream_k(shape, StreamK { dp_tiles: 1000, sk_blocks: 264 }).is_err());
        assert!(plan_stream_k(shape, StreamK { dp_tiles: 0, sk_blocks: 0 }).is_err());
    }

    #[test]
    fn warp_tiled_plan_gives_one_128_thread_block_per_128x128_tile_and_splits_on_z() {
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        let cfg = plan(shape, SplitK { splits: 3, k_chunk: 272 }).unwrap();
        assert_eq!((cfg.block_dim, cfg.grid_dim, cfg.shared_mem_bytes), ((128, 1, 1), (10, 8, 3), 0));
        assert_eq!(kernels::matmul::sgemm_warp_tiled::SHARED_BYTES, 16_640);
        // The same tiles as sgemm, so the planner's wave arithmetic serves both.
        assert_eq!((BLOCK_M, BLOCK_N), (kernels::matmul::sgemm::BLOCK_M, kernels::matmul::sgemm::BLOCK_N));
    }
}
