//! The histogram tiers at one bin count, for [`super::run`]: every tier the host plans for, each
//! checked for an exact match with the CPU's counts before it is timed.
//!
//! Each timed run is one `histogram::launch`, which zeroes the bins and runs the kernel: what a
//! caller of the library pays per histogram.

use super::report::{HistogramRow, RowStatus};
use super::{HistogramContext, first_count_difference};
use crate::error::format_bytes;
use crate::gpu::Gpu;
use crate::histogram::{self, DeviceHistogram, HistogramPlan, HistogramTier};
use crate::timing::{rotation_sets, time_launches};
use anyhow::Context;
use clap::ValueEnum;
use indicatif::ProgressBar;

/// Measures every [`HistogramTier`] on `ctx`'s values; a tier with no plan for this many bins
/// is a skipped row that says why. Matches [`super::HistogramTiers`].
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
    let mut rows = Vec::new();
    for tier in HistogramTier::value_variants().iter().cloned() {
        let name = tier_name(&tier);
        progress.set_message(format!("histogram, {bins} bins: {name}"));
        let plan = match histogram::plan(gpu, bins, Some(tier)) {
            Ok(plan) => plan,
            Err(e) => {
                rows.push(HistogramRow::unmeasured(name, None, RowStatus::Skipped { reason: format!("no plan: {e}") }));
                continue;
            }
        };
        let description = describe(&plan);
        let counts = histogram::run(gpu, &plan, &mut inputs[0]).with_context(|| format!("running the {name} tier"))?;
        if let Some(difference) = first_count_difference(&counts, ctx.cpu_counts) {
            rows.push(HistogramRow::mismatch(name, description, difference));
            continue;
        }
        let timing =
            time_launches(gpu, ctx.warmup, ctx.repeat, |i| histogram::launch(gpu, &plan, &mut inputs[i % sets]))
                .with_context(|| format!("timing the {name} tier"))?;
        rows.push(HistogramRow::measured(name, description, timing, n, ctx.copy, ctx.cpu));
    }
    Ok(rows)
}

/// The tier's lowercase name, as the CLI and the report spell it.
fn tier_name(tier: &HistogramTier) -> String {
    // Every variant `value_variants` lists has a name; only `#[value(skip)]` ones have none.
    tier.to_possible_value().map_or_else(|| "unnamed tier".to_string(), |v| v.get_name().to_string())
}

/// The launch plan in words, for the report's `plan` column.
fn describe(plan: &HistogramPlan) -> String {
    format!(
        "{} blocks x {} threads in clusters of {}, {} shared per block, {} bins per block",
        plan.blocks,
        plan.threads_per_block,
        plan.cluster_size,
        format_bytes(plan.shared_bytes as u64),
        plan.bins_per_block
    )
}
