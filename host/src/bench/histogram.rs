//! The histogram tiers at one bin count, for [`super::run`]: every tier the host plans for, each
//! checked for an exact match with the CPU's counts before it is timed.
//!
//! Each timed run is one `histogram::launch`, which zeroes the bins and runs the kernel: what a
//! caller of the library pays per histogram.

use super::HistogramContext;
use super::report::{HistogramRow, RowStatus};
use crate::gpu::Gpu;
use crate::histogram::{
    self, DeviceHistogram, HistogramPlan, HistogramTier, InputType, PlanRequest, ValuesBuf, binning_for,
    first_count_difference, histogram_cpu_of,
};
use crate::reference::{ValueDistribution, histogram_input_of};
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
            Some(plan) if plan.tier() == tier => Ok(plan),
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

/// Values of the `u8` row: 2^28 bytes, the size the published u8 histograms are quoted at.
pub const U8_VALUES: usize = 1 << 28;

/// Bins at which the `u8` row runs (a byte has 256 values).
pub const U8_BINS: usize = 256;

/// One input under the planner's plan at `ctx.bins`: how it is drawn and what it is compared with.
struct InputRow {
    name: &'static str,
    element: InputType,
    dist: ValueDistribution,
    values: usize,
    range: Option<(f32, f32)>,
}

/// Rows beyond the tiers at one bin count, each under the planner's plan and compared in its
/// note with the planner's uniform `i32` row among `tiers` (measured just before, same run):
/// zipf and constant `i32` values (skew), `f32` values over `[0, bins)`, and at 256 bins `u8`
/// values at [`U8_VALUES`]. Each is checked exactly against the CPU before it is timed.
pub fn measure_inputs(
    gpu: &Gpu,
    ctx: &HistogramContext<'_>,
    seed: u64,
    tiers: &[HistogramRow],
    progress: &ProgressBar,
) -> anyhow::Result<Vec<HistogramRow>> {
    let bins = ctx.bins;
    let n = ctx.values.len();
    let uniform_ms = tiers
        .iter()
        .find(|r| r.plan.as_deref().is_some_and(|p| p.ends_with("(planner's choice)")))
        .and_then(|r| r.timing.map(|t| t.median_ms));
    let mut inputs = vec![
        InputRow { name: "zipf", element: InputType::I32, dist: ValueDistribution::Zipf, values: n, range: None },
        InputRow {
            name: "constant",
            element: InputType::I32,
            dist: ValueDistribution::Constant,
            values: n,
            range: None,
        },
        InputRow {
            name: "f32",
            element: InputType::F32,
            dist: ValueDistribution::Uniform,
            values: n,
            range: Some((0.0, bins as f32)),
        },
    ];
    if bins == U8_BINS {
        let values = U8_VALUES.max(n);
        inputs.push(InputRow {
            name: "u8 2^28",
            element: InputType::U8,
            dist: ValueDistribution::Uniform,
            values,
            range: None,
        });
    }
    let mut rows = Vec::new();
    for input in inputs {
        // f32 rows stop at MAX_F32_BINS: past it the row is skipped, not the whole bench.
        if let Err(e) = binning_for(input.element, bins, input.range) {
            let reason = format!("no binning: {e}");
            rows.push(HistogramRow::unmeasured(input.name, None, RowStatus::Skipped { reason }));
            continue;
        }
        let request = PlanRequest { element: Some(input.element), ..PlanRequest::default() };
        let plan = match histogram::plan_with(gpu, bins, request) {
            Ok(plan) => plan,
            Err(e) => {
                let reason = format!("no plan: {e}");
                rows.push(HistogramRow::unmeasured(input.name, None, RowStatus::Skipped { reason }));
                continue;
            }
        };
        progress.set_message(format!("histogram, {bins} bins: {}", input.name));
        rows.push(measure_input(gpu, ctx, seed, &plan, &input, uniform_ms)?);
    }
    Ok(rows)
}

fn measure_input(
    gpu: &Gpu,
    ctx: &HistogramContext<'_>,
    seed: u64,
    plan: &HistogramPlan,
    input: &InputRow,
    uniform_ms: Option<f64>,
) -> anyhow::Result<HistogramRow> {
    let bins = ctx.bins;
    let binning = binning_for(input.element, bins, input.range)?;
    let draw =
        |s: u64| histogram_input_of(seed.wrapping_add(s), input.values, bins, input.dist, input.element, input.range);
    let first: ValuesBuf = draw(0);
    let bytes = first.as_values().bytes().len() as u64;
    let start = std::time::Instant::now();
    let want = histogram_cpu_of(first.as_values(), &binning);
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    let sets = rotation_sets(bytes + 4 * bins as u64, gpu.info().l2_bytes);
    let mut devices = vec![DeviceHistogram::upload_values(gpu, first.as_values(), binning)?];
    let description = format!("{plan} (planner's choice)");
    let counts = histogram::run(gpu, plan, &mut devices[0]).with_context(|| format!("running {}", input.name))?;
    if let Some(difference) = first_count_difference(&counts, &want) {
        return Ok(HistogramRow::mismatch(input.name, description, format!("{difference}: not timed")));
    }
    drop(first);
    for s in 1..sets {
        devices.push(DeviceHistogram::upload_values(gpu, draw(s as u64).as_values(), binning)?);
    }
    let timing = time_launches(gpu, ctx.warmup, ctx.repeat, |i| histogram::launch(gpu, plan, &mut devices[i % sets]))
        .with_context(|| format!("timing {}", input.name))?;
    let note = match uniform_ms {
        Some(u) if input.values == ctx.values.len() => {
            format!("{description}; {:.2}x the uniform i32 time", timing.median_ms / u)
        }
        _ => format!(
            "{description}; {} values, {:.0} GB/s of input read",
            input.values,
            bytes as f64 / (timing.median_ms * 1e6)
        ),
    };
    Ok(HistogramRow::measured_input(input.name, note, timing, bytes, ctx.copy, cpu_ms))
}
