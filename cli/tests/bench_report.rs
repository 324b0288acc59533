//! The benchmark's presentation, fed a saved report (a fixture in `fixtures/`, shaped like an
//! H100 run): JSON in, table text and SVG out, and `host bench --from-json` end to end. No GPU.

use host::bench::report::{self, BenchReport, MatmulRow, MatmulRowKind, RowStatus};
use host::bench::{chart, table};
use host::cli::{Cli, Command};

const FIXTURE: &str = include_str!("fixtures/bench-report.json");

fn fixture() -> BenchReport {
    report::from_json(FIXTURE).expect("the fixture is a current report")
}

/// The fixture as a report written before the suite and the plans existed: no `suite` section,
/// no `plan` in any row.
fn old_fixture_json() -> String {
    let mut value: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    value.as_object_mut().unwrap().remove("suite");
    for shape in value["matmul"]["shapes"].as_array_mut().unwrap() {
        for row in shape["rows"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("plan");
        }
    }
    serde_json::to_string(&value).unwrap()
}

/// The suite table of `text`, from its heading to the geometric mean.
fn suite_block(text: &str) -> &str {
    let start = text.find(SUITE_HEADING).unwrap_or_else(|| panic!("no suite table in\n{text}"));
    let block = &text[start..];
    &block[..block.find("\n\n").unwrap_or(block.len())]
}

const SUITE_HEADING: &str = "matmul shape suite:";

/// The table line of `name` in the block that starts with `heading`.
fn line_in<'a>(text: &'a str, heading: &str, name: &str) -> &'a str {
    let block = &text[text.find(heading).unwrap_or_else(|| panic!("no `{heading}` in\n{text}"))..];
    let block = &block[..block.find("\n\n").unwrap_or(block.len())];
    block
        .lines()
        .find(|l| l.split("  ").next().is_some_and(|first| first.trim() == name))
        .unwrap_or_else(|| panic!("no row `{name}` under `{heading}` in\n{block}"))
}

/// The text of every `<text>` element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim().to_string()))
        .collect()
}

fn columns(line: &str) -> Vec<&str> {
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
}

#[test]
fn fixture_survives_a_json_round_trip() {
    let report = fixture();
    let again = report::from_json(&serde_json::to_string(&report).unwrap()).unwrap();
    assert_eq!(serde_json::to_value(&report).unwrap(), serde_json::to_value(&again).unwrap());
}

#[test]
fn table_names_the_device_ptx_date_and_method() {
    let text = table::render(&fixture());
    for needle in [
        "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs",
        "PTX: sm_90 (release build)",
        "2026-11-22T12:00:00Z",
        "median of 20 runs after 3 warm-ups",
        "checked against a float64",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
}

#[test]
fn table_shows_ratio_to_cublas_for_every_matmul_row() {
    let report = fixture();
    let text = table::render(&report);
    for shape in &report.matmul.as_ref().unwrap().shapes {
        let heading = format!("matmul {} (", shape.shape);
        for row in &shape.rows {
            let cols = columns(line_in(&text, &heading, &row.name));
            // name, median, min, max, GFLOP/s, x cuBLAS, ...
            let expected = match row.ratio_to_cublas {
                Some(r) => format!("{r:.2}"),
                None => "-".into(),
            };
            assert_eq!(cols[5], expected, "{} {}: {cols:?}", shape.shape, row.name);
        }
    }
    // 1024^3: cuBLAS 0.059 ms, tiled16 0.353 ms: 5.98x; cuBLAS itself 1.00.
    assert_eq!(columns(line_in(&text, "matmul 1024x1024x1024", "tiled16"))[5], "5.98");
    assert_eq!(columns(line_in(&text, "matmul 1024x1024x1024", "cublas"))[5], "1.00");
}

#[test]
fn table_shows_the_whole_ladder_with_rates_at_each_size() {
    let text = table::render(&fixture());
    let loop_row = line_in(&text, "matmul 1024x1024x1024", "cpu triple loop");
    assert!(loop_row.contains("1520.400") && loop_row.contains("1.41"), "{loop_row}");
    assert!(loop_row.contains("1 thread, 1 run, wall clock"), "{loop_row}");
    let cublas = line_in(&text, "matmul 4096x4096x4096", "cublas");
    assert_eq!(columns(cublas)[1..5], ["2.660", "2.630", "2.710", "51669"]);
    assert!(text.contains("checked on 64 sampled rows"), "{text}");
    assert!(text.contains("matmul 1000x800x1200 (1.92 GFLOP): checked on every element"), "{text}");
}

#[test]
fn table_says_why_the_triple_loop_was_skipped() {
    let text = table::render(&fixture());
    let row = line_in(&text, "matmul 4096x4096x4096", "cpu triple loop");
    assert!(row.contains("skipped: would take ~1210 s") && row.contains("30 s limit"), "{row}");
    assert_eq!(columns(row)[1..7], ["-", "-", "-", "-", "-", "-"]);
}

#[test]
fn table_shows_bandwidth_fraction_speedup_and_exactness_for_every_histogram_row() {
    let report = fixture();
    let text = table::render(&report);
    assert!(text.contains("ceiling: device-to-device copy of 1.00 GiB, 2954 GB/s (read + write"), "{text}");
    assert!(text.contains("67108864 = 2^26 i32 values"), "{text}");
    let hist = &text[text.find("histogram of").unwrap()..];
    for entry in &report.histogram.as_ref().unwrap().bins {
        for row in &entry.rows {
            let line = hist
                .lines()
                .find(|l| columns(l).first() == Some(&entry.bins.to_string().as_str()) && columns(l)[1] == row.tier)
                .unwrap_or_else(|| panic!("no row for {} bins {}", entry.bins, row.tier));
            match row.status {
                RowStatus::Measured => {
                    let cols = columns(line);
                    assert_eq!(cols[6], format!("{:.1}%", 100.0 * row.fraction_of_copy.unwrap()), "{line}");
                    assert_eq!(cols[7], format!("{:.0}x", row.speedup_over_cpu.unwrap()), "{line}");
                    assert_eq!(cols[8], "yes", "{line}");
                }
                _ => assert!(line.contains("no plan: 131072 bins need 512.00 KiB"), "{line}"),
            }
        }
    }
    // 256 bins, shared: 2^26 * 4 B in 0.146 ms = 1839 GB/s, 62.2% of 2954 GB/s, 810x the CPU's 118.2 ms.
    let shared = hist.lines().find(|l| l.trim_start().starts_with("256  shared")).unwrap();
    assert_eq!(columns(shared)[5..9], ["1839", "62.2%", "810x", "yes"]);
    let cpu = hist.lines().find(|l| l.trim_start().starts_with("256  cpu")).unwrap();
    assert_eq!(columns(cpu)[5..9], ["2.27", "0.08%", "1x", "ref"]);
}

#[test]
fn table_flags_failed_checks_and_the_report_lists_them() {
    let mut report = fixture();
    let shape = &mut report.matmul.as_mut().unwrap().shapes[0];
    let row = shape.rows.iter_mut().find(|r| r.name == "tiled32").unwrap();
    row.status = RowStatus::Failed { reason: "error 3.0e-2 exceeds the bound 1.22e-4".into() };
    row.timing = None;
    assert_eq!(report.failures(), vec!["matmul 1024x1024x1024 tiled32: error 3.0e-2 exceeds the bound 1.22e-4"]);
    let text = table::render(&report);
    assert!(text.contains("FAILED CHECKS"), "{text}");
    assert!(line_in(&text, "matmul 1024x1024x1024", "tiled32").contains("exceeds the bound"));
    assert!(fixture().failures().is_empty());
}

#[test]
fn svg_has_both_panels_titles_axis_labels_and_every_series() {
    let report = fixture();
    let svg = chart::render_svg(&report).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "not an SVG document");
    assert!(
        svg.contains(&format!(r#"width="{}""#, chart::WIDTH))
            && svg.contains(&format!(r#"height="{}""#, chart::HEIGHT))
    );
    let texts = svg_texts(&svg);
    let has = |t: &str| texts.iter().any(|x| x == t);
    for needle in [
        chart::MATMUL_TITLE,
        chart::MATMUL_X,
        chart::MATMUL_Y,
        chart::HISTOGRAM_TITLE,
        chart::HISTOGRAM_X,
        chart::HISTOGRAM_Y,
        chart::CEILING,
        "NVIDIA H100 80GB HBM3",
    ] {
        assert!(svg.contains(needle), "missing `{needle}` in the SVG");
    }
    for shape in &report.matmul.as_ref().unwrap().shapes {
        for row in &shape.rows {
            assert!(has(&row.name), "no series `{}` in the SVG legend: {texts:?}", row.name);
        }
    }
    for tier in ["shared", "cluster", "global"] {
        assert!(has(tier), "no series `{tier}` in the SVG legend: {texts:?}");
    }
    // Ticks at the measured square sizes and bin counts.
    for tick in ["1024", "4096", "256", "8192", "131072"] {
        assert!(has(tick), "no tick {tick}: {texts:?}");
    }
}

#[test]
fn svg_says_which_section_was_skipped() {
    let mut report = fixture();
    report.matmul = None;
    let svg = chart::render_svg(&report).unwrap();
    assert!(svg.contains(chart::MATMUL_TITLE) && svg.contains("--skip-matmul"));
    assert!(svg.contains(chart::CEILING));
    report.histogram = None;
    report.matmul = fixture().matmul;
    assert!(chart::render_svg(&report).unwrap().contains("--skip-histogram"));
    report.suite = None;
    assert!(chart::render_svg(&report).unwrap().contains("--skip-suite"));
    assert!(!chart::render_svg(&fixture()).unwrap().contains("not measured in this run"));
}

#[test]
fn ladder_table_shows_what_auto_ran_and_why_a_narrow_kernel_was_skipped() {
    let mut report = fixture();
    let shape = &mut report.matmul.as_mut().unwrap().shapes[0];
    let plan = "sgemm: grid 8x8x4 of 256 threads, split-K 4 x 256 columns of A; m and n > 16: compute-bound";
    let method = shape.rows[2].method.clone();
    let timing = shape.rows[2].timing.unwrap();
    let auto =
        MatmulRow::measured("auto", MatmulRowKind::Gpu, &method, shape.flops, timing, Some(1e-7)).with_plan(plan);
    let refusal = "invalid input: few_rows multiplies at most 16 rows; 1024x1024x1024 has m = 1024: use auto or sgemm";
    let few_rows = MatmulRow::unmeasured(
        "few_rows",
        MatmulRowKind::Gpu,
        &method,
        RowStatus::Skipped { reason: refusal.into() },
        None,
    );
    shape.rows.insert(2, auto);
    shape.rows.insert(3, few_rows);
    shape.fill_ratios();
    let text = table::render(&report);
    let auto_line = line_in(&text, "matmul 1024x1024x1024", "auto");
    assert!(auto_line.ends_with(plan), "{auto_line}");
    let skipped = line_in(&text, "matmul 1024x1024x1024", "few_rows");
    assert_eq!(columns(skipped)[1..7], ["-", "-", "-", "-", "-", "-"], "{skipped}");
    assert!(skipped.ends_with(refusal), "{skipped}");
    // Skipped is not failed: the run stays good.
    assert!(report.failures().is_empty());
}

#[test]
fn suite_table_shows_autos_kernel_times_and_x_cublas_for_every_shape() {
    let report = fixture();
    let text = table::render(&report);
    let block = suite_block(&text);
    assert!(block.contains("x cuBLAS = auto time / cuBLAS time"), "{block}");
    assert!(block.contains("memory-bound: under 16 FLOP per byte"), "{block}");
    assert!(block.contains("the copy's 2954 GB/s"), "{block}");
    let suite = report.suite.as_ref().unwrap();
    for shape in &suite.shapes {
        let cols = columns(line_in(block, SUITE_HEADING, &shape.shape.to_string()));
        // shape, kernel, auto ms, cuBLAS ms, x cuBLAS, GFLOP/s, GB/s, % of copy, max error, plan
        assert_eq!(cols[1], shape.kernel.as_deref().unwrap(), "{cols:?}");
        assert_eq!(cols[4], format!("{:.2}", shape.x_cublas.unwrap()), "{cols:?}");
        assert_eq!(cols[9], shape.auto.plan.as_deref().unwrap(), "{cols:?}");
    }
    // 4096^3: auto (sgemm) 2.793 ms against cuBLAS's 2.660 ms: 1.05, 49208 GFLOP/s.
    let square = columns(line_in(block, SUITE_HEADING, "4096x4096x4096"));
    assert_eq!(square[1..7], ["sgemm", "2.793", "2.660", "1.05", "49208", "72.1"]);
    // The GEMV row: few_rows, and times of a fraction of a millisecond keep four decimals.
    let gemv = columns(line_in(block, SUITE_HEADING, "1x4096x65536"));
    assert_eq!(gemv[1..5], ["few_rows", "0.405", "0.409", "0.99"]);
    assert_eq!(columns(line_in(block, SUITE_HEADING, "64x8192x64"))[2..4], ["0.0120", "0.0133"]);
}

#[test]
fn suite_table_gives_percent_of_copy_for_memory_bound_shapes_only() {
    let report = fixture();
    let text = table::render(&report);
    let block = suite_block(&text);
    let suite = report.suite.as_ref().unwrap();
    assert!(suite.shapes.iter().any(|s| s.memory_bound) && suite.shapes.iter().any(|s| !s.memory_bound));
    for shape in &suite.shapes {
        let cols = columns(line_in(block, SUITE_HEADING, &shape.shape.to_string()));
        if shape.memory_bound {
            assert_eq!(cols[7], format!("{:.1}%", 100.0 * shape.fraction_of_copy.unwrap()), "{cols:?}");
        } else {
            assert_eq!(cols[7], "-", "{cols:?}");
        }
    }
    // 1x4096x65536 moves 1.07 GB in 0.405 ms: 2652 GB/s, 89.8% of the copy's 2954 GB/s.
    assert_eq!(columns(line_in(block, SUITE_HEADING, "1x4096x65536"))[6..8], ["2652", "89.8%"]);
}

#[test]
fn suite_table_ends_with_the_geometric_mean_of_x_cublas() {
    let report = fixture();
    let block = suite_block(&table::render(&report)).to_string();
    // (1.05 * 0.969 * 0.902 * 0.990)^(1/4) = 0.976
    assert_eq!(block.lines().last().unwrap(), "geometric mean of x cuBLAS: 0.98 over 4 shapes");
    let suite = report.suite.as_ref().unwrap();
    assert_eq!(suite.geomean_shapes, 4);
    assert!((suite.geomean_x_cublas.unwrap() - 0.9765).abs() < 1e-4);
}

#[test]
fn table_flags_failed_suite_checks_and_the_report_lists_them() {
    let mut report = fixture();
    let shape = &mut report.suite.as_mut().unwrap().shapes[1];
    shape.auto.status = RowStatus::Failed { reason: "error 3.0e-2 exceeds the bound 9.54e-5".into() };
    shape.auto.timing = None;
    assert_eq!(report.failures(), vec!["suite 1000x800x1200 auto: error 3.0e-2 exceeds the bound 9.54e-5"]);
    let text = table::render(&report);
    assert!(text.contains("FAILED CHECKS"), "{text}");
    let row = line_in(suite_block(&text), SUITE_HEADING, "1000x800x1200");
    assert!(row.ends_with("error 3.0e-2 exceeds the bound 9.54e-5"), "{row}");
}

#[test]
fn a_report_without_a_suite_loads_and_renders_saying_the_suite_was_not_measured() {
    let old = report::from_json(&old_fixture_json()).expect("a report from before the suite still loads");
    assert!(old.suite.is_none());
    assert!(old.matmul.as_ref().unwrap().shapes.iter().flat_map(|s| &s.rows).all(|r| r.plan.is_none()));
    let text = table::render(&old);
    assert!(!text.contains(SUITE_HEADING) && text.contains("histogram of"), "{text}");
    let svg = chart::render_svg(&old).unwrap();
    assert!(svg.contains(chart::SUITE_TITLE) && svg.contains("not measured in this run (--skip-suite)"));
    assert!(svg.contains(chart::MATMUL_TITLE) && svg.contains(chart::CEILING));
}

#[test]
fn svg_has_the_suite_panel_with_every_shape_its_ratio_and_the_reference_lines() {
    let report = fixture();
    let svg = chart::render_svg(&report).unwrap();
    let texts = svg_texts(&svg);
    let has = |t: &str| texts.iter().any(|x| x == t);
    assert!(
        texts.iter().any(|t| t.starts_with(chart::SUITE_TITLE) && t.ends_with("(geometric mean 0.98 over 4 shapes)")),
        "{texts:?}"
    );
    for needle in [
        chart::SUITE_X,
        chart::SUITE_Y,
        chart::SUITE_PARITY,
        chart::SUITE_TARGET_LINE,
        chart::SUITE_COMPUTE,
        chart::SUITE_MEMORY,
    ] {
        assert!(has(needle), "missing `{needle}` in the SVG: {texts:?}");
    }
    for shape in &report.suite.as_ref().unwrap().shapes {
        assert!(has(&shape.shape.to_string()), "no label {}: {texts:?}", shape.shape);
        assert!(has(&format!("{:.2}", shape.x_cublas.unwrap())), "no ratio for {}: {texts:?}", shape.shape);
    }
    assert!(!svg.contains("--skip-suite"));
}

#[test]
fn svg_marks_a_suite_shape_without_a_ratio() {
    let mut report = fixture();
    let suite = report.suite.as_mut().unwrap();
    suite.shapes[0].x_cublas = None;
    let svg = chart::render_svg(&report).unwrap();
    assert!(svg_texts(&svg).iter().any(|t| t == chart::NOT_MEASURED));
    for shape in &mut report.suite.as_mut().unwrap().shapes {
        shape.x_cublas = None;
    }
    let svg = chart::render_svg(&report).unwrap();
    assert!(svg.contains("no shape has both auto and cuBLAS measured"));
}

#[test]
fn bench_from_json_writes_the_table_chart_and_json_without_a_gpu() {
    let dir = std::env::temp_dir().join(format!("host-bench-test-{}", std::process::id()));
    // The fixture is embedded and written out here, so the test executable runs on machines
    // that have no copy of the source tree (the GPU machine).
    std::fs::create_dir_all(&dir).unwrap();
    let fixture_path = dir.join("bench-report.json");
    std::fs::write(&fixture_path, FIXTURE).unwrap();
    let (svg, json, text) = (dir.join("out/chart.svg"), dir.join("out/report.json"), dir.join("out/table.txt"));
    let cli = <Cli as clap::Parser>::try_parse_from([
        "host",
        "bench",
        "--from-json",
        fixture_path.to_str().unwrap(),
        "--chart",
        svg.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--table",
        text.to_str().unwrap(),
    ])
    .unwrap();
    assert!(matches!(cli.command, Command::Bench(_)));
    host::cli::run(cli).unwrap();
    assert!(std::fs::read_to_string(&svg).unwrap().contains(chart::HISTOGRAM_TITLE));
    let written = report::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(written.settings, fixture().settings);
    assert_eq!(std::fs::read_to_string(&text).unwrap(), table::render(&fixture()));
    std::fs::remove_dir_all(&dir).unwrap();
}
