//! `row_softmax`: the softmax of each row of a row-major `rows x cols` matrix,
//! `y[r][c] = exp(x[r][c] - max_r) / sum over c' of exp(x[r][c'] - max_r)`.
//!
//! # Thread mapping
//! One block of [`BLOCK`] threads per row (grid `rows x 1 x 1`); thread `t` takes columns
//! `t, t + BLOCK, ...`. The row's maximum and then its sum of exponentials are block reductions:
//! a butterfly of warp shuffles inside each warp, then one value per warp through shared memory,
//! which every thread reads after a barrier. The row is read three times (maximum, sum, output);
//! the second and third reads come from the cache for rows that fit in it.
//!
//! # Accuracy
//! `exp` is the hardware's `ex2.approx` of `(x - max) * log2(e)` (`nvptx_std::math::exp_approx`):
//! for inputs within 16 of the row maximum, each output is within a relative `1e-5` of the exact
//! softmax (see the host's GPU test for the budget). A row holding a NaN, or `+inf`, or only
//! `-inf`, comes out NaN.
//!
//! # Safety
//! `x` and `y` hold `rows * cols` `f32` each and do not overlap; the block is [`BLOCK`] x 1 x 1
//! threads.

/// PTX symbol of the kernel.
pub const KERNEL: &str = "row_softmax";
/// Threads per block: one block per row.
pub const BLOCK: u32 = 256;
/// Warps per block: the partial results each reduction exchanges through shared memory.
pub const WARPS: u32 = BLOCK / 32;

nvptx_std::kernel! {
    /// The softmax of each of `rows` rows of `cols` values of `x`, into `y`; see the
    /// [module documentation](self).
    ///
    /// # Safety
    /// `x` and `y` hold `rows * cols` `f32` each and do not overlap; the grid has at least
    /// `rows` blocks of [`BLOCK`] x 1 x 1 threads.
    pub unsafe fn row_softmax(x: *const f32, y: *mut f32, rows: u32, cols: u32) {
        use nvptx_std::{math, shared_array, thread};
        let row = thread::block_idx_x();
        // Uniform across the block: a whole block leaves or none of its threads does, so the
        // barriers below see every thread.
        if row >= rows {
            return;
        }
        let t = thread::thread_idx_x();
        // SAFETY: the row starts inside x and y, which hold rows * cols values.
        let (x, y) = unsafe { (x.add(row as usize * cols as usize), y.add(row as usize * cols as usize)) };

        let mut local_max = f32::NEG_INFINITY;
        let mut c = t;
        while c < cols {
            // SAFETY: c < cols: inside the row.
            local_max = local_max.max(unsafe { *x.add(c as usize) });
            c += BLOCK;
        }
        let maxima = shared_array!(ROW_SOFTMAX_MAXIMA: [f32; WARPS as usize]);
        // SAFETY: every thread of the block calls it (see above), with its own array.
        let row_max = unsafe { block_reduce(local_max, maxima, Reduce::Max) };

        let mut local_sum = 0.0f32;
        c = t;
        while c < cols {
            // SAFETY: c < cols.
            local_sum += math::exp_approx(unsafe { *x.add(c as usize) } - row_max);
            c += BLOCK;
        }
        let sums = shared_array!(ROW_SOFTMAX_SUMS: [f32; WARPS as usize]);
        // SAFETY: as above; a second array, so no barrier is needed between the two reductions.
        let inverse = 1.0 / unsafe { block_reduce(local_sum, sums, Reduce::Sum) };

        c = t;
        while c < cols {
            // SAFETY: c < cols, and this thread is the only one that writes column c.
            unsafe { *y.add(c as usize) = math::exp_approx(*x.add(c as usize) - row_max) * inverse };
            c += BLOCK;
        }
    }
}

/// Which reduction [`block_reduce`] computes.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
enum Reduce {
    Max,
    Sum,
}

/// The maximum or the sum of `value` over the block, in every thread: each warp reduces with
/// shuffles, lane 0 of each writes its warp's result to `partials`, and after a barrier every
/// thread combines the [`WARPS`] partial results in the same order (so all agree bit for bit).
///
/// # Safety
/// Every thread of the block calls it, with the same `partials`, which no other code uses.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_reduce(
    value: f32,
    partials: nvptx_std::shared::SharedArray<f32, { WARPS as usize }>,
    op: Reduce,
) -> f32 {
    use nvptx_std::{thread, warp};
    // SAFETY (both shuffles): the whole block, and so every warp, is here together.
    let warp_value = match op {
        Reduce::Max => unsafe { warp::max_f32(value) },
        Reduce::Sum => unsafe { warp::sum_f32(value) },
    };
    let t = thread::thread_idx_x();
    if warp::lane_id() == 0 {
        // SAFETY: warp index < WARPS; one writer per element.
        unsafe { partials.store((t / warp::WARP_SIZE) as usize, warp_value) };
    }
    // Every warp's result is written before any thread reads them.
    thread::sync_threads();
    // SAFETY: index 0 < WARPS; written before the barrier above and not written again.
    let mut total = unsafe { partials.load(0) };
    for w in 1..WARPS as usize {
        // SAFETY: w < WARPS, as above.
        let p = unsafe { partials.load(w) };
        total = match op {
            Reduce::Max => total.max(p),
            Reduce::Sum => total + p,
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvptx_std::launch::{ConstPtr, Kernel, MutPtr};

    #[test]
    fn the_host_type_names_the_kernel_and_its_parameters() {
        assert_eq!(row_softmax::NAME, KERNEL);
        let _: fn(<row_softmax as Kernel>::Params) = |_: (ConstPtr<f32>, MutPtr<f32>, u32, u32)| {};
    }

    #[test]
    fn the_block_is_whole_warps() {
        assert_eq!(WARPS * 32, BLOCK);
    }
}
