//! A small metrics registry (counters, gauges, fixed-bucket histograms with labels) and its
//! Prometheus text exposition (format 0.0.4). Sans-io: updates take a short lock on one map,
//! cheap enough for per-batch (not per-record) calls; [`Registry::encode`] renders the text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Label pairs of one series, in the order given at the first update.
pub type Labels = Vec<(&'static str, String)>;

/// Bucket upper bounds (seconds) for latencies from a millisecond to ten minutes.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    300.0, 600.0,
];

/// What a metric family is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations counted into fixed buckets.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A fixed-bucket histogram: per-bucket counts (not cumulative), sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Upper bounds, ascending; `+Inf` is implied.
    pub bounds: &'static [f64],
    /// Observations per bucket; one more entry than `bounds` (the `+Inf` bucket).
    pub counts: Vec<u64>,
    /// Sum of observations.
    pub sum: f64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    /// An empty histogram with the given upper bounds.
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation.
    pub fn observe(&mut self, v: f64) {
        let i = self
            .bounds
            .iter()
            .position(|b| v <= *b)
            .unwrap_or(self.bounds.len());
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Quantile `q` (0..=1) of the observations counted since `earlier` (a previous snapshot of
    /// this histogram, or `None` for all of them), interpolated linearly inside its bucket as
    /// Prometheus' `histogram_quantile` does. `None` when nothing was observed in between;
    /// `f64::INFINITY` when it falls in the `+Inf` bucket.
    pub fn quantile_since(&self, earlier: Option<&Histogram>, q: f64) -> Option<f64> {
        let delta: Vec<u64> = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.saturating_sub(earlier.and_then(|e| e.counts.get(i)).copied().unwrap_or(0))
            })
            .collect();
        let total: u64 = delta.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut seen = 0;
        for (i, c) in delta.iter().enumerate() {
            if *c > 0 && (seen + c) as f64 >= rank {
                let Some(upper) = self.bounds.get(i).copied() else {
                    return Some(f64::INFINITY);
                };
                let lower = if i == 0 { 0.0 } else { self.bounds[i - 1] };
                let inside = ((rank - seen as f64) / *c as f64).clamp(0.0, 1.0);
                return Some(lower + (upper - lower) * inside);
            }
            seen += c;
        }
        Some(f64::INFINITY)
    }
}

#[derive(Debug, Clone)]
enum Value {
    Counter(u64),
    Gauge(f64),
    Histogram(Histogram),
}

#[derive(Debug)]
struct Family {
    help: &'static str,
    kind: Kind,
    /// By rendered label text (`k="v",...`, escaped), with the labels themselves.
    series: BTreeMap<String, (Labels, Value)>,
    /// Where an update renders its series' key, so that updating an existing series
    /// allocates nothing.
    scratch: String,
}

/// Metric families by name. Share it behind an `Arc`; every method takes `&self`.
#[derive(Debug, Default)]
pub struct Registry {
    families: Mutex<BTreeMap<&'static str, Family>>,
}

fn owned(labels: &[(&'static str, &str)]) -> Labels {
    labels.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// The label text of a series, `k="v",...` with values escaped: the series' key.
fn key(labels: &[(&'static str, &str)]) -> String {
    let mut s = String::with_capacity(labels.iter().map(|(k, v)| k.len() + v.len() + 4).sum());
    write_key(&mut s, labels);
    s
}

/// Appends the label text of a series to `s`.
fn write_key(s: &mut String, labels: &[(&'static str, &str)]) {
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(k);
        s.push_str("=\"");
        escape_into(s, v);
        s.push('"');
    }
}

impl Family {
    /// Applies `update` to the series with `labels`, created with `new` if absent.
    fn update(
        &mut self,
        labels: &[(&'static str, &str)],
        new: impl FnOnce() -> Value,
        update: impl FnOnce(&mut Value),
    ) {
        self.scratch.clear();
        write_key(&mut self.scratch, labels);
        if let Some((_, v)) = self.series.get_mut(self.scratch.as_str()) {
            update(v);
            return;
        }
        let mut v = new();
        update(&mut v);
        self.series.insert(self.scratch.clone(), (owned(labels), v));
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn with<R>(
        &self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        f: impl FnOnce(&mut Family) -> R,
    ) -> R {
        let mut families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        let family = families.entry(name).or_insert_with(|| Family {
            help,
            kind,
            series: BTreeMap::new(),
            scratch: String::new(),
        });
        f(family)
    }

    /// Declares a family so that it is listed (with `# HELP`/`# TYPE`) before any update.
    pub fn describe(&self, name: &'static str, help: &'static str, kind: Kind) {
        self.with(name, help, kind, |_| ());
    }

    /// Adds `v` to a counter.
    pub fn counter_add(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: u64,
    ) {
        self.with(name, help, Kind::Counter, |f| {
            f.update(
                labels,
                || Value::Counter(0),
                |value| match value {
                    Value::Counter(c) => *c += v,
                    other => *other = Value::Counter(v),
                },
            )
        });
    }

    /// Sets a gauge.
    pub fn gauge_set(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
        v: f64,
    ) {
        self.with(name, help, Kind::Gauge, |f| {
            f.update(labels, || Value::Gauge(v), |value| *value = Value::Gauge(v));
        });
    }

    /// Counts an observation into a histogram with upper bounds `bounds`.
    pub fn observe(
        &self,
        name: &'static str,
        help: &'static str,
        bounds: &'static [f64],
        labels: &[(&'static str, &str)],
        v: f64,
    ) {
        self.with(name, help, Kind::Histogram, |f| {
            f.update(
                labels,
                || Value::Histogram(Histogram::new(bounds)),
                |value| match value {
                    Value::Histogram(h) => h.observe(v),
                    other => {
                        let mut h = Histogram::new(bounds);
                        h.observe(v);
                        *other = Value::Histogram(h);
                    }
                },
            )
        });
    }

    /// Drops every series of `name` whose labels include all of `matching`.
    pub fn remove_matching(&self, name: &'static str, matching: &[(&'static str, &str)]) {
        let mut families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = families.get_mut(name) {
            f.series.retain(|_, (labels, _)| {
                !matching
                    .iter()
                    .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
            });
        }
    }

    /// A counter's value (0 when absent).
    pub fn counter(&self, name: &str, labels: &[(&'static str, &str)]) -> u64 {
        let families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        match families
            .get(name)
            .and_then(|f| f.series.get(key(labels).as_str()))
            .map(|(_, v)| v)
        {
            Some(Value::Counter(c)) => *c,
            _ => 0,
        }
    }

    /// A histogram's current state.
    pub fn histogram(&self, name: &str, labels: &[(&'static str, &str)]) -> Option<Histogram> {
        let families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        match families
            .get(name)
            .and_then(|f| f.series.get(key(labels).as_str()))
            .map(|(_, v)| v)
        {
            Some(Value::Histogram(h)) => Some(h.clone()),
            _ => None,
        }
    }

    /// The Prometheus text exposition of every family, sorted by name, series sorted by labels.
    pub fn encode(&self) -> String {
        let families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        for (name, f) in families.iter() {
            let _ = writeln!(out, "# HELP {name} {}", escape_help(f.help));
            let _ = writeln!(out, "# TYPE {name} {}", f.kind.as_str());
            for (labels, (_, value)) in &f.series {
                match value {
                    Value::Counter(c) => {
                        let _ = writeln!(out, "{name}{} {c}", label_text(labels, None));
                    }
                    Value::Gauge(g) => {
                        let _ = writeln!(out, "{name}{} {}", label_text(labels, None), number(*g));
                    }
                    Value::Histogram(h) => {
                        let mut cumulative = 0;
                        for (i, c) in h.counts.iter().enumerate() {
                            cumulative += c;
                            let le = h
                                .bounds
                                .get(i)
                                .map(|b| number(*b))
                                .unwrap_or_else(|| "+Inf".to_string());
                            let _ = writeln!(
                                out,
                                "{name}_bucket{} {cumulative}",
                                label_text(labels, Some(&le))
                            );
                        }
                        let _ = writeln!(
                            out,
                            "{name}_sum{} {}",
                            label_text(labels, None),
                            number(h.sum)
                        );
                        let _ =
                            writeln!(out, "{name}_count{} {}", label_text(labels, None), h.count);
                    }
                }
            }
        }
        out
    }
}

/// One series of a metric family, as `Registry::samples` reads it (a typed form of one
/// line of the exposition; a histogram as its count and sum).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MetricSample {
    /// The family's name (for example `strait_replication_records_total`).
    pub name: String,
    /// The series' labels, in the order the exposition shows them.
    pub labels: Vec<(String, String)>,
    /// Its value.
    pub value: MetricValue,
}

impl MetricSample {
    /// The value of label `key`, if the series has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The value of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum MetricValue {
    /// A counter: only goes up.
    Counter(u64),
    /// A gauge.
    Gauge(f64),
    /// A histogram: how many observations, and their sum.
    Histogram {
        /// Number of observations.
        count: u64,
        /// Sum of the observations.
        sum: f64,
    },
}

impl MetricValue {
    /// The value as a number: a counter's or gauge's value, a histogram's count.
    pub fn as_f64(&self) -> f64 {
        match *self {
            MetricValue::Counter(c) => c as f64,
            MetricValue::Gauge(g) => g,
            MetricValue::Histogram { count, .. } => count as f64,
        }
    }
}

impl Registry {
    /// Every series of every family, sorted as [`Registry::encode`] sorts them.
    pub fn samples(&self) -> Vec<MetricSample> {
        let families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (name, f) in families.iter() {
            for (labels, value) in f.series.values() {
                let value = match value {
                    Value::Counter(c) => MetricValue::Counter(*c),
                    Value::Gauge(g) => MetricValue::Gauge(*g),
                    Value::Histogram(h) => MetricValue::Histogram {
                        count: h.count,
                        sum: h.sum,
                    },
                };
                out.push(MetricSample {
                    name: name.to_string(),
                    labels: labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.clone()))
                        .collect(),
                    value,
                });
            }
        }
        out
    }
}

/// A float as Prometheus expects it (`+Inf`, `-Inf`, `NaN`, otherwise shortest round-trip).
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "+Inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        format!("{v}")
    }
}

/// `{labels}` or `{labels,le="..."}` from a series key (empty without labels).
fn label_text(key: &str, le: Option<&str>) -> String {
    match (key.is_empty(), le) {
        (true, None) => String::new(),
        (true, Some(le)) => format!("{{le=\"{le}\"}}"),
        (false, None) => format!("{{{key}}}"),
        (false, Some(le)) => format!("{{{key},le=\"{le}\"}}"),
    }
}

fn escape_into(s: &mut String, v: &str) {
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        s.push_str(v);
        return;
    }
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &[f64] = &[0.1, 1.0];

    #[test]
    fn exposition_is_exact() {
        let r = Registry::new();
        r.counter_add(
            "x_total",
            "Things.",
            &[("topic", "a\"b"), ("partition", "0")],
            2,
        );
        r.counter_add(
            "x_total",
            "Things.",
            &[("topic", "a\"b"), ("partition", "0")],
            3,
        );
        r.counter_add(
            "x_total",
            "Things.",
            &[("topic", "c\\d\ne"), ("partition", "1")],
            1,
        );
        r.gauge_set("g", "A gauge\nwith two lines.", &[], 1.5);
        r.observe("h_seconds", "Latency.", B, &[("flow", "a->b")], 0.05);
        r.observe("h_seconds", "Latency.", B, &[("flow", "a->b")], 0.5);
        r.observe("h_seconds", "Latency.", B, &[("flow", "a->b")], 7.0);
        r.describe("empty_total", "Nothing yet.", Kind::Counter);
        let want = "\
# HELP empty_total Nothing yet.
# TYPE empty_total counter
# HELP g A gauge\\nwith two lines.
# TYPE g gauge
g 1.5
# HELP h_seconds Latency.
# TYPE h_seconds histogram
h_seconds_bucket{flow=\"a->b\",le=\"0.1\"} 1
h_seconds_bucket{flow=\"a->b\",le=\"1\"} 2
h_seconds_bucket{flow=\"a->b\",le=\"+Inf\"} 3
h_seconds_sum{flow=\"a->b\"} 7.55
h_seconds_count{flow=\"a->b\"} 3
# HELP x_total Things.
# TYPE x_total counter
x_total{topic=\"a\\\"b\",partition=\"0\"} 5
x_total{topic=\"c\\\\d\\ne\",partition=\"1\"} 1
";
        assert_eq!(r.encode(), want);
        assert_eq!(
            r.counter("x_total", &[("topic", "a\"b"), ("partition", "0")]),
            5
        );
        assert_eq!(
            r.counter("x_total", &[("topic", "zz"), ("partition", "0")]),
            0
        );
    }

    #[test]
    fn remove_matching_drops_only_matching_series() {
        let r = Registry::new();
        r.gauge_set("lag", "Lag.", &[("flow", "a->b"), ("partition", "0")], 1.0);
        r.gauge_set("lag", "Lag.", &[("flow", "a->b"), ("partition", "1")], 2.0);
        r.gauge_set("lag", "Lag.", &[("flow", "b->a"), ("partition", "0")], 3.0);
        r.remove_matching("lag", &[("flow", "a->b"), ("partition", "1")]);
        let text = r.encode();
        assert!(text.contains("lag{flow=\"a->b\",partition=\"0\"} 1\n"));
        assert!(!text.contains("partition=\"1\""));
        assert!(text.contains("lag{flow=\"b->a\",partition=\"0\"} 3\n"));
    }

    #[test]
    fn histogram_buckets_and_quantiles() {
        let mut h = Histogram::new(B);
        assert_eq!(h.quantile_since(None, 0.99), None);
        for _ in 0..98 {
            h.observe(0.01);
        }
        h.observe(0.1); // on the bound: le="0.1"
        h.observe(3.0);
        assert_eq!(h.counts, vec![99, 0, 1]);
        // Rank 50 of 99 in [0, 0.1]; rank 99 of 99 in [0, 0.1]: its top.
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(h.quantile_since(None, 0.5), 0.1 * 50.0 / 99.0));
        assert!(close(h.quantile_since(None, 0.99), 0.1));
        assert_eq!(h.quantile_since(None, 1.0), Some(f64::INFINITY));
        let before = h.clone();
        h.observe(0.5);
        h.observe(0.5);
        // Two observations in (0.1, 1]: the median is halfway up the bucket.
        assert!(close(h.quantile_since(Some(&before), 0.5), 0.55));
        assert!(close(
            h.quantile_since(Some(&before), 0.99),
            0.1 + 0.9 * 0.99
        ));
        assert_eq!(h.quantile_since(Some(&h.clone()), 0.99), None);
    }

    #[test]
    fn numbers_render_like_prometheus() {
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.0025), "0.0025");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NAN), "NaN");
    }
}
