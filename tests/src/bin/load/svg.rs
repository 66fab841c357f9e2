//! A hand-written SVG plot of a run: moves per second (top) and the move round trip's p50
//! and p99 per second (bottom) over time.

use std::fmt::Write as _;

use crate::stats::Second;

const WIDTH: f64 = 760.0;
const PANEL: f64 = 180.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 36.0;
const GAP: f64 = 44.0;

/// The smallest 1, 2 or 5 × 10^k at or above `v` (1 for nothing to show).
pub(crate) fn nice_ceiling(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= v * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn number(v: f64) -> String {
    if v >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

struct Panel {
    top: f64,
    y_max: f64,
    t_max: f64,
}

impl Panel {
    fn x(&self, t: f64) -> f64 {
        LEFT + (WIDTH - LEFT - RIGHT) * t / self.t_max
    }

    fn y(&self, v: f64) -> f64 {
        self.top + PANEL - PANEL * (v / self.y_max).clamp(0.0, 1.0)
    }

    fn frame(&self, out: &mut String, label: &str) {
        let bottom = self.top + PANEL;
        let _ = writeln!(
            out,
            r##"<rect x="{LEFT}" y="{}" width="{}" height="{PANEL}" fill="none" stroke="#888"/>"##,
            self.top,
            WIDTH - LEFT - RIGHT
        );
        for i in 0..=4 {
            let v = self.y_max * f64::from(i) / 4.0;
            let y = self.y(v);
            let _ = writeln!(
                out,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                number(v)
            );
        }
        for i in 0..=5 {
            let t = self.t_max * f64::from(i) / 5.0;
            let x = self.x(t);
            let _ = writeln!(
                out,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{} s</text>"##,
                bottom + 16.0,
                number(t)
            );
        }
        let _ = writeln!(
            out,
            r##"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"##,
            self.top - 8.0,
            escape(label)
        );
    }

    fn line(&self, out: &mut String, points: impl Iterator<Item = (f64, f64)>, colour: &str) {
        let mut d = String::new();
        for (t, v) in points {
            let _ = write!(d, "{:.1},{:.1} ", self.x(t), self.y(v));
        }
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"##,
            d.trim_end()
        );
    }
}

/// The plot of `series` under `title`.
pub(crate) fn plot(title: &str, series: &[Second]) -> String {
    let t_max = nice_ceiling(series.last().map_or(1, |s| s.t) as f64);
    let moves_max = nice_ceiling(series.iter().map(|s| s.moves as f64).fold(0.0, f64::max));
    let ms_max = nice_ceiling(series.iter().map(|s| s.p99_ms).fold(0.0, f64::max));
    let height = TOP + 2.0 * PANEL + GAP + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"##
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="16" font-size="13">{}</text>"##,
        escape(title)
    );
    let throughput = Panel {
        top: TOP,
        y_max: moves_max,
        t_max,
    };
    throughput.frame(&mut out, "moves/s");
    throughput.line(
        &mut out,
        series.iter().map(|s| (s.t as f64, s.moves as f64)),
        "#1f77b4",
    );
    let latency = Panel {
        top: TOP + PANEL + GAP,
        y_max: ms_max,
        t_max,
    };
    latency.frame(&mut out, "round trip, ms (p50 green, p99 red)");
    let with_moves = || series.iter().filter(|s| s.moves > 0);
    latency.line(
        &mut out,
        with_moves().map(|s| (s.t as f64, s.p50_ms)),
        "#2ca02c",
    );
    latency.line(
        &mut out,
        with_moves().map(|s| (s.t as f64, s.p99_ms)),
        "#d62728",
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u64, moves: u64, p50: f64, p99: f64) -> Second {
        Second {
            t,
            moves,
            p50_ms: p50,
            p99_ms: p99,
            max_ms: p99,
            errors: 0,
            idle_open: 0,
        }
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(nice_ceiling(7.0), 10.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(11.0), 20.0);
        assert_eq!(nice_ceiling(8_388.0), 10_000.0);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(nice_ceiling(4_100.0), 5_000.0);
    }

    #[test]
    fn one_point_per_second_in_each_line() {
        let series: Vec<_> = (1..=20)
            .map(|t| second(t, 8000 + t * 10, 4.0, 9.5))
            .collect();
        let svg = plot("40 pairs <standard> & more", &series);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("40 pairs &lt;standard&gt; &amp; more"));
        let lines: Vec<&str> = svg.lines().filter(|l| l.starts_with("<polyline")).collect();
        assert_eq!(lines.len(), 3);
        for l in lines {
            let points = l.split('"').nth(1).expect("points");
            assert_eq!(points.split(' ').count(), 20, "{l}");
        }
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // The axes reach the nice ceilings: 10,000 moves/s and 10 ms.
        assert!(svg.contains(">10000<") && svg.contains(">10<"), "{svg}");
    }

    #[test]
    fn points_stay_inside_their_panel() {
        let series = vec![second(1, 0, 0.0, 0.0), second(2, 5, 1.0, 300.0)];
        let svg = plot("t", &series);
        for l in svg.lines().filter(|l| l.starts_with("<polyline")) {
            for p in l.split('"').nth(1).expect("points").split_whitespace() {
                let (x, y) = p.split_once(',').expect("x,y");
                let (x, y): (f64, f64) = (x.parse().expect("x"), y.parse().expect("y"));
                assert!((LEFT..=WIDTH - RIGHT).contains(&x), "{p}");
                assert!((TOP..=TOP + 2.0 * PANEL + GAP).contains(&y), "{p}");
            }
        }
    }

    #[test]
    fn an_empty_run_is_still_a_valid_plot() {
        let svg = plot("nothing", &[]);
        assert!(svg.contains("</svg>") && !svg.contains("NaN"));
    }
}
