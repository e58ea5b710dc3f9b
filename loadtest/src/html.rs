//! The report as one self-contained HTML page (`--html FILE`): a summary
//! table, the throughput over the measured phase and the latency by
//! percentile, drawn as inline SVG by plotters (SVG backend only; the
//! browser lays out the text).

use std::fmt::Write as _;

use anyhow::Context;
use plotters::coord::ranged1d::AsRangedCoord;
use plotters::prelude::*;

use crate::report::{Percentiles, Report};

const CHART_SIZE: (u32, u32) = (900, 360);
const FONT: &str = "sans-serif";
/// The second series (service time): a green dark enough on white.
const DARK_GREEN: RGBColor = RGBColor(0, 140, 60);

/// An axis value with as many decimals as its size needs.
fn axis_number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `text` with the characters HTML gives a meaning escaped (`&#39;` for
/// the apostrophe). Written out rather than a crate for five entities; the
/// page is built once per run.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A percentile label for the x of [`Report::charts`]' curves (x = 1 / (1 - q)).
fn percentile_label(x: f64) -> String {
    let q = (100.0 * (1.0 - 1.0 / x)).max(0.0);
    let text = format!("{q:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// Requests per second over the phase, per bucket, as steps.
fn throughput_svg(report: &Report) -> anyhow::Result<String> {
    let elapsed = std::time::Duration::from_secs_f64(report.duration_s.max(0.0));
    let timeline = &report.charts.timeline;
    let rates = timeline.rates(elapsed);
    let bucket_ms = timeline.chart_bucket_ms(elapsed);
    let width = if bucket_ms % 1000 == 0 {
        format!("{} s", bucket_ms / 1000)
    } else {
        format!("{bucket_ms} ms")
    };
    let steps = |value: fn(&crate::timeline::Rate) -> f64| -> Vec<(f64, f64)> {
        rates
            .iter()
            .flat_map(|r| [(r.start_s, value(r)), (r.end_s, value(r))])
            .collect()
    };
    let answered = steps(|r| r.answered_per_s);
    let failed = steps(|r| r.failed_per_s);
    let top = answered.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
    let x_end = report.duration_s.max(0.001);
    let caption = format!("Throughput (requests/s per {width})");
    chart_svg(
        &caption,
        (0f64..x_end, 0f64..top),
        SeriesLabelPosition::LowerRight,
        |chart| {
            chart
                .configure_mesh()
                .x_desc("seconds since the start of the measurement")
                .y_desc("requests/s")
                .y_label_formatter(&|v| axis_number(*v))
                .draw()?;
            line(
                chart,
                answered,
                BLUE.stroke_width(3),
                "answered (ok or failed)",
            )?;
            if report.failed > 0 {
                line(chart, failed, RED.stroke_width(2), "failed")?;
            }
            Ok(())
        },
    )
}

/// Latency (y, ms) by percentile (x, log scale from 0 to 99.99%).
fn latency_svg(report: &Report) -> anyhow::Result<String> {
    let charts = &report.charts;
    let top = charts
        .latency
        .iter()
        .chain(&charts.service)
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(0.001)
        * 1.1;
    chart_svg(
        "Latency by percentile",
        ((1f64..10_000f64).log_scale(), 0f64..top),
        SeriesLabelPosition::UpperLeft,
        |chart| {
            chart
                .configure_mesh()
                .x_desc("percentile")
                .y_desc("latency (ms)")
                .x_label_formatter(&|x| percentile_label(*x))
                .y_label_formatter(&|v| axis_number(*v))
                .draw()?;
            let label = if charts.service.is_empty() {
                "latency"
            } else {
                "response time (from the due time)"
            };
            let latency = charts.latency.iter().copied();
            line(chart, latency, BLUE.stroke_width(3), label)?;
            if !charts.service.is_empty() {
                let service = charts.service.iter().copied();
                let label = "service time (from the send)";
                line(chart, service, DARK_GREEN.stroke_width(2), label)?;
            }
            Ok(())
        },
    )
}

/// A chart over `ranges` (x, y) as an SVG document, in the frame both
/// charts share; `draw` adds the mesh and the series, whose legend goes
/// at `legend`.
fn chart_svg<X: AsRangedCoord, Y: AsRangedCoord>(
    caption: &str,
    ranges: (X, Y),
    legend: SeriesLabelPosition,
    draw: impl FnOnce(&mut Chart<'_, '_, X::CoordDescType, Y::CoordDescType>) -> anyhow::Result<()>,
) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, (FONT, 18))
            .margin(12)
            // Room for the last x label, centred on the axis' end.
            .margin_right(36)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(ranges.0, ranges.1)?;
        draw(&mut chart)?;
        chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font((FONT, 14))
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}

/// The chart [`chart_svg`] hands to its `draw`.
type Chart<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// A series drawn as a line in `style`, labelled with a sample of it.
fn line<X: Ranged, Y: Ranged>(
    chart: &mut Chart<'_, '_, X, Y>,
    points: impl IntoIterator<Item = (X::ValueType, Y::ValueType)>,
    style: ShapeStyle,
    label: &str,
) -> anyhow::Result<()>
where
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    chart
        .draw_series(LineSeries::new(points, style))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    Ok(())
}

fn row(out: &mut String, label: &str, id: &str, value: &str) {
    let _ = writeln!(
        out,
        "<tr><th>{}</th><td id=\"{id}\">{value}</td></tr>",
        escape(label)
    );
}

fn percentile_row(out: &mut String, label: &str, p: &Percentiles) {
    let _ = write!(out, "<tr><th>{}</th>", escape(label));
    for v in [p.p50_ms, p.p90_ms, p.p99_ms, p.p999_ms, p.max_ms, p.mean_ms] {
        let _ = write!(out, "<td class=\"n\">{v:.3}</td>");
    }
    out.push_str("</tr>\n");
}

/// The whole page.
pub fn render(report: &Report) -> anyhow::Result<String> {
    let throughput = throughput_svg(report).context("drawing the throughput chart")?;
    let latency = latency_svg(report).context("drawing the latency chart")?;
    let mut out = String::new();
    out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
    );
    let _ = writeln!(
        out,
        "<title>celhook-loadtest: {}</title>",
        escape(&report.url)
    );
    out.push_str(
        "<style>\n\
         body { font-family: sans-serif; margin: 1.5em auto; max-width: 960px; padding: 0 1em; color: #222; }\n\
         table { border-collapse: collapse; margin: 0.5em 0 1.5em; }\n\
         th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }\n\
         th { background: #f4f4f4; font-weight: 600; }\n\
         td.n, td[id] { font-variant-numeric: tabular-nums; }\n\
         td.n { text-align: right; }\n\
         svg { display: block; max-width: 100%; height: auto; margin: 0.5em 0 1.5em; }\n\
         .example { color: #555; font-family: monospace; font-size: 0.9em; word-break: break-all; }\n\
         </style>\n</head>\n<body>\n<h1>celhook-loadtest report</h1>\n",
    );

    out.push_str("<h2>Summary</h2>\n<table>\n");
    row(&mut out, "target", "url", &escape(&report.url));
    row(
        &mut out,
        "workload",
        "workload",
        &format!(
            "{} ({} bytes per request)",
            escape(&report.workload),
            report.body_bytes
        ),
    );
    row(
        &mut out,
        "HTTP version",
        "http-version",
        report.http_version,
    );
    row(
        &mut out,
        "connections",
        "connections",
        &format!(
            "{} (--http {})",
            escape(&report.connections_text()),
            report.http_requested
        ),
    );
    let load = match report.target_rate {
        Some(rate) => format!(
            "open loop at {rate:.1} requests/s, at most {} in flight",
            report.concurrency
        ),
        None => format!("closed loop, concurrency {}", report.concurrency),
    };
    row(&mut out, "load", "load", &load);
    row(
        &mut out,
        "measured",
        "duration",
        &format!(
            "{:.3} s (after {:.1} s of warm-up)",
            report.duration_s, report.warmup_s
        ),
    );
    row(
        &mut out,
        "requests",
        "requests",
        &report.requests.to_string(),
    );
    row(&mut out, "ok", "ok", &report.ok.to_string());
    if report.allowed + report.denied > 0 {
        row(&mut out, "allowed", "allowed", &report.allowed.to_string());
        row(&mut out, "denied", "denied", &report.denied.to_string());
    }
    row(&mut out, "failed", "failed", &report.failed.to_string());
    for (kind, n, example) in report.errors_with_examples() {
        row(
            &mut out,
            &format!("error: {kind}"),
            &format!("error-{}", escape(kind)),
            &format!(
                "{n}<br><span class=\"example\">e.g. {}</span>",
                escape(example)
            ),
        );
    }
    row(
        &mut out,
        "throughput",
        "throughput",
        &format!(
            "{:.1} requests/s ({:.1} objects/s)",
            report.throughput_rps, report.objects_per_s
        ),
    );
    out.push_str("</table>\n");

    if let Some(latency) = &report.latency {
        out.push_str(
            "<table>\n<tr><th>ms</th><th>p50</th><th>p90</th><th>p99</th>\
             <th>p99.9</th><th>max</th><th>mean</th></tr>\n",
        );
        match (&report.service_time, report.target_rate) {
            (Some(service), Some(_)) => {
                percentile_row(&mut out, "response time", latency);
                percentile_row(&mut out, "service time", service);
            }
            _ => percentile_row(&mut out, "latency", latency),
        }
        out.push_str("</table>\n");
    }

    out.push_str("<h2>Throughput</h2>\n");
    out.push_str(&throughput);
    out.push_str("\n<h2>Latency</h2>\n");
    if report.target_rate.is_some() {
        out.push_str(
            "<p>Open loop: the response time counts from each request's due \
             time, so waiting for a free slot counts; the service time from \
             its actual send.</p>\n",
        );
    }
    out.push_str(&latency);
    out.push_str("\n</body>\n</html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_escapes() {
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(10_000.0), "99.99%");
        assert_eq!(
            escape("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(
            (
                axis_number(2500.0),
                axis_number(2.5),
                axis_number(0.25),
                axis_number(0.0)
            ),
            ("2500".into(), "2.5".into(), "0.25".into(), "0".into())
        );
    }

    #[test]
    fn an_empty_run_still_draws_both_charts() {
        let report = Report::new(
            crate::report::RunInfo {
                url: "https://x/validate?a=<b>".into(),
                workload: "w".into(),
                target_rate: None,
                concurrency: 1,
                connections: 1,
                http: crate::args::HttpVersion::Http1,
                body_bytes: 1,
                warmup: std::time::Duration::ZERO,
                elapsed: std::time::Duration::ZERO,
                objects_per_request: 1,
            },
            &crate::report::Tally::new(),
        );
        let page = render(&report).expect("renders");
        assert_eq!(page.matches("<svg").count(), 2);
        assert!(page.contains("a=&lt;b&gt;"), "the URL is escaped");
        assert!(page.contains("<td id=\"requests\">0</td>"));
    }
}
