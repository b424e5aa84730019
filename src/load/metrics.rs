//! Counting and timing: HdrHistograms of microseconds reported as milliseconds, live counters for the
//! per-second progress line, and the client's own peak RSS and CPU (so a generator-bound run shows).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency percentiles in milliseconds (3 decimals).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// A histogram of microseconds, 1 µs .. 1 hour, 3 significant digits.
#[derive(Debug, Clone)]
pub struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist(Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"))
    }
}

impl Hist {
    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros() as u64);
    }

    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.max(1));
    }

    pub fn add(&mut self, other: &Hist) {
        // Same bounds on both sides: cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// HdrHistogram's V2 encoding, base64: how a slice sends its histograms to the parent that merges
    /// them (exact: the merged percentiles are those of the union of the samples, to the buckets).
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        use hdrhistogram::serialization::Serializer as _;
        let mut bytes = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&self.0, &mut bytes)
            .expect("writing to a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<Hist, String> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("not base64: {e}"))?;
        let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("not an HdrHistogram: {e:?}"))?;
        let mut out = Hist::default();
        out.0.add(&h).map_err(|e| format!("out of bounds: {e:?}"))?;
        Ok(out)
    }

    pub fn percentiles(&self) -> Percentiles {
        let ms = |us: u64| (us as f64 / 1000.0 * 1000.0).round() / 1000.0;
        if self.0.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            count: self.0.len(),
            p50: ms(self.0.value_at_quantile(0.50)),
            p95: ms(self.0.value_at_quantile(0.95)),
            p99: ms(self.0.value_at_quantile(0.99)),
            max: ms(self.0.max()),
        }
    }
}

impl Serialize for Hist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.encode())
    }
}

impl<'de> Deserialize<'de> for Hist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Hist, D::Error> {
        let text = String::deserialize(d)?;
        Hist::decode(&text).map_err(serde::de::Error::custom)
    }
}

/// A histogram shared by many tasks (recorded at message rates, not per poll).
#[derive(Debug, Default)]
pub struct SharedHist(Mutex<Hist>);

impl SharedHist {
    pub fn record(&self, d: Duration) {
        self.0.lock().unwrap().record(d);
    }
    pub fn record_us(&self, us: u64) {
        self.0.lock().unwrap().record_us(us);
    }
    pub fn percentiles(&self) -> Percentiles {
        self.0.lock().unwrap().percentiles()
    }
    pub fn snapshot(&self) -> Hist {
        self.0.lock().unwrap().clone()
    }
}

/// Counts by key (close codes, HTTP statuses, failure kinds), serialised as a JSON object.
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    pub fn add(&self, key: impl Into<String>) {
        *self.0.lock().unwrap().entry(key.into()).or_default() += 1;
    }
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }
}

/// Live counters, read once a second by the progress line (and by bench's sampler), and the level's
/// plateau as it forms.
#[derive(Debug, Default)]
pub struct Live {
    pub plateau: super::plateau::Plateau,
    pub started: AtomicU64,
    pub dialing: AtomicU64,
    pub connected: AtomicU64,
    pub open: AtomicU64,
    pub held: AtomicU64,
    pub stalled: AtomicU64,
    pub failed: AtomicU64,
    pub done: AtomicU64,
    pub logins_ok: AtomicU64,
    pub frames_sent: AtomicU64,
    pub frames_received: AtomicU64,
    pub http_requests: AtomicU64,
    /// Liveness pings the generator sent (the hold's last check aside).
    pub pings_sent: AtomicU64,
}

impl Live {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
    pub fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    pub fn dec(c: &AtomicU64) {
        c.fetch_sub(1, Ordering::Relaxed);
    }

    /// A socket opened: counted, and told to the plateau.
    pub fn opened(&self) {
        let open = self.open.fetch_add(1, Ordering::AcqRel) + 1;
        self.plateau.opened(open);
        self.recount();
    }

    /// The hold may have begun with a count another task lowered meanwhile (a close that saw no hold
    /// yet): the count now is in the hold's lowest too.
    fn recount(&self) {
        self.plateau.closed(self.open.load(Ordering::Acquire));
    }

    /// An open socket closed.
    pub fn closed(&self) {
        let open = self.open.fetch_sub(1, Ordering::AcqRel) - 1;
        self.plateau.closed(open);
    }

    /// Begin the common hold now (a slice, when every slice's dials are over).
    pub fn release(&self) {
        self.plateau.release(self.open.load(Ordering::Acquire));
    }

    /// Stop the run: no more users start, the common hold ends now.
    pub fn stop(&self) {
        self.plateau.stop(self.open.load(Ordering::Acquire));
    }

    /// A user's dial is over, connected or not.
    pub fn dial_over(&self) {
        self.plateau.dial_over(self.open.load(Ordering::Acquire));
        self.recount();
    }
}

/// Peak and current resident set size (VmHWM, VmRSS) of this process, in bytes.
pub fn rss_bytes() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// This host's name (the kernel's), to tell a run's generator processes apart.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// User plus system CPU time of this process, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into a zeroed local struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ((tv(ru.ru_utime) + tv(ru.ru_stime)) * 1000.0).round() / 1000.0
}

/// User plus system CPU time of this process's reaped children (exact: the kernel's own accounting), in
/// seconds: what the local host commands of the bench's sampler cost.
pub fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into a zeroed local struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The CPUs this process may use: its affinity, capped by its cgroup's CPU quota (a generator limited
/// to a fraction of a CPU is busy at that fraction, which `available_parallelism` rounds up to 1).
pub fn cpu_capacity() -> f64 {
    let cores = std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64);
    match own_cpu_cgroup().and_then(|g| g.quota(read_file)) {
        Some(q) if q < cores => q,
        _ => cores,
    }
}

/// This process's cgroup's CPU bandwidth periods so far, and those in which it was throttled (None
/// without a quota): a generator throttled in most periods of the hold was held back by its CPU.
pub fn cpu_throttling() -> Option<(u64, u64)> {
    own_cpu_cgroup()?.throttling(read_file)
}

fn read_file(p: &str) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn own_cpu_cgroup() -> Option<CpuCgroup> {
    CpuCgroup::of(&std::fs::read_to_string("/proc/self/cgroup").ok()?)
}

/// The folder of the cgroup whose CPU controller holds this process, v2 (unified) or v1.
#[derive(Debug, PartialEq)]
struct CpuCgroup {
    dir: String,
    v2: bool,
}

impl CpuCgroup {
    /// From a /proc/self/cgroup text: v1's cpu controller line, else v2's unified one.
    fn of(cgroup: &str) -> Option<CpuCgroup> {
        let mut unified = None;
        for line in cgroup.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, ctl, path) = (parts.next()?, parts.next()?, parts.next()?);
            if ctl.is_empty() {
                unified = Some(CpuCgroup {
                    dir: format!("/sys/fs/cgroup{path}"),
                    v2: true,
                });
            } else if ctl.split(',').any(|c| c == "cpu") {
                return Some(CpuCgroup {
                    dir: format!("/sys/fs/cgroup/cpu{path}"),
                    v2: false,
                });
            }
        }
        unified
    }

    /// The quota in CPUs (None when unlimited).
    fn quota(&self, read: impl Fn(&str) -> Option<String>) -> Option<f64> {
        let ratio = |q: &str, p: &str| {
            let (q, p) = (q.trim().parse::<f64>().ok()?, p.trim().parse::<f64>().ok()?);
            (q > 0.0 && p > 0.0).then_some(q / p)
        };
        if self.v2 {
            let max = read(&format!("{}/cpu.max", self.dir))?;
            let mut w = max.split_whitespace();
            ratio(w.next()?, w.next()?)
        } else {
            ratio(
                &read(&format!("{}/cpu.cfs_quota_us", self.dir))?,
                &read(&format!("{}/cpu.cfs_period_us", self.dir))?,
            )
        }
    }

    /// (nr_periods, nr_throttled) of cpu.stat, when there is a quota.
    fn throttling(&self, read: impl Fn(&str) -> Option<String>) -> Option<(u64, u64)> {
        self.quota(&read)?;
        let stat = read(&format!("{}/cpu.stat", self.dir))?;
        let field = |name: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
        };
        Some((field("nr_periods ")?, field("nr_throttled ")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_quotas_and_throttling_v1_and_v2() {
        let files = |p: &str| -> Option<String> {
            match p {
                "/sys/fs/cgroup/gen/cpu.max" => Some("20000 100000\n".into()),
                "/sys/fs/cgroup/gen/cpu.stat" => {
                    Some("usage_usec 5\nnr_periods 40\nnr_throttled 30\nthrottled_usec 9\n".into())
                }
                "/sys/fs/cgroup/free/cpu.max" => Some("max 100000\n".into()),
                "/sys/fs/cgroup/cpu/gen/cpu.cfs_quota_us" => Some("50000\n".into()),
                "/sys/fs/cgroup/cpu/gen/cpu.cfs_period_us" => Some("100000\n".into()),
                "/sys/fs/cgroup/cpu/gen/cpu.stat" => {
                    Some("nr_periods 10\nnr_throttled 2\nthrottled_time 7\n".into())
                }
                "/sys/fs/cgroup/cpu/cpu.cfs_quota_us" => Some("-1\n".into()),
                "/sys/fs/cgroup/cpu/cpu.cfs_period_us" => Some("100000\n".into()),
                _ => None,
            }
        };
        let g = |text: &str| CpuCgroup::of(text).unwrap();
        assert_eq!(g("0::/gen\n").quota(files), Some(0.2));
        assert_eq!(g("0::/gen\n").throttling(files), Some((40, 30)));
        assert_eq!(g("0::/free\n").quota(files), None);
        assert_eq!(g("0::/free\n").throttling(files), None);
        let v1 = g("5:memory:/\n4:cpu,cpuacct:/gen\n0::/\n");
        assert!(!v1.v2);
        assert_eq!(v1.quota(files), Some(0.5));
        assert_eq!(v1.throttling(files), Some((10, 2)));
        assert_eq!(g("4:cpu,cpuacct:/\n").quota(files), None);
        assert!(cpu_capacity() > 0.0);
    }

    #[test]
    fn percentiles_in_ms() {
        let mut h = Hist::default();
        assert_eq!(h.percentiles(), Percentiles::default());
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let p = h.percentiles();
        assert_eq!(p.count, 100);
        assert!((p.p50 - 50.0).abs() < 0.1, "{p:?}");
        assert!((p.p95 - 95.0).abs() < 0.1, "{p:?}");
        assert!((p.max - 100.0).abs() < 0.1, "{p:?}");
        let mut all = Hist::default();
        all.add(&h);
        all.add(&h);
        assert_eq!(all.percentiles().count, 200);
        let back = Hist::decode(&all.encode()).unwrap();
        assert_eq!(back.percentiles(), all.percentiles());
        assert!(Hist::decode("not base64!").is_err());
    }

    #[test]
    fn own_usage_is_readable() {
        let (peak, now) = rss_bytes();
        assert!(peak >= now && now > 0);
        assert!(cpu_seconds() >= 0.0);
        let t = Tally::default();
        t.add("4003");
        t.add("4003");
        assert_eq!(t.snapshot()["4003"], 2);
    }
}
