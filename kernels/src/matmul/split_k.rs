//! `matmul_split_k_reduce`: the second pass of a split-K product. The first pass (any kernel
//! launched with a z dimension of `splits`) wrote `splits` partial products of `C`, each over its
//! own range of the inner dimension, one `len`-element slice after another; this kernel adds them
//! into `C`.
//!
//! # Determinism
//! Each element is the sum of its partials in split order, `((p0 + p1) + p2) + ...`, by one
//! thread: no float atomics, so the same inputs give bitwise the same `C` on every run.
//!
//! # Parameters
//! `partials` holds `splits * len` `f32` (`splits >= 1`), `c` holds `len` `f32`.
//!
//! # Thread mapping
//! One-dimensional grid-stride loop over groups of [`ELEMENTS_PER_THREAD`] consecutive elements:
//! 16-byte loads and stores when `len % 4 == 0` and both pointers are 16-byte aligned, else one
//! guarded 4-byte access per element. Block [`THREADS`] threads; any grid.
//!
//! # Safety
//! `partials` and `c` point to device allocations of `splits * len` and `len` `f32` that do not
//! overlap.

/// PTX symbol of the kernel.
pub const KERNEL: &str = "matmul_split_k_reduce";
/// Threads per block.
pub const THREADS: u32 = 256;
/// Consecutive elements of `C` per thread and step (one 16-byte vector).
pub const ELEMENTS_PER_THREAD: u32 = 4;

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
    /// `C = sum over z of partials[z]`, in split order; see the [module documentation](self).
    ///
    /// # Safety
    /// `partials` holds `splits * len` and `c` holds `len` `f32` on the device, not overlapping.
    pub unsafe fn matmul_split_k_reduce(partials: *const f32, c: *mut f32, len: u32, splits: u32) {
        use crate::device::{mem, thread};
        let len = len as usize;
        let vector = len.is_multiple_of(4) && (partials as usize | c as usize).is_multiple_of(16);
        let mut at = thread::index_1d() as usize * ELEMENTS_PER_THREAD as usize;
        let stride = thread::grid_size_1d() as usize * ELEMENTS_PER_THREAD as usize;
        while at < len {
            let mut sum = [0.0f32; 4];
            for z in 0..splits as usize {
                let part = partials.wrapping_add(z * len + at);
                if vector {
                    // SAFETY: at % 4 == 0, len % 4 == 0 and aligned bases: the 4 elements are
                    // inside slice z and 16-byte aligned.
                    let v = unsafe { mem::load_global_nc_v4_f32(part) };
                    for i in 0..4 {
                        sum[i] += v[i];
                    }
                } else {
                    for (i, s) in sum.iter_mut().enumerate() {
                        if at + i < len {
                            // SAFETY: element at + i < len of slice z.
                            *s += unsafe { mem::load_global_nc_f32(part.add(i)) };
                        }
                    }
                }
            }
            if vector {
                // SAFETY: as the loads, for C; this thread alone writes these 4 elements.
                unsafe { mem::store_global_v4_f32(c.add(at), sum) };
            } else {
                for (i, &s) in sum.iter().enumerate() {
                    if at + i < len {
                        // SAFETY: at + i < len; this thread alone writes it.
                        unsafe { mem::store_global_f32(c.add(at + i), s) };
                    }
                }
            }
            at += stride;
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
