//! The benchmark's presentation, fed a saved report (a fixture in `fixtures/`, shaped like an
//! H100 run): JSON in, table text and SVG out, and `host bench --from-json` end to end. No GPU.

use host::bench::report::{self, BenchReport, RowStatus};
use host::bench::{chart, table};
use host::cli::{Cli, Command};

const FIXTURE: &str = include_str!("fixtures/bench-report.json");

fn fixture() -> BenchReport {
    report::from_json(FIXTURE).expect("the fixture is a current report")
}

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
