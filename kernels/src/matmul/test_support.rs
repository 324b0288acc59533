//! CPU test helpers shared by the register-tiled SGEMM kernels' tests.

extern crate std;
use std::vec;
use std::vec::Vec;

/// Marks `cells` in a `rows x cols` grid and asserts each is marked exactly once.
pub fn assert_partition(rows: u32, cols: u32, cells: impl Iterator<Item = (u32, u32)>) {
    let mut seen = vec![0u32; (rows * cols) as usize];
    for (r, c) in cells {
        assert!(r < rows && c < cols, "({r}, {c}) outside {rows} x {cols}");
        seen[(r * cols + c) as usize] += 1;
    }
    assert!(seen.iter().all(|&s| s == 1), "not every cell covered exactly once");
}

/// The shared-memory bank of a 4-byte element (32 banks of 4 bytes).
pub fn bank(index: u32) -> u32 {
    index % 32
}

/// Stores each thread's accumulators of one block tile into row-major `c` (`m x n`), element
/// `(i, j)` of thread `t` at `(block_row + c_row(t, i), block_col + c_col(t, j))`, skipping those
/// outside `C`, as the kernels' guarded stores do.
pub fn store_thread_tiles<const TM: usize, const TN: usize>(
    c: &mut [f32],
    acc: &[[[f32; TN]; TM]],
    (block_row, block_col): (u32, u32),
    (m, n): (u32, u32),
    c_row: impl Fn(u32, u32) -> u32,
    c_col: impl Fn(u32, u32) -> u32,
) {
    for (t, acc) in acc.iter().enumerate() {
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let (r, cc) = (block_row + c_row(t as u32, i as u32), block_col + c_col(t as u32, j as u32));
                if r < m && cc < n {
                    c[(r * n + cc) as usize] = v;
                }
            }
        }
    }
}

/// Asserts that `emulate(a, b, m, k, n)`, a kernel's data flow on the CPU, equals the plain
/// product on ragged shapes around the 128-wide tiles. The inputs are small integers, so every
/// product and sum is exact in f32 and the results compare equal.
pub fn assert_emulation_matches_plain_product(emulate: impl Fn(&[f32], &[f32], u32, u32, u32) -> Vec<f32>) {
    let value = |i: u32, salt: u32| ((i.wrapping_mul(2_654_435_761) ^ salt) % 7) as f32 - 3.0;
    for (m, k, n) in [(1, 1, 1), (127, 9, 129), (128, 8, 128), (129, 12, 131), (5, 20, 260), (130, 7, 3)] {
        let a: Vec<f32> = (0..m * k).map(|i| value(i, 1)).collect();
        let b: Vec<f32> = (0..k * n).map(|i| value(i, 2)).collect();
        let c = emulate(&a, &b, m, k, n);
        for r in 0..m {
            for cc in 0..n {
                let want: f32 = (0..k).map(|kk| a[(r * k + kk) as usize] * b[(kk * n + cc) as usize]).sum();
                assert_eq!(c[(r * n + cc) as usize], want, "{m}x{k}x{n}: C[{r}][{cc}]");
            }
        }
    }
}
