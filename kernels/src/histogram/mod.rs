//! `histogram_shared`, `histogram_cluster`, `histogram_global`: the CUDA C++ Programming Guide's
//! histogram ("Distributed Shared Memory"), in three tiers chosen by the bin count.
//!
//! # Parameters
//! `input`: `n` `i32` values (16-byte aligned, as every `cuMemAlloc` is); `bins`: `nbins` `u32`
//! counters in global memory, zeroed by the host before the launch; `nbins >= 1`. A value below
//! 0 counts in bin 0 and a value at or above `nbins` in bin `nbins - 1`, as in the Guide
//! ([`bin_of`]).
//!
//! # Tiers
//! - `histogram_shared`: the whole histogram fits in one block's shared memory: each block counts
//!   its share of the input into a private copy (`red.shared`), then adds it into `bins`.
//! - `histogram_cluster`: the histogram fits in a thread-block cluster's distributed shared
//!   memory: block `r` of a cluster owns bins `r * bins_per_block ..`; every thread adds into the
//!   owner's shared memory (`mapa` + `red.shared::cluster`), and each block adds its slice into
//!   `bins`. Cluster barriers before (every slice zeroed) and after (no block exits, or reads its
//!   slice, while others still add into it) the counting.
//! - `histogram_global`: beyond that, every value is one `red.global.add`.
//!
//! # Thread mapping
//! One-dimensional grid of any size (the host uses a persistent grid: as many blocks as fit on
//! the GPU at once). A grid-stride loop reads the input 16 bytes per thread per step, two steps
//! in flight; the last `n % 4` values are read one by one.
//!
//! # Shared memory
//! Dynamic: `nbins * 4` bytes (shared tier) or `bins_per_block * 4` bytes (cluster tier), set at
//! launch; none for the global tier.
//!
//! # Safety
//! `input` holds `n` values, `bins` holds `nbins` counters that nothing else accesses during the
//! launch; the launch provides the dynamic shared memory above, and for the cluster tier a
//! cluster dimension `c` with `c * bins_per_block >= nbins`.

/// PTX symbol of the block-shared-memory tier.
pub const KERNEL_SHARED: &str = "histogram_shared";
/// PTX symbol of the cluster (distributed shared memory) tier.
pub const KERNEL_CLUSTER: &str = "histogram_cluster";
/// PTX symbol of the global-memory tier.
pub const KERNEL_GLOBAL: &str = "histogram_global";

/// The bin a value counts in: clamped into `0..nbins` (`nbins >= 1`).
#[inline(always)]
pub fn bin_of(value: i32, nbins: u32) -> u32 {
    if value < 0 {
        0
    } else if value as u32 >= nbins {
        nbins - 1
    } else {
        value as u32
    }
}

/// The block of a cluster that owns `bin`, and the bin's offset in that block's shared memory.
#[inline(always)]
pub fn owner_of(bin: u32, bins_per_block: u32) -> (u32, u32) {
    (bin / bins_per_block, bin % bins_per_block)
}

/// Shared memory a block needs for `bins` counters.
pub const fn shared_bytes(bins: u32) -> u32 {
    bins * size_of::<u32>() as u32
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{bin_of, owner_of};
    use crate::device::{atomic, cluster, mem, thread};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// Calls `count(value)` for every input value this thread owns in a grid-stride loop: two
    /// 16-byte loads in flight per step, then the `n % 4` tail one value at a time.
    ///
    /// # Safety
    /// `input` holds `n` values and is 16-byte aligned.
    #[inline(always)]
    unsafe fn for_each_value(input: *const i32, n: u64, mut count: impl FnMut(i32)) {
        let vectors = n / 4;
        let stride = thread::grid_size_1d();
        let mut i = thread::index_1d();
        while i + stride < vectors {
            // SAFETY: i + stride < n / 4, so both 16-byte loads lie inside the input.
            let (a, b) = unsafe {
                (
                    mem::load_global_nc_v4_i32(input.add(4 * i as usize)),
                    mem::load_global_nc_v4_i32(input.add(4 * (i + stride) as usize)),
                )
            };
            count_all(a, &mut count);
            count_all(b, &mut count);
            i += 2 * stride;
        }
        if i < vectors {
            // SAFETY: i < n / 4.
            count_all(unsafe { mem::load_global_nc_v4_i32(input.add(4 * i as usize)) }, &mut count);
        }
        let tail = 4 * vectors + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            count(unsafe { mem::load_global_nc_i32(input.add(tail as usize)) });
        }
    }

    /// Counts the four values of one vector load. Constant indices keep the vector in registers:
    /// an array iterator indexes at run time and moved the vectors to local memory.
    #[inline(always)]
    fn count_all(values: [i32; 4], count: &mut impl FnMut(i32)) {
        count(values[0]);
        count(values[1]);
        count(values[2]);
        count(values[3]);
    }

    gpu_kernel! {
        /// Block-private histogram in shared memory; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's, with `nbins * 4` bytes of dynamic shared memory.
        pub unsafe fn histogram_shared(input: *const i32, n: u64, bins: *mut u32, nbins: u32) {
            // SAFETY: the launch provides nbins * 4 bytes of dynamic shared memory.
            let local = unsafe { dynamic_shared_array!(HISTOGRAM_SHARED_BINS: u32, nbins as usize) };
            let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
            for i in (tid..local.len()).step_by(threads) {
                // SAFETY: i < len; each thread zeroes its own elements.
                unsafe { local.store(i, 0) };
            }
            // Every counter is zero before any thread adds to it.
            thread::sync_threads();
            // SAFETY: forwarded contract; bin_of < nbins = len, and red.shared is atomic.
            unsafe { for_each_value(input, n, |v| atomic::shared_add_u32(local.address_of(bin_of(v, nbins) as usize), 1)) };
            // Every add of this block has landed before the counters are read.
            thread::sync_threads();
            for i in (tid..local.len()).step_by(threads) {
                // SAFETY: i < len = nbins: inside both the shared copy and `bins`.
                unsafe {
                    let count = local.load(i);
                    if count != 0 {
                        atomic::global_add_u32(bins.add(i), count);
                    }
                }
            }
        }

        /// Histogram spread over a cluster's distributed shared memory; see the
        /// [module documentation](super).
        ///
        /// # Safety
        /// As the module's, with `bins_per_block * 4` bytes of dynamic shared memory and a
        /// cluster of `c` blocks, `c * bins_per_block >= nbins`.
        pub unsafe fn histogram_cluster(input: *const i32, n: u64, bins: *mut u32, nbins: u32, bins_per_block: u32) {
            // SAFETY: the launch provides bins_per_block * 4 bytes of dynamic shared memory.
            let local = unsafe { dynamic_shared_array!(HISTOGRAM_CLUSTER_BINS: u32, bins_per_block as usize) };
            let (tid, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
            for i in (tid..local.len()).step_by(threads) {
                // SAFETY: i < len; each thread zeroes its own elements.
                unsafe { local.store(i, 0) };
            }
            // Every block of the cluster has zeroed its slice before any block adds into it.
            cluster::sync();
            let base = local.address_of(0);
            // SAFETY: forwarded contract: owner rank < c because c * bins_per_block >= nbins,
            // offset < bins_per_block, and the owner stays resident until the barrier below.
            unsafe {
                for_each_value(input, n, |v| {
                    let (rank, offset) = owner_of(bin_of(v, nbins), bins_per_block);
                    atomic::cluster_shared_add_u32(cluster::map_shared_rank(base + 4 * offset, rank), 1);
                })
            };
            // All blocks' adds into this slice are done before it is read, and no block exits
            // while another may still add into its shared memory.
            cluster::sync();
            let first = cluster::block_rank() as usize * local.len();
            for i in (tid..local.len()).step_by(threads) {
                if first + i < nbins as usize {
                    // SAFETY: i < len, and first + i < nbins is inside `bins`.
                    unsafe {
                        let count = local.load(i);
                        if count != 0 {
                            atomic::global_add_u32(bins.add(first + i), count);
                        }
                    }
                }
            }
        }

        /// One global atomic per value; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's.
        pub unsafe fn histogram_global(input: *const i32, n: u64, bins: *mut u32, nbins: u32) {
            // SAFETY: forwarded contract; bin_of < nbins is inside `bins`.
            unsafe { for_each_value(input, n, |v| atomic::global_add_u32(bins.add(bin_of(v, nbins) as usize), 1)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_of_clamps_negatives_to_the_first_bin_and_large_values_to_the_last() {
        assert_eq!(bin_of(-1, 10), 0);
        assert_eq!(bin_of(i32::MIN, 10), 0);
        assert_eq!(bin_of(0, 10), 0);
        assert_eq!(bin_of(9, 10), 9);
        assert_eq!(bin_of(10, 10), 9);
        assert_eq!(bin_of(i32::MAX, 10), 9);
        assert_eq!(bin_of(5, 1), 0);
    }

    #[test]
    fn owner_of_splits_bins_into_consecutive_slices_per_block() {
        assert_eq!(owner_of(0, 100), (0, 0));
        assert_eq!(owner_of(99, 100), (0, 99));
        assert_eq!(owner_of(100, 100), (1, 0));
        assert_eq!(owner_of(799, 100), (7, 99));
        assert_eq!(shared_bytes(58_112), 232_448);
    }
}
