//! The histogram tiers at one bin count, for [`super::run`]: every tier the host plans for, each
//! checked for an exact match with the CPU's counts before it is timed.
//!
//! Each timed run is one `histogram::launch`, which zeroes the bins and runs the kernel: what a
//! caller of the library pays per histogram.

use super::HistogramContext;
use super::report::{HistogramRow, RowStatus};
use crate::gpu::Gpu;
use crate::histogram::{self, DeviceHistogram, HistogramTier, first_count_difference};
use crate::timing::{rotation_sets, time_launches};
use anyhow::Context;
use indicatif::ProgressBar;

/// Measures every [`HistogramTier`] on `ctx`'s values; a tier with no plan for this many bins
/// is a skipped row that says why. The tier the planner picks on its own runs the planner's
/// plan (its cluster size) and says so.
pub fn measure_tiers(
    gpu: &Gpu,
    ctx: &HistogramContext<'_>,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<HistogramRow>> {
    let bins = ctx.bins;
    let n = ctx.values.len();
    // Small inputs would be read from L2 on every run after the first: rotate copies of them.
    let sets = rotation_sets(4 * (n + bins) as u64, gpu.info().l2_bytes);
    let mut inputs = (0..sets)
        .map(|_| DeviceHistogram::upload(gpu, ctx.values, bins))
        .collect::<Result<Vec<_>, _>>()
        .context("uploading the values")?;
    let chosen = histogram::plan(gpu, bins, None).ok();
    let mut rows = Vec::new();
    for tier in HistogramTier::ALL {
        let name = tier.name().to_string();
        progress.set_message(format!("histogram, {bins} bins: {name}"));
        let planned = match chosen {
            Some(plan) if plan.tier == tier => Ok(plan),
            _ => histogram::plan(gpu, bins, Some(tier)),
        };
        let plan = match planned {
            Ok(plan) => plan,
            Err(e) => {
                rows.push(HistogramRow::unmeasured(name, None, RowStatus::Skipped { reason: format!("no plan: {e}") }));
                continue;
            }
        };
        let description = if chosen == Some(plan) { format!("{plan} (planner's choice)") } else { plan.to_string() };
        let counts = histogram::run(gpu, &plan, &mut inputs[0]).with_context(|| format!("running the {name} tier"))?;
        if let Some(difference) = first_count_difference(&counts, ctx.cpu_counts) {
            rows.push(HistogramRow::mismatch(name, description, format!("{difference}: not timed")));
            continue;
        }
        let timing =
            time_launches(gpu, ctx.warmup, ctx.repeat, |i| histogram::launch(gpu, &plan, &mut inputs[i % sets]))
                .with_context(|| format!("timing the {name} tier"))?;
        rows.push(HistogramRow::measured(name, description, timing, n, ctx.copy, ctx.cpu));
    }
    Ok(rows)
}
