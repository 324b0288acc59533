//! `matmul_split_k_reduce`: the second pass of a split-K product. The first pass (any kernel
//! launched with a z dimension of `splits`) wrote `splits` partial products of `C`, each over its
//! own range of the inner dimension, one `len`-element slice after another; this kernel adds them
//! into `C`.
//!
//! # Determinism
//! Thread `(x, y)` of a block with `Y = blockDim.y` rows adds the partials of splits `y, y + Y,
//! y + 2Y, ...` in that order; the `Y` sums of an element are then added in `y` order by one
//! thread. The assignment and the order are fixed by the launch, and there are no float atomics,
//! so the same inputs and plan give bitwise the same `C` on every run.
//!
//! # Thread mapping
//! Block `blockDim.x x blockDim.y` with `blockDim.x * blockDim.y <=` [`MAX_THREADS`]: `x` picks
//! one group of [`ELEMENTS_PER_THREAD`] consecutive elements (16-byte loads and stores when
//! `len % 4 == 0` and both pointers are 16-byte aligned, else guarded 4-byte accesses), `y` one
//! of `blockDim.y` interleaved subsets of the splits, so that a few elements with many splits
//! (3 x 5 outputs over 193 splits) still spread their loads over many threads, while many
//! elements with few splits use every thread for elements. Each thread keeps
//! [`LOADS_IN_FLIGHT`] independent loads in flight before it adds them. Grid
//! `ceil(len / (4 * blockDim.x))` blocks along x.
//!
//! # Shared memory
//! Static: [`MAX_THREADS`] x 4 floats (4 KiB), the per-`y` sums.
//!
//! # Safety
//! `partials` and `c` point to device allocations of `splits * len` and `len` `f32` that do not
//! overlap; `blockDim.x * blockDim.y <= MAX_THREADS`; `splits >= 1`; `guard` null or a finished
//! split-TF32 scan's guard.

/// PTX symbol of the kernel.
pub const KERNEL: &str = "matmul_split_k_reduce";
/// Most threads per block (`blockDim.x * blockDim.y`).
pub const MAX_THREADS: u32 = 256;
/// Consecutive elements of `C` per thread (one 16-byte vector).
pub const ELEMENTS_PER_THREAD: u32 = 4;
/// Independent partial loads each thread issues before adding them.
pub const LOADS_IN_FLIGHT: u32 = 4;

/// The slice of the inner dimension that split `z` of a split-K launch multiplies:
/// `(k_begin, k_len)`, columns `k_begin .. k_begin + k_len` of `A` (rows of `B`), `k_chunk` long
/// except for the last split. A launch of `ceil(k / k_chunk)` splits covers `0..k` exactly once;
/// a split past the end gets an empty range (it writes zeros).
pub const fn split_k_range(z: u32, k_chunk: u32, k: u32) -> (u32, u32) {
    let begin = z.saturating_mul(k_chunk);
    if begin >= k { (k, 0) } else { (begin, if k - begin < k_chunk { k - begin } else { k_chunk }) }
}

#[cfg(target_arch = "nvptx64")]
crate::gpu_kernel! {
    /// `C = sum over z of partials[z]`, in a fixed order; see the [module documentation](self).
    ///
    /// # Safety
    /// `partials` holds `splits * len` and `c` holds `len` `f32` on the device, not
    /// overlapping; `blockDim.x * blockDim.y <= MAX_THREADS`; `guard` is null (the kernel runs)
    /// or the guard of a finished split-TF32 scan (`crate::matmul::tf32x3`: the kernel runs only
    /// on its FP32 path).
    pub unsafe fn matmul_split_k_reduce(partials: *const f32, c: *mut f32, len: u32, splits: u32, guard: *const u32) {
        use crate::device::{mem, thread};
        // SAFETY: the guard is null or a finished scan's (kernel contract).
        if unsafe { crate::matmul::tf32x3::split_path_taken(guard) } {
            return;
        }
        let sums = crate::shared_array!(MATMUL_SPLIT_K_SUMS: [f32; (MAX_THREADS * ELEMENTS_PER_THREAD) as usize]);
        let (x, y) = (thread::thread_idx_x(), thread::thread_idx_y());
        let (dim_x, dim_y) = (thread::block_dim_x(), thread::block_dim_y());
        let first = (thread::block_idx_x() * dim_x + x) * ELEMENTS_PER_THREAD;
        let vector = len.is_multiple_of(4) && (partials as usize | c as usize).is_multiple_of(16);
        let len_us = len as usize;
        let mut sum = [0.0f32; 4];
        if first < len {
            let at = partials.wrapping_add(first as usize);
            let mut z = y;
            while z < splits {
                let mut loaded = [[0.0f32; 4]; LOADS_IN_FLIGHT as usize];
                for (i, v) in loaded.iter_mut().enumerate() {
                    let zi = z + i as u32 * dim_y;
                    if zi < splits {
                        let part = at.wrapping_add(zi as usize * len_us);
                        if vector {
                            // SAFETY: zi < splits; first % 4 == 0 and len % 4 == 0, so the 4
                            // elements are inside slice zi, 16-byte aligned.
                            *v = unsafe { mem::load_global_nc_v4_f32(part) };
                        } else {
                            for (e, v) in v.iter_mut().enumerate() {
                                if first + (e as u32) < len {
                                    // SAFETY: zi < splits and element first + e < len.
                                    *v = unsafe { mem::load_global_nc_f32(part.add(e)) };
                                }
                            }
                        }
                    }
                }
                // Added in split order: z, z + Y, z + 2Y, ...
                for (i, v) in loaded.iter().enumerate() {
                    if z + (i as u32) * dim_y < splits {
                        for e in 0..4 {
                            sum[e] += v[e];
                        }
                    }
                }
                z += LOADS_IN_FLIGHT * dim_y;
            }
        }
        let slot = ((y * dim_x + x) * ELEMENTS_PER_THREAD) as usize;
        // SAFETY: slot .. slot + 4 <= MAX_THREADS * 4 (block size contract), a multiple of 4,
        // this thread's own.
        unsafe { sums.store4(slot, sum) };
        // Every y's sums are in shared memory before row 0 adds them.
        thread::sync_threads();
        if y == 0 && first < len {
            let mut total = [0.0f32; 4];
            for yy in 0..dim_y {
                // SAFETY: in bounds by the block size contract, written before the barrier.
                let v = unsafe { sums.load4(((yy * dim_x + x) * ELEMENTS_PER_THREAD) as usize) };
                for e in 0..4 {
                    total[e] += v[e];
                }
            }
            if vector {
                // SAFETY: as the loads, for C; only thread (x, 0) of this block writes these.
                unsafe { mem::store_global_v4_f32(c.add(first as usize), total) };
            } else {
                for (e, &t) in total.iter().enumerate() {
                    if first + (e as u32) < len {
                        // SAFETY: element first + e < len; only thread (x, 0) writes it.
                        unsafe { mem::store_global_f32(c.add(first as usize + e), t) };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_k_ranges_cover_the_inner_dimension_once_in_order() {
        for (k, chunk) in [(1u32, 8u32), (8, 8), (9, 8), (1000, 208), (65_536, 256), (100_000, 512)] {
            let splits = k.div_ceil(chunk);
            let mut next = 0;
            for z in 0..splits {
                let (begin, len) = split_k_range(z, chunk, k);
                assert_eq!(begin, next, "k {k}, chunk {chunk}, split {z}");
                assert!(len >= 1 && len <= chunk && begin.is_multiple_of(4));
                next = begin + len;
            }
            assert_eq!(next, k);
            assert_eq!(split_k_range(splits, chunk, k), (k, 0));
        }
        assert_eq!(split_k_range(u32::MAX, 8, 100), (100, 0));
    }
}
