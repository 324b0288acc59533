//! The histogram's ceiling: a device-to-device copy, the fastest way to stream memory through
//! the GPU without a kernel of ours, measured in the same run as the histograms.

use super::report::CopyBandwidth;
use crate::error::format_bytes;
use crate::gpu::Gpu;
use crate::timing::time_launches;
use anyhow::Context;

/// Copies `bytes` (a multiple of 4) between two device buffers: checks that one copy arrives
/// whole, then times `repeat` copies with CUDA events after `warmup`.
pub fn measure(gpu: &Gpu, bytes: u64, warmup: usize, repeat: usize) -> anyhow::Result<CopyBandwidth> {
    anyhow::ensure!(
        bytes >= 4 && bytes.is_multiple_of(4),
        "the copy needs a positive multiple of 4 bytes, not {bytes}"
    );
    gpu.ensure_fits(&format!("the bandwidth copy (2 x {})", format_bytes(bytes)), 2 * bytes)?;
    let len = (bytes / 4) as usize;
    // Distinct words, so that a copy that misses or misplaces any part shows.
    let pattern: Vec<u32> = (0..len).map(|i| i as u32).collect();
    let src = gpu.upload(&pattern)?;
    let mut dst = gpu.zeros::<u32>(len)?;
    gpu.fill_u32_pattern(&mut dst, u32::MAX)?;
    gpu.stream().memcpy_dtod(&src, &mut dst).context("device-to-device copy")?;
    let copied = gpu.download(&dst)?;
    if let Some(i) = copied.iter().zip(&pattern).position(|(got, want)| got != want) {
        anyhow::bail!("the device-to-device copy is wrong at word {i}: {} instead of {}", copied[i], pattern[i]);
    }
    drop((copied, pattern));
    let timing =
        time_launches(gpu, warmup, repeat, |_| -> crate::Result<()> { Ok(gpu.stream().memcpy_dtod(&src, &mut dst)?) })
            .context("timing the device-to-device copy")?;
    Ok(CopyBandwidth::new(bytes, timing))
}
