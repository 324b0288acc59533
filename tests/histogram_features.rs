// Over 600 lines: one specification per feature (weights, edges, channels, packed counters, 2-D,
// segments, the sorted tier's waves, streaming), each a few tests sharing the input helpers at the
// top.
//! Issue 22's histogram features on the GPU against their CPU references: weights (within the
//! stated bound of exact sums, and bit-exact where the sums are exact), bin edges (the edges
//! themselves, values just inside and outside, NaN and infinities), interleaved channels (one to
//! four, some inactive, any phase) and packed counters through many carries, 2-D pairs, and
//! segments (empty, shorter than a vector, split mid-vector); every input type, ragged lengths and
//! 2^28-value inputs. Every tier a feature has is forced at least once.

use hopper_kernels::Gpu;
use hopper_kernels::histogram::channels::{self, ChannelLayout};
use hopper_kernels::histogram::device_values::DeviceValues;
use hopper_kernels::histogram::edges::{self, BinEdges, DeviceEdges};
use hopper_kernels::histogram::hist2d::{self, Bins2d, Tier2d};
use hopper_kernels::histogram::segmented::{self, DeviceSegments, Segments};
use hopper_kernels::histogram::tuning::LaunchRequest;
use hopper_kernels::histogram::weighted::{self, WeightedMode};
use hopper_kernels::histogram::{Binning, InputType, Values, ValuesBuf, binning_for};
use hopper_kernels::reference::{ValueDistribution, histogram_input_of};
use rand::Rng;
use rand::rngs::StdRng;
use support::{fresh_rng, gpu};

/// Ragged lengths: empty, shorter than a vector, not a multiple of the vector or of a block.
const RAGGED: [usize; 8] = [0, 1, 3, 5, 17, 4097, 65_539, 1_000_003];

/// `n` values of `element` for `bins` bins (f32 over `[-1, 1]`), uniform, with some out of range
/// (negative or past the last bin for integers; past the range, NaN and infinities for floats).
fn values_of(rng: &mut StdRng, element: InputType, n: usize, bins: usize) -> ValuesBuf {
    let range = (element == InputType::F32).then_some((-1.0, 1.0));
    let mut v = histogram_input_of(rng.random(), n, bins, ValueDistribution::Uniform, element, range);
    match &mut v {
        ValuesBuf::I32(x) => x.iter_mut().step_by(37).for_each(|x| *x = if rng.random() { -5 } else { i32::MAX }),
        ValuesBuf::U8(x) => x.iter_mut().step_by(37).for_each(|x| *x = u8::MAX),
        ValuesBuf::U16(x) => x.iter_mut().step_by(37).for_each(|x| *x = u16::MAX),
        ValuesBuf::F32(x) => {
            let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0, -1.0, 1.000_000_1, -1.000_000_1, 0.0, -0.0];
            x.iter_mut().step_by(29).enumerate().for_each(|(i, x)| *x = odd[i % odd.len()]);
        }
    }
    v
}

fn binning(element: InputType, bins: usize) -> Binning {
    binning_for(element, bins, (element == InputType::F32).then_some((-1.0, 1.0))).unwrap()
}

/// Weights: uniform in (-1, 1) as multiples of 2^-24 (so every sum of up to 2^29 of them is exact
/// in f64), or, with `wide`, normal draws spread over exponents 2^-40 .. 2^40 (sums not exact).
fn weights_of(rng: &mut StdRng, n: usize, wide: bool) -> Vec<f32> {
    (0..n)
        .map(|_| {
            if wide {
                let m: f32 = rng.random_range(-1.0..1.0);
                m * 2f32.powi(rng.random_range(-40..=40))
            } else {
                (rng.random_range(-(1i32 << 24) + 1..(1 << 24)) as f32) * 2f32.powi(-24)
            }
        })
        .collect()
}

/// The weighted GPU sums of `values` under `request`, checked against the exact CPU sums: within
/// the stated bound, and equal to the last bit where every weight is a multiple of 2^-24.
fn check_weighted(gpu: &Gpu, values: Values<'_>, weights: &[f32], b: Binning, request: LaunchRequest, exact: bool) {
    let plan = weighted::plan_weighted(gpu, values.element(), b, &request).unwrap();
    let input = gpu.upload(if values.is_empty() { &[0u8; 16][..] } else { values.bytes() }).unwrap();
    let w = gpu.upload(if weights.is_empty() { &[0f32; 4][..] } else { weights }).unwrap();
    let mut sums = gpu.zeros::<f64>(b.nbins as usize).unwrap();
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), values.len() as u64).unwrap();
    weighted::launch_weighted(gpu, &plan, gpu.stream(), &dv, &w.slice(0..weights.len()), &mut sums.as_view_mut())
        .unwrap();
    gpu.synchronize().unwrap();
    let got = gpu.download(&sums).unwrap();
    let want = weighted::weighted_histogram_cpu(values, weights, &b);
    if let Some(d) = want.first_difference_by(&got, &plan.sum_bound(values.len() as u64)) {
        panic!("{plan} on {} {} values: {d}", values.len(), values.element().name());
    }
    if exact {
        for (i, (g, w)) in got.iter().zip(&want.sums).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{plan}: bin {i} is not the exact sum");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn weighted_sums_match_exact_sums_for_every_type_tier_and_ragged_length() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted"));
    for element in InputType::ALL {
        for n in RAGGED {
            let values = values_of(&mut rng, element, n, 300);
            let b = binning(element, 300);
            let weights = weights_of(&mut rng, n, false);
            for global in [false, true] {
                for aggregate in [false, true] {
                    let r = LaunchRequest { global: Some(global), aggregate: Some(aggregate), ..Default::default() };
                    check_weighted(&gpu, values.as_values(), &weights, b, r, true);
                }
            }
            let wide = weights_of(&mut rng, n, true);
            check_weighted(&gpu, values.as_values(), &wide, b, LaunchRequest::default(), false);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn weighted_sums_of_skewed_inputs_at_one_copy_and_at_the_shared_capacity() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted skew"));
    let limits = hopper_kernels::histogram::HistogramLimits::of(&gpu).unwrap();
    let most = weighted::max_shared_bins(&limits) as usize;
    for (bins, dist) in
        [(256, ValueDistribution::Constant), (256, ValueDistribution::Zipf), (most, ValueDistribution::Uniform)]
    {
        let values = histogram_input_of(rng.random(), 1 << 22, bins, dist, InputType::I32, None);
        let weights = weights_of(&mut rng, 1 << 22, false);
        // At the shared capacity one copy fills the block: a second is refused, with the reason.
        let copies: &[u32] = if bins == most { &[1] } else { &[1, 2] };
        for &copies in copies {
            // f64 sums throughout (the planner's f32 partials at `most` bins are not exact).
            let r = LaunchRequest { copies: Some(copies), f32_partials: Some(false), ..Default::default() };
            check_weighted(&gpu, values.as_values(), &weights, Binning::integers(bins as u32), r, true);
            // The same in f32 partials: within their bound.
            let r = LaunchRequest { f32_partials: Some(true), ..r };
            check_weighted(&gpu, values.as_values(), &weights, Binning::integers(bins as u32), r, false);
        }
    }
    // Two copies of f64 sums at the f64 capacity do not fit (f32 partials would: half the bytes).
    let two = LaunchRequest { copies: Some(2), f32_partials: Some(false), ..Default::default() };
    let err = weighted::plan_weighted(&gpu, InputType::I32, Binning::integers(most as u32), &two).unwrap_err();
    assert!(err.to_string().contains("shared memory"), "{err}");
    // One more bin than a block holds: the planner's global tier.
    let plan =
        weighted::plan_weighted(&gpu, InputType::I32, Binning::integers(most as u32 + 1), &LaunchRequest::default());
    assert_eq!(plan.unwrap().mode(), WeightedMode::Global);
    let values = histogram_input_of(rng.random(), 1 << 20, most + 1, ValueDistribution::Uniform, InputType::I32, None);
    let weights = weights_of(&mut rng, 1 << 20, true);
    check_weighted(
        &gpu,
        values.as_values(),
        &weights,
        Binning::integers(most as u32 + 1),
        LaunchRequest::default(),
        false,
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn weighted_sums_of_nan_weights_are_nan_and_runs_are_bit_identical_where_sums_are_exact() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted nan"));
    let values = histogram_input_of(rng.random(), 1 << 20, 16, ValueDistribution::Uniform, InputType::U8, None);
    let mut w = weights_of(&mut rng, 1 << 20, false);
    let b = Binning::integers(16);
    let first = weighted::weighted_histogram(&gpu, values.as_values(), &w, b).unwrap();
    let second = weighted::weighted_histogram(&gpu, values.as_values(), &w, b).unwrap();
    assert_eq!(
        first.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        second.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    let ValuesBuf::U8(v) = &values else { unreachable!() };
    let at = v.iter().position(|&x| x == 3).unwrap();
    w[at] = f32::NAN;
    let sums = weighted::weighted_histogram(&gpu, values.as_values(), &w, b).unwrap();
    assert!(sums[3].is_nan() && sums.iter().enumerate().all(|(i, s)| i == 3 || !s.is_nan()), "{sums:?}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn f32_partial_sums_stay_within_their_bound_for_every_type_copies_and_ragged_length() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted f32 partials"));
    let limits = hopper_kernels::histogram::HistogramLimits::of(&gpu).unwrap();
    for element in InputType::ALL {
        for n in RAGGED {
            let values = values_of(&mut rng, element, n, 8192);
            let b = binning(element, 8192);
            let narrow = weights_of(&mut rng, n, false);
            let wide = weights_of(&mut rng, n, true);
            // The planner's choice at 8,192 bins is f32 partials, but for bytes, whose values
            // reach 256 bins, which it sums in f64: theirs are asked for.
            let plan = weighted::plan_weighted(&gpu, element, b, &LaunchRequest::default()).unwrap();
            assert_eq!(plan.f32_partials(), element != InputType::U8, "{plan}");
            let f32_partials = (element == InputType::U8).then_some(true);
            for aggregate in [false, true] {
                let r = LaunchRequest { aggregate: Some(aggregate), f32_partials, ..Default::default() };
                check_weighted(&gpu, values.as_values(), &narrow, b, r, false);
                check_weighted(&gpu, values.as_values(), &wide, b, r, false);
            }
        }
    }
    // Every copy count that fits, at a bin count with few of them, and forced at 256 bins.
    let values = values_of(&mut rng, InputType::I32, 1_000_003, 4096);
    let w = weights_of(&mut rng, 1_000_003, true);
    for copies in [1, 2, 4, 8] {
        let r = LaunchRequest { copies: Some(copies), f32_partials: Some(true), ..Default::default() };
        check_weighted(&gpu, values.as_values(), &w, Binning::integers(4096), r, false);
    }
    let values = values_of(&mut rng, InputType::I32, 1_000_003, 256);
    let r = LaunchRequest { f32_partials: Some(true), ..Default::default() };
    check_weighted(&gpu, values.as_values(), &w, Binning::integers(256), r, false);
    // The most bins of f32 partials the shared tier takes (those of f64 sums).
    let most = weighted::max_shared_bins(&limits) as usize;
    let values = values_of(&mut rng, InputType::I32, 1 << 20, most);
    let w = weights_of(&mut rng, 1 << 20, true);
    check_weighted(&gpu, values.as_values(), &w, Binning::integers(most as u32), r, false);
}

/// Weights that stress `f32` partials: cancelling pairs, magnitudes at and past 2^95 (which skip
/// the partials), `f32::MAX` (whose `f32` sums would overflow), subnormals, mixed exponents, and
/// infinities and NaN, in one bin (`Constant`: warp-aggregated and the most adds per partial),
/// skewed (zipf) and uniform over 8,192 bins.
fn adversarial_weights(rng: &mut StdRng, n: usize, kind: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match kind {
            0 => {
                if i % 2 == 0 {
                    1e7
                } else {
                    -1e7 + 0.5
                }
            }
            1 => [2f32.powi(95), -2f32.powi(94), f32::MAX, -f32::MAX, 1e-3, -3e38][i % 6],
            2 => f32::from_bits(1 + (i as u32 % 4096)),
            3 => rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-126..=100)),
            _ => 0.1,
        })
        .collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn f32_partial_sums_of_adversarial_weights_stay_within_their_bound_and_specials_match_f64() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted f32 adversarial"));
    let n = (1 << 22) + 3;
    for dist in [ValueDistribution::Constant, ValueDistribution::Zipf, ValueDistribution::Uniform] {
        let values = histogram_input_of(rng.random(), n, 8192, dist, InputType::I32, None);
        for kind in 0..5 {
            let w = adversarial_weights(&mut rng, n, kind);
            for aggregate in [false, true] {
                let r = LaunchRequest { aggregate: Some(aggregate), f32_partials: Some(true), ..Default::default() };
                check_weighted(&gpu, values.as_values(), &w, Binning::integers(8192), r, false);
            }
        }
        // Infinities and NaN: the bins that hold them come out as the f64 reference's (inf,
        // -inf, NaN), the others stay finite and within the bound.
        let mut w = adversarial_weights(&mut rng, n, 3);
        for (k, special) in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN].into_iter().enumerate() {
            w[1000 * k + 17] = special;
        }
        let r = LaunchRequest { f32_partials: Some(true), ..Default::default() };
        check_weighted(&gpu, values.as_values(), &w, Binning::integers(8192), r, false);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn weighted_2_pow_28_u8_values_match_exact_sums() {
    let (gpu, mut rng) = (gpu(), fresh_rng("weighted 2^28"));
    let n = 1 << 28;
    let values = histogram_input_of(rng.random(), n, 256, ValueDistribution::Uniform, InputType::U8, None);
    let weights = weights_of(&mut rng, n, false);
    check_weighted(&gpu, values.as_values(), &weights, Binning::integers(256), LaunchRequest::default(), true);
}

/// Edge sets: even f32 edges, random ones, wide ones, fractional edges for integers.
fn edge_sets(rng: &mut StdRng) -> Vec<BinEdges> {
    let even = BinEdges::new((0..=256).map(|i| -1.0 + i as f32 / 128.0).collect()).unwrap();
    let mut random: Vec<f32> = (0..1000).map(|_| rng.random_range(-1.2f32..1.2)).collect();
    random.sort_by(f32::total_cmp);
    random.dedup();
    let random = BinEdges::new(random).unwrap();
    let squares = BinEdges::new((0..=64).map(|i| (i as f32 / 64.0).powi(2) * 300.0 - 20.5).collect()).unwrap();
    let wide = BinEdges::new(vec![-3e38, -1.0, -1e-30, 0.0, 1e-30, 0.5, 70_000.0, 3e9, 3e38]).unwrap();
    vec![even, random, squares, wide]
}

/// `values` plus every edge, its two neighbours each side, NaN and the infinities (for `f32`), and
/// for integers the integers around every edge.
fn with_edge_values(values: &ValuesBuf, e: &BinEdges) -> ValuesBuf {
    let around = |x: f32| (-2i32..=2).map(move |d| f32::from_bits(x.to_bits().wrapping_add_signed(d)));
    let ints = |x: f32| {
        let base = (x as f64).round().clamp(i32::MIN as f64, i32::MAX as f64) as i64;
        (-2..=2).map(move |d| base + d)
    };
    match values {
        ValuesBuf::F32(v) => {
            let mut v = v.clone();
            v.extend(e.edges().iter().flat_map(|&x| around(x)));
            v.extend([f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, f32::MAX, f32::MIN]);
            ValuesBuf::F32(v)
        }
        ValuesBuf::I32(v) => {
            let mut v = v.clone();
            v.extend(e.edges().iter().flat_map(|&x| ints(x)).map(|x| x.clamp(i32::MIN as i64, i32::MAX as i64) as i32));
            ValuesBuf::I32(v)
        }
        ValuesBuf::U16(v) => {
            let mut v = v.clone();
            v.extend(e.edges().iter().flat_map(|&x| ints(x)).map(|x| x.clamp(0, u16::MAX as i64) as u16));
            ValuesBuf::U16(v)
        }
        ValuesBuf::U8(v) => {
            let mut v = v.clone();
            v.extend(e.edges().iter().flat_map(|&x| ints(x)).map(|x| x.clamp(0, 255) as u8));
            ValuesBuf::U8(v)
        }
    }
}

fn check_edges(gpu: &Gpu, values: Values<'_>, e: &BinEdges, request: LaunchRequest) {
    let plan = edges::plan_edges(gpu, values.element(), e.bins(), &request).unwrap();
    let input = gpu.upload(if values.is_empty() { &[0u8; 16][..] } else { values.bytes() }).unwrap();
    let device_edges = DeviceEdges::new(gpu, e, values.element(), plan.cells()).unwrap();
    let mut counts = gpu.zeros::<u32>(e.bins() as usize).unwrap();
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), values.len() as u64).unwrap();
    edges::launch_edges(gpu, &plan, gpu.stream(), &dv, &device_edges, &mut counts.as_view_mut()).unwrap();
    gpu.synchronize().unwrap();
    let got = gpu.download(&counts).unwrap();
    let want = edges::edges_histogram_cpu(values, e);
    if let Some(d) = hopper_kernels::histogram::first_count_difference(&got, &want) {
        panic!("{plan} on {} {} values: {d}", values.len(), values.element().name());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn counts_over_edges_match_numpys_rule_at_the_edges_and_around_them_for_every_type() {
    let (gpu, mut rng) = (gpu(), fresh_rng("edges"));
    let sets = edge_sets(&mut rng);
    for element in InputType::ALL {
        for e in &sets {
            for n in RAGGED {
                let base = match element {
                    InputType::F32 => values_of(&mut rng, element, n, 256),
                    _ => histogram_input_of(rng.random(), n, 400, ValueDistribution::Uniform, element, None),
                };
                let values = if n == 0 { base } else { with_edge_values(&base, e) };
                check_edges(&gpu, values.as_values(), e, LaunchRequest::default());
            }
            let values = with_edge_values(&values_of(&mut rng, element, 100_000, 256), e);
            check_edges(&gpu, values.as_values(), e, LaunchRequest { copies: Some(1), ..Default::default() });
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_most_edges_a_block_holds_and_2_pow_28_f32_values_over_256_edges_match_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("edges big"));
    let limits = hopper_kernels::histogram::HistogramLimits::of(&gpu).unwrap();
    let most = edges::max_bins(&limits);
    let e = BinEdges::new((0..=most).map(|i| i as f32 * 0.25 - 100.0).collect()).unwrap();
    let values = with_edge_values(&values_of(&mut rng, InputType::F32, 1 << 22, 256), &e);
    check_edges(&gpu, values.as_values(), &e, LaunchRequest::default());
    assert!(edges::plan_edges(&gpu, InputType::F32, most + 1, &LaunchRequest::default()).is_err());
    let e = &edge_sets(&mut rng)[0];
    let values = values_of(&mut rng, InputType::F32, 1 << 28, 256);
    check_edges(&gpu, values.as_values(), e, LaunchRequest::default());
}

fn check_channels(
    gpu: &Gpu,
    values: Values<'_>,
    b: Binning,
    layout: ChannelLayout,
    phase: u32,
    request: LaunchRequest,
) {
    let plan = channels::plan_channels(gpu, values.element(), b, layout, &request).unwrap();
    let input = gpu.upload(if values.is_empty() { &[0u8; 16][..] } else { values.bytes() }).unwrap();
    let mut counts = gpu.zeros::<u32>(plan.counters() as usize).unwrap();
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), values.len() as u64).unwrap();
    channels::launch_channels(gpu, &plan, gpu.stream(), &dv, phase, &mut counts.as_view_mut()).unwrap();
    gpu.synchronize().unwrap();
    let got = gpu.download(&counts).unwrap();
    let want = channels::channels_histogram_cpu(values, &b, layout, phase);
    if let Some(d) = hopper_kernels::histogram::first_count_difference(&got, &want) {
        panic!("{plan} (phase {phase}) on {} {} values: {d}", values.len(), values.element().name());
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn every_channel_count_active_subset_and_phase_matches_cpu_for_every_type() {
    let (gpu, mut rng) = (gpu(), fresh_rng("channels"));
    for element in InputType::ALL {
        for channels in 1..=4u32 {
            for n in RAGGED {
                let values = values_of(&mut rng, element, n, 256);
                let b = binning(element, 256);
                for active in [1, channels] {
                    for phase in [0, channels - 1] {
                        let layout = ChannelLayout::new(channels, active).unwrap();
                        check_channels(&gpu, values.as_values(), b, layout, phase, LaunchRequest::default());
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn four_channel_pixels_of_2_pow_28_bytes_and_a_constant_image_match_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("rgba"));
    let rgba = ChannelLayout::new(4, 4).unwrap();
    let values = histogram_input_of(rng.random(), 1 << 28, 256, ValueDistribution::Uniform, InputType::U8, None);
    check_channels(&gpu, values.as_values(), Binning::integers(256), rgba, 0, LaunchRequest::default());
    let constant = ValuesBuf::U8(vec![200; (1 << 24) + 4]);
    for copies in [1, 32] {
        let r = LaunchRequest { copies: Some(copies), ..Default::default() };
        check_channels(&gpu, constant.as_values(), Binning::integers(256), rgba, 0, r);
        check_channels(&gpu, constant.as_values(), Binning::integers(256), ChannelLayout::new(3, 2).unwrap(), 1, r);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn packed_counters_stay_exact_through_carries_on_constant_skewed_and_2_pow_28_inputs() {
    let (gpu, mut rng) = (gpu(), fresh_rng("packed"));
    let limits = hopper_kernels::histogram::HistogramLimits::of(&gpu).unwrap();
    let capacity = limits.block_capacity() as usize;
    for (bins, packing) in
        [(65_536, 1), (2 * capacity, 1), (2 * capacity + 1, 2), (4 * capacity, 2), (256, 2), (300, 1)]
    {
        let b = Binning::integers(bins as u32);
        let r = LaunchRequest { packing: Some(packing), ..Default::default() };
        for dist in [ValueDistribution::Uniform, ValueDistribution::Constant, ValueDistribution::Zipf] {
            let values = histogram_input_of(rng.random(), (1 << 24) + 3, bins, dist, InputType::I32, None);
            check_channels(&gpu, values.as_values(), b, ChannelLayout::ONE, 0, r);
        }
    }
    // Every input type through both packed kernels (16-bit counters: histogram_packed16_*; 8-bit:
    // histogram_packed_*), ragged lengths with values outside the bins.
    for element in InputType::ALL {
        for packing in [1, 2] {
            let r = LaunchRequest { packing: Some(packing), ..Default::default() };
            for n in [33, 1_000_003] {
                let values = values_of(&mut rng, element, n, 300);
                check_channels(&gpu, values.as_values(), binning(element, 300), ChannelLayout::ONE, 0, r);
            }
        }
    }
    // Every digit of a word wraps many times: 2^28 values in the first 4 bins of 8-bit digits.
    let values = histogram_input_of(rng.random(), 1 << 28, 4, ValueDistribution::Uniform, InputType::U8, None);
    let r = LaunchRequest { packing: Some(2), ..Default::default() };
    check_channels(&gpu, values.as_values(), Binning::integers(256), ChannelLayout::ONE, 0, r);
    let values = histogram_input_of(rng.random(), 1 << 28, 65_536, ValueDistribution::Zipf, InputType::I32, None);
    check_channels(
        &gpu,
        values.as_values(),
        Binning::integers(65_536),
        ChannelLayout::ONE,
        0,
        LaunchRequest::default(),
    );
}

/// Pairs with about 1% of each coordinate out of range, NaN, infinite or on the range's ends.
fn pairs(rng: &mut StdRng, n: usize) -> (Vec<f32>, Vec<f32>) {
    let odd = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0, -1.0, 1.000_000_1, -1.000_000_1, 0.0, -0.0];
    let mut coord = |_| {
        if rng.random_range(0..100) == 0 { odd[rng.random_range(0..odd.len())] } else { rng.random_range(-1.0f32..1.0) }
    };
    let x: Vec<f32> = (0..n).map(&mut coord).collect();
    let y: Vec<f32> = (0..n).map(&mut coord).collect();
    (x, y)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn pair_counts_match_cpu_in_every_2d_tier_for_ragged_lengths() {
    let (gpu, mut rng) = (gpu(), fresh_rng("2-D"));
    for (bx, by, tier) in [
        (64, 48, Tier2d::Shared { packing: 0 }),
        (256, 256, Tier2d::Shared { packing: 1 }),
        (480, 480, Tier2d::Shared { packing: 2 }),
        (1024, 600, Tier2d::Global),
    ] {
        let bins = Bins2d::new(bx, by, (-1.0, 1.0), (-1.0, 1.0)).unwrap();
        assert_eq!(hist2d::plan_2d(&gpu, bins, false, &LaunchRequest::default()).unwrap().tier(), tier);
        for n in RAGGED {
            let (x, y) = pairs(&mut rng, n);
            let got = hist2d::histogram2d(&gpu, &x, &y, bins).unwrap();
            let want = hist2d::histogram2d_cpu(&x, &y, &bins);
            if let Some(d) = hopper_kernels::histogram::first_count_difference(&got, &want) {
                panic!("{bx} x {by} ({tier:?}) on {n} pairs: {d}");
            }
        }
    }
    // A constant input in packed counters: every add to one digit.
    let bins = Bins2d::new(256, 256, (0.0, 1.0), (0.0, 1.0)).unwrap();
    let (x, y) = (vec![0.5f32; 1 << 24], vec![0.25f32; 1 << 24]);
    assert_eq!(hist2d::histogram2d(&gpu, &x, &y, bins).unwrap(), hist2d::histogram2d_cpu(&x, &y, &bins));
}

/// Counts `x`, `y` into `bins` under `request` through `launch_2d`, into an output that starts
/// at `start[i]` (added into) and sits `offset` counters into its allocation (1: not 8-byte
/// aligned, where the paired flush falls back to one atomic per counter).
fn counts_2d_into(
    gpu: &Gpu,
    x: &[f32],
    y: &[f32],
    bins: Bins2d,
    request: LaunchRequest,
    start: &[u32],
    offset: usize,
) -> Vec<u32> {
    let plan = hist2d::plan_2d(gpu, bins, false, &request).unwrap();
    let pad = |v: &[f32]| if v.is_empty() { vec![0f32; 4] } else { v.to_vec() };
    let (dx, dy) = (gpu.upload(&pad(x)).unwrap(), gpu.upload(&pad(y)).unwrap());
    let mut init = vec![0u32; offset];
    init.extend_from_slice(start);
    let mut counts = gpu.upload(&init).unwrap();
    let mut view = counts.slice_mut(offset..offset + start.len());
    hist2d::launch_2d(gpu, &plan, gpu.stream(), &dx.slice(0..x.len()), &dy.slice(0..y.len()), &mut view).unwrap();
    gpu.synchronize().unwrap();
    gpu.download(&counts).unwrap()[offset..].to_vec()
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn pair_counts_flushed_two_per_atomic_match_cpu_at_odd_counts_misaligned_outputs_and_carries() {
    let (gpu, mut rng) = (gpu(), fresh_rng("2-D paired flush"));
    // 65,536 and 65,535 (odd: the last counter alone in its word) bins in 16-bit digits.
    for (bx, by) in [(256, 256), (255, 257)] {
        let bins = Bins2d::new(bx, by, (-1.0, 1.0), (-1.0, 1.0)).unwrap();
        let total = bins.bins() as usize;
        let on = LaunchRequest { paired_flush: Some(true), ..Default::default() };
        let plan = hist2d::plan_2d(&gpu, bins, false, &on).unwrap();
        assert!(plan.paired_flush() && plan.tier() == Tier2d::Shared { packing: 1 }, "{plan}");
        let mut inputs: Vec<(Vec<f32>, Vec<f32>)> =
            [0usize, 5, 1_000_003].iter().map(|&n| pairs(&mut rng, n)).collect();
        // Constant pairs in the first, the second and the last bin: one digit carries thousands of
        // times, into the low or the high counter of a word (corrections of both signs).
        for (cx, cy) in [(-1.0f32, -1.0f32), (-1.0, -0.99), (1.0, 1.0)] {
            inputs.push((vec![cx; 1 << 22], vec![cy; 1 << 22]));
        }
        for (x, y) in &inputs {
            let want = hist2d::histogram2d_cpu(x, y, &bins);
            let start: Vec<u32> = (0..total as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 4).collect();
            for paired in [true, false] {
                let r = LaunchRequest { paired_flush: Some(paired), ..Default::default() };
                for offset in [0, 1] {
                    let got = counts_2d_into(&gpu, x, y, bins, r, &start, offset);
                    let expect: Vec<u32> = start.iter().zip(&want).map(|(s, w)| s.wrapping_add(*w)).collect();
                    if let Some(d) = hopper_kernels::histogram::first_count_difference(&got, &expect) {
                        panic!("{bx} x {by}, paired {paired}, offset {offset}, {} pairs: {d}", x.len());
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn weighted_pair_sums_match_exact_sums_in_shared_and_global_tiers() {
    let (gpu, mut rng) = (gpu(), fresh_rng("2-D weighted"));
    for (bx, by) in [(64, 64), (256, 256)] {
        let bins = Bins2d::new(bx, by, (-1.0, 1.0), (-1.0, 1.0)).unwrap();
        let plan = hist2d::plan_2d(&gpu, bins, true, &LaunchRequest::default()).unwrap();
        for n in RAGGED {
            let (x, y) = pairs(&mut rng, n);
            let w = weights_of(&mut rng, n, n % 2 == 1);
            let got = hist2d::histogram2d_weighted(&gpu, &x, &y, &w, bins).unwrap();
            let want = hist2d::histogram2d_weighted_cpu(&x, &y, &w, &bins);
            if let Some(d) = want.first_difference(&got, plan.partial_sums()) {
                panic!("{plan} on {n} pairs: {d}");
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn pair_counts_of_2_pow_28_pairs_in_256_by_256_bins_match_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("2-D 2^28"));
    let (x, y) = pairs(&mut rng, 1 << 28);
    let bins = Bins2d::new(256, 256, (-1.0, 1.0), (-1.0, 1.0)).unwrap();
    let got = hist2d::histogram2d(&gpu, &x, &y, bins).unwrap();
    assert_eq!(hopper_kernels::histogram::first_count_difference(&got, &hist2d::histogram2d_cpu(&x, &y, &bins)), None);
}

fn check_segments(gpu: &Gpu, values: Values<'_>, b: Binning, segments: Segments<'_>, request: LaunchRequest) {
    let n = values.len() as u64;
    let plan = segmented::plan_segments(gpu, values.element(), b, segments.count(), n, &request).unwrap();
    let input = gpu.upload(if values.is_empty() { &[0u8; 16][..] } else { values.bytes() }).unwrap();
    let mut counts = gpu.zeros::<u32>(plan.counters() as usize).unwrap();
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), n).unwrap();
    let offsets;
    let device = match segments {
        Segments::Equal { count, len } => DeviceSegments::Equal { count, len },
        Segments::Offsets(o) => {
            offsets = gpu.upload(o).unwrap();
            DeviceSegments::Offsets(offsets.as_view())
        }
    };
    segmented::launch_segments(gpu, &plan, gpu.stream(), &dv, &device, &mut counts.as_view_mut()).unwrap();
    gpu.synchronize().unwrap();
    let got = gpu.download(&counts).unwrap();
    let want = segmented::segmented_histogram_cpu(values, &b, segments);
    if let Some(d) = hopper_kernels::histogram::first_count_difference(&got, &want) {
        let bins = b.nbins as usize;
        let first = got.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(0);
        panic!("{plan} on {n} {} values: segment {}: {d}", values.element().name(), first / bins);
    }
}

/// Offsets for `n` values: empty segments first, in the middle and last, segments shorter than a
/// vector and boundaries inside vectors.
fn ragged_offsets(rng: &mut StdRng, n: u64) -> Vec<u64> {
    let mut o = vec![0u64, 0, 0];
    while *o.last().unwrap() < n {
        let len = match rng.random_range(0..6) {
            0 => 0,
            1 => rng.random_range(1..16),
            2 => rng.random_range(16..200),
            _ => rng.random_range(200..40_000),
        };
        o.push((o.last().unwrap() + len).min(n));
    }
    o.extend([n, n]);
    o
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn segments_of_every_shape_match_cpu_for_every_type() {
    let (gpu, mut rng) = (gpu(), fresh_rng("segments"));
    for element in InputType::ALL {
        for n in RAGGED {
            let values = values_of(&mut rng, element, n, 256);
            let b = binning(element, 256);
            let offsets = ragged_offsets(&mut rng, n as u64);
            // Every kernel: two sets of counters per block (the planner's, one barrier per piece),
            // one set, and counters per warp (no block barriers).
            for r in segment_kernels() {
                check_segments(&gpu, values.as_values(), b, Segments::Offsets(&offsets), r);
                check_segments(&gpu, values.as_values(), b, Segments::Offsets(&[0, n as u64]), r);
                for count in [1u64, 3, 1000] {
                    let equal = Segments::equal_count(n as u64, count).unwrap();
                    check_segments(&gpu, values.as_values(), b, equal, r);
                }
                // More equal segments than values: the last ones are empty.
                let more = Segments::Equal { count: n as u64 + 7, len: 1 };
                check_segments(&gpu, values.as_values(), b, more, LaunchRequest { copies: Some(1), ..r });
                // Small blocks over many short pieces: the sets alternate many times per block
                // (the warp-private kernel: 4 copies per warp).
                let r = LaunchRequest { threads_per_block: Some(256), copies: Some(4), ..r };
                check_segments(&gpu, values.as_values(), b, Segments::Offsets(&offsets), r);
            }
            // Per warp: bins that are no multiple of the warp's 32 lanes, in a one-warp block.
            let (values, b) = (values_of(&mut rng, element, n, 4099), binning(element, 4099));
            let warp = LaunchRequest { threads_per_block: Some(32), ..segment_kernels()[2] };
            check_segments(&gpu, values.as_values(), b, Segments::Offsets(&offsets), warp);
            check_segments(&gpu, values.as_values(), b, Segments::Offsets(&offsets), segment_kernels()[2]);
        }
    }
}

/// The segmented kernels: two sets of counters per block, one set, counters per warp.
fn segment_kernels() -> [LaunchRequest; 3] {
    [
        LaunchRequest { double_buffer: Some(true), ..Default::default() },
        LaunchRequest { double_buffer: Some(false), ..Default::default() },
        LaunchRequest { warp_private: Some(true), ..Default::default() },
    ]
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn four_thousand_segments_of_16384_values_and_one_segment_of_2_pow_28_match_cpu() {
    let (gpu, mut rng) = (gpu(), fresh_rng("segments big"));
    let values = histogram_input_of(rng.random(), 4096 * 16_384, 256, ValueDistribution::Zipf, InputType::I32, None);
    let b = Binning::integers(256);
    check_segments(&gpu, values.as_values(), b, Segments::Equal { count: 4096, len: 16_384 }, LaunchRequest::default());
    for r in &segment_kernels()[1..] {
        check_segments(&gpu, values.as_values(), b, Segments::Equal { count: 4096, len: 16_384 }, *r);
    }
    let warp = segmented::plan_segments(&gpu, InputType::I32, b, 4096, 1 << 26, &segment_kernels()[2]).unwrap();
    assert_eq!(warp.launch().kernel(), "histogram_segmented_warp_i32", "{warp}");
    assert!(
        segmented::plan_segments(&gpu, InputType::I32, b, 4096, 1 << 26, &LaunchRequest::default())
            .unwrap()
            .double_buffer()
    );
    let values = histogram_input_of(rng.random(), 1 << 28, 256, ValueDistribution::Uniform, InputType::U8, None);
    check_segments(&gpu, values.as_values(), b, Segments::Offsets(&[0, 1 << 28]), LaunchRequest::default());
    check_segments(&gpu, values.as_values(), b, Segments::Offsets(&[0, 1 << 28]), segment_kernels()[2]);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn misaligned_views_wrong_lengths_and_mismatched_plans_are_clear_errors() {
    let gpu = gpu();
    let b = Binning::integers(16);
    let input = gpu.upload(&[1u8; 64]).unwrap();
    let plan = channels::plan_channels(&gpu, InputType::U8, b, ChannelLayout::ONE, &LaunchRequest::default()).unwrap();
    let mut counts = gpu.zeros::<u32>(16).unwrap();
    let skewed = DeviceValues::u8(&input.slice(1..33));
    let err = channels::launch_channels(&gpu, &plan, gpu.stream(), &skewed, 0, &mut counts.as_view_mut()).unwrap_err();
    assert!(err.to_string().contains("not 16-byte aligned"), "{err}");
    let ok = DeviceValues::u8(&input.slice(16..48));
    let mut short = gpu.zeros::<u32>(15).unwrap();
    let err = channels::launch_channels(&gpu, &plan, gpu.stream(), &ok, 0, &mut short.as_view_mut()).unwrap_err();
    assert!(err.to_string().contains("the plan fills 16, the output holds 15"), "{err}");
    let wplan = weighted::plan_weighted(&gpu, InputType::U8, b, &LaunchRequest::default()).unwrap();
    let w = gpu.zeros::<f32>(8).unwrap();
    let mut sums = gpu.zeros::<f64>(16).unwrap();
    let err =
        weighted::launch_weighted(&gpu, &wplan, gpu.stream(), &ok, &w.as_view(), &mut sums.as_view_mut()).unwrap_err();
    assert!(err.to_string().contains("32 values and 8 weights"), "{err}");
    let i32s = gpu.zeros::<i32>(8).unwrap();
    let other = DeviceValues::i32(&i32s.as_view());
    let err = channels::launch_channels(&gpu, &plan, gpu.stream(), &other, 0, &mut counts.as_view_mut()).unwrap_err();
    assert!(err.to_string().contains("the plan is for u8 values"), "{err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_sorted_tier_matches_cpu_for_every_wave_count_of_its_bins_pass() {
    use hopper_kernels::histogram::{DeviceHistogram, HistogramTier, PlanRequest};
    let (gpu, mut rng) = (gpu(), fresh_rng("waves"));
    for dist in [ValueDistribution::Uniform, ValueDistribution::Zipf] {
        let values = hopper_kernels::reference::histogram_input(rng.random(), (1 << 22) + 9, 1 << 20, dist);
        let want = hopper_kernels::reference::histogram_cpu(&values, 1 << 20);
        for waves in [1, 2, 3, 8] {
            let request =
                PlanRequest { tier: Some(HistogramTier::Sorted), bins_pass_waves: Some(waves), ..Default::default() };
            let plan = hopper_kernels::histogram::plan_with(&gpu, 1 << 20, request).unwrap();
            let mut h = DeviceHistogram::upload(&gpu, &values, 1 << 20).unwrap();
            let got = hopper_kernels::histogram::run(&gpu, &plan, &mut h).unwrap();
            assert_eq!(hopper_kernels::histogram::first_count_difference(&got, &want), None, "{plan}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_shared_tiers_occupancy_chosen_shape_matches_cpu_for_every_type_and_fixed_shapes_too() {
    use hopper_kernels::histogram::{DeviceHistogram, PlanRequest};
    let (gpu, mut rng) = (gpu(), fresh_rng("occupancy shapes"));
    let capacity = hopper_kernels::histogram::HistogramLimits::of(&gpu).unwrap().block_capacity() as usize;
    for element in InputType::ALL {
        for bins in [1usize, 256, 8192, capacity] {
            let values = values_of(&mut rng, element, (1 << 20) + 13, bins);
            let b = binning(element, bins);
            let want = hopper_kernels::histogram::histogram_cpu_of(values.as_values(), &b);
            for (threads, copies) in [(None, None), (Some(256), None), (Some(1024), Some(1)), (None, Some(2))] {
                let request =
                    PlanRequest { element: Some(element), threads_per_block: threads, copies, ..Default::default() };
                // A fixed shape that does not fit (2 copies of a full block) has no plan.
                let Ok(plan) = hopper_kernels::histogram::plan_with(&gpu, bins, request) else { continue };
                let mut h = DeviceHistogram::upload_values(&gpu, values.as_values(), b).unwrap();
                let got = hopper_kernels::histogram::run(&gpu, &plan, &mut h).unwrap();
                assert_eq!(hopper_kernels::histogram::first_count_difference(&got, &want), None, "{plan}");
            }
        }
    }
}

/// Streams a raw file of `values` in chunks of `chunk` bytes (several chunks, a ragged last one)
/// through `kernel` in each read mode and compares with the CPU's counts of the file.
fn check_streamed(
    gpu: &Gpu,
    values: &ValuesBuf,
    kernel: &dyn hopper_kernels::histogram::stream::ChunkKernel,
    cpu: &dyn Fn(&hopper_kernels::io::DataFile) -> Vec<u64>,
) {
    use hopper_kernels::histogram::stream::{ReadMode, StreamOptions};
    use hopper_kernels::io::{DataFile, ElementType};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("values.bin");
    std::fs::write(&path, values.as_values().bytes()).unwrap();
    let element = ElementType::ALL.into_iter().find(|t| t.input_type() == values.as_values().element()).unwrap();
    let file = DataFile::open_raw(&path, element).unwrap();
    let want = cpu(&file);
    for read in [ReadMode::Copy, ReadMode::Pinned, ReadMode::Mapped] {
        let options = StreamOptions {
            chunk_bytes: 1 << 20,
            piece_bytes: 256 << 10,
            streams: 3,
            read,
            ..StreamOptions::default()
        };
        let report =
            hopper_kernels::histogram::stream::histogram_file_with(gpu, kernel, &file, options, &mut |_| {}).unwrap();
        assert!(report.chunks > 3, "{} chunks", report.chunks);
        assert_eq!(report.counts, want, "{read:?}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn files_stream_through_the_edges_and_channels_kernels_in_every_read_mode() {
    use hopper_kernels::histogram::channels::ChannelsChunks;
    use hopper_kernels::histogram::edges::EdgesChunks;
    let (gpu, mut rng) = (gpu(), fresh_rng("streamed features"));
    // Edges over f32 values: 2^22 + 3 values in chunks of 2^18.
    let values = with_edge_values(&values_of(&mut rng, InputType::F32, (1 << 22) + 3, 256), &edge_sets(&mut rng)[1]);
    let e = edge_sets(&mut rng)[1].clone();
    let plan = edges::plan_edges(&gpu, InputType::F32, e.bins(), &LaunchRequest::default()).unwrap();
    let device_edges = DeviceEdges::new(&gpu, &e, InputType::F32, plan.cells()).unwrap();
    let kernel = EdgesChunks { plan: &plan, edges: &device_edges };
    let cpu = |f: &hopper_kernels::io::DataFile| {
        hopper_kernels::histogram::stream::file_counts_cpu(f, e.bins() as usize, |_, v| {
            edges::edges_histogram_cpu(v, &e)
        })
        .unwrap()
    };
    check_streamed(&gpu, &values, &kernel, &cpu);
    // Three channels of u8: chunks of 2^20 bytes end inside pixels, so every chunk's phase turns.
    let n = 3 * ((1 << 22) + 1);
    let values = histogram_input_of(rng.random(), n, 256, ValueDistribution::Uniform, InputType::U8, None);
    let layout = ChannelLayout::new(3, 2).unwrap();
    let b = Binning::integers(200);
    let plan = channels::plan_channels(&gpu, InputType::U8, b, layout, &LaunchRequest::default()).unwrap();
    let kernel = ChannelsChunks { plan: &plan };
    let cpu = |f: &hopper_kernels::io::DataFile| {
        hopper_kernels::histogram::stream::file_counts_cpu(f, plan.counters() as usize, |first, v| {
            channels::channels_histogram_cpu(v, &b, layout, (first % 3) as u32)
        })
        .unwrap()
    };
    check_streamed(&gpu, &values, &kernel, &cpu);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn the_front_doors_stream_npy_files_over_edges_and_channels() {
    let (gpu, mut rng) = (gpu(), fresh_rng("front doors"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pixels.npy");
    let ValuesBuf::U8(pixels) =
        histogram_input_of(rng.random(), 4 * 1_000_003, 256, ValueDistribution::Uniform, InputType::U8, None)
    else {
        unreachable!()
    };
    hopper_kernels::io::write_npy(&path, &[1_000_003, 4], &pixels).unwrap();
    let layout = ChannelLayout::new(4, 3).unwrap();
    let got = hopper_kernels::histogram_file_channels(&gpu, &path, None, 256, None, layout).unwrap();
    let want = channels::channels_histogram_cpu(Values::U8(&pixels), &Binning::integers(256), layout, 0);
    assert_eq!(got, want.into_iter().map(u64::from).collect::<Vec<_>>());
    let e = BinEdges::new(vec![0.0, 10.5, 100.0, 255.0]).unwrap();
    let got = hopper_kernels::histogram_file_edges(&gpu, &path, None, &e).unwrap();
    let want = edges::edges_histogram_cpu(Values::U8(&pixels), &e);
    assert_eq!(got, want.into_iter().map(u64::from).collect::<Vec<_>>());
}
