//! Split-K: how many slices of the inner dimension a launch gets, and the launch of
//! `kernels::matmul::split_k::matmul_split_k_reduce`, which adds the slices' partial products.

use cudarc::driver::LaunchConfig;
use kernels::matmul::split_k::{ELEMENTS_PER_THREAD, LOADS_IN_FLIGHT, MAX_THREADS};

/// Multiples of this many columns of `A` per split: `sgemm`'s slice depth, which also keeps
/// every split's first element of `A` 16-byte aligned for the narrow kernels.
///
/// ```
/// use hopper_kernels::matmul::split_k::{CHUNK_GRANULE, SplitK};
/// assert_eq!(CHUNK_GRANULE, 8);
/// // 1000 in 3 splits: 334 rounded up to 336.
/// assert_eq!(SplitK::about(1000, 3, 8), SplitK { splits: 3, k_chunk: 336 });
/// ```
pub const CHUNK_GRANULE: u32 = kernels::matmul::sgemm::BLOCK_K;

/// Most splits the planner uses: bounds the workspace (`splits x m x n` floats) and the
/// reduction's reads per element.
///
/// ```
/// use hopper_kernels::matmul::split_k::{MAX_SPLITS, SplitK};
/// assert_eq!(SplitK::about(65_536, 1000, 8).splits, MAX_SPLITS);
/// ```
pub const MAX_SPLITS: u32 = 256;

/// The longest split: the largest multiple of [`CHUNK_GRANULE`] a `u32` holds. A `k` beyond it
/// (up to `u32::MAX`) needs at least two splits.
///
/// ```
/// use hopper_kernels::matmul::split_k::{CHUNK_GRANULE, MAX_CHUNK, SplitK};
/// assert!(MAX_CHUNK.is_multiple_of(CHUNK_GRANULE) && MAX_CHUNK > u32::MAX - CHUNK_GRANULE);
/// // The longest k, u32::MAX, takes two splits even when one is asked for.
/// assert_eq!(SplitK::about(u32::MAX as usize, 1, 8).splits, 2);
/// ```
pub const MAX_CHUNK: u32 = u32::MAX / CHUNK_GRANULE * CHUNK_GRANULE;

/// A split of the inner dimension: `splits` ranges of `k_chunk` columns of `A` (the last one
/// shorter), one per z index of the grid.
///
/// ```
/// use hopper_kernels::matmul::SplitK;
/// // k = 1000 in 4 splits: three of 256 columns of A and the rest, 232.
/// let s = SplitK::about(1000, 4, 32);
/// assert_eq!(s, SplitK { splits: 4, k_chunk: 256 });
/// assert_eq!(1000 - (s.splits - 1) * s.k_chunk, 232);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SplitK {
    /// Ranges, the grid's z extent; 1 is no split (the kernel writes `C` directly).
    pub splits: u32,
    /// Columns of `A` per range, a multiple of [`CHUNK_GRANULE`].
    pub k_chunk: u32,
}

impl SplitK {
    /// No split: one range covering all of `k` (for `k` past [`MAX_CHUNK`], the longest range,
    /// which the planner then refuses as too short for `k`).
    ///
    /// ```
    /// use hopper_kernels::matmul::SplitK;
    /// assert_eq!(SplitK::none(1000), SplitK { splits: 1, k_chunk: 1000 });
    /// assert_eq!(SplitK::none(1001).k_chunk, 1008); // a multiple of 8
    /// ```
    pub fn none(k: usize) -> Self {
        Self { splits: 1, k_chunk: Self::chunk(k as u64) }
    }

    /// `len` rounded up to [`CHUNK_GRANULE`], at most [`MAX_CHUNK`].
    fn chunk(len: u64) -> u32 {
        len.next_multiple_of(CHUNK_GRANULE as u64).clamp(CHUNK_GRANULE as u64, MAX_CHUNK as u64) as u32
    }

    /// About `wanted` ranges (at least 1, at most [`MAX_SPLITS`] and `k / min_chunk`, and at
    /// least as many as `k` needs at [`MAX_CHUNK`]), each a multiple of [`CHUNK_GRANULE`] long;
    /// the count is then recomputed from the rounded length so that no range is empty.
    ///
    /// ```
    /// use hopper_kernels::matmul::SplitK;
    /// assert_eq!(SplitK::about(1024, 4, 32), SplitK { splits: 4, k_chunk: 256 });
    /// // 8 wanted, but k = 100 holds one split of at least 64.
    /// assert_eq!(SplitK::about(100, 8, 64), SplitK { splits: 1, k_chunk: 104 });
    /// // Rounding the length up to 8 can leave fewer splits than wanted, never an empty one.
    /// assert_eq!(SplitK::about(9, 3, 1), SplitK { splits: 2, k_chunk: 8 });
    /// ```
    pub fn about(k: usize, wanted: u32, min_chunk: u32) -> Self {
        Self::about_in(k, wanted, min_chunk, CHUNK_GRANULE)
    }

    /// [`SplitK::about`] with ranges a multiple of `granule` long (a multiple of
    /// [`CHUNK_GRANULE`], rounded up to one): the tensor-core kernels split `k` in whole stages
    /// of their pipeline ([`MatmulVariant::split_granule`](super::MatmulVariant::split_granule)).
    ///
    /// ```
    /// use hopper_kernels::matmul::SplitK;
    /// // k = 1000 in 3 ranges of whole 64-column stages: 384, 384 and 232.
    /// assert_eq!(SplitK::about_in(1000, 3, 1, 64), SplitK { splits: 3, k_chunk: 384 });
    /// // 1000 holds 16 ranges of 64 at most (the last one 40 long).
    /// assert_eq!(SplitK::about_in(1000, 100, 1, 64), SplitK { splits: 16, k_chunk: 64 });
    /// ```
    pub fn about_in(k: usize, wanted: u32, min_chunk: u32, granule: u32) -> Self {
        let granule = granule.max(1).next_multiple_of(CHUNK_GRANULE);
        let max_chunk = (u32::MAX / granule * granule) as u64;
        let k = (k as u64).max(1);
        let least = k.div_ceil(max_chunk) as u32;
        let most = ((k / min_chunk.max(1) as u64).min(MAX_SPLITS as u64) as u32).max(least).max(1);
        let splits = wanted.clamp(least.max(1), most);
        let k_chunk =
            k.div_ceil(splits as u64).next_multiple_of(granule as u64).clamp(granule as u64, max_chunk) as u32;
        Self { splits: k.div_ceil(k_chunk as u64) as u32, k_chunk }
    }

    /// As many ranges as fit at most `wanted` (at least 1, at most [`MAX_SPLITS`], and at least
    /// as many as `k` needs at [`MAX_CHUNK`]), each a multiple of [`CHUNK_GRANULE`] long and at
    /// least `min_chunk` (rounded up to one), the last one shorter; one range where `k` holds
    /// fewer than two of that length (a split would add a reduction for one short range).
    /// Where [`SplitK::about`] first caps the count at `k / min_chunk` and then rounds the
    /// length up, which can cost a third of the ranges (151 in at most 9 ranges of 16: ranges
    /// of 24, 7 of them), this rounds once: 151 in ranges of 16, 10 of them, the last 7 long.
    ///
    /// ```
    /// use hopper_kernels::matmul::SplitK;
    /// assert_eq!(SplitK::up_to(151, 23, 16), SplitK { splits: 10, k_chunk: 16 });
    /// assert_eq!(SplitK::about(151, 23, 16), SplitK { splits: 7, k_chunk: 24 });
    /// // Never more than wanted: 151 in at most 9 ranges takes ranges of 24.
    /// assert_eq!(SplitK::up_to(151, 9, 16), SplitK { splits: 7, k_chunk: 24 });
    /// // A k shorter than two ranges of min_chunk is one range.
    /// assert_eq!(SplitK::up_to(12, 4, 16), SplitK { splits: 1, k_chunk: 16 });
    /// assert_eq!(SplitK::up_to(31, 4, 16), SplitK { splits: 1, k_chunk: 32 });
    /// assert_eq!(SplitK::up_to(32, 4, 16), SplitK { splits: 2, k_chunk: 16 });
    /// ```
    pub fn up_to(k: usize, wanted: u32, min_chunk: u32) -> Self {
        let k = (k as u64).max(1);
        let least = k.div_ceil(MAX_CHUNK as u64) as u32;
        let shortest = (min_chunk as u64).next_multiple_of(CHUNK_GRANULE as u64);
        let wanted = if k < 2 * shortest { 1 } else { wanted };
        let cap = wanted.clamp(least.max(1), MAX_SPLITS.max(least));
        let k_chunk = Self::chunk(k.div_ceil(cap as u64).max(shortest));
        Self { splits: k.div_ceil(k_chunk as u64) as u32, k_chunk }
    }

    /// Floats of workspace the split needs: `splits` partial products of `len` floats, none
    /// without a split.
    ///
    /// ```
    /// use hopper_kernels::matmul::SplitK;
    /// assert_eq!(SplitK { splits: 4, k_chunk: 256 }.workspace_floats(50), 200);
    /// assert_eq!(SplitK::none(1000).workspace_floats(50), 0); // the kernel writes C itself
    /// ```
    pub fn workspace_floats(&self, len: usize) -> usize {
        if self.splits > 1 { self.splits as usize * len } else { 0 }
    }
}

/// Most rows of a reduction block: 32 rows of 8 threads, each row's 8 threads 128 contiguous
/// bytes of a partial. With 8 rows, one row of `C` over 161 splits (1 x 2565 x 139 in
/// `few_rows`) left each thread 20 partials to load in five rounds, and the reduction took
/// about as long as the product (H200, Nsight Compute: 6.7 us against 5.3).
pub const REDUCE_MAX_ROWS: u32 = 32;

/// The reduction of `len` output elements over `splits` partials. Rows of the block (`y`) split
/// the partials when there are more than [`LOADS_IN_FLIGHT`] of them (up to
/// [`REDUCE_MAX_ROWS`] rows, one per `LOADS_IN_FLIGHT` splits), so each thread keeps its loads in
/// flight on few elements; the rest of the [`MAX_THREADS`] threads take groups of
/// [`ELEMENTS_PER_THREAD`] elements, one block per `4 x blockDim.x` elements.
///
/// ```
/// use hopper_kernels::matmul::split_k::reduce_plan;
/// // Few splits: 256 threads on 4 elements each, 1024 elements per block.
/// let few = reduce_plan(1 << 20, 4);
/// assert_eq!((few.grid_dim, few.block_dim), ((1024, 1, 1), (256, 1, 1)));
/// // Many splits: 32 rows of the block share the partials of 8 x 4 elements.
/// let many = reduce_plan(15, 193);
/// assert_eq!((many.grid_dim, many.block_dim), ((1, 1, 1), (8, 32, 1)));
/// ```
pub fn reduce_plan(len: usize, splits: u32) -> LaunchConfig {
    let rows = splits.div_ceil(LOADS_IN_FLIGHT).clamp(1, REDUCE_MAX_ROWS);
    let cols = MAX_THREADS / rows;
    let blocks = len.div_ceil((ELEMENTS_PER_THREAD * cols) as usize).max(1);
    LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (cols, rows, 1), shared_mem_bytes: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_round_chunks_to_the_granule_and_never_leave_a_range_empty() {
        for (k, wanted, min_chunk) in [(1024, 4, 32), (1000, 5, 32), (100_000, 528, 512), (9, 3, 1), (65_536, 300, 64)]
        {
            let s = SplitK::about(k, wanted, min_chunk);
            assert!(s.k_chunk.is_multiple_of(CHUNK_GRANULE), "{s:?}");
            assert!(s.splits >= 1 && s.splits <= MAX_SPLITS && s.splits <= wanted.max(1));
            // Every range starts inside k: the last one is non-empty.
            assert!((s.splits - 1) * s.k_chunk < k as u32 && s.splits * s.k_chunk >= k as u32, "{k}: {s:?}");
        }
        assert_eq!(SplitK::about(1024, 4, 32), SplitK { splits: 4, k_chunk: 256 });
        assert_eq!(SplitK::about(100_000, 528, 512).splits, 193);
        assert_eq!(SplitK::about(65_536, 300, 64).splits, MAX_SPLITS);
        assert_eq!(SplitK::about(100, 8, 64), SplitK { splits: 1, k_chunk: 104 });
    }

    #[test]
    fn the_longest_k_splits_in_two_and_rounds_without_overflow() {
        let k = u32::MAX as usize;
        assert_eq!(SplitK::none(k), SplitK { splits: 1, k_chunk: MAX_CHUNK });
        let s = SplitK::about(k, 1, 8);
        assert_eq!(s.splits, 2);
        assert!(s.splits as u64 * s.k_chunk as u64 >= k as u64);
        assert_eq!(SplitK::about(k, 1000, 1 << 20).splits, MAX_SPLITS);
        assert_eq!(SplitK::none(0), SplitK { splits: 1, k_chunk: CHUNK_GRANULE });
    }

    #[test]
    fn workspace_is_needed_only_with_a_split() {
        assert_eq!(SplitK::none(1000).workspace_floats(50), 0);
        assert_eq!(SplitK { splits: 4, k_chunk: 256 }.workspace_floats(50), 200);
    }

    #[test]
    fn reduction_spreads_many_splits_over_block_rows_and_many_elements_over_columns() {
        // Few splits: every thread on elements, 1024 per block.
        let cfg = reduce_plan(1 << 20, 4);
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((1024, 1, 1), (256, 1, 1)));
        // Many splits: 32 rows of 8 threads, 32 elements per block.
        let cfg = reduce_plan(15, 193);
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((1, 1, 1), (8, 32, 1)));
        assert_eq!(reduce_plan(128 * 128, 256).grid_dim.0, 512);
        // 32 splits: 8 rows, each thread one round of LOADS_IN_FLIGHT loads.
        assert_eq!(reduce_plan(139, 32).block_dim, (32, 8, 1));
        assert_eq!(reduce_plan(139, 161).block_dim, (8, 32, 1));
        let cfg = reduce_plan(1000, 12);
        assert_eq!((cfg.block_dim, cfg.grid_dim.0), ((85, 3, 1), 3));
        assert!(cfg.block_dim.0 * cfg.block_dim.1 <= MAX_THREADS);
    }
}
